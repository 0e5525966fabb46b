#!/usr/bin/env bash
# device_property_test.sh: no kernel launch and no algorithm choice may read what GPU it runs on
# (its SM count, clocks, L2, occupancy): such a read lets two GPU models of one architecture
# compute different bits under train.deterministic. The CUDA sources may query device properties
# in device_runtime.cu alone (device names and memory for reports, green contexts for tests),
# and cuBLASLt's heuristic may run only behind the algorithm table in matmul_batch_invariant.cu
# (and in matmul.cu, the standard algorithm's biased products: the default, non-deterministic
# mode, which cuBLAS itself tunes from the device). A new read
# elsewhere fails here, naming the file and line.
set -uo pipefail
cd "$(dirname "$0")/.."
pattern='cudaGetDeviceProperties|cudaDeviceGetAttribute|cudaOccupancy|multiProcessorCount|l2CacheSize|clockRate|cublasLtMatmulAlgoGetHeuristic'
hits=$(grep -nE "$pattern" kernels/cuda/*.cu kernels/cuda/*.cuh kernels/cuda/*.h 2>/dev/null |
  grep -v '^kernels/cuda/device_runtime\.cu:' |
  grep -v '^kernels/cuda/matmul_batch_invariant\.cu:.*cublasLtMatmulAlgoGetHeuristic(handle, d\.desc' |
  grep -v '^kernels/cuda/matmul\.cu:.*cublasLtMatmulAlgoGetHeuristic(handle, d\.desc' |
  grep -v '^kernels/cuda/cublas_loader\.cu:')  # the loader forwards each entry point, calls none
if [ -n "$hits" ]; then
  echo "FAIL: a device property read outside device_runtime.cu (deterministic bits would follow the GPU model):"
  echo "$hits"
  exit 1
fi
# The table's fallback to the heuristic must stay behind the table.
grep -q 'if (table_enabled())' kernels/cuda/matmul_batch_invariant.cu ||
  { echo "FAIL: matmul_batch_invariant.cu no longer consults the algorithm table first"; exit 1; }
echo "ok: no device property read outside device_runtime.cu"

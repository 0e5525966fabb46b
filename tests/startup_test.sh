#!/usr/bin/env bash
# startup_test.sh BITGRAD: a CUDA build does not link cuBLAS or cuBLASLt (the first product on
# a GPU loads them, kernels/cuda/cublas_loader.cu): their initialisers would cost every process,
# CPU runs and `bitgrad checksum` included, half a second at start. A CPU-only build passes too.
set -uo pipefail
bin=$1
command -v ldd > /dev/null || { echo "ldd not found: skipped"; exit 77; }
linked=$(ldd "$bin" | grep -E 'libcublas' || true)
if [ -n "$linked" ]; then
  echo "FAIL: $bin links cuBLAS at start:"
  echo "$linked"
  exit 1
fi
"$bin" --help > /dev/null 2>&1 || { echo "FAIL: $bin --help exited $?"; exit 1; }
echo "ok: cuBLAS is loaded when first needed, not at start"

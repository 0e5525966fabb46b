#!/usr/bin/env bash
# suite_and_records_gpu.sh: on the GPU machine, after scripts/make_device_bundle.sh here: the
# whole test suite (CUDA cases included), the determinism records named by ONLY (default: the
# baby GPT's fp32, bf16 fused and bf16-stream records after 1 step, BitNet's and L-Mul's, and
# fit-bide) against the H200 table (bench/results/determinism_cross_gpu/h200_table), and
# check-determinism of a forecaster on the GPU (the synthetic Gaussian AR(1) config, 20 steps).
# Under $OUT: gpu.txt, tests.log, records_summary.txt, forecast_determinism.log.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
$bin/bitgrad_tests > "$out/tests.log" 2>&1
grep -E "test cases|assertions|Status" "$out/tests.log"
python3 scripts/forecast_synthetic.py datasets/forecast --series 64 > /dev/null
$bin/bitgrad check-determinism configs/forecast_synthetic.yaml --runs 2 --steps 20 \
  --out /tmp/chk_forecast --record /tmp/forecast_record.txt > "$out/forecast_determinism.log" 2>&1
echo "forecaster check-determinism: rc=$?"; tail -6 "$out/forecast_determinism.log"
ONLY=${ONLY:-"baby_fp32_1 baby_bf16_fused_1 baby_bf16_stream_1 bitnet_1 lmul_1 fit_bide"} \
  REF=bench/results/determinism_cross_gpu/h200_table OUT="$out/records" \
  scripts/cross_gpu_determinism.sh > /dev/null 2>&1
cp "$out/records/summary.txt" "$out/records_summary.txt" && rm -rf "$out/records"
cat "$out/records_summary.txt"

#!/usr/bin/env bash
# gpu_check.sh: the one device-machine pass. Runs the whole test suite (CUDA cases included),
# the SICK benchmark and the paper's BIDE fit, writing logs and JSON under $OUT (or ./gpu_out).
# Usage on the GPU machine, after scripts/make_device_bundle.sh here: scripts/gpu_check.sh
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
$bin/bitgrad_tests 2>&1 | tee "$out/tests.log" | grep -E "ERROR|TEST CASE|test cases|assertions|logged|THREW|values:" | head -60
$bin/bitgrad bench sick --out "$out/sick.json" 2>&1 | tee "$out/bench.log"
$bin/bitgrad fit-bide configs/bide_fit.yaml --set run.out_dir="$out/fit" 2>&1 | tee "$out/fit.log" | tail -9
$bin/bitgrad fit-bide configs/bide_fit.yaml --set sick.dtype=fp16 --set run.out_dir="$out/fit16" 2>&1 | tee "$out/fit16.log" | tail -8

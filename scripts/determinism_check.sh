#!/usr/bin/env bash
# determinism_check.sh: issue 15's device pass. The whole test suite (CUDA cases included), the
# GEMM benchmark (pinned batch-invariant cuBLASLt beside cuBLAS's default choice), the whole
# training step with and without train.deterministic (Baby GPT and GPT-2 124M, interleaved),
# check-determinism on the Baby GPT (bf16 fused and fp32 composed) and GPT-2 124M, and the BIDE
# fit with and without the mode. Under $OUT: gpu.txt, tests.log, gemm.json, summary.txt and
# logs.tgz (every other log; the device returns at most 8 files).
# Needs the bundle (scripts/make_device_bundle.sh) and runs/data with tinyshakespeare.txt, the
# GPT-2 vocabulary in runs/data/gpt2 and its shards in runs/data/shakespeare_gpt2.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
logs=/tmp/determinism_logs && rm -rf $logs && mkdir -p $logs
summary="$out/summary.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt" > "$summary"
if [ -z "${SKIP_TESTS:-}" ]; then
  .bundle/bitgrad_tests > "$out/tests.log" 2>&1
  grep -E "ERROR|THREW|test cases|assertions|green context|case skipped" "$out/tests.log" | head -40 | tee -a "$summary"
fi
$bin bench gemm --out "$out/gemm.json" > $logs/gemm.log 2>&1
tee -a "$summary" < $logs/gemm.log
baby=(configs/shakespeare_char.yaml --set data.path=runs/data/tinyshakespeare.txt)
gpt2=(configs/gpt2_124m.yaml --set data.gpt2_dir=runs/data/gpt2)
quiet=(--set train.eval_interval=100000 --set train.eval_iters=1)
for rep in 1 2; do  # interleaved, twice
  for det in false true; do
    $bin train "${baby[@]}" "${quiet[@]}" --set train.log_interval=100 --set train.deterministic=$det \
      --set run.stop_after_steps=400 --set run.out_dir=/tmp/baby_$det > $logs/baby_step_${det}_$rep.log 2>&1
    echo "baby det=$det rep=$rep: $(grep -E '^step +(300|400)/|^device memory' $logs/baby_step_${det}_$rep.log | tr '\n' ' ')" | tee -a "$summary"
    $bin train "${gpt2[@]}" "${quiet[@]}" --set train.log_interval=10 --set train.deterministic=$det \
      --set run.stop_after_steps=40 --set run.out_dir=/tmp/gpt2_$det > $logs/gpt2_step_${det}_$rep.log 2>&1
    echo "gpt2 det=$det rep=$rep: $(grep -E '^step +(30|40)/|^device memory' $logs/gpt2_step_${det}_$rep.log | tr '\n' ' ')" | tee -a "$summary"
  done
done
grep -h "rror" $logs/baby_step_* $logs/gpt2_step_* | head -5 | tee -a "$summary"
check() {  # check NAME ARGS...: check-determinism, its table into the summary
  local name=$1; shift
  $bin check-determinism "$@" --out /tmp/chk_$name > $logs/check_$name.log 2>&1
  echo "check-determinism $name: rc=$?" | tee -a "$summary"
  tail -5 $logs/check_$name.log | tee -a "$summary"
}
check baby_bf16 "${baby[@]}" --runs 3 --steps 20
check baby_fp32 "${baby[@]}" --runs 3 --steps 10 --set train.precision=fp32 --set model.attention=composed
check gpt2_bf16 "${gpt2[@]}" --runs 2 --steps 5 --set train.eval_iters=2
n=0
for mode in false true true; do
  n=$((n + 1))
  $bin fit-bide configs/bide_fit.yaml --set sick.dtype=fp16 --set train.deterministic=$mode \
    --set run.out_dir=/tmp/fit$n > $logs/fit_$n.log 2>&1
  echo "fit-bide fp16 deterministic=$mode: $(grep -E '^training:|deterministic' $logs/fit_$n.log | tail -2 | tr '\n' ' ')" | tee -a "$summary"
done
cmp -s <($bin checksum /tmp/fit2/checkpoint.h5) <($bin checksum /tmp/fit3/checkpoint.h5) &&
  echo "two deterministic fits: checkpoints identical" | tee -a "$summary" ||
  echo "two deterministic fits DIFFER" | tee -a "$summary"
tar -C $logs -czf "$out/logs.tgz" .

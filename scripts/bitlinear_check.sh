#!/usr/bin/env bash
# bitlinear_check.sh: issue 16's device pass. The whole test suite (the BitLinear CUDA cases
# included); the Baby GPT's step time and peak memory, bf16 dense against BitNet (interleaved,
# twice); then full 5000-step BitNet runs of configs/shakespeare_char_bitnet.yaml at n_embd 384
# (absmean) and 768 (absmean, absmedian). Under $OUT: gpu.txt, tests.log, summary.txt and
# logs.tgz (every run's log and metrics.csv).
# Needs the bundle (scripts/make_device_bundle.sh) and runs/data/tinyshakespeare.txt.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
logs=/tmp/bitlinear_logs && rm -rf $logs && mkdir -p $logs
summary="$out/summary.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt" > "$summary"
if [ -z "${SKIP_TESTS:-}" ]; then
  .bundle/bitgrad_tests > "$out/tests.log" 2>&1
  grep -E "ERROR|THREW|test cases|assertions" "$out/tests.log" | head -40 | tee -a "$summary"
fi
data=(--set data.path=runs/data/tinyshakespeare.txt)
quiet=(--set train.eval_interval=100000 --set train.eval_iters=1 --set train.log_interval=100)
for rep in 1 2; do
  for cfg in shakespeare_char shakespeare_char_bitnet; do
    $bin train configs/$cfg.yaml "${data[@]}" "${quiet[@]}" --set run.stop_after_steps=400 \
      --set run.out_dir=/tmp/step_$cfg > $logs/step_${cfg}_$rep.log 2>&1
    echo "$cfg rep=$rep: $(grep -E '^step +(300|400)/|^device memory' $logs/step_${cfg}_$rep.log | tr '\n' ' ')" | tee -a "$summary"
  done
done
full() {  # full NAME ARGS...: a 5000-step run, its best val and time into the summary
  local name=$1; shift
  $bin train configs/shakespeare_char_bitnet.yaml "${data[@]}" --set run.out_dir=/tmp/full_$name \
    --set train.log_interval=250 "$@" > $logs/full_$name.log 2>&1
  local rc=$?
  cp /tmp/full_$name/metrics.csv $logs/full_${name}_metrics.csv 2>/dev/null
  echo "full $name rc=$rc: $(grep -E 'best|^step +5000/|^device memory' $logs/full_$name.log | tr '\n' ' ')" | tee -a "$summary"
  tail -3 $logs/full_$name.log | tee -a "$summary"
}
full c384_absmean
full c768_absmean --set model.n_embd=768 --set model.n_head=12
full c768_absmedian --set model.n_embd=768 --set model.n_head=12 --set bitlinear.weight_scale=absmedian
tar -C $logs -czf "$out/logs.tgz" .

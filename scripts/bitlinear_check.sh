#!/usr/bin/env bash
# bitlinear_check.sh: issue 16's device pass. The whole test suite (the BitLinear CUDA cases
# included); bitgrad bench bitlinear; the Baby GPT's step time and peak memory, bf16 dense
# against BitNet (interleaved, twice); then full 5000-step BitNet runs of
# configs/shakespeare_char_bitnet.yaml (FULL="c384_absmean c768_absmean c768_absmedian" picks
# them; default all three). Under $OUT: gpu.txt, tests.log, bitlinear.json, summary.txt and
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
  grep -E "ERROR|THREW|CRASH|test cases|assertions" "$out/tests.log" | head -40 | tee -a "$summary"
fi
$bin bench bitlinear --out "$out/bitlinear.json" 2>&1 | tee -a "$summary"
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
}
for run in ${FULL:-c384_absmean c768_absmean c768_absmedian}; do
  case $run in
    c384_absmean) full c384_absmean ;;
    c768_absmean) full c768_absmean --set model.n_embd=768 --set model.n_head=12 ;;
    c768_absmedian) full c768_absmedian --set model.n_embd=768 --set model.n_head=12 \
      --set bitlinear.weight_scale=absmedian ;;
  esac
done
tar -C $logs -czf "$out/logs.tgz" .

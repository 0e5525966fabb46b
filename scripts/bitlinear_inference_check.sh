#!/usr/bin/env bash
# bitlinear_inference_check.sh: issue 16's inference device pass. The whole test suite
# (SKIP_TESTS=1 skips it); `bitgrad bench bitlinear --part inference`; the packed export of a
# short BitNet run, with eval and greedy sample from the checkpoint and from the packed file
# (they must print the same); then (RUNS="...") the GPT-2 BPE runs: dense, bitnet384,
# bitnet768, bitnet768med. Under $OUT: gpu.txt, tests.log, inference.json, summary.txt, logs.tgz.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
logs=/tmp/bitlinear_inf_logs && rm -rf $logs && mkdir -p $logs
summary="$out/summary.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt" > "$summary"
if [ -z "${SKIP_TESTS:-}" ]; then
  .bundle/bitgrad_tests > "$out/tests.log" 2>&1
  grep -E "ERROR|THREW|CRASH|test cases|assertions" "$out/tests.log" | head -40 | tee -a "$summary"
fi
if [ -z "${SKIP_BENCH:-}" ]; then
  $bin bench bitlinear --part inference --out "$out/inference.json" 2>&1 | tee -a "$summary"
fi
char=(--set data.path=runs/data/tinyshakespeare.txt)
$bin train configs/shakespeare_char_bitnet.yaml "${char[@]}" --set train.steps=300 \
  --set train.eval_interval=300 --set train.eval_iters=20 --set model.head=bitlinear \
  --set schedule.stage2_step=150 \
  --set run.out_dir=/tmp/export_run > $logs/export_train.log 2>&1
$bin export /tmp/export_run/last.h5 --packed --out /tmp/export_run/packed.h5 2>&1 | tee -a "$summary"
for f in last.h5 packed.h5; do
  $bin eval /tmp/export_run/$f 2>&1 | sed 's|^/tmp/export_run/||' | tee -a "$summary"
  $bin sample /tmp/export_run/$f --tokens 200 --temperature 0 --seed 1 > $logs/sample_$f.txt 2>&1
  echo "sample $f md5 $(md5sum < $logs/sample_$f.txt)" | tee -a "$summary"
done
ls -l /tmp/export_run/last.h5 /tmp/export_run/packed.h5 | tee -a "$summary"
bpe=(--set data.path=runs/data/tinyshakespeare.txt --set data.gpt2_dir=runs/data/gpt2 --set train.log_interval=100)
run() {  # run NAME CONFIG ARGS...
  local name=$1 cfg=$2; shift 2
  $bin train configs/$cfg.yaml "${bpe[@]}" --set run.out_dir=/tmp/bpe_$name "$@" > $logs/bpe_$name.log 2>&1
  local rc=$?
  cp /tmp/bpe_$name/metrics.csv $logs/bpe_${name}_metrics.csv 2>/dev/null
  echo "bpe $name rc=$rc: $(grep -E 'best|^step +2000/|^device memory' $logs/bpe_$name.log | tr '\n' ' ')" | tee -a "$summary"
}
for r in ${RUNS:-}; do
  case $r in
    dense) run dense shakespeare_bpe ;;
    bitnet384) run bitnet384 shakespeare_bpe_bitnet ;;
    bitnet768) run bitnet768 shakespeare_bpe_bitnet --set model.n_embd=768 --set model.n_head=12 ;;
    bitnet768med) run bitnet768med shakespeare_bpe_bitnet --set model.n_embd=768 --set model.n_head=12 \
      --set bitlinear.weight_scale=absmedian ;;
  esac
done
tar -C $logs -czf "$out/logs.tgz" .

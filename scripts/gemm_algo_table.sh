#!/usr/bin/env bash
# gemm_algo_table.sh: on the reference GPU (an H200), the rows of the deterministic mode's GEMM
# algorithm table (kernels/cuda/gemm_algo_table.inc). Runs check-determinism (two 1-step runs,
# then its batch-invariance and sampler probes) of every shipped GPT config in each precision it
# is run in, with the table off (BITGRAD_GEMM_TABLE=0: cuBLASLt's heuristic chooses) and every
# choice logged as a table row; $OUT/gemm_algo_rows.txt holds the distinct rows, sorted. Paste
# them below the .inc's header (a row already there is the same choice).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
log=/tmp/gemm_algo_log.txt && rm -f $log
export BITGRAD_GEMM_TABLE=0 BITGRAD_GEMM_ALGO_LOG=$log
$bin prepare datasets/tinyshakespeare.txt --out /tmp/shards --gpt2-dir datasets/gpt2 > /dev/null
run() {  # run NAME CONFIG [--set ...]
  local name=$1; shift
  $bin check-determinism "$@" --set train.eval_iters=1 --runs 2 --steps 1 --out /tmp/tab_$name \
    > /tmp/tab_$name.log 2>&1 || echo "$name: check-determinism failed: $(tail -1 /tmp/tab_$name.log)"
  rm -rf /tmp/tab_$name
  echo "$name: $(sort -u $log | wc -l) rows so far"
}
for cfg in configs/shakespeare_*.yaml; do
  name=$(basename "$cfg" .yaml)
  [ "$name" = shakespeare_char_cpu ] && continue  # the CPU recipe
  run "$name" "$cfg"
done
for precision in fp32 tf32; do
  run char_$precision configs/shakespeare_char.yaml --set train.precision=$precision --set model.attention=composed
done
run char_composed configs/shakespeare_char.yaml --set model.attention=composed
run gpt2_124m configs/gpt2_124m.yaml --set data.train_bin=/tmp/shards/train.bin --set data.val_bin=/tmp/shards/val.bin
sed 's/ heuristic$//' $log | sort -u > "$out/gemm_algo_rows.txt"
wc -l < "$out/gemm_algo_rows.txt"

#!/usr/bin/env bash
# gemm_table_cost.sh: on a GPU machine, what the deterministic mode's algorithm table costs.
# Interleaved, twice: the baby GPT (300 steps) and GPT-2 124M (40 steps) in the default mode, in
# train.deterministic with the table, and in train.deterministic with cuBLASLt's heuristic
# (BITGRAD_GEMM_TABLE=0); the median ms/step of each run's progress lines past its first 100
# (baby) or 10 (GPT-2) steps. Under $OUT: cost.txt.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
[ -f /tmp/shards/train.bin ] || $bin prepare datasets/tinyshakespeare.txt --out /tmp/shards --gpt2-dir datasets/gpt2 > /dev/null
quiet=(--set train.eval_interval=100000 --set train.eval_iters=1)
median_ms() {  # median ms/step of a log's progress lines past step $2
  awk -v from="$2" '/^step/ {split($2, s, "/"); if (s[1] + 0 > from) for (i = 1; i <= NF; i++) if ($i == "ms/step") print $(i - 1)}' "$1" |
    sort -n | awk '{v[NR] = $1} END {if (NR) printf "%.2f", v[int((NR + 1) / 2)]}'
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/cost.txt"
for rep in 1 2; do
  for variant in default table heuristic; do
    det=true; env=()
    [ $variant = default ] && det=false
    [ $variant = heuristic ] && env=(BITGRAD_GEMM_TABLE=0)
    env "${env[@]}" $bin train configs/shakespeare_char.yaml "${quiet[@]}" --set train.log_interval=10 \
      --set train.deterministic=$det --set run.stop_after_steps=300 --set run.out_dir=/tmp/cost_baby > /tmp/cost_baby.log 2>&1
    env "${env[@]}" $bin train configs/gpt2_124m.yaml "${quiet[@]}" --set train.log_interval=2 \
      --set data.train_bin=/tmp/shards/train.bin --set data.val_bin=/tmp/shards/val.bin \
      --set train.deterministic=$det --set run.stop_after_steps=40 --set run.out_dir=/tmp/cost_gpt2 > /tmp/cost_gpt2.log 2>&1
    echo "rep $rep $variant: baby $(median_ms /tmp/cost_baby.log 100) ms/step | gpt2_124m $(median_ms /tmp/cost_gpt2.log 10) ms/step" | tee -a "$out/cost.txt"
  done
done

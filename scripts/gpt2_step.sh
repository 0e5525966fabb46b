#!/usr/bin/env bash
# gpt2_step.sh: GPT-2 124M step time (configs/gpt2_124m.yaml, batch 16 x 1024) per
# train.precision on the GPU machine: 40 steps from the Tiny Shakespeare GPT-2 shards in
# runs/data/ (bitgrad prepare), the 10-step windows of the progress line. Logs under $OUT.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
for p in ${PRECISIONS:-tf32 bf16}; do
  .bundle/bitgrad train configs/gpt2_124m.yaml --set data.gpt2_dir=runs/data/gpt2 \
    --set train.precision=$p --set run.out_dir=/tmp/g124_$p --set run.stop_after_steps=40 \
    --set train.eval_interval=100000 --set train.eval_iters=1 > "$out/gpt2_124m_$p.log" 2>&1
  grep -E "^step +(30|40)/|stopped|rror" "$out/gpt2_124m_$p.log"
done

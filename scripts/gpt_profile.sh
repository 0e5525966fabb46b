#!/usr/bin/env bash
# gpt_profile.sh: Baby GPT step time per train.precision, and a per-kernel time breakdown of
# two training steps under ncu, on the GPU machine (after scripts/make_device_bundle.sh here;
# the corpus travels in runs/data/). Writes logs under $OUT (or ./gpu_out).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
data=${DATA:-runs/data/tinyshakespeare.txt}
common=(--set data.path="$data" --set train.eval_interval=100000 --set train.eval_iters=1)
for p in ${PRECISIONS:-fp32 tf32 bf16}; do
  .bundle/bitgrad train configs/shakespeare_char.yaml "${common[@]}" --set train.precision=$p \
    --set run.out_dir=/tmp/prof_$p --set train.steps=100 --set run.stop_after_steps=60 \
    --set train.log_interval=20 2>&1 | grep -E "^step|stopped" | tee "$out/steps_$p.log"
done
ncu=/usr/local/cuda/bin/ncu
if [ -x $ncu ]; then
  $ncu --metrics gpu__time_duration.sum --print-summary per-kernel \
    .bundle/bitgrad train configs/shakespeare_char.yaml "${common[@]}" \
    --set train.precision=${PROFILE_PRECISION:-tf32} --set run.out_dir=/tmp/prof_ncu \
    --set train.steps=100 --set run.stop_after_steps=2 > "$out/ncu_summary.txt" 2>&1
  tail -5 "$out/ncu_summary.txt"
fi

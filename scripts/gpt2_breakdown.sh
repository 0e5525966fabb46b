#!/usr/bin/env bash
# gpt2_breakdown.sh: where one GPT-2 124M training step's time goes (configs/gpt2_124m.yaml,
# bf16, batch 16 x 1024), per kernel class: ncu times every kernel of steps 10-11 (the
# trainer's BITGRAD_PROFILE_STEPS capture range; clocks and caches left as they run), and
# scripts/kernel_breakdown.py sums them per class against the unprofiled ms/step. BINS names
# the binaries to compare, "label=path[:ms_per_step] ..." (default current=.bundle/bitgrad);
# SETS_<label>="--set key=value ..." adds settings to that label's run (one binary, two modes);
# KEEP_CSV=1 keeps ncu's per-kernel CSV (grid and block sizes included) as $OUT/*_ncu.csv.gz.
# MODEL=baby profiles the Baby GPT's step instead (configs/shakespeare_char.yaml, bf16, batch
# 64 x 256); MODEL=gpt2_bitnet GPT-2 124M with BitNet b1.58 projections
# (configs/gpt2_124m_bitnet.yaml), MODEL=baby_bitnet the Baby GPT's
# (configs/shakespeare_char_bitnet.yaml). On the GPU machine (ncu there; nsys is not); writes
# $OUT/breakdown_<label>.json (breakdown_baby_<label>.json, breakdown_bitnet_<label>.json,
# breakdown_baby_bitnet_<label>.json).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -x "$ncu" ] || { echo "gpt2_breakdown: no ncu on this machine"; exit 1; }
[ -f /tmp/shards/train.bin ] || .bundle/bitgrad prepare datasets/tinyshakespeare.txt --out /tmp/shards --gpt2-dir datasets/gpt2 > /dev/null
model=(configs/gpt2_124m.yaml --set data.train_bin=/tmp/shards/train.bin --set data.val_bin=/tmp/shards/val.bin)
prefix=breakdown
[ "${MODEL:-gpt2}" = baby ] && model=(configs/shakespeare_char.yaml) && prefix=breakdown_baby
[ "${MODEL:-gpt2}" = gpt2_bitnet ] && model[0]=configs/gpt2_124m_bitnet.yaml && prefix=breakdown_bitnet
[ "${MODEL:-gpt2}" = baby_bitnet ] && model=(configs/shakespeare_char_bitnet.yaml) && prefix=breakdown_baby_bitnet
for pair in ${BINS:-current=.bundle/bitgrad}; do
  label=${pair%%=*} rest=${pair#*=}
  bin=${rest%%:*} step_ms=""; [ "$rest" != "$bin" ] && step_ms=${rest#*:}
  sets_var=SETS_$label; extra=(${!sets_var:-})
  BITGRAD_PROFILE_STEPS=10:2 "$ncu" --profile-from-start off --clock-control none \
    --cache-control none --metrics gpu__time_duration.sum --csv --print-units base \
    --log-file /tmp/ncu_$label.csv \
    $bin train "${model[@]}" --set train.eval_iters=1 --set train.eval_interval=100000 \
    --set schedule.warmup_steps=10 \
    --set run.out_dir=/tmp/prof_run_$label --set run.stop_after_steps=13 "${extra[@]}" \
    > "$out/${prefix}_${label}_run.log" 2>&1
  python3 scripts/kernel_breakdown.py /tmp/ncu_$label.csv 2 $step_ms > "$out/${prefix}_$label.json"
  [ -n "${KEEP_CSV:-}" ] && gzip -c /tmp/ncu_$label.csv > "$out/${prefix}_${label}_ncu.csv.gz"
  echo "== $label"; head -24 "$out/${prefix}_$label.json"
done

#!/usr/bin/env bash
# gpt_full_run.sh: the Baby GPT experiment on the GPU machine: configs/shakespeare_char.yaml to
# the end, then a sample and an eval of its best checkpoint. Logs under $OUT (or ./gpu_out).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
data=${DATA:-runs/data/tinyshakespeare.txt}
run=/tmp/shakespeare_char
.bundle/bitgrad train configs/shakespeare_char.yaml --set data.path="$data" \
  --set run.out_dir=$run "$@" > "$out/shakespeare_char.log" 2>&1
grep -E "val|done" "$out/shakespeare_char.log" | tail -6
cp $run/metrics.csv "$out/shakespeare_char_metrics.csv"
cp $run/loss.svg "$out/shakespeare_char_loss.svg"
.bundle/bitgrad sample $run/best.h5 --tokens 300 --seed 1 > "$out/shakespeare_char_sample.txt" 2>&1
.bundle/bitgrad eval $run/best.h5 2>&1 | tee "$out/shakespeare_char_eval.txt"

#!/usr/bin/env bash
# trunk_quality_check.sh: what a GPT trunk change must keep, on the GPU machine: the default
# mode's first 500 Baby GPT steps bitwise equal run to run (checkpoint digests), and the Baby
# GPT's full 5000-step run per seed (best val, and `bitgrad eval` of the best checkpoint over the
# whole validation split). Logs under $OUT/quality_logs.tgz, summary in quality.txt.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
logs=/tmp/quality_logs && rm -rf $logs && mkdir -p $logs
summary=$out/quality.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $summary
for run in 1 2; do
  $bin train configs/shakespeare_char.yaml --set train.eval_interval=100000 --set train.eval_iters=1 \
    --set run.stop_after_steps=500 --set run.out_dir=/tmp/repro_$run > $logs/repro_$run.log 2>&1
done
echo "baby default mode, 500 steps: run 1 $(digest /tmp/repro_1/last.h5) | run 2 $(digest /tmp/repro_2/last.h5)" | tee -a $summary
# The full run once per seed (SEEDS, default three), each best checkpoint scored by `bitgrad
# eval` over the whole validation split; BASE=path also runs the earlier binary on the first seed.
for s in ${SEEDS:-1337 1338 1339}; do
  $bin train configs/shakespeare_char.yaml --set run.seed=$s --set run.out_dir=/tmp/baby_$s > $logs/baby_seed$s.log 2>&1
  echo "baby seed $s: rc=$? $(grep -oE 'best val loss [0-9.]+' $logs/baby_seed$s.log) | $(grep -oE '[0-9.]+ ms/step' $logs/baby_seed$s.log | tail -1) | eval: $($bin eval /tmp/baby_$s/best.h5 2>&1 | tail -1)" | tee -a $summary
  cp /tmp/baby_$s/metrics.csv $out/baby_seed${s}_metrics.csv 2>/dev/null
done
if [ -n "${BASE:-}" ]; then
  first=$(echo ${SEEDS:-1337} | cut -d' ' -f1)
  $BASE train configs/shakespeare_char.yaml --set run.seed=$first --set run.out_dir=/tmp/base_$first > $logs/base_seed$first.log 2>&1
  echo "base seed $first: $(grep -oE 'best val loss [0-9.]+' $logs/base_seed$first.log) | eval: $($BASE eval /tmp/base_$first/best.h5 2>&1 | tail -1)" | tee -a $summary
fi
tar -C $logs -czf $out/quality_logs.tgz .

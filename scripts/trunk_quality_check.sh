#!/usr/bin/env bash
# trunk_quality_check.sh: what a GPT trunk change must keep, on the GPU machine: the Baby GPT's
# full 5000-step run (best val), the default mode's first 500 Baby GPT steps bitwise equal run
# to run (checkpoint digests), and GPT-2 124M's check-determinism (2 runs of 5 steps, batch
# invariance, sampler = trainer). Logs under $OUT/quality_logs.tgz, summary in quality.txt.
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
$bin train configs/shakespeare_char.yaml --set run.out_dir=/tmp/baby_full > $logs/baby_full.log 2>&1
echo "baby full run: rc=$? $(grep -E '^step +5000/' $logs/baby_full.log) | best: $(grep -iE 'best' $logs/baby_full.log | tail -1)" | tee -a $summary
cp /tmp/baby_full/metrics.csv $out/baby_full_metrics.csv 2>/dev/null
tar -C $logs -czf $out/quality_logs.tgz .

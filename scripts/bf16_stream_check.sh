#!/usr/bin/env bash
# bf16_stream_check.sh: train.activations: bf16 (the residual stream in bf16) against the f32
# stream, one binary, on the GPU machine. PARTS (default "speed quality"):
#   speed:   GPT-2 124M (configs/gpt2_124m.yaml, bf16, B 16 x T 1024) 40 steps, the two streams
#            interleaved twice and once each under train.deterministic: median ms/step, losses
#            at steps 10/20/40, peak memory; the ncu breakdown of a step for each
#            (scripts/gpt2_breakdown.sh).
#   quality: GPT-2 500 steps for each stream (losses every 50 steps, val loss at 500), and the
#            Baby GPT's full run per seed (SEEDS, default three) for the bf16 stream plus the f32
#            stream on the first seed: best val and `bitgrad eval` of the best checkpoint over the
#            whole validation split.
# Summary in $OUT/bf16_stream.txt; logs and metrics CSVs in $OUT/bf16_stream_logs.tgz.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
logs=/tmp/bf16_stream_logs && rm -rf $logs && mkdir -p $logs
summary=$out/bf16_stream.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a $summary
[ -f /tmp/shards/train.bin ] || $bin prepare datasets/tinyshakespeare.txt --out /tmp/shards --gpt2-dir datasets/gpt2 > /dev/null
declare -A stream=([f32]="" [bf16]="--set train.activations=bf16")
peak() { grep -oE "peak [0-9.]+ MiB allocated" "$1" | tail -1; }
gpt2=(configs/gpt2_124m.yaml --set data.train_bin=/tmp/shards/train.bin --set data.val_bin=/tmp/shards/val.bin
      --set train.eval_iters=1 --set train.eval_interval=100000 --set schedule.warmup_steps=10)
if [[ " ${PARTS:-speed quality} " == *" speed "* ]]; then
  for rep in 1 2; do
    for s in f32 bf16; do
      $bin train "${gpt2[@]}" ${stream[$s]} --set train.log_interval=10 --set run.stop_after_steps=40 \
        --set run.out_dir=/tmp/g_$s > $logs/gpt2_${s}_$rep.log 2>&1
      echo "gpt2 $s stream rep $rep: rc=$? $(median_step_ms $logs/gpt2_${s}_$rep.log 1) ms/step; loss@10/20/40 $(losses '10|20|40' $logs/gpt2_${s}_$rep.log); $(peak $logs/gpt2_${s}_$rep.log)" | tee -a $summary
      declare "ms_$s=$(median_step_ms $logs/gpt2_${s}_$rep.log 1)"
    done
  done
  for s in f32 bf16; do
    $bin train "${gpt2[@]}" ${stream[$s]} --set train.deterministic=true --set train.log_interval=10 \
      --set run.stop_after_steps=40 --set run.out_dir=/tmp/gd_$s > $logs/gpt2_det_$s.log 2>&1
    echo "gpt2 $s stream deterministic: rc=$? $(median_step_ms $logs/gpt2_det_$s.log 1) ms/step; loss@10/20/40 $(losses '10|20|40' $logs/gpt2_det_$s.log)" | tee -a $summary
  done
  SETS_bf16stream="${stream[bf16]}" BINS="f32stream=$bin:$ms_f32 bf16stream=$bin:$ms_bf16" \
    scripts/gpt2_breakdown.sh 2>&1 | tail -50
fi
if [[ " ${PARTS:-speed quality} " == *" quality "* ]]; then
  for s in f32 bf16; do
    $bin train "${gpt2[@]}" ${stream[$s]} --set train.log_interval=50 --set train.eval_interval=500 \
      --set train.eval_iters=20 --set run.stop_after_steps=500 --set run.out_dir=/tmp/g500_$s > $logs/gpt2_500_$s.log 2>&1
    echo "gpt2 $s stream 500 steps: rc=$? loss@50..500 $(losses '50|100|150|200|250|300|350|400|450|500' $logs/gpt2_500_$s.log)| $(grep -oE 'val [0-9.]+' $logs/gpt2_500_$s.log | tail -1)" | tee -a $summary
    cp /tmp/g500_$s/metrics.csv $logs/gpt2_500_${s}_metrics.csv 2>/dev/null
  done
  first=$(echo ${SEEDS:-1337 1338 1339} | cut -d' ' -f1)
  for run in "bf16 ${SEEDS:-1337 1338 1339}" "f32 $first"; do
    s=${run%% *}
    for seed in ${run#* }; do
      $bin train configs/shakespeare_char.yaml ${stream[$s]} --set run.seed=$seed --set run.out_dir=/tmp/baby_${s}_$seed > $logs/baby_${s}_$seed.log 2>&1
      echo "baby $s stream seed $seed: rc=$? $(grep -oE 'best val loss [0-9.]+' $logs/baby_${s}_$seed.log) | $(median_step_ms $logs/baby_${s}_$seed.log) ms/step | eval: $($bin eval /tmp/baby_${s}_$seed/best.h5 2>&1 | tail -1)" | tee -a $summary
      cp /tmp/baby_${s}_$seed/metrics.csv $logs/baby_${s}_seed${seed}_metrics.csv 2>/dev/null
    done
  done
fi
tar -C $logs -czf $out/bf16_stream_logs.tgz .

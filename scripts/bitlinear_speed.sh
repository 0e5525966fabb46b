#!/usr/bin/env bash
# bitlinear_speed.sh: BitNet b1.58 training against dense bf16 training in one GPU call, the
# BitLinear targets' measurement: GPT-2 124M (configs/gpt2_124m.yaml against
# configs/gpt2_124m_bitnet.yaml, B 16 x T 1024, 40 steps) and the Baby GPT
# (configs/shakespeare_char.yaml against configs/shakespeare_char_bitnet.yaml, 400 steps),
# interleaved twice: median ms/step, losses, the trainer's peak allocated memory. BASE=binary
# (or BASE.gz, BASE.xz) adds the BitNet runs of an earlier build (the bundle's libraries) for before/after; then
# `bitgrad bench bitlinear --part training` and, with BREAKDOWN=1, the ncu kernel breakdown of
# the GPT-2 BitNet step (scripts/gpt2_breakdown.sh). Under $OUT: bitlinear_speed.txt, the
# bench JSON and the logs (bitlinear_speed_logs.tgz).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
new=.bundle/bitgrad
base=${BASE:-}
if [ -n "$base" ]; then
  [ -f "$base" ] || { [ -f "$base.gz" ] && gunzip -kf "$base.gz"; }
  [ -f "$base" ] || { [ -f "$base.xz" ] && xz -dkf "$base.xz"; }
  chmod +x "$base"
fi
logs=/tmp/bitlinear_speed_logs && rm -rf $logs && mkdir -p $logs
summary=$out/bitlinear_speed.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $summary
$new prepare datasets/tinyshakespeare.txt --out /tmp/shards --gpt2-dir datasets/gpt2 > /dev/null
memory() { grep -oE 'peak [0-9.]+ MiB allocated' "$1"; }
quiet=(--set train.eval_iters=1 --set train.eval_interval=100000)
gpt2=(--set data.train_bin=/tmp/shards/train.bin --set data.val_bin=/tmp/shards/val.bin
      --set schedule.warmup_steps=10 --set train.log_interval=10 --set run.stop_after_steps=40)
baby=(--set data.path=datasets/tinyshakespeare.txt --set train.log_interval=50
      --set run.stop_after_steps=400)
run() {  # run LABEL BINARY CONFIG ARGS...: one measured run, one summary line
  local label=$1 bin=$2 cfg=$3; shift 3
  local log=$logs/$label.log
  $bin train configs/$cfg.yaml "${quiet[@]}" "$@" --set run.out_dir=/tmp/run_$label > $log 2>&1
  local rc=$?
  local at="10|20|40"; [[ $cfg == shakespeare* ]] && at="100|200|400"
  echo "$label: rc=$rc $(median_step_ms $log 1) ms/step; loss@${at//|//} $(losses "$at" $log); $(memory $log)" |
    tee -a $summary
}
for rep in 1 2; do
  run gpt2_dense_$rep $new gpt2_124m "${gpt2[@]}"
  run gpt2_bitnet_$rep $new gpt2_124m_bitnet "${gpt2[@]}"
  [ -n "$base" ] && run gpt2_bitnet_base_$rep $base gpt2_124m_bitnet "${gpt2[@]}"
done
for rep in 1 2; do
  run baby_dense_$rep $new shakespeare_char "${baby[@]}"
  run baby_bitnet_$rep $new shakespeare_char_bitnet "${baby[@]}"
  [ -n "$base" ] && run baby_bitnet_base_$rep $base shakespeare_char_bitnet "${baby[@]}"
done
$new bench bitlinear --part training --out $out/bench_bitlinear_training.json > $logs/bench.log 2>&1
cat $logs/bench.log >> $summary
if [ -n "${BREAKDOWN:-}" ]; then
  ms=$(median_step_ms $logs/gpt2_bitnet_2.log 1)
  MODEL=gpt2_bitnet BINS="bitnet=$new:$ms" scripts/gpt2_breakdown.sh > $logs/breakdown.log 2>&1
  head -40 $logs/breakdown.log >> $summary
fi
tar -C $logs -czf $out/bitlinear_speed_logs.tgz . && rm -rf $logs

#!/usr/bin/env bash
# data_parallel_scale.sh: on a machine with GPUS (default 4) GPUs: under train.deterministic the
# GPUS-GPU checkpoint equals the 1-GPU one at the same global batch (train.grad_accum = GPUS;
# baby GPT 50 steps, GPT-2 124M 20 steps), and the default mode's speed-up at the same per-GPU
# batch. Under $OUT: scale.txt, scale_runs.tgz.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
G=${GPUS:-4}
logs=/tmp/scale_logs && rm -rf $logs && mkdir -p $logs
summary="$out/scale.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$summary"
$bin prepare datasets/tinyshakespeare.txt --out /tmp/shards --gpt2-dir datasets/gpt2 > /dev/null
run() { local name=$1; shift; "$@" > $logs/$name.log 2>&1; echo "$name: rc=$? $(median_step_ms $logs/$name.log) ms/step" | tee -a "$summary"; }
common=(--set train.eval_iters=1 --set schedule.warmup_steps=10 --set train.log_interval=10)
baby=(configs/shakespeare_char.yaml "${common[@]}")
gpt2=(configs/gpt2_124m.yaml "${common[@]}" --set data.train_bin=/tmp/shards/train.bin --set data.val_bin=/tmp/shards/val.bin)
det=(--set train.deterministic=true --set train.grad_accum=$G)
run baby_det_1gpu $bin train "${baby[@]}" "${det[@]}" --set train.steps=50 --set train.eval_interval=50 --set run.out_dir=/tmp/b1
run baby_det_${G}gpu $bin launch --gpus $G "${baby[@]}" "${det[@]}" --set train.steps=50 --set train.eval_interval=50 --set run.out_dir=/tmp/bn
echo "baby 50 steps: 1 GPU $(digest /tmp/b1/last.h5) | $G GPUs $(digest /tmp/bn/last.h5)" | tee -a "$summary"
run gpt2_det_1gpu $bin train "${gpt2[@]}" "${det[@]}" --set train.steps=20 --set train.eval_interval=20 --set run.out_dir=/tmp/g1
run gpt2_det_${G}gpu $bin launch --gpus $G "${gpt2[@]}" "${det[@]}" --set train.steps=20 --set train.eval_interval=20 --set run.out_dir=/tmp/gn
echo "gpt2 20 steps: 1 GPU $(digest /tmp/g1/last.h5) | $G GPUs $(digest /tmp/gn/last.h5)" | tee -a "$summary"
gs=(--set train.steps=60 --set train.eval_interval=60 --set run.out_dir=/tmp/speed)
run gpt2_1gpu $bin train "${gpt2[@]}" "${gs[@]}"
run gpt2_${G}gpu $bin launch --gpus $G "${gpt2[@]}" "${gs[@]}" --set train.grad_accum=$G
tar -C $logs -czf "$out/scale_runs.tgz" .

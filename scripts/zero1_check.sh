#!/usr/bin/env bash
# zero1_check.sh: on a machine with two or more GPUs, train.shard_optimizer (ZeRO-1) on the
# GPUs: (1) under train.deterministic, 2 GPUs with the optimizer sharded give the checkpoint
# bits of 1 GPU (baby GPT 50 steps, GPT-2 124M 20 steps, train.grad_accum 2); (2) a sharded
# 2-GPU run stopped and resumed gives the uninterrupted bits; (3) speed and peak memory of
# GPT-2 124M on 2 GPUs, sharded against not (same per-GPU batch). Under $OUT: zero1.txt, logs.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
logs=/tmp/zero1_logs && rm -rf $logs && mkdir -p $logs
summary="$out/zero1.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$summary"
$bin prepare datasets/tinyshakespeare.txt --out /tmp/shards --gpt2-dir datasets/gpt2 > /dev/null
peak() { grep -oE 'peak [0-9.]+ MiB' "$1" | head -1; }
run() {  # run NAME CMD...
  local name=$1; shift
  "$@" > $logs/$name.log 2>&1
  echo "$name: rc=$? $(median_step_ms $logs/$name.log) ms/step, $(peak $logs/$name.log)" | tee -a "$summary"
}
baby=(configs/shakespeare_char.yaml --set train.eval_iters=1 --set schedule.warmup_steps=10)
gpt2=(configs/gpt2_124m.yaml --set data.train_bin=/tmp/shards/train.bin
      --set data.val_bin=/tmp/shards/val.bin --set train.eval_iters=1 --set schedule.warmup_steps=10)
det=(--set train.deterministic=true --set train.grad_accum=2 --set train.log_interval=10)
zero=(--set train.shard_optimizer=true)

echo "== bits: 1 GPU vs 2 GPUs with the optimizer sharded, train.deterministic" | tee -a "$summary"
run baby_1gpu $bin train "${baby[@]}" "${det[@]}" --set train.steps=50 --set train.eval_interval=50 --set run.out_dir=/tmp/b1
run baby_2gpu_zero $bin launch --gpus 2 "${baby[@]}" "${det[@]}" "${zero[@]}" --set train.steps=50 --set train.eval_interval=50 --set run.out_dir=/tmp/b2
run baby_2gpu_zero_stop $bin launch --gpus 2 "${baby[@]}" "${det[@]}" "${zero[@]}" --set train.steps=50 --set train.eval_interval=50 --set run.stop_after_steps=20 --set run.out_dir=/tmp/b3
run baby_2gpu_zero_resume $bin launch --gpus 2 "${baby[@]}" "${det[@]}" "${zero[@]}" --set train.steps=50 --set train.eval_interval=50 --set run.resume=true --set run.out_dir=/tmp/b3
echo "baby 50 steps: 1 GPU $(digest /tmp/b1/last.h5) | 2 GPUs sharded $(digest /tmp/b2/last.h5) | stopped at 20 and resumed $(digest /tmp/b3/last.h5)" | tee -a "$summary"
run gpt2_1gpu $bin train "${gpt2[@]}" "${det[@]}" --set train.steps=20 --set train.eval_interval=20 --set run.out_dir=/tmp/g1
run gpt2_2gpu_zero $bin launch --gpus 2 "${gpt2[@]}" "${det[@]}" "${zero[@]}" --set train.steps=20 --set train.eval_interval=20 --set run.out_dir=/tmp/g2
echo "gpt2 20 steps: 1 GPU $(digest /tmp/g1/last.h5) | 2 GPUs sharded $(digest /tmp/g2/last.h5)" | tee -a "$summary"
rm -rf /tmp/b1 /tmp/b2 /tmp/b3 /tmp/g1 /tmp/g2

echo "== GPT-2 124M, 2 GPUs, grad_accum 2: sharded or not (default mode, 100 steps)" | tee -a "$summary"
gs=(--set train.steps=100 --set train.eval_interval=100 --set train.log_interval=25 --set run.out_dir=/tmp/speed)
run gpt2_2gpu_plain $bin launch --gpus 2 "${gpt2[@]}" "${gs[@]}" --set train.grad_accum=2
run gpt2_2gpu_sharded $bin launch --gpus 2 "${gpt2[@]}" "${gs[@]}" --set train.grad_accum=2 "${zero[@]}"
tar -C $logs -czf "$out/zero1_runs.tgz" .

#!/usr/bin/env bash
# data_parallel_check.sh: on a machine with two or more GPUs, the data-parallel measurements:
# (1) under train.deterministic, 2 GPUs give the checkpoint bits of 1 GPU at the same global
# batch (baby GPT 50 steps, GPT-2 124M 20 steps, both with train.grad_accum 2); (2) speed: one
# GPU against two at the same per-GPU batch, default and deterministic mode (baby GPT and
# GPT-2 124M); (3) a rank killed mid-run ends the launch in bounded time. NCCL comes from
# PyTorch's wheel where no system NCCL is found (device_env.sh). Under $OUT: summary.txt, runs.tgz (every log).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
logs=/tmp/dp_logs && rm -rf $logs && mkdir -p $logs
summary="$out/summary.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt" > "$summary"
echo "NCCL: ${BITGRAD_NCCL_LIB:-system}" | tee -a "$summary"
$bin prepare datasets/tinyshakespeare.txt --out /tmp/shards --gpt2-dir datasets/gpt2 > /dev/null
run() {  # run NAME CMD...
  local name=$1; shift
  "$@" > $logs/$name.log 2>&1
  echo "$name: rc=$? $(median_step_ms $logs/$name.log) ms/step" | tee -a "$summary"
}
baby=(configs/shakespeare_char.yaml --set train.eval_iters=1 --set schedule.warmup_steps=10)
gpt2=(configs/gpt2_124m.yaml --set data.train_bin=/tmp/shards/train.bin
      --set data.val_bin=/tmp/shards/val.bin --set train.eval_iters=1 --set schedule.warmup_steps=10)

echo "== bits: 1 GPU vs 2 GPUs, train.deterministic, the same global batch" | tee -a "$summary"
det=(--set train.deterministic=true --set train.grad_accum=2 --set train.log_interval=10)
run baby_det_1gpu $bin train "${baby[@]}" "${det[@]}" --set train.steps=50 --set train.eval_interval=50 --set run.out_dir=/tmp/b1
run baby_det_2gpu $bin launch --gpus 2 "${baby[@]}" "${det[@]}" --set train.steps=50 --set train.eval_interval=50 --set run.out_dir=/tmp/b2
echo "baby 50 steps: 1 GPU $(digest /tmp/b1/last.h5) | 2 GPUs $(digest /tmp/b2/last.h5)" | tee -a "$summary"
run gpt2_det_1gpu $bin train "${gpt2[@]}" "${det[@]}" --set train.steps=20 --set train.eval_interval=20 --set run.out_dir=/tmp/g1
run gpt2_det_2gpu $bin launch --gpus 2 "${gpt2[@]}" "${det[@]}" --set train.steps=20 --set train.eval_interval=20 --set run.out_dir=/tmp/g2
echo "gpt2 20 steps: 1 GPU $(digest /tmp/g1/last.h5) | 2 GPUs $(digest /tmp/g2/last.h5)" | tee -a "$summary"
rm -rf /tmp/b1 /tmp/b2 /tmp/g1 /tmp/g2

echo "== speed: the same per-GPU batch (1 GPU: grad_accum 1; 2 GPUs: grad_accum 2)" | tee -a "$summary"
speed=(--set train.log_interval=25 --set run.out_dir=/tmp/speed)
bs=(--set train.steps=400 --set train.eval_interval=400)
gs=(--set train.steps=100 --set train.eval_interval=100)
for mode in false true; do
  run baby_1gpu_det_$mode $bin train "${baby[@]}" "${bs[@]}" "${speed[@]}" --set train.deterministic=$mode
  run baby_2gpu_det_$mode $bin launch --gpus 2 "${baby[@]}" "${bs[@]}" "${speed[@]}" --set train.deterministic=$mode --set train.grad_accum=2
  run gpt2_1gpu_det_$mode $bin train "${gpt2[@]}" "${gs[@]}" "${speed[@]}" --set train.deterministic=$mode
  run gpt2_2gpu_det_$mode $bin launch --gpus 2 "${gpt2[@]}" "${gs[@]}" "${speed[@]}" --set train.deterministic=$mode --set train.grad_accum=2
done

echo "== fault: rank 1 killed 20 s into a GPT-2 run" | tee -a "$summary"
$bin launch --gpus 2 "${gpt2[@]}" --set train.grad_accum=2 --set train.steps=5000 --set run.out_dir=/tmp/fault > $logs/fault.log 2>&1 &
launcher=$!
sleep 20
victim=$(pgrep -P $launcher | sort -n | tail -1)
t0=$(date +%s.%N)
kill -KILL "$victim"
wait $launcher
rc=$?
echo "fault: launcher rc=$rc, $(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{printf "%.1f", b-a}') s after the kill; $(grep -E 'bitgrad' $logs/fault.log | tr '\n' '|')" | tee -a "$summary"
tar -C $logs -czf "$out/runs.tgz" .

#!/usr/bin/env bash
# data_parallel_overlap.sh: on a machine with two GPUs, whether the gradient sums should overlap
# the backward: one GPU against two (default mode, the same per-GPU batch) for the baby GPT and
# GPT-2 124M, with the sums after the backward (BITGRAD_DIST_OVERLAP=0) and overlapped per
# bucket with NCCL's default channel count and with fewer channels (fewer SMs taken from the
# backward's kernels). Under $OUT: overlap.txt, overlap_runs.tgz.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
logs=/tmp/ov_logs && rm -rf $logs && mkdir -p $logs
summary="$out/overlap.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$summary"
[ -f /tmp/shards/train.bin ] || $bin prepare datasets/tinyshakespeare.txt --out /tmp/shards --gpt2-dir datasets/gpt2 > /dev/null
run() {  # run NAME CMD...
  local name=$1; shift
  "$@" > $logs/$name.log 2>&1
  echo "$name: rc=$? $(median_step_ms $logs/$name.log) ms/step" | tee -a "$summary"
}
common=(--set train.eval_iters=1 --set schedule.warmup_steps=10 --set train.log_interval=25 --set run.out_dir=/tmp/ov)
baby=(configs/shakespeare_char.yaml "${common[@]}" --set train.steps=400 --set train.eval_interval=400)
gpt2=(configs/gpt2_124m.yaml "${common[@]}" --set data.train_bin=/tmp/shards/train.bin
      --set data.val_bin=/tmp/shards/val.bin --set train.steps=100 --set train.eval_interval=100)
for model in baby gpt2; do
  declare -n cfg=$model
  run ${model}_1gpu $bin train "${cfg[@]}"
  BITGRAD_DIST_OVERLAP=0 run ${model}_2gpu_after $bin launch --gpus 2 "${cfg[@]}" --set train.grad_accum=2
  run ${model}_2gpu_overlap $bin launch --gpus 2 "${cfg[@]}" --set train.grad_accum=2
  for ch in 8 4 2; do
    NCCL_MAX_NCHANNELS=$ch run ${model}_2gpu_overlap_${ch}ch $bin launch --gpus 2 "${cfg[@]}" --set train.grad_accum=2
  done
  run ${model}_1gpu_again $bin train "${cfg[@]}"
done
tar -C $logs -czf "$out/overlap_runs.tgz" .

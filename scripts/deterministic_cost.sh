#!/usr/bin/env bash
# deterministic_cost.sh: on the GPU machine, what train.deterministic costs GPT-2 124M (bf16,
# B 16 x T 1024): 40 steps in the default mode and under train.deterministic, interleaved twice
# (median ms/step after the first logged step, losses at steps 10/20/40), then the deterministic
# GPT-2 record checked against the H200 table (check-determinism --compare: a change that
# should keep the mode's bits must give the table's). Under $OUT: deterministic_cost.txt, logs.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=${BIN:-.bundle/bitgrad}
table=${TABLE:-bench/results/determinism_cross_gpu/h200_table}
sum=$out/deterministic_cost.txt
logs=$out/deterministic_logs && mkdir -p $logs
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $sum
$bin prepare datasets/tinyshakespeare.txt --out /tmp/shards --gpt2-dir datasets/gpt2 > /dev/null
for rep in 1 2; do
  for det in false true; do
    log=$logs/gpt2_det_${det}_$rep.log
    $bin train "${gpt2_40[@]}" --set train.deterministic=$det --set run.out_dir=/tmp/dc_$det > $log 2>&1
    echo "gpt2 deterministic=$det rep $rep: rc=$? $(median_step_ms $log 1) ms/step; loss@10/20/40 $(losses '10|20|40' $log)" | tee -a $sum
    rm -rf /tmp/dc_$det
  done
done
name=gpt2_124m_bf16_10
$bin check-determinism configs/gpt2_124m.yaml --set data.train_bin=/tmp/shards/train.bin \
  --set data.val_bin=/tmp/shards/val.bin --set train.eval_iters=1 --runs 2 --steps 10 \
  --out /tmp/chk_$name --record $logs/$name.txt --compare $table/$name.txt > $logs/$name.log 2>&1
echo "$name: rc=$? | $(grep -E '^(run to run|against record|batch invariance|sampler)' $logs/$name.log |
  cut -c1-40 | tr -s ' ' | tr '\n' '|')" | tee -a $sum

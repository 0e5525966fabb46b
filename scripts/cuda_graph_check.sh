#!/usr/bin/env bash
# cuda_graph_check.sh: on the GPU machine, what train.cuda_graph buys a GPT step: GPT-2 124M
# (B 16 x T 1024, 40 steps; the f32 and the bf16 residual stream) and the Baby GPT (its dropout
# set to 0 for both runs, 300 steps), eager and captured, interleaved twice; the median ms/step
# after the first logged interval and the losses (a replayed step gives the eager step's bits, so
# they must be equal). Then the test case comparing the two on a small GPT. Under $OUT:
# cuda_graph.txt and cuda_graph_logs.tgz.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
sum=$out/cuda_graph.txt
logs=$out/cuda_graph_logs && mkdir -p $logs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $sum
$bin prepare datasets/tinyshakespeare.txt --out /tmp/shards --gpt2-dir datasets/gpt2 > /dev/null
baby=(configs/shakespeare_char.yaml --set model.dropout=0 --set train.eval_iters=1
      --set train.eval_interval=100000 --set schedule.warmup_steps=10 --set train.log_interval=50
      --set run.stop_after_steps=300)
for rep in 1 2; do
  for graph in false true; do
    for act in fp32 bf16; do
      log=$logs/gpt2_${act}_graph_${graph}_$rep.log
      $bin train "${gpt2_40[@]}" --set train.activations=$act --set train.cuda_graph=$graph \
        --set run.out_dir=/tmp/cg > $log 2>&1
      echo "gpt2 $act stream, cuda_graph=$graph, rep $rep: rc=$? $(median_step_ms $log 1) ms/step; loss@10/20/40 $(losses '10|20|40' $log)" | tee -a $sum
      rm -rf /tmp/cg
    done
    log=$logs/baby_graph_${graph}_$rep.log
    $bin train "${baby[@]}" --set train.cuda_graph=$graph --set run.out_dir=/tmp/cgb > $log 2>&1
    echo "baby (dropout 0), cuda_graph=$graph, rep $rep: rc=$? $(median_step_ms $log 1) ms/step; loss@50/300 $(losses '50|300' $log)" | tee -a $sum
    rm -rf /tmp/cgb
  done
done
.bundle/bitgrad_tests -tc="*CUDA graph*" 2>&1 | grep -E "ERROR|CHECK|test cases|assertions" | tee -a $sum
tar -C $logs -czf $out/cuda_graph_logs.tgz . && rm -rf $logs  # the device returns at most 8 files

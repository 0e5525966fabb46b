#!/usr/bin/env bash
# ncu_int8_gemm.sh: ncu's view of the int8 product as a GPT-2 124M BitNet step runs it: the four
# int8_gemm_tma_kernel launches of layer 0 in step 10 (c_attn, attn.proj, c_fc, mlp.proj), with
# the throughput, warp-state, scheduler, compute and instruction sections, for each binary of
# BINS ("label=binary ..."); with SOURCE=1 also the per-SASS-instruction source counters of the
# first binary's c_fc launch. On the GPU machine; writes $out/ncu_int8_<label>.txt (and
# ncu_int8_source_<label>.csv).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -x "$ncu" ] || { echo "ncu_int8_gemm: no ncu on this machine"; exit 1; }
[ -f /tmp/shards/train.bin ] || .bundle/bitgrad prepare datasets/tinyshakespeare.txt --out /tmp/shards --gpt2-dir datasets/gpt2 > /dev/null
run=(train configs/gpt2_124m_bitnet.yaml --set data.train_bin=/tmp/shards/train.bin
     --set data.val_bin=/tmp/shards/val.bin --set train.eval_iters=1
     --set train.eval_interval=100000 --set schedule.warmup_steps=10 --set run.stop_after_steps=11)
sections=(--section SpeedOfLight --section WarpStateStats --section SchedulerStats
          --section ComputeWorkloadAnalysis --section InstructionStats --section Occupancy)
first=""
for pair in ${BINS:-current=.bundle/bitgrad}; do
  label=${pair%%=*} bin=${pair#*=}
  [ -z "$first" ] && first=$label
  BITGRAD_PROFILE_STEPS=10:1 "$ncu" --profile-from-start off --clock-control none \
    --kernel-name regex:int8_gemm_tma --launch-count 4 "${sections[@]}" \
    $bin "${run[@]}" --set run.out_dir=/tmp/ncu_run_$label > "$out/ncu_int8_$label.txt" 2>&1
  if [ -n "${SOURCE:-}" ] && [ "$label" = "$first" ]; then
    BITGRAD_PROFILE_STEPS=10:1 "$ncu" --profile-from-start off --clock-control none \
      --kernel-name regex:int8_gemm_tma --launch-skip 2 --launch-count 1 \
      --section SourceCounters --import-source no -f -o /tmp/ncu_src_$label \
      $bin "${run[@]}" --set run.out_dir=/tmp/ncu_run_src > /dev/null 2>&1
    "$ncu" -i /tmp/ncu_src_$label.ncu-rep --page source --csv --print-source sass \
      > "$out/ncu_int8_source_$label.csv" 2>&1
  fi
done

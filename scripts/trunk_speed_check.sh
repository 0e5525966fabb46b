#!/usr/bin/env bash
# trunk_speed_check.sh: one GPU call measuring a change to the GPT trunk against the binary
# before it (BASE, default build-base/bitgrad_base(.gz), with the bundle's libraries):
# (1) GPT-2 124M (bf16, B 16 x T 1024) 40 steps, base and new interleaved twice, default mode,
# and once each under train.deterministic: median ms/step and the losses at steps 10/20/40;
# (2) the Baby GPT 300 steps, base and new; (3) the nsys breakdown of a GPT-2 step for both
# (scripts/gpt2_breakdown.sh); (4) `bitgrad bench attention` beside PyTorch's SDPA backends
# (scripts/torch_sdpa_baseline.py). Logs and JSON under $OUT.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
base=${BASE:-build-base/bitgrad_base}
[ -f "$base" ] || { [ -f "$base.gz" ] && gunzip -kf "$base.gz"; }
[ -f "$base" ] || { [ -f "$base.xz" ] && unxz -kf "$base.xz"; }
chmod +x "$base"
new=.bundle/bitgrad
logs=$out/trunk_logs && mkdir -p $logs
summary=$out/trunk_summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $summary
$new prepare datasets/tinyshakespeare.txt --out /tmp/shards --gpt2-dir datasets/gpt2 > /dev/null
for rep in 1 2; do
  for which in base new; do
    bin=$base; [ $which = new ] && bin=$new
    $bin train "${gpt2_40[@]}" --set run.out_dir=/tmp/g_$which > $logs/gpt2_${which}_$rep.log 2>&1
    echo "gpt2 $which rep $rep: rc=$? $(median_step_ms $logs/gpt2_${which}_$rep.log 1) ms/step; loss@10/20/40 $(losses '10|20|40' $logs/gpt2_${which}_$rep.log)" | tee -a $summary
    declare "ms_$which=$(median_step_ms $logs/gpt2_${which}_$rep.log 1)"
  done
done
for which in base new; do
  bin=$base; [ $which = new ] && bin=$new
  $bin train "${gpt2_40[@]}" --set train.deterministic=true --set run.out_dir=/tmp/gd_$which > $logs/gpt2_det_$which.log 2>&1
  echo "gpt2 deterministic $which: rc=$? $(median_step_ms $logs/gpt2_det_$which.log 1) ms/step; loss@10/20/40 $(losses '10|20|40' $logs/gpt2_det_$which.log)" | tee -a $summary
done
baby=(configs/shakespeare_char.yaml --set train.eval_iters=1 --set train.eval_interval=100000
      --set schedule.warmup_steps=10 --set train.log_interval=50 --set run.stop_after_steps=300)
for which in base new; do
  bin=$base; [ $which = new ] && bin=$new
  $bin train "${baby[@]}" --set run.out_dir=/tmp/b_$which > $logs/baby_$which.log 2>&1
  echo "baby $which: rc=$? $(median_step_ms $logs/baby_$which.log 1) ms/step" | tee -a $summary
done
# SKIP_BREAKDOWN=1: step times only (a short call)
[ -z "${SKIP_BREAKDOWN:-}" ] && BINS="base=$base:$ms_base new=$new:$ms_new" scripts/gpt2_breakdown.sh 2>&1 | tail -60
if [ -z "${SKIP_ATTENTION:-}" ]; then  # SKIP_ATTENTION=1: a change that leaves attention alone
  $new bench attention --out $out/attention_bitgrad.json > $logs/attention_bitgrad.log 2>&1; tail -8 $logs/attention_bitgrad.log
  python3 scripts/torch_sdpa_baseline.py $out/attention_torch_sdpa.json 30 2>&1 | tail -8
fi
tar -C $logs -czf $out/trunk_logs.tgz . && rm -rf $logs

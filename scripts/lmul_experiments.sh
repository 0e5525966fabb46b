#!/usr/bin/env bash
# lmul_experiments.sh: issue 17's grid on the baby GPT (configs/shakespeare_char_lmul.yaml) at
# STEPS steps (default 800; the LR schedule spans them): standard fp32 (STANDARD=1), then for each
# of WIDTHS (default "23 7 4 3"): L-Mul in attention only, everywhere forward only (exact
# backward), everywhere forward and backward. Under $OUT: summary.txt and runs.tgz (every run's
# log and metrics.csv, those of earlier calls on the same machine too).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
steps=${STEPS:-800}
common=(--set data.path=runs/data/tinyshakespeare.txt --set train.steps=$steps
        --set train.eval_interval=200 --set train.eval_iters=50 --set train.log_interval=100)
run() {  # run NAME CONFIG ARGS...
  local name=$1 cfg=$2; shift 2
  mkdir -p /tmp/lm_$name
  .bundle/bitgrad train configs/$cfg.yaml "${common[@]}" --set run.out_dir=/tmp/lm_$name "$@" > /tmp/lm_$name/train.log 2>&1
  local rc=$?
  echo "$name rc=$rc: $(grep -E "^step +$steps/|best val" /tmp/lm_$name/train.log | tr '\n' ' ')" | tee -a $out/summary.txt
}
# The same recipe with exact multiplies: shakespeare_char.yaml in fp32 with composed attention.
[ -n "${STANDARD:-}" ] && run standard shakespeare_char --set train.precision=fp32 --set model.attention=composed
for m in ${WIDTHS:-23 7 4 3}; do
  run attn_m$m shakespeare_char_lmul --set lmul.mantissa_bits=$m --set lmul.scope=attention
  run fwd_m$m shakespeare_char_lmul --set lmul.mantissa_bits=$m --set lmul.backward=exact
  run all_m$m shakespeare_char_lmul --set lmul.mantissa_bits=$m
done
tar -C /tmp -czf $out/runs.tgz $(cd /tmp && ls -d lm_*/train.log lm_*/metrics.csv 2>/dev/null)

#!/usr/bin/env bash
# lmul_experiments.sh: issue 17's grid on the baby GPT (configs/shakespeare_char_lmul.yaml), run
# on the device machine. Each run is named:
#   standard        exact fp32 (shakespeare_char.yaml in fp32 with composed attention);
#   attn_mM         L-Mul in attention only, at M mantissa bits;
#   fwd_mM          L-Mul everywhere, forward only (exact backward);
#   all_mM          L-Mul everywhere, forward and backward.
# RUNS picks them (default: the whole grid, standard then M = 23 7 4 3). STEPS (default 800) is the
# schedule's length; EVAL_INTERVAL (200) and EVAL_ITERS (50) the evals. TIMING=1 stops every run
# after 150 steps with no evals, for ms/step. RUN_LIMIT (seconds, default none) stops a run that
# would outlast a device call; its metrics so far are kept. Under $OUT: summary.txt and runs.tgz
# (every run's log and metrics.csv, those of earlier calls on the same machine too).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
steps=${STEPS:-800}
common=(--set data.path=runs/data/tinyshakespeare.txt --set train.steps=$steps
        --set train.eval_interval=${EVAL_INTERVAL:-200} --set train.eval_iters=${EVAL_ITERS:-50}
        --set train.log_interval=50)
[ -n "${TIMING:-}" ] && common+=(--set run.stop_after_steps=150 --set train.eval_interval=1000000
                                 --set train.eval_iters=1)
grid="standard"
for m in 23 7 4 3; do grid+=" attn_m$m fwd_m$m all_m$m"; done
for name in ${RUNS:-$grid}; do
  case $name in
    standard) args=(shakespeare_char --set train.precision=fp32 --set model.attention=composed) ;;
    attn_m*) args=(shakespeare_char_lmul --set lmul.mantissa_bits=${name#attn_m} --set lmul.scope=attention) ;;
    fwd_m*) args=(shakespeare_char_lmul --set lmul.mantissa_bits=${name#fwd_m} --set lmul.backward=exact) ;;
    all_m*) args=(shakespeare_char_lmul --set lmul.mantissa_bits=${name#all_m}) ;;
    *) echo "lmul_experiments.sh: unknown run '$name'" >&2; exit 2 ;;
  esac
  dir=/tmp/lm_$name
  mkdir -p $dir
  timeout ${RUN_LIMIT:-0} .bundle/bitgrad train configs/${args[0]}.yaml "${common[@]}" \
    "${args[@]:1}" --set run.out_dir=$dir > $dir/train.log 2>&1
  rc=$?
  echo "$name steps=$steps rc=$rc: $(grep -E "^step +[0-9]+/" $dir/train.log | tail -1) $(grep -oE "best val loss [0-9.]+" $dir/train.log)" |
    tee -a $out/summary.txt
done
tar -C /tmp -czf $out/runs.tgz $(cd /tmp && ls -d lm_*/train.log lm_*/metrics.csv 2>/dev/null)

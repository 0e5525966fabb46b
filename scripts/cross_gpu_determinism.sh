#!/usr/bin/env bash
# cross_gpu_determinism.sh: on a GPU machine, the runs whose bits must not depend on which GPU
# model runs them (train.deterministic), each recorded with `check-determinism --record` (and,
# with REF=DIR holding another machine's records, compared with `--compare`): the baby GPT in
# fp32, tf32 and bf16 (composed and fused attention; fused with the bf16 residual stream of
# train.activations) after 1 and 100 steps, the BitNet and L-Mul configs, GPT-2 124M in bf16
# (the f32 and the bf16 stream) after 10 steps, and fit-bide's checkpoint. A run without a record
# in REF is recorded only. Run it on two GPU
# models with the same bundle and compare the records (diff, or REF=).
#   ONLY="a b"   only the checks named (fit_bide among them for the fit)
#   GEMM_LOG=1   also append every deterministic GEMM algorithm choice to $OUT/gemm_algos.txt
#                (with BITGRAD_GEMM_TABLE=0: the heuristic's, which is how the table is made)
# Under $OUT: records.tgz (one NAME.txt per run), summary.txt (one line per run), gpu.txt.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
rec=/tmp/records && rm -rf $rec && mkdir -p $rec
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
[ -n "${GEMM_LOG:-}" ] && export BITGRAD_GEMM_ALGO_LOG="$out/gemm_algos.txt"
$bin prepare datasets/tinyshakespeare.txt --out /tmp/shards --gpt2-dir datasets/gpt2 > /dev/null
summary="$out/summary.txt"
: > "$summary"
check() {  # check NAME STEPS CONFIG [--set ...]
  local name=$1 steps=$2; shift 2
  # ONLY="NAME ..." runs those checks alone (and fit-bide only when it names fit_bide).
  [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $name "* ]] || return 0
  local cmp=()
  [ -n "${REF:-}" ] && [ -f "$REF/$name.txt" ] && cmp=(--compare "$REF/$name.txt")
  $bin check-determinism "$@" --runs 2 --steps "$steps" --out /tmp/chk_$name \
    --record $rec/$name.txt "${cmp[@]}" > $rec/$name.log 2>&1
  local rc=$?
  echo "$name: rc=$rc | $(grep -E '^(run to run|against record|batch invariance|sampler)' $rec/$name.log |
    cut -c1-26 | tr -s ' ' | tr '\n' '|')" | tee -a "$summary"
  rm -rf /tmp/chk_$name
}
baby=(configs/shakespeare_char.yaml --set train.eval_iters=1)
for steps in 1 100; do
  check baby_fp32_$steps $steps "${baby[@]}" --set train.precision=fp32 --set model.attention=composed
  check baby_tf32_$steps $steps "${baby[@]}" --set train.precision=tf32 --set model.attention=composed
  check baby_bf16_composed_$steps $steps "${baby[@]}" --set model.attention=composed
  check baby_bf16_fused_$steps $steps "${baby[@]}" --set model.attention=fused
  check baby_bf16_stream_$steps $steps "${baby[@]}" --set model.attention=fused --set train.activations=bf16
  check bitnet_$steps $steps configs/shakespeare_char_bitnet.yaml --set train.eval_iters=1
  check lmul_$steps $steps configs/shakespeare_char_lmul.yaml --set train.eval_iters=1
done
check gpt2_124m_bf16_10 10 configs/gpt2_124m.yaml --set data.train_bin=/tmp/shards/train.bin \
  --set data.val_bin=/tmp/shards/val.bin --set train.eval_iters=1
check gpt2_124m_bf16_stream_10 10 configs/gpt2_124m.yaml --set data.train_bin=/tmp/shards/train.bin \
  --set data.val_bin=/tmp/shards/val.bin --set train.eval_iters=1 --set train.activations=bf16
[ -z "${ONLY:-}" ] || [[ " $ONLY " == *" fit_bide "* ]] || { tar -C $rec -czf "$out/records.tgz" .; exit 0; }
$bin fit-bide configs/bide_fit.yaml --set train.deterministic=true --set run.out_dir=/tmp/fit > $rec/fit_bide.log 2>&1
$bin checksum /tmp/fit/checkpoint.h5 > $rec/fit_bide.txt 2>&1
echo "fit_bide: $(sha256sum < $rec/fit_bide.txt | cut -c1-16)" | tee -a "$summary"
if [ -n "${REF:-}" ] && [ -f "$REF/fit_bide.txt" ]; then
  cmp -s "$REF/fit_bide.txt" $rec/fit_bide.txt && echo "fit_bide: equal to REF" | tee -a "$summary" ||
    echo "fit_bide: DIFFERS from REF" | tee -a "$summary"
fi
tar -C $rec -czf "$out/records.tgz" .

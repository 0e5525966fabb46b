#!/usr/bin/env bash
# config_hashes.sh BITGRAD OUT_FILE: every shipped config trained a few steps on the CPU (small
# batches, the configs' own architectures and modes), and the SHA-256 of each checkpoint's
# datasets (`bitgrad checksum`), one line a run. Two builds compute alike exactly when their
# files agree: the bar for a change that moves code without changing arithmetic.
set -euo pipefail
bin=$(realpath "$1"); out=$2
cd "$(dirname "$0")/.."
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
small=(--set train.steps=2 --set train.batch_size=2 --set train.eval_interval=2
       --set train.eval_iters=1 --set train.log_interval=1 --set schedule.warmup_steps=1)
scripts/get_data.sh >/dev/null
"$bin" prepare datasets/tinyshakespeare.txt --out runs/data/shakespeare_gpt2 >/dev/null
: >"$out"
run() {  # name config [--set ...]
  local name=$1 cfg=$2; shift 2
  "$bin" train "$cfg" "${small[@]}" --set run.out_dir="$work/$name" "$@" >"$work/$name.log" 2>&1 \
    || { tail -3 "$work/$name.log"; exit 1; }
  echo "$name $("$bin" checksum "$work/$name/last.h5" | sha256sum | cut -c1-16)" | tee -a "$out"
}
run char_mlp configs/char_mlp.yaml
run shakespeare_char configs/shakespeare_char.yaml
run shakespeare_char_det configs/shakespeare_char.yaml --set train.deterministic=true
run shakespeare_char_bitnet configs/shakespeare_char_bitnet.yaml --set schedule.stage2_step=1
run shakespeare_char_lmul configs/shakespeare_char_lmul.yaml
run shakespeare_bpe configs/shakespeare_bpe.yaml
run shakespeare_bpe_bitnet configs/shakespeare_bpe_bitnet.yaml --set schedule.stage2_step=1
run gpt2_124m configs/gpt2_124m.yaml --set train.batch_size=1
run shakespeare_char_bide configs/shakespeare_char_bide.yaml
run shakespeare_bpe_bide configs/shakespeare_bpe_bide.yaml
run shakespeare_bpe_hybrid configs/shakespeare_bpe_hybrid.yaml
run shakespeare_byte_pair configs/shakespeare_byte_pair.yaml
# The forecasters on a synthetic family (the real config's model and settings on the same file:
# its own data is the statsmodels series, scripts/forecast_data.py), deterministic, each head.
[ -f datasets/forecast/synthetic_gaussian_ar1.csv ] ||
  python3 scripts/forecast_synthetic.py datasets/forecast --series 16 >/dev/null
fsmall=(--set train.steps=2 --set train.batch_size=4 --set train.eval_interval=2
        --set train.log_interval=1 --set schedule.warmup_steps=1 --set run.device=cpu)
frun() {  # name config [--set ...]
  local name=$1 cfg=$2; shift 2
  "$bin" train "$cfg" "${fsmall[@]}" --set run.out_dir="$work/$name" "$@" >"$work/$name.log" 2>&1 \
    || { tail -3 "$work/$name.log"; exit 1; }
  echo "$name $("$bin" checksum "$work/$name/last.h5" | sha256sum | cut -c1-16)" | tee -a "$out"
}
for head in bide student_t gaussian binned; do
  frun forecast_synthetic_$head configs/forecast_synthetic.yaml --set model.head=$head
done
frun forecast_synthetic_lag_bitlinear configs/forecast_synthetic.yaml --set model.lag=4 \
  --set model.scaling=standard --set model.linear=bitlinear
frun forecast_real configs/forecast_real.yaml --set data.path=datasets/forecast/synthetic_gaussian_ar1.csv
for cfg in bide_fit bide_moments; do
  "$bin" fit-bide configs/$cfg.yaml --set train.steps=20 --set run.out_dir="$work/$cfg" \
    >"$work/$cfg.log" 2>&1
  echo "$cfg $( ("$bin" checksum "$work/$cfg/checkpoint.h5"; cat "$work/$cfg/summary.csv") | sha256sum | cut -c1-16)" | tee -a "$out"
done

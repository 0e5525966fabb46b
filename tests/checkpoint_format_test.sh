#!/usr/bin/env bash
# checkpoint_format_test.sh BITGRAD: checkpoints written in an earlier format (tests/fixtures/)
# load, evaluate to what their own build printed, resume under today's keys for the same
# architecture, and are told apart from another architecture by the setting that differs.
set -euo pipefail
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
source "$here/cli_lib.sh"

fx=$here/fixtures/format_0.9.0
cp "$fx/text.txt" "$dir/"
cd "$dir"

expect_eval() {  # file, the loss part of 0.9.0's eval line
  local out
  out=$("$bin" eval "$fx/$1" --data text.txt) || fail "eval of $1 failed: $out"
  [[ "$out" == *"$2"* ]] || fail "eval of $1 changed: got '$out', 0.9.0 printed '$2'"
}
expect_eval bitlinear_head.h5 "loss 2.5978 nats/token | 3.7478 bits/byte | perplexity 13.434"
expect_eval bide_hybrid.h5 "loss 2.6589 nats/token | 3.8360 bits/byte | perplexity 14.281"

# Resume: today's config of the same architecture continues the file; one setting off is named.
cat >bitlinear.yaml <<'YAML'
data: {path: text.txt, tokenizer: char}
model: {type: gpt, block_size: 8, n_layer: 1, n_head: 2, n_embd: 16, linear: bitlinear, head: bitlinear}
train: {steps: 4, batch_size: 2, eval_interval: 4, eval_iters: 1, log_interval: 1}
run: {device: cpu, seed: 7, resume: true}
YAML
cat >hybrid.yaml <<'YAML'
data: {path: text.txt, tokenizer: char}
model: {type: gpt, block_size: 8, n_layer: 1, n_head: 2, n_embd: 16, head: bide}
head: {bide: {hidden: 8, code: frequency, softmax_ids: 4}}
train: {steps: 4, batch_size: 2, eval_interval: 4, eval_iters: 1, log_interval: 1}
run: {device: cpu, seed: 7, resume: true}
YAML
for name in bitlinear:bitlinear_head hybrid:bide_hybrid; do
  cfg=${name%%:*}; file=${name#*:}
  mkdir -p "$cfg" && cp "$fx/$file.h5" "$cfg/last.h5"
  "$bin" train "$cfg.yaml" --set run.out_dir="$cfg" >"$cfg.log" 2>&1 ||
    fail "resuming $file.h5 failed: $(tail -2 "$cfg.log")"
  grep -q "resum" "$cfg.log" || fail "$file.h5 was not resumed: $(head -3 "$cfg.log")"
done
mkdir -p other && cp "$fx/bitlinear_head.h5" other/last.h5
one_line_error "model.head: bitlinear vs softmax" "$bin" train bitlinear.yaml --set run.out_dir=other --set model.head=softmax
cp "$fx/bide_hybrid.h5" other/last.h5
one_line_error "head.bide.softmax_ids: 4 vs 2" "$bin" train hybrid.yaml --set run.out_dir=other --set head.bide.softmax_ids=2
# A forecaster of 2026-11-29's format (before the shared trunk): the same scores, the same
# forecast to the byte, and a resume under today's keys.
ff=$here/fixtures/forecaster_2026-11-29
cp "$ff/series.csv" "$dir/series.csv"
out=$("$bin" eval "$ff/forecaster.h5" --data series.csv --samples 8 --seed 2) || fail "forecaster eval: $out"
[[ "$out" == *"NLL 4.3570 nats/point | CRPS 47.513 (naive 0.6388, ratio 25.1050) | MASE 1.3893"* ]] ||
  fail "the forecaster's scores changed: $out"
"$bin" forecast "$ff/forecaster.h5" --data series.csv --horizon 3 --samples 6 --seed 4 \
  --quantiles 0.1,0.5,0.9 --out forecast.csv > /dev/null || fail "forecast from the fixture"
cmp -s forecast.csv "$ff/forecast_expected.csv" || fail "the fixture's forecast changed: $(sed -n 2p forecast.csv)"
cat >forecaster.yaml <<'YAML'
run: {device: cpu, seed: 3, resume: true}
data: {format: series, path: series.csv, horizon: 3, season: 12}
model: {type: forecaster, block_size: 16, scale_window: 4, n_layer: 1, n_head: 2, n_embd: 8, head: bide, lag: 2, scaling: standard}
head: {bide: {hidden: 4}}
train: {steps: 6, batch_size: 2, eval_interval: 2, log_interval: 2, deterministic: true}
YAML
mkdir -p fc && cp "$ff/forecaster.h5" fc/last.h5
"$bin" train forecaster.yaml --set run.out_dir=fc > fc.log 2>&1 || fail "resuming the forecaster: $(tail -2 fc.log)"
grep -q "resumed from fc/last.h5 at step 4" fc.log || fail "the forecaster was not resumed: $(grep -m2 step fc.log)"
echo "checkpoint_format_test: all passed"

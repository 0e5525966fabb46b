#!/usr/bin/env bash
# cli_forecast_test.sh BITGRAD: a forecaster end to end on the CPU (train on a small CSV, resume,
# forecast, eval with and without the truth) and the bad input a forecasting user gives: each
# refused in one line, no output written over an input.
set -uo pipefail
bin=$(realpath "$1")
cd "$(dirname "$0")/.."
source tests/cli_lib.sh
# Three series of an AR(1) with monthly dates (and their true laws), and a plain
# one-value-a-line file; awk, as a fresh Debian has no python.
awk -v d="$dir" 'BEGIN {
  srand(3)
  print "unique_id,ds,y" > (d "/s.csv")
  print "unique_id,ds,zero_mass,w1,kind1,loc1,scale1,df1,w2,kind2,loc2,scale2,df2" > (d "/truth.csv")
  for (i = 0; i < 3; i++) {
    x = 0
    for (n = 0; n < 90; n++) {
      loc = 0.7 * x
      z = sqrt(-2 * log(1 - rand())) * cos(6.283185307179586 * rand())
      x = loc + z
      ds = sprintf("%d-%02d-01", 2000 + int(n / 12), n % 12 + 1)
      printf "s%d,%s,%.6f\n", i, ds, 5 + x > (d "/s.csv")
      printf "s%d,%s,0,1,normal,%.6f,1,0,0,normal,0,1,0\n", i, ds, 5 + loc > (d "/truth.csv")
    }
  }
  for (n = 0; n < 80; n++) printf "%.6f\n", sin(n / 3) + 2 > (d "/plain.txt")
}'
cat > "$dir/f.yaml" <<YAML
run: {out_dir: $dir/run, device: cpu}
data: {format: series, path: $dir/s.csv, horizon: 4, season: 12}
model: {type: forecaster, block_size: 32, scale_window: 8, n_layer: 1, n_head: 2, n_embd: 16, head: bide}
head: {bide: {hidden: 8}}
train: {steps: 6, batch_size: 4, eval_interval: 3, log_interval: 3, deterministic: true}
YAML
"$bin" train "$dir/f.yaml" > "$dir/train.log" 2>&1 || { cat "$dir/train.log"; fail "train"; }
grep -q "val" "$dir/train.log" || fail "no validation loss"
# Resume continues where it stopped; a changed split or architecture is refused.
"$bin" train "$dir/f.yaml" --set run.resume=true --set train.steps=9 > /dev/null 2>&1 || fail "resume"
one_line_error "model.n_embd" "$bin" train "$dir/f.yaml" --set run.resume=true --set model.n_embd=32
one_line_error "(checkpoint vs config: data.horizon: 4 vs 5)" "$bin" train "$dir/f.yaml" --set run.resume=true --set data.horizon=5
# The forecaster stands on the GPT's trunk: the bf16 residual stream is accepted (the CPU
# computes fp32), BitLinear with it refused as for the GPT; a CUDA graph cannot replay its step.
"$bin" train "$dir/f.yaml" --set train.precision=bf16 --set train.activations=bf16 \
  --set run.out_dir="$dir/stream" > /dev/null 2>&1 || fail "a forecaster with train.activations: bf16"
one_line_error "train.activations: bf16 activations run dense projections" "$bin" train "$dir/f.yaml" \
  --set train.precision=bf16 --set train.activations=bf16 --set model.linear=bitlinear --set run.out_dir="$dir/stream2"
one_line_error "a forecaster's batches hold a varying number of targets" "$bin" train "$dir/f.yaml" \
  --set train.cuda_graph=true --set run.out_dir="$dir/graph"
"$bin" forecast "$dir/run/best.h5" --data "$dir/s.csv" --horizon 3 --samples 5 \
  --quantiles 0.1,0.5,0.9 --out "$dir/f.csv" --paths "$dir/p.csv" > /dev/null || fail "forecast"
[ "$(head -1 "$dir/f.csv")" = "unique_id,ds,mean,q0.1,q0.5,q0.9" ] || fail "forecast header: $(head -1 "$dir/f.csv")"
grep -q "^s2,2007-07-01," "$dir/f.csv" || fail "monthly stamps: $(sed -n 2,4p "$dir/f.csv")"
[ "$(wc -l < "$dir/p.csv")" -eq $((1 + 3 * 3 * 5)) ] || fail "paths rows"
"$bin" forecast "$dir/run/best.h5" --data "$dir/plain.txt" --horizon 1 --out "$dir/f1.csv" > /dev/null ||
  fail "forecast a plain file"
grep -q "^,80," "$dir/f1.csv" || fail "plain file stamps: $(cat "$dir/f1.csv")"
# The same forecast twice: the same bytes.
"$bin" forecast "$dir/run/best.h5" --data "$dir/s.csv" --horizon 3 --samples 5 \
  --quantiles 0.1,0.5,0.9 --out "$dir/f2.csv" > /dev/null && cmp -s "$dir/f.csv" "$dir/f2.csv" ||
  fail "a forecast is not repeatable"
"$bin" eval "$dir/run/best.h5" --samples 8 --json "$dir/e.json" > "$dir/eval.log" || fail "eval"
grep -q "CRPS" "$dir/eval.log" && grep -q '"crps_ratio"' "$dir/e.json" || fail "eval output"
"$bin" eval "$dir/run/best.h5" --horizon 1 --truth "$dir/truth.csv" > "$dir/eval1.log" || fail "eval --truth"
grep -q "truth: CRPS" "$dir/eval1.log" || fail "no truth line: $(cat "$dir/eval1.log")"

# Sample paths made elsewhere (the baselines' format) are scored by the same code.
awk -F, -v out="$dir/paths.csv" 'BEGIN { srand(5); print "unique_id,ds,path,y" > out }
  NR > 1 { ds[$1, ++n[$1]] = $2; ids[$1] = 1 }
  END {
    for (id in ids)
      for (t = n[id] - 3; t <= n[id]; t++)
        for (j = 0; j < 20; j++) printf "%s,%s,%d,%.6f\n", id, ds[id, t], j, 4 + 2 * rand() > out
  }' "$dir/s.csv"
"$bin" eval "$dir/paths.csv" --data "$dir/s.csv" --horizon 4 --season 12 --json "$dir/pe.json" > "$dir/pe.log" ||
  fail "eval of a paths file"
grep -q "CRPS" "$dir/pe.log" && grep -q '"samples": 20' "$dir/pe.json" || fail "paths eval output: $(cat "$dir/pe.log")"
sed '$d' "$dir/paths.csv" > "$dir/short.csv"
one_line_error "expected the same number" "$bin" eval "$dir/short.csv" --data "$dir/s.csv" --horizon 4
one_line_error "test window" "$bin" eval "$dir/paths.csv" --data "$dir/s.csv" --horizon 2
one_line_error "paths.csv:1" "$bin" eval "$dir/paths.csv" --data "$dir/paths.csv" --horizon 4
one_line_error "--json" "$bin" eval "$dir/paths.csv" --data "$dir/s.csv" --horizon 4 --json "$dir/paths.csv"

# Bad input: one line each.
# Standard scaling and a lag input, forecast past the lag (its steps read the values drawn).
"$bin" train "$dir/f.yaml" --set model.scaling=standard --set model.lag=2 \
  --set run.out_dir="$dir/lagrun" > "$dir/lag.log" 2>&1 || { cat "$dir/lag.log"; fail "train with a lag"; }
"$bin" forecast "$dir/lagrun/best.h5" --data "$dir/s.csv" --horizon 5 --samples 4 --out "$dir/fl.csv" \
  > /dev/null || fail "forecast with a lag"
[ "$(grep -c '^s0,' "$dir/fl.csv")" = 5 ] || fail "a lagged forecast has not 5 steps: $(cat "$dir/fl.csv")"
"$bin" eval "$dir/lagrun/best.h5" --samples 8 > /dev/null || fail "eval with a lag"
# Values rounded to bfloat16: train, forecast, eval against the truth on that format's grid.
"$bin" train "$dir/f.yaml" --set model.values=bfloat16 --set run.out_dir="$dir/bf16run" > "$dir/bf.log" 2>&1 ||
  { cat "$dir/bf.log"; fail "train over bfloat16 values"; }
"$bin" forecast "$dir/bf16run/best.h5" --data "$dir/s.csv" --horizon 2 --out "$dir/fb.csv" > /dev/null ||
  fail "forecast over bfloat16 values"
"$bin" eval "$dir/bf16run/best.h5" --horizon 1 --truth "$dir/truth.csv" > /dev/null || fail "eval over bfloat16 values"
one_line_error "model.values" "$bin" train "$dir/f.yaml" --set model.values=float8
one_line_error "model.lag" "$bin" train "$dir/f.yaml" --set model.lag=-1
one_line_error "model.scaling" "$bin" train "$dir/f.yaml" --set model.scaling=zscore
one_line_error "data.format: series trains a model.type: forecaster" \
  "$bin" train "$dir/f.yaml" --set model.type=gpt
one_line_error "model.type: forecaster reads data.format: series" \
  "$bin" train "$dir/f.yaml" --set data.format=text
one_line_error "data.val_fraction: not used when data.format is series" \
  "$bin" train "$dir/f.yaml" --set data.val_fraction=0.2
one_line_error "model.scale_window" "$bin" train "$dir/f.yaml" --set model.scale_window=32
one_line_error "head.bide.hidden: not used when model.head is gaussian" \
  "$bin" train "$dir/f.yaml" --set model.head=gaussian
one_line_error "model.head" "$bin" train "$dir/f.yaml" --set model.head=softmax
printf 'unique_id,ds,y\na,1,3\na,2,inf\n' > "$dir/bad.csv"
one_line_error "bad.csv:3" "$bin" forecast "$dir/run/best.h5" --data "$dir/bad.csv" --out "$dir/x.csv"
one_line_error "--quantiles" "$bin" forecast "$dir/run/best.h5" --data "$dir/s.csv" --out "$dir/x.csv" --quantiles 0.5,0.2
one_line_error "--quantiles" "$bin" forecast "$dir/run/best.h5" --data "$dir/s.csv" --out "$dir/x.csv" --quantiles 1.5
# A horizon past the block (32 values) slides the window: 100 steps, every stamp and value there.
"$bin" forecast "$dir/run/best.h5" --data "$dir/s.csv" --out "$dir/long.csv" --horizon 100 --samples 4 \
  > /dev/null 2>&1 || fail "a 100-step forecast from a 32-value block"
[ "$(tail -n +2 "$dir/long.csv" | wc -l)" -eq $((100 * $(tail -n +2 "$dir/s.csv" | cut -d, -f1 | sort -u | wc -l))) ] ||
  fail "a 100-step forecast has $(tail -n +2 "$dir/long.csv" | wc -l) rows"
one_line_error "--context 8 is outside 9..32" "$bin" forecast "$dir/run/best.h5" --data "$dir/s.csv" --out "$dir/x.csv" --context 8
one_line_error "--context 33 is outside 9..32" "$bin" forecast "$dir/run/best.h5" --data "$dir/s.csv" --out "$dir/x.csv" --context 33
"$bin" forecast "$dir/run/best.h5" --data "$dir/s.csv" --out "$dir/ctx.csv" --horizon 40 --context 32 --samples 2 \
  > /dev/null 2>&1 || fail "a forecast with --context 32 (the whole block each step)"
one_line_error "--out" "$bin" forecast "$dir/run/best.h5" --data "$dir/s.csv" --out "$dir/s.csv"
one_line_error "not a language model" "$bin" sample "$dir/run/best.h5"
one_line_error "--truth" "$bin" eval "$dir/run/best.h5" --truth "$dir/truth.csv"
[ -f "$dir/x.csv" ] && fail "a refused forecast wrote its output"

# Real data as it comes: a monthly and an hourly series pooled in one file, the hourly one with
# gaps (empty, NA, NaN: masked inputs, never targets), and a series too short to validate (it
# trains on what it has, named once). Both long series are forecast with their own stamps.
awk -v d="$dir" 'BEGIN {
  print "unique_id,ds,y" > (d "/mixed.csv")
  for (n = 0; n < 60; n++)
    printf "monthly,%d-%02d-01,%.4f\n", 2000 + int(n / 12), n % 12 + 1, 100 + 10 * sin(n / 1.9) > (d "/mixed.csv")
  for (n = 0; n < 80; n++) {
    y = sprintf("%.4f", 20 + 5 * sin(n / 3.8))
    if (n == 20) y = ""; if (n == 33) y = "NA"; if (n == 50) y = "NaN"
    printf "hourly,2024-03-%02d %02d:00,%s\n", 1 + int(n / 24), n % 24, y > (d "/mixed.csv")
  }
  for (n = 0; n < 10; n++) printf "short,%d-01-01,%d\n", 2010 + n, n > (d "/mixed.csv")
}'
"$bin" train "$dir/f.yaml" --set data.path="$dir/mixed.csv" --set run.out_dir="$dir/mixed" \
  > "$dir/mixed.log" 2>&1 || fail "pooled monthly and hourly series with gaps: $(tail -2 "$dir/mixed.log")"
grep -q "^note: 1 series is shorter than a validation split needs .* 'short' (10 points)" "$dir/mixed.log" ||
  fail "the short series was not named: $(grep note "$dir/mixed.log")"
grep -q "val [0-9]" "$dir/mixed.log" || fail "no finite validation loss with gaps"
"$bin" forecast "$dir/mixed/best.h5" --data "$dir/mixed.csv" --out "$dir/mixed_f.csv" --horizon 30 \
  --samples 8 > /dev/null 2>&1 || fail "forecast of the pooled file"
grep -q "^monthly,2005-01-01," "$dir/mixed_f.csv" || fail "the monthly forecast's first stamp: $(grep -m1 monthly "$dir/mixed_f.csv")"
grep -q "^hourly,2024-03-04 08:00," "$dir/mixed_f.csv" || fail "the hourly forecast's first stamp: $(grep -m1 hourly "$dir/mixed_f.csv")"
grep -q "^hourly,2024-03-05 13:00," "$dir/mixed_f.csv" || fail "the hourly forecast's last stamp"
grep -q "^short,2020-01-01," "$dir/mixed_f.csv" || fail "the short series' forecast"
! grep -qi "nan" "$dir/mixed_f.csv" || fail "a forecast value is NaN"
# model.seasonal_lag: each series' lag input is its cadence's season (12 monthly, 24 hourly,
# 1 yearly); it needs model.lag as the channel and fallback.
"$bin" train "$dir/f.yaml" --set data.path="$dir/mixed.csv" --set run.out_dir="$dir/seasonal" \
  --set model.lag=1 --set model.seasonal_lag=true > "$dir/seasonal.log" 2>&1 ||
  fail "model.seasonal_lag: $(tail -2 "$dir/seasonal.log")"
"$bin" forecast "$dir/seasonal/best.h5" --data "$dir/mixed.csv" --out "$dir/seasonal_f.csv" --horizon 40 \
  --samples 4 > /dev/null 2>&1 || fail "a seasonal-lag forecast past the block"
one_line_error "model.seasonal_lag: needs model.lag >= 1" "$bin" train "$dir/f.yaml" --set model.seasonal_lag=true
# The quantile head (pinball loss) trains, forecasts with non-crossing quantiles, and evaluates
# without an NLL (its loss is no density).
grep -v "^head:" "$dir/f.yaml" > "$dir/q.yaml"
"$bin" train "$dir/q.yaml" --set model.head=quantile --set run.out_dir="$dir/quantile" > "$dir/q.log" 2>&1 ||
  fail "a quantile-head forecaster: $(tail -2 "$dir/q.log")"
"$bin" forecast "$dir/quantile/best.h5" --data "$dir/s.csv" --out "$dir/q.csv" --horizon 3 --samples 16 \
  > /dev/null 2>&1 || fail "a quantile-head forecast"
awk -F, 'NR > 1 { for (i = 5; i <= NF; i++) if ($i + 0 < $(i - 1) + 0) bad = 1 } END { exit bad }' "$dir/q.csv" ||
  fail "crossing quantiles from the quantile head"
"$bin" eval "$dir/quantile/best.h5" --data "$dir/s.csv" --horizon 3 > "$dir/q_eval.log" 2>&1 || fail "eval of a quantile head"
! grep -q "NLL" "$dir/q_eval.log" || fail "eval printed an NLL for the quantile head"
one_line_error "has a missing y at ds 2024-03-03 02:00 in its test window" "$bin" eval "$dir/mixed/best.h5" \
  --data "$dir/mixed.csv" --horizon 30
echo "PASS"

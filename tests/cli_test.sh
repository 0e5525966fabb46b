#!/usr/bin/env bash
# cli_test.sh BITGRAD: end-to-end checks of the command line on the CPU: a small fit-bide run
# writes every output; bad input fails with a one-line error and leaves no output folder.
set -u
bin=$1
source "$(dirname "$0")/cli_lib.sh"
cat > "$dir/fit.yaml" <<YAML
run: {out_dir: $dir/out, device: cpu, seed: 1}
bide: {dtype: uint, bits: 8, hidden: 8}
train: {steps: 40, batch_size: 32, log_interval: 20}
optimizer: {lr: 0.05}
eval: {samples: 512, plot_bins: 20}
distributions:
  - {name: bino, kind: binomial, n: 60, p: 0.4}
  - {name: file, kind: file, path: $dir/samples.txt}
YAML
for i in $(seq 1 300); do echo $(( (i * 37) % 50 + 100 )); done > "$dir/samples.txt"
"$bin" fit-bide "$dir/fit.yaml" > "$dir/log" 2>&1 || { cat "$dir/log"; fail "fit-bide exited non-zero"; }
for f in config.yaml metrics.csv summary.csv curves.csv fit.svg loss.svg checkpoint.h5; do
  [ -s "$dir/out/$f" ] || fail "missing output $f"
done
grep -q "^bino," "$dir/out/summary.csv" || fail "summary lacks the binomial row"
head -1 "$dir/out/summary.csv" | grep -q "^distribution,range_lo,range_hi,nll,ks,mean_fit,mean_ref,std_fit,std_ref,median_fit,median_ref,q01_fit,q01_ref,q99_fit,q99_ref,nonfinite_mass,skipped,outside$" || fail "summary columns: $(head -1 "$dir/out/summary.csv")"
# bide.range auto (the default): the file's values are 100..149, widened by 2% of 49.
grep -q "^file,99.02,149.98," "$dir/out/summary.csv" || fail "auto range of the file: $(grep ^file "$dir/out/summary.csv")"
# Ctrl-C (or SIGTERM) during training stops after the current step and exits 130, writing
# nothing (fit-bide writes its outputs at the end).
"$bin" fit-bide "$dir/fit.yaml" --set train.steps=20000 --set train.log_interval=1 --set run.out_dir="$dir/int" > "$dir/int.log" 2>&1 &
pid=$!
for i in $(seq 1 300); do grep -q "^step" "$dir/int.log" && break; sleep 0.1; done
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] || fail "an interrupted fit-bide exited $rc, expected 130: $(tail -2 "$dir/int.log")"
grep -q "stopped by signal 2 after step .*: nothing was written" "$dir/int.log" || fail "no stop line: $(tail -2 "$dir/int.log")"
[ ! -e "$dir/int/checkpoint.h5" ] || fail "an interrupted fit-bide wrote a checkpoint"
# A fixed range the data leave: the first value outside is an error naming file and line.
one_line_error "samples.txt:1: value 137 is outside bide.range [20, 120]" "$bin" fit-bide "$dir/fit.yaml" --set "bide.range=[20, 120]" --set run.out_dir="$dir/out4"
one_line_error "bide.range: expected [lo, hi] with lo <= hi" "$bin" fit-bide "$dir/fit.yaml" --set "bide.range=[5, 1]" --set run.out_dir="$dir/out4"
one_line_error "bide.range: 'some' is not one of: auto, all" "$bin" fit-bide "$dir/fit.yaml" --set bide.range=some --set run.out_dir="$dir/out4"
# Float16 values near 130 are 0.125 apart, wider than the plot's bins (~0.025): the density
# panel is drawn from the bucket-interpolated CDF, so no bin inside the body reads 0 (no comb).
cat > "$dir/comb.yaml" <<YAML
run: {out_dir: $dir/comb, device: cpu}
bide: {dtype: float16, hidden: 8}
train: {steps: 30, batch_size: 32}
eval: {samples: 2000, plot_bins: 200}
distributions:
  - {name: narrow, kind: normal, mu: 130, sigma: 1}
YAML
"$bin" fit-bide "$dir/comb.yaml" > "$dir/comb.log" 2>&1 || { cat "$dir/comb.log"; fail "float16 fit failed"; }
zeros=$(awk -F, 'NR > 1 && $5 == 0' "$dir/comb/curves.csv" | wc -l)
[ "$zeros" -eq 0 ] || fail "$zeros plot bins of the fitted density are 0 (comb teeth)"
# train.deterministic (batch-invariant projections and SICK partition): two fits of the float16
# config give the same checkpoint bits; the mode is printed.
for r in 1 2; do
  "$bin" fit-bide "$dir/comb.yaml" --set train.deterministic=true --set run.out_dir="$dir/det$r" > "$dir/det$r.log" 2>&1 || fail "deterministic fit failed: $(tail -2 "$dir/det$r.log")"
done
grep -q "range auto, deterministic" "$dir/det1.log" || fail "no deterministic mode line: $(grep variant "$dir/det1.log")"
cmp -s <("$bin" checksum "$dir/det1/checkpoint.h5") <("$bin" checksum "$dir/det2/checkpoint.h5") || fail "two deterministic fits differ"
# The stored effective config runs again as is.
"$bin" fit-bide "$dir/out/config.yaml" --set run.out_dir="$dir/out2" --set train.steps=2 > /dev/null 2>&1 || fail "stored config did not re-run"
# Bad input: a non-number in a sample file.
printf '1\n2\nabc\n' > "$dir/bad.txt"
msg=$("$bin" fit-bide "$dir/fit.yaml" --set distributions.1.path="$dir/bad.txt" --set run.out_dir="$dir/out3" 2>&1 >/dev/null)
[ $? -ne 0 ] || fail "bad sample file accepted"
echo "$msg" | grep -q "bad.txt:3: 'abc' is not a number" || fail "unexpected message: $msg"
[ "$(echo "$msg" | wc -l)" -eq 1 ] || fail "error is not one line: $msg"
[ ! -e "$dir/out3" ] || fail "output folder written despite the error"
# Bad config key.
"$bin" fit-bide "$dir/fit.yaml" --set train.stpes=3 > /dev/null 2> "$dir/err" && fail "unknown key accepted"
grep -q "unknown key 'train.stpes'" "$dir/err" || fail "unexpected message: $(cat "$dir/err")"
# GPT training: an interrupted-and-resumed run logs the same losses as an uninterrupted one.
printf 'First Citizen:\nBefore we proceed any further, hear me speak.\n' > "$dir/line.txt"
for i in $(seq 1 200); do cat "$dir/line.txt"; done > "$dir/corpus.txt"
cat > "$dir/gpt.yaml" <<YAML
run: {out_dir: $dir/gpt, device: cpu, seed: 3}
data: {path: $dir/corpus.txt, val_fraction: 0.1}
model: {type: gpt, block_size: 16, n_layer: 2, n_head: 2, n_embd: 16, dropout: 0.1}
train: {steps: 30, batch_size: 4, eval_interval: 10, eval_iters: 2, log_interval: 5}
optimizer: {lr: 0.01, betas: [0.9, 0.99], weight_decay: 0.1}
schedule: {type: cosine, warmup_steps: 3, min_lr: 0.001}
YAML
"$bin" train "$dir/gpt.yaml" > "$dir/gpt.log" 2>&1 || { cat "$dir/gpt.log"; fail "train exited non-zero"; }
for f in last.h5 best.h5 metrics.csv config.yaml loss.svg; do [ -s "$dir/gpt/$f" ] || fail "missing train output $f"; done
"$bin" train "$dir/gpt.yaml" --set run.out_dir="$dir/gpt2" --set run.stop_after_steps=13 > /dev/null 2>&1 || fail "stop_after_steps run failed"
"$bin" train "$dir/gpt.yaml" --set run.out_dir="$dir/gpt2" --set run.resume=true > "$dir/gpt2.log" 2>&1 || fail "resume failed"
grep -q "resumed from .*at step 13" "$dir/gpt2.log" || fail "resume did not start at step 13"
cut -d, -f1-4 "$dir/gpt/metrics.csv" > "$dir/a.csv"   # step, train loss, val loss, lr (not timings)
cut -d, -f1-4 "$dir/gpt2/metrics.csv" > "$dir/b.csv"
cmp -s "$dir/a.csv" "$dir/b.csv" || fail "resumed run differs: $(diff "$dir/a.csv" "$dir/b.csv" | head -4)"
# SIGINT saves a checkpoint and exits cleanly (130); resuming finishes the same run.
"$bin" train "$dir/gpt.yaml" --set run.out_dir="$dir/gpt3" --set train.steps=100000 > "$dir/gpt3.log" 2>&1 &
pid=$!
for i in $(seq 1 100); do [ -s "$dir/gpt3/last.h5" ] && break; sleep 0.1; done
kill -INT $pid; wait $pid; rc=$?
[ $rc -eq 130 ] || fail "SIGINT exit code $rc, expected 130"
grep -q "stopped by signal 2" "$dir/gpt3.log" || fail "no signal message: $(tail -2 "$dir/gpt3.log")"
# Bad input: a missing data file.
msg=$("$bin" train "$dir/gpt.yaml" --set data.path="$dir/nope.txt" --set run.out_dir="$dir/gpt4" 2>&1 >/dev/null)
[ $? -ne 0 ] || fail "missing data file accepted"
[ "$(echo "$msg" | wc -l)" -eq 1 ] || fail "error is not one line: $msg"
echo "$msg" | grep -q "nope.txt" || fail "unexpected message: $msg"
echo "cli_test: all checks passed"

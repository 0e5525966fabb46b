#!/usr/bin/env bash
# cli_test.sh BITGRAD: end-to-end checks of the command line on the CPU: a small fit-bide run
# writes every output; bad input fails with a one-line error and leaves no output folder.
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
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
echo "cli_test: all checks passed"

#!/usr/bin/env bash
# cli_files_test.sh BITGRAD: what bitgrad promises about the user's files and settings
# (docs/files.md), one kind at a time: no command writes over a file it did not create (outputs
# that are inputs, temporaries and probes, empty names); a full disk is one line and exit 1 with
# the previous checkpoint intact and no temporary left (BITGRAD_FAIL_WRITE injects it); resume
# never mixes compute modes; a setting that would apply nowhere is refused; packed files carry
# the compute mode; numbers that are not finite are refused naming the key.
set -uo pipefail
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
source "$here/cli_lib.sh"
cd "$dir"
head -c 30000 "$here/../README.md" > corpus.txt
cat > tiny.yaml <<YAML
run: {out_dir: $dir/run, seed: 5, device: cpu}
data: {path: corpus.txt}
model: {type: gpt, block_size: 8, n_layer: 1, n_head: 2, n_embd: 16}
train: {steps: 4, batch_size: 2, eval_interval: 2, eval_iters: 1, log_interval: 2}
YAML
sha() { sha256sum "$1" | cut -d' ' -f1; }
no_temporaries() { ! find "$1" -name '*.tmp-*' | grep -q . || fail "temporaries left in $1: $(find "$1" -name '*.tmp-*')"; }

# 1. A command never destroys a file it did not create.
"$bin" train tiny.yaml --set model.linear=bitlinear --set run.out_dir="$dir/bit" > /dev/null 2>&1 || fail "bitlinear train failed"
cp bit/last.h5 A.h5.tmp; before=$(sha A.h5.tmp)
"$bin" export A.h5.tmp --packed --out A.h5 > /dev/null 2>&1 || fail "export from A.h5.tmp failed"
[ "$(sha A.h5.tmp)" = "$before" ] || fail "export changed its input A.h5.tmp"
one_line_error "--out bit/metrics.csv is the input bit/metrics.csv" "$bin" plot bit/metrics.csv --out bit/metrics.csv
ln -s bit/metrics.csv link.csv
one_line_error "is the input link.csv" "$bin" plot link.csv --out bit/metrics.csv
one_line_error "is the input bit/metrics.csv" "$bin" plot bit/metrics.csv --out bit/../bit/metrics.csv
ln bit/metrics.csv hard.csv
one_line_error "is the input hard.csv" "$bin" plot hard.csv --out bit/metrics.csv
one_line_error "--out bit/last.h5 is the input" "$bin" export bit/last.h5 --packed --out bit/last.h5
mkdir -p own && cp tiny.yaml own/config.yaml
one_line_error "own/config.yaml is the input" "$bin" train own/config.yaml --set run.out_dir="$dir/own"
one_line_error "run.name: empty value" "$bin" train tiny.yaml --set "run.name=''"
mkdir -p probe && echo mine > probe/.bitgrad-write-probe
"$bin" train tiny.yaml --set run.out_dir="$dir/probe" > /dev/null 2>&1 || fail "train into a folder with a probe-named file failed"
[ "$(cat probe/.bitgrad-write-probe)" = mine ] || fail "the write probe changed a user's file"
one_line_error "--set applies to commands that read a config" "$bin" export bit/last.h5 --packed --out B.h5 --set x=1

# 2. A full disk: one line, exit 1, the previous checkpoint untouched, no temporary left.
full_disk() {  # full_disk N WHAT CMD...: the N-th write fails as on a full disk
  local n=$1 what=$2; shift 2
  local msg rc
  msg=$(BITGRAD_FAIL_WRITE=$n "$@" 2>&1 >/dev/null); rc=$?
  [ $rc -eq 1 ] || fail "$what on a full disk exited $rc, expected 1: $msg"
  [ "$(echo "$msg" | wc -l)" -eq 1 ] || fail "$what on a full disk printed more than one line: $msg"
  echo "$msg" | grep -qF "No space left on device" || fail "$what on a full disk: $msg"
}
full_disk 1 "train" "$bin" train tiny.yaml --set run.out_dir="$dir/full"
no_temporaries full
"$bin" train tiny.yaml --set run.out_dir="$dir/res" --set run.stop_after_steps=2 > /dev/null 2>&1 || fail "a stopped run failed"
before=$(sha res/last.h5)
full_disk 1 "resume" "$bin" train tiny.yaml --set run.out_dir="$dir/res" --set run.resume=true
[ "$(sha res/last.h5)" = "$before" ] || fail "a failed resume changed last.h5"
no_temporaries res
full_disk 1 "export" "$bin" export bit/last.h5 --packed --out full.h5
[ ! -e full.h5 ] || fail "a failed export left full.h5"
no_temporaries .
printf 'run: {out_dir: %s/fitfull}\ntrain: {steps: 20}\ndistributions:\n  - {kind: normal, mu: 0, sigma: 1}\n' "$dir" > fit.yaml
full_disk 3 "fit-bide" "$bin" fit-bide fit.yaml
no_temporaries fitfull
full_disk 2 "check-determinism" "$bin" check-determinism tiny.yaml --runs 2 --steps 2 --out "$dir/chk"
no_temporaries chk
full_disk 1 "prepare" "$bin" prepare corpus.txt --tokenizer byte --out "$dir/shards"

# 3. Resume never mixes compute modes silently (the override is run.resume_mode_change).
"$bin" train tiny.yaml --set run.out_dir="$dir/lm" --set run.stop_after_steps=2 --set train.matmul=lmul --set lmul.mantissa_bits=7 > /dev/null 2>&1 || fail "an L-Mul run failed"
one_line_error "(checkpoint vs config: lmul.mantissa_bits: 7 vs 4)" "$bin" train tiny.yaml --set run.out_dir="$dir/lm" --set run.resume=true --set train.matmul=lmul --set lmul.mantissa_bits=4
one_line_error "(checkpoint vs config: train.matmul: lmul vs standard)" "$bin" train tiny.yaml --set run.out_dir="$dir/lm" --set run.resume=true

# 4. A setting that would apply nowhere is refused; one that applies somewhere is honoured.
printf 'run: {out_dir: %s/mlp, device: cpu}\ndata: {path: corpus.txt}\nmodel: {type: char_mlp, context: 4, n_embd: 4, n_hidden: 16}\ntrain: {steps: 2, batch_size: 2, eval_interval: 2, eval_iters: 1}\n' "$dir" > mlp.yaml
one_line_error "lmul.scope: a char_mlp has no attention products" "$bin" train mlp.yaml --set train.matmul=lmul --set lmul.scope=attention
"$bin" train mlp.yaml > /dev/null 2>&1 || fail "char_mlp train failed"
"$bin" checksum mlp/last.h5 > std.sum
"$bin" train mlp.yaml --set train.matmul=lmul --set lmul.scope=mlp --set lmul.mantissa_bits=3 > /dev/null 2>&1 || fail "char_mlp L-Mul train failed"
"$bin" checksum mlp/last.h5 | cmp -s - std.sum && fail "lmul.scope: mlp changed nothing on a char_mlp"

# 5. A packed file carries every setting that changes the logits: its eval equals the
# checkpoint's in each compute mode BitLinear runs (standard, deterministic, L-Mul attention).
for mode in "train.deterministic=false" "train.deterministic=true" "train.matmul=lmul"; do
  extra=(--set "$mode"); [ "$mode" = "train.matmul=lmul" ] && extra+=(--set lmul.scope=attention)
  "$bin" train tiny.yaml --set model.linear=bitlinear --set run.out_dir="$dir/pk" "${extra[@]}" > /dev/null 2>&1 || fail "bitlinear train ($mode) failed"
  "$bin" export pk/last.h5 --packed --out pk.h5 > /dev/null 2>&1 || fail "export ($mode) failed"
  a=$("$bin" eval pk/last.h5 --data corpus.txt | sed 's/^[^|]*|//'); b=$("$bin" eval pk.h5 --data corpus.txt | sed 's/^[^|]*|//')
  [ "$a" = "$b" ] || fail "packed and unpacked eval differ ($mode): '$a' vs '$b'"
  rm -f pk.h5
done

# 6. Numbers that are not numbers are refused, naming the key.
one_line_error "optimizer.betas: element 0 is .nan, expected a finite number" "$bin" train tiny.yaml --set "optimizer.betas=[.nan, 0.99]"
one_line_error "optimizer.betas: element 1 is .inf" "$bin" fit-bide fit.yaml --set "optimizer.betas=[0.9, .inf]"
printf 'train: {steps: 5}\ndistributions:\n  - {kind: mixture, weights: [1], means: [1e300], stds: [1]}\n' > huge.yaml
one_line_error "distributions.0.means: means must be within +-1e9" "$bin" fit-bide huge.yaml
printf 'train: {steps: 5}\ndistributions:\n  - {kind: normal, mu: .nan, sigma: 1}\n' > nan.yaml
one_line_error "distributions.0.mu: value .nan is out of range" "$bin" fit-bide nan.yaml
python3 -c "print('\n'.join(['0.0'] * 300))" > zeros.txt 2>/dev/null || { for i in $(seq 300); do echo 0.0; done > zeros.txt; }
printf 'run: {out_dir: %s/zeros}\nbide: {dtype: float16, range: auto}\ntrain: {steps: 100}\ndistributions:\n  - {kind: file, path: zeros.txt}\n' "$dir" > zeros.yaml
"$bin" fit-bide zeros.yaml > zeros.log 2>&1 || fail "fit-bide of all-zero data failed: $(tail -2 zeros.log)"
ks=$(awk -F, 'NR == 2 {print $5}' zeros/summary.csv)
awk -v k="$ks" 'BEGIN {exit !(k < 0.01)}' || fail "all-zero data fit with KS $ks (expected an exact fit)"

echo "cli_files_test: all checks passed"

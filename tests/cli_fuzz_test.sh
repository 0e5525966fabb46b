#!/usr/bin/env bash
# cli_fuzz_test.sh BITGRAD [MUTANTS]: a fixed-seed mutation fuzz of a tiny BitLinear GPT checkpoint
# (random bytes, runs of 0xff, truncations). Every mutant goes through eval, sample, checksum
# and export (and every fourth through resume); each must exit normally, by refusing or by
# working: a signal (a crash) or a hang fails the test. The bound on a hang is a minute of CPU
# time, not of wall time: a machine busy with other work (CI at full load) must not fail a
# command that is merely slow there; ten minutes of wall time still end a command that blocks.
# Checkpoints are shared between people, so a file must never be able to crash the loader.
set -uo pipefail
bin=$(realpath "$1"); mutants=${2:-200}; first=${3:-1}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/cli_lib.sh"
command -v python3 >/dev/null || { echo "python3 not found: skipped"; exit 77; }
head -c 12000 "$here/../scripts/get_data.sh" > "$dir/corpus.txt"  # any text will do
cat "$here/../README.md" >> "$dir/corpus.txt"
cat > "$dir/tiny.yaml" <<YAML
run: {out_dir: $dir/run, seed: 3, device: cpu}
data: {path: $dir/corpus.txt}
model: {type: gpt, block_size: 8, n_layer: 1, n_head: 2, n_embd: 16, linear: bitlinear}
train: {steps: 2, batch_size: 2, eval_interval: 2, eval_iters: 1}
YAML
"$bin" train "$dir/tiny.yaml" > "$dir/train.log" 2>&1 || fail "tiny train failed: $(tail -2 "$dir/train.log")"
base="$dir/run/last.h5"
# Two workers take alternate mutants (a mutant's seed alone decides it, so the set is the same),
# each with its own files; crashes are counted in one file per worker.
# Runs one command on worker w's mutant: any exit but a signal or a timeout is fine.
probe() {
  local w=$1 what=$2; shift 2
  timeout 600 bash -c 'ulimit -t 60 && exec "$@"' probe "$@" > /dev/null 2> "$dir/err_$w.txt"
  local rc=$?
  if [ $rc -eq 124 ] || [ $rc -gt 128 ]; then
    local why="signal $((rc - 128))"
    [ $rc -eq 124 ] && why="blocked for 10 minutes"
    [ $rc -eq 152 ] && why="a minute of CPU time"
    echo "mutant $m: $what exited $rc ($why): $(head -c 300 "$dir/err_$w.txt")"
    cp "$dir/mutant_$w.h5" "$dir/crash_$m.h5"
    echo "$m $what" >> "$dir/crashes_$w.txt"
  fi
}
worker() {
  local w=$1 m
  : > "$dir/crashes_$w.txt"
  for m in $(seq "$first" "$mutants"); do
    [ $((m % 2)) -eq "$w" ] || continue
    python3 - "$base" "$dir/mutant_$w.h5" "$m" <<'PY'
import random, sys
src, dst, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = bytearray(open(src, "rb").read())
r = random.Random(seed)
kind = seed % 3
if kind == 0:    # a few random bytes anywhere
    for _ in range(r.randint(1, 8)):
        data[r.randrange(len(data))] = r.randrange(256)
elif kind == 1:  # a run of 0xff
    at = r.randrange(len(data)); n = r.randint(1, 64)
    data[at:at + n] = b"\xff" * len(data[at:at + n])
else:            # a truncation, sometimes with a byte changed before it
    data = data[:r.randrange(len(data))]
    if data and r.random() < 0.5:
        data[r.randrange(len(data))] ^= 1 << r.randrange(8)
open(dst, "wb").write(bytes(data))
PY
    probe "$w" eval "$bin" eval "$dir/mutant_$w.h5" --data "$dir/corpus.txt" --device cpu
    probe "$w" sample "$bin" sample "$dir/mutant_$w.h5" --tokens 2 --device cpu
    probe "$w" checksum "$bin" checksum "$dir/mutant_$w.h5"
    probe "$w" export "$bin" export "$dir/mutant_$w.h5" --packed --out "$dir/packed_$w.h5"
    if [ $((m % 4)) -eq 0 ]; then
      rm -rf "$dir/resume_$w" && mkdir -p "$dir/resume_$w" && cp "$dir/mutant_$w.h5" "$dir/resume_$w/last.h5"
      probe "$w" resume "$bin" train "$dir/tiny.yaml" --set run.out_dir="$dir/resume_$w" \
        --set run.resume=true --set train.steps=3
    fi
  done
}
worker 0 & worker 1 & wait
crashes=$(cat "$dir/crashes_0.txt" "$dir/crashes_1.txt" | wc -l)
[ $crashes -eq 0 ] || fail "$crashes command(s) crashed or hung on mutated checkpoints"
echo "cli_fuzz_test: $mutants mutants, no crash or hang"

#!/usr/bin/env bash
# cli_fuzz_inputs_test.sh BITGRAD [MUTANTS]: a fixed-seed mutation fuzz of the other files bitgrad
# reads from elsewhere, MUTANTS of each kind: a forecaster checkpoint (through forecast, eval and
# resume), a safetensors file (its header's structure and values: keys, dtypes, shapes, offsets,
# lengths; and its bytes) and an llm.c file (header fields and bytes), both through import and
# model.init_from, and a series CSV (structure: quotes, fields, header; values: huge, tiny, NaN,
# dates; sizes: long lines, many rows) through forecast and eval. Each command must exit by
# refusing in one line or by working: a signal (a crash), a hang, more than a minute of CPU time
# or a multi-line error fails the test. As cli_fuzz_test.sh, CPU time bounds a hang.
set -uo pipefail
bin=$(realpath "$1"); mutants=${2:-40}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/cli_lib.sh"
command -v python3 >/dev/null || { echo "python3 not found: skipped"; exit 77; }
cd "$dir"
awk 'BEGIN { srand(7); print "unique_id,ds,y"
  for (i = 0; i < 3; i++) { x = 0
    for (n = 0; n < 60; n++) { x = 0.5 * x + rand() - 0.5
      printf "s%d,2021-%02d-%02d,%.4f\n", i, 1 + int(n / 28), 1 + n % 28, 3 + x } } }' > s.csv
cat > f.yaml <<YAML
run: {out_dir: $dir/frun, device: cpu}
data: {format: series, path: $dir/s.csv, horizon: 3, season: 7}
model: {type: forecaster, block_size: 24, scale_window: 6, n_layer: 1, n_head: 2, n_embd: 8, head: bide}
head: {bide: {hidden: 4}}
train: {steps: 2, batch_size: 2, eval_interval: 2}
YAML
"$bin" train f.yaml > f.log 2>&1 || fail "forecaster train: $(tail -2 f.log)"
head -c 20000 "$here/../README.md" > corpus.txt
cat > g.yaml <<YAML
run: {out_dir: $dir/grun, seed: 5, device: cpu}
data: {path: corpus.txt, tokenizer: byte}
model: {type: gpt, block_size: 8, n_layer: 1, n_head: 2, n_embd: 8, bias: true}
train: {steps: 1, batch_size: 2, eval_interval: 1, eval_iters: 1}
YAML
"$bin" train g.yaml > g.log 2>&1 || fail "gpt train: $(tail -2 g.log)"
"$bin" export grun/last.h5 --format safetensors --out hf > /dev/null 2>&1 || fail "export safetensors"
"$bin" export grun/last.h5 --format llmc --out g.bin > /dev/null 2>&1 || fail "export llmc"
: > bad.txt
# probe WHAT CMD...: any exit but a signal, a timeout, CPU exhaustion or a multi-line error.
probe() {
  local what=$1; shift
  timeout 600 bash -c 'ulimit -t 60 && exec "$@"' probe "$@" > /dev/null 2> err.txt
  local rc=$?
  if [ $rc -eq 124 ] || [ $rc -gt 128 ]; then
    echo "mutant $m ($what): exited $rc: $(head -c 300 err.txt)" | tee -a bad.txt
  elif [ $rc -ne 0 ] && [ "$(grep -c . err.txt)" -ne 1 ]; then
    echo "mutant $m ($what): not a one-line error: $(head -c 300 err.txt)" | tee -a bad.txt
  fi
}
python3 - "$mutants" <<'PY'
import json, os, random, struct, sys
n = int(sys.argv[1])
def mutate_bytes(data, r):
    data = bytearray(data); kind = r.randrange(3)
    if kind == 0:
        for _ in range(r.randint(1, 8)): data[r.randrange(len(data))] = r.randrange(256)
    elif kind == 1:
        at = r.randrange(len(data)); k = r.randint(1, 64); data[at:at + k] = b"\xff" * len(data[at:at + k])
    else:
        data = data[:r.randrange(len(data))]
    return bytes(data)
ck = open("frun/last.h5", "rb").read()
raw = open("hf/model.safetensors", "rb").read()
hlen = struct.unpack("<Q", raw[:8])[0]; header = json.loads(raw[8:8 + hlen]); body = raw[8 + hlen:]
llmc = open("g.bin", "rb").read()
csv_lines = open("s.csv").read().splitlines()
values = ["nan", "inf", "-1e308", "1e-320", "", "1e301", "0", "-0", "1e300", "x", '"3"', "9" * 400]
stamps = ["2021-02-29", "2021-13-01", "2021-01-01 25:00", "2021-01-01T10:00:00Z", "99999999999999999999",
          "2021-01-01 10:00", "-5", "2021-1-1", "0001-01-01", "9999-12-31", '"2021-01-05"']
for m in range(1, n + 1):
    r = random.Random(m)
    os.makedirs("m%d" % m, exist_ok=True)
    open("m%d/ck.h5" % m, "wb").write(mutate_bytes(ck, r))
    # safetensors: an edit of the header's structure or values, or of the bytes.
    h = json.loads(json.dumps(header)); name = r.choice([k for k in h if k != "__metadata__"])
    e = h[name]; kind = r.randrange(9)
    if kind == 0: e["dtype"] = r.choice(["F64", "I8", "BOOL", "Q4", 7, None, "F16", "BF16"])
    elif kind == 1: e["shape"] = r.choice([[], [0], [2**62, 2**62], [-1], ["a"], [1] * 9, e["shape"][::-1]])
    elif kind == 2: e["data_offsets"] = [r.randrange(2**64) if r.random() < .3 else r.randrange(len(body) + 9), r.randrange(len(body) + 9)]
    elif kind == 3: h[r.choice(["lm_head.weight", "wte.weight", "h.0.attn.bias", "x"])] = e
    elif kind == 4: del h[name]
    elif kind == 5: e["extra"] = 1
    elif kind == 6: h["__metadata__"] = r.choice([{"a": 1}, [], "s", {"format": "pt"}])
    elif kind == 7: h.update({"k%d" % j: {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for j in range(r.randrange(5000))})
    text = json.dumps(h).encode()
    if kind == 8: text = mutate_bytes(text, r)
    declared = len(text) if r.random() < .9 else r.choice([0, 7, 2**63, len(text) + 5])
    st = struct.pack("<Q", declared) + text + body
    os.makedirs("m%d/hf" % m, exist_ok=True)
    open("m%d/hf/model.safetensors" % m, "wb").write(mutate_bytes(st, r) if r.random() < .2 else st)
    open("m%d/hf/config.json" % m, "w").write(open("hf/config.json").read())
    # llm.c: a header field or the bytes.
    b = bytearray(llmc)
    if r.random() < .6:
        i = r.randrange(8); b[4 * i:4 * i + 4] = struct.pack("<i", r.choice([0, -1, 2**31 - 1, 1, 3, 50257, 2**24]))
    else:
        b = bytearray(mutate_bytes(bytes(b), r))
    open("m%d/g.bin" % m, "wb").write(bytes(b))
    # series CSV: structure, values, stamps, sizes.
    lines = list(csv_lines); kind = r.randrange(7)
    i = r.randrange(1, len(lines)); f = lines[i].split(",")
    if kind == 0: f[2] = r.choice(values)
    elif kind == 1: f[1] = r.choice(stamps)
    elif kind == 2: f.insert(r.randrange(4), r.choice(['"', '""', '"a,b"', "", "x"]))
    elif kind == 3: lines[0] = r.choice(["", "unique_id,ds", "ds,y", "y", "unique_id,ds,y,y", '"unique_id",ds,y', "\ufeffunique_id,ds,y"])
    elif kind == 4: f[0] = r.choice(['"s0', 's0"', '"x""y"', "s" * 5000, ""])
    elif kind == 5: lines += ["s9,%d,1" % j for j in range(r.randrange(3))] + ["s%d,2021-06-%02d,1" % (r.randrange(3), r.randrange(1, 31))]
    elif kind == 6: lines = lines[:r.randrange(len(lines))]
    lines[i if i < len(lines) else 0] = ",".join(f) if kind not in (3, 5, 6) else lines[i if i < len(lines) else 0]
    open("m%d/s.csv" % m, "w").write("\n".join(lines) + ("\n" if r.random() < .8 else ""))
PY
for m in $(seq 1 "$mutants"); do
  probe ck-forecast "$bin" forecast "m$m/ck.h5" --data s.csv --horizon 2 --samples 3 --out "m$m/f.csv"
  probe ck-eval "$bin" eval "m$m/ck.h5" --data s.csv --samples 2
  if [ $((m % 4)) -eq 0 ]; then
    mkdir -p "m$m/resume" && cp "m$m/ck.h5" "m$m/resume/last.h5"
    probe ck-resume "$bin" train f.yaml --set run.out_dir="$dir/m$m/resume" --set run.resume=true --set train.steps=3
  fi
  probe st-import "$bin" import "m$m/hf" --tokenizer byte --out "m$m/imp.h5"
  probe llmc-import "$bin" import "m$m/g.bin" --tokenizer byte --out "m$m/imp2.h5"
  [ $((m % 4)) -eq 1 ] && probe st-init "$bin" train g.yaml --set model.init_from="$dir/m$m/hf" --set run.out_dir="$dir/m$m/ft"
  probe csv-forecast "$bin" forecast frun/best.h5 --data "m$m/s.csv" --horizon 2 --samples 3 --out "m$m/f2.csv"
  probe csv-eval "$bin" eval frun/best.h5 --data "m$m/s.csv" --samples 2
done
[ ! -s bad.txt ] || fail "$(wc -l < bad.txt) command(s) crashed, hung or answered in more than one line"
echo "cli_fuzz_inputs_test: $mutants mutants of each kind, no crash, hang or multi-line error"

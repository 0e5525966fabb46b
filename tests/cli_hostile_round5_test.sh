#!/usr/bin/env bash
# cli_hostile_round5_test.sh BITGRAD: the fifth round of hostile use, each kind by an instance
# other than the one reported: the calendar (impossible dates, cadences kept, bitgrad's own
# output scored back), CSV written so that it reads back (quoted ids, shortest exact numbers,
# pandas' reader where installed, Python's csv module otherwise), values near the double's
# limits in the right units, forecast memory bounded by groups, imports checked before they
# allocate and refused when they lie, check-determinism on a forecaster, honest messages,
# distinct quantile columns, settings that change nothing refused, resumes that do not read
# their start and say when their schedule changes.
set -uo pipefail
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
source "$here/cli_lib.sh"
cd "$dir"
command -v python3 >/dev/null || { echo "python3 not found: skipped"; exit 77; }

# An hourly series and a 15-minute one (three series each), and the forecaster trained on them.
awk 'BEGIN {
  srand(11)
  print "unique_id,ds,y" > "h.csv"
  print "unique_id,ds,y" > "q.csv"
  for (i = 0; i < 3; i++) {
    x = 0
    for (n = 0; n < 80; n++) {
      x = 0.6 * x + (rand() - 0.5)
      printf "\"id,%d \"\"x\"\"\",2020-03-0%d %02d:00,%.5f\n", i, 1 + int(n / 24), n % 24, 10 + x > "h.csv"
      printf "s%d,2020-03-01T%02d:%02d:00,%.5f\n", i, int(n / 4), 15 * (n % 4), 10 + x > "q.csv"
    }
  }
}'
cat > f.yaml <<YAML
run: {out_dir: $dir/run, device: cpu}
data: {format: series, path: $dir/h.csv, horizon: 4, season: 24}
model: {type: forecaster, block_size: 32, scale_window: 8, n_layer: 1, n_head: 2, n_embd: 16, head: bide}
head: {bide: {hidden: 8}}
train: {steps: 6, batch_size: 4, eval_interval: 3, log_interval: 3, deterministic: true}
YAML
"$bin" train f.yaml > train.log 2>&1 || fail "train: $(tail -2 train.log)"

# 1. The calendar: impossible stamps refused by what is wrong; forecast stamps keep the cadence
#    (15 minutes across the hour, hours across midnight) and stay a key, so bitgrad's own paths
#    of a held-out window are scored back by bitgrad eval.
printf 'unique_id,ds,y\na,2021-02-29,1\n' > leap.csv
one_line_error "day 29 of 2021-02-29 does not exist (February 2021 has 28 days)" \
  "$bin" forecast run/best.h5 --data leap.csv --out x.csv
printf 'unique_id,ds,y\na,2020-01-01 23:60,1\n' > minute.csv
one_line_error "minute 60 does not exist" "$bin" forecast run/best.h5 --data minute.csv --out x.csv
printf 'unique_id,ds,y\na,9223372036854775806,1\na,9223372036854775807,2\n' > last_step.csv
one_line_error "run past the range of a 64-bit step" "$bin" forecast run/best.h5 --data last_step.csv --out x.csv --horizon 2
[ ! -e x.csv ] || fail "a refused forecast wrote its output"
"$bin" forecast run/best.h5 --data q.csv --horizon 3 --samples 4 --out fq.csv > /dev/null || fail "forecast q.csv"
grep -q '^s0,2020-03-01T20:00:00,' fq.csv && grep -q '^s0,2020-03-01T20:30:00,' fq.csv ||
  fail "15-minute stamps: $(grep '^s0,' fq.csv)"
awk -F, 'NR > 1 && seen[$1 FS $2]++ { bad = 1 } END { exit bad }' fq.csv || fail "(unique_id, ds) is not a key"
awk -F, 'NR == 1 { print; next } { n[$1]++; if (n[$1] <= 76) print }' q.csv > q_ctx.csv
"$bin" forecast run/best.h5 --data q_ctx.csv --horizon 4 --samples 6 --out fq2.csv --paths pq.csv > /dev/null ||
  fail "forecast of the context"
"$bin" eval pq.csv --data q.csv --horizon 4 > pe.log 2>&1 || fail "bitgrad eval refuses bitgrad's own paths: $(cat pe.log)"

# 2. Output that reads back: ids with a comma, quotes and an edge space are quoted; every row has
#    the header's fields; the same file is read back by bitgrad eval (above) and a CSV reader.
"$bin" forecast run/best.h5 --data h.csv --horizon 2 --samples 5 --quantiles 0.25,0.75 \
  --out fh.csv --paths ph.csv > /dev/null || fail "forecast h.csv"
python3 - fh.csv ph.csv <<'PY' || fail "bitgrad's CSV does not read back"
import csv, sys
try:
    import pandas
except ImportError:
    pandas = None
for path in sys.argv[1:]:
    rows = list(csv.reader(open(path, newline="")))
    assert all(len(r) == len(rows[0]) for r in rows), path + ": rows of other widths"
    ids = {r[0] for r in rows[1:]}
    assert ids == {'id,0 "x"', 'id,1 "x"', 'id,2 "x"'}, ids
    if pandas is not None:
        df = pandas.read_csv(path)
        assert set(df["unique_id"]) == ids and df.shape[1] == len(rows[0])
PY
grep -q '^"id,0 ""x""",2020-03-04 08:00,' fh.csv || fail "hourly stamps or quoting: $(sed -n 2p fh.csv)"

# 3. Values near the double's limit, in the right units: the scale of 1e299-sized values is
#    taken in their units (the training loss equals the one of the same series in units), and
#    magnitudes past the documented bounds are refused by line.
awk -F, 'NR == 1 { print; next } { printf "%s,%s,%.5fe298\n", $1, $2, $3 }' q.csv > huge.csv
"$bin" train f.yaml --set data.path="$dir/q.csv" --set run.out_dir="$dir/unit" > unit.log 2>&1 || fail "unit run"
"$bin" train f.yaml --set data.path="$dir/huge.csv" --set run.out_dir="$dir/huge" > huge.log 2>&1 || fail "huge run"
a=$(grep -oE '^step +3/6 \| loss [0-9.]+' unit.log); b=$(grep -oE '^step +3/6 \| loss [0-9.]+' huge.log)
[ -n "$a" ] && [ "$a" = "$b" ] || fail "1e299-sized values train otherwise than the same values in units: '$a' vs '$b'"
"$bin" forecast huge/best.h5 --data huge.csv --horizon 2 --samples 4 --out fhuge.csv > /dev/null || fail "forecast huge"
"$bin" forecast unit/best.h5 --data q.csv --horizon 2 --samples 4 --out funit.csv > /dev/null || fail "forecast unit"
paste -d, funit.csv fhuge.csv | awk -F, 'NR > 1 { for (i = 3; i <= 12; i++) {
    r = $(i + 12) / ($i * 1e298); if (r < 0.999999 || r > 1.000001) bad = 1 } } END { exit bad }' ||
  fail "a forecast of 1e299-sized values is not the same forecast in their units: $(sed -n 2p fhuge.csv)"
printf 'unique_id,ds,y\na,1,5\na,2,-2e300\n' > past.csv
one_line_error "past.csv:3: y '-2e300' is outside the magnitudes" "$bin" forecast run/best.h5 --data past.csv --out x.csv
printf '3\n1e-310\n' > tiny.txt
one_line_error "tiny.txt:2: '1e-310' is outside the magnitudes" "$bin" forecast run/best.h5 --data tiny.txt --out x.csv

# 4. Costs within their bounds: a forecast past the per-series bound is refused at once; a
#    character device is not read as data; an import checks its file before it allocates the
#    model config.json describes; a header of 40,000 keys is checked in linear time.
"$bin" train f.yaml --set model.block_size=256 --set train.steps=1 --set train.eval_interval=1 \
  --set run.out_dir="$dir/long" > long.log 2>&1 || fail "train a block of 256: $(tail -2 long.log)"
one_line_error "values for one series; at most 134217728" \
  "$bin" forecast long/best.h5 --data h.csv --out x.csv --samples 1048576 --horizon 200
one_line_error "/dev/urandom: is a character device, expected a series file" \
  "$bin" forecast run/best.h5 --data /dev/urandom --out x.csv
one_line_error "/dev/zero: is a character device" "$bin" eval pq.csv --data /dev/zero --horizon 4
cat > g.yaml <<YAML
run: {out_dir: $dir/gsrc, seed: 5, device: cpu}
data: {path: h.csv, tokenizer: byte}
model: {type: gpt, block_size: 16, n_layer: 1, n_head: 2, n_embd: 16, bias: true, attention: composed}
train: {steps: 2, batch_size: 2, eval_interval: 2, eval_iters: 1}
YAML
"$bin" train g.yaml > gtrain.log 2>&1 || fail "gpt train: $(tail -2 gtrain.log)"
"$bin" export gsrc/last.h5 --format safetensors --out hf > /dev/null 2>&1 || fail "export"
"$bin" export gsrc/last.h5 --format llmc --out g.bin > /dev/null 2>&1 || fail "export llmc"
variant() {  # variant NAME EDIT [CONFIG-SED]: hf's files with one hostile edit, in NAME/
  mkdir -p "$1" && sed "${3:-}" hf/config.json > "$1/config.json"
  python3 - hf/model.safetensors "$1/model.safetensors" "$2" <<'PY'
import json, struct, sys
src, dst, edit = sys.argv[1:]
raw = open(src, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n]); data = raw[8 + n:]
entries = sorted(((k, v) for k, v in hdr.items() if k != "__metadata__"),
                 key=lambda kv: kv[1]["data_offsets"][0])
entries = [[k, v["dtype"], v["shape"], bytearray(data[v["data_offsets"][0]:v["data_offsets"][1]])]
           for k, v in entries]
byname = {e[0].replace("transformer.", ""): e for e in entries}
if edit == "scalar_wpe":
    byname["wpe.weight"][2:] = [[], bytearray(struct.pack("<f", 1.0))]
elif edit == "inf":
    byname["h.0.mlp.c_fc.bias"][3][4:8] = struct.pack("<f", float("-inf"))
elif edit == "f16_overflow":  # an F16 tensor whose value 70000 rounds past 65504 to infinity
    e = byname["ln_f.weight"]; vals = list(struct.unpack("<%df" % (len(e[3]) // 4), e[3]))
    e[1] = "F16"; e[3] = bytearray(b"".join(struct.pack("<e", v) for v in vals[1:]))
    e[3][0:0] = b"\x00\x7c"
elif edit == "long_wte":
    e = byname["wte.weight"]; e[2] = [e[2][0] + 1, e[2][1]]; e[3] += e[3][:e[2][1] * 4]
elif edit == "twice":
    e = byname["h.0.ln_2.bias"]; entries.append(["h.0.ln_2.bias", e[1], e[2], e[3]])
elif edit == "keys":
    entries += [["extra.%d" % j, "F32", [0], bytearray()] for j in range(40000)]
h, blob = {}, bytearray()
for k, dt, shape, b in entries:
    h[k] = {"dtype": dt, "shape": shape, "data_offsets": [len(blob), len(blob) + len(b)]}; blob += b
hs = json.dumps(h).encode(); hs += b" " * ((8 - len(hs) % 8) % 8)
open(dst, "wb").write(struct.pack("<Q", len(hs)) + hs + blob)
PY
}
variant layers none 's/"n_layer": 1,/"n_layer": 4096,/'
start=$(date +%s)
one_line_error 'no tensor "h.1.ln_1.weight" (a GPT-2 of 4096 layers has one)' "$bin" import layers --tokenizer byte --out x.h5
variant scalar_wpe scalar_wpe
one_line_error '"wpe.weight" is (), expected (16, 16)' "$bin" import scalar_wpe --tokenizer byte --out x.h5
one_line_error '"wpe.weight" is (), expected (16, 16)' "$bin" train g.yaml --set model.init_from="$dir/scalar_wpe" \
  --set run.out_dir="$dir/ft_scalar"
variant keys keys
one_line_error 'an unexpected tensor "extra.' "$bin" import keys --tokenizer byte --out x.h5
[ $(( $(date +%s) - start )) -lt 20 ] || fail "import's checks took $(( $(date +%s) - start )) s"

# 5-6. Imports that would lie: infinite weights (F32, an F16 overflow, llm.c), computation-
#    changing config.json fields, a vocabulary a row long, one tensor under two names; a folder's
#    own tokenizer files are used.
variant inf inf
one_line_error '"transformer.h.0.mlp.c_fc.bias" holds 1 NaN or infinite' "$bin" import inf --tokenizer byte --out x.h5
variant f16 f16_overflow
one_line_error '"transformer.ln_f.weight" holds 1 NaN or infinite' "$bin" import f16 --tokenizer byte --out x.h5
python3 - g.bin nan.bin <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
b[1024 + 4 * 7:1024 + 4 * 8] = struct.pack("<f", float("nan"))  # a value of wte
open(sys.argv[2], "wb").write(bytes(b))
PY
one_line_error '"transformer.wte.weight" holds 1 NaN or infinite' "$bin" import nan.bin --tokenizer byte --out x.h5
variant inner none 's/"n_embd": 16,/"n_embd": 16,\n  "n_inner": 48,/'
one_line_error "n_inner 48: bitgrad's MLP is 4 x n_embd (64) wide" "$bin" import inner --tokenizer byte --out x.h5
variant layer_scale none 's/"n_embd": 16,/"n_embd": 16,\n  "scale_attn_by_inverse_layer_idx": true,/'
one_line_error "scale_attn_by_inverse_layer_idx true" "$bin" import layer_scale --tokenizer byte --out x.h5
variant long_wte long_wte
one_line_error '"wte.weight" is (257, 16), expected (256, 16)' "$bin" import long_wte --tokenizer byte --out x.h5
variant twice twice
one_line_error '"h.0.ln_2.bias" is given twice' "$bin" import twice --tokenizer byte --out x.h5
[ ! -e x.h5 ] || fail "a refused import wrote its checkpoint"
if [ -f "$here/../../shared/data/gpt2/encoder.json" ]; then
  cat > bpe.yaml <<YAML
run: {out_dir: $dir/bpe, seed: 5, device: cpu}
data: {path: h.csv, tokenizer: gpt2, gpt2_dir: $here/../../shared/data/gpt2}
model: {type: gpt, block_size: 8, n_layer: 1, n_head: 2, n_embd: 8, bias: true, vocab_size: 50257}
train: {steps: 1, batch_size: 2, eval_interval: 1, eval_iters: 1}
YAML
  "$bin" train bpe.yaml > bpe.log 2>&1 || fail "bpe train: $(tail -2 bpe.log)"
  "$bin" export bpe/last.h5 --format safetensors --out hfbpe > /dev/null 2>&1 || fail "bpe export"
  cp "$here/../../shared/data/gpt2/encoder.json" hfbpe/vocab.json
  cp "$here/../../shared/data/gpt2/vocab.bpe" hfbpe/merges.txt
  "$bin" import hfbpe --out bpe_imp.h5 > imp.log 2>&1 || fail "import of a folder with its own tokenizer: $(cat imp.log)"
else
  echo "GPT-2's tokenizer files not found: the folder-tokenizer import is not checked"
fi

# 7. check-determinism on a forecaster: its own checks, and a record of the passing check.
"$bin" check-determinism f.yaml --runs 2 --steps 3 --out "$dir/cd" --record rec.txt > cd.log 2>&1 ||
  fail "check-determinism on a forecaster: $(tail -3 cd.log)"
grep -q "^batch invariance   equal" cd.log && grep -q "^sampler = trainer  equal" cd.log ||
  fail "forecaster checks: $(tail -4 cd.log)"
"$bin" check-determinism f.yaml --runs 2 --steps 3 --out "$dir/cd2" --compare rec.txt > cd2.log 2>&1 ||
  fail "compare: $(tail -3 cd2.log)"

# 8. Messages that say what failed.
one_line_error "--quantiles: 0 is not a level strictly between 0 and 1" \
  "$bin" forecast run/best.h5 --data h.csv --out x.csv --quantiles 0,0.5
one_line_error "$dir: is a directory, expected a series file" "$bin" forecast run/best.h5 --data "$dir" --out x.csv
one_line_error "bitlinear.norm: not used when model.linear is dense" "$bin" train f.yaml --set bitlinear.norm=rms
# A record holding a key this build reads but this run has not (a record of a BitLinear run's
# keys, or one made when forecasters still took train.eval_iters): not another build's key.
sed '/^#| train.steps/a #| train.eval_iters: 20' rec.txt > rec_old.txt
one_line_error "records 'train.eval_iters: 20', a setting this run does not use" "$bin" check-determinism \
  f.yaml --runs 2 --steps 3 --out "$dir/cd3" --compare rec_old.txt
sed '/^#| train.steps/a #| train.warp_drive: 9' rec.txt > rec_new.txt
one_line_error "a setting this build does not read" "$bin" check-determinism \
  f.yaml --runs 2 --steps 3 --out "$dir/cd3" --compare rec_new.txt

# 9. Distinct levels, distinct columns.
"$bin" forecast run/best.h5 --data h.csv --out fl.csv --quantiles 0.1,0.1000001,0.9 > /dev/null || fail "close levels"
[ "$(head -1 fl.csv)" = "unique_id,ds,mean,q0.1,q0.1000001,q0.9" ] || fail "level columns: $(head -1 fl.csv)"
printf 'run: {out_dir: %s/fit}\ntrain: {steps: 2}\ndistributions:\n  - {kind: normal, mu: 0, sigma: 1}\n  - {kind: normal, mu: 5, sigma: 2}\n' "$dir" > twins.yaml
one_line_error "'normal' names distributions.0 too" "$bin" fit-bide twins.yaml

# 10. Settings that change nothing are refused; a season the context cannot hold is refused.
one_line_error "train.eval_iters: not used when model.type is forecaster" "$bin" train f.yaml --set train.eval_iters=2
one_line_error "--season 80 needs more than 80" "$bin" eval run/best.h5 --season 80
one_line_error "data.horizon: 25 held-out points do not fit one validation window after model.scale_window 8" \
  "$bin" train f.yaml --set data.horizon=25

# 11-12. A fine-tune resumes without its start (moved away), refuses another start, and a resume
#    that changes the schedule says so.
"$bin" train g.yaml --set model.init_from="$dir/hf" --set run.out_dir="$dir/ft" --set train.steps=4 \
  --set run.stop_after_steps=2 > ft.log 2>&1 || fail "fine-tune: $(tail -2 ft.log)"
mv hf hf_moved
"$bin" train g.yaml --set model.init_from="$dir/hf" --set run.out_dir="$dir/ft" --set train.steps=4 \
  --set run.resume=true > ft2.log 2>&1 || fail "the resume needs its moved start: $(tail -2 ft2.log)"
one_line_error "started from $dir/hf" "$bin" train g.yaml --set model.init_from="$dir/hf_moved" \
  --set run.out_dir="$dir/ft" --set train.steps=6 --set run.resume=true
"$bin" train f.yaml --set run.out_dir="$dir/sched" --set train.steps=10 --set run.stop_after_steps=3 \
  --set schedule.type=cosine > s1.log 2>&1 || fail "schedule run"
"$bin" train f.yaml --set run.out_dir="$dir/sched" --set train.steps=20 --set run.resume=true \
  --set schedule.type=cosine > s2.log 2>&1 || fail "schedule resume: $(tail -2 s2.log)"
grep -q "note: resuming with other optimizer or schedule settings.*train.steps 10 -> 20" s2.log ||
  fail "no note on the changed schedule: $(grep -i note s2.log)"
# A forecaster's resume in another compute mode says so, as a language model's does (one check
# for every model).
"$bin" train f.yaml --set run.out_dir="$dir/sched" --set train.steps=20 --set run.resume=true \
  --set schedule.type=cosine --set train.deterministic=false --set run.resume_mode_change=true > s3.log 2>&1 ||
  fail "mode-change resume: $(tail -2 s3.log)"
grep -q "note: resuming in another compute mode" s3.log || fail "no note on the forecaster's mode change"
echo "cli_hostile_round5_test: ok"

#!/usr/bin/env bash
# torch_load_test.sh BITGRAD: nanoGPT parity and checkpoints edited by other tools. A small
# GPT trained here with model.gelu: erf (and one with tanh) is loaded into nanoGPT's model by
# the README's recipe as written and evaluated in PyTorch: its loss must equal `bitgrad eval`'s.
# Then h5py re-sets string attributes in the forms it writes (variable-length UTF-8 str,
# fixed-length ASCII bytes) and bitgrad must read them; an integer attribute re-set to a string
# must be refused in one line. Needs Debian's python3-torch and python3-h5py (/usr/bin/python3);
# exits 77 (skipped) without them.
set -u
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
$py -c "import torch, h5py" 2>/dev/null || { echo "skipped: /usr/bin/python3 lacks torch or h5py (apt-get install python3-torch python3-h5py)"; exit 77; }
source "$(dirname "$0")/cli_lib.sh"
printf 'First Citizen:\nBefore we proceed any further, hear me speak.\n' > "$dir/line.txt"
for i in $(seq 1 120); do cat "$dir/line.txt"; done > "$dir/corpus.txt"
head -c 700 "$dir/corpus.txt" > "$dir/eval.txt"
cat > "$dir/gpt.yaml" <<YAML
run: {out_dir: $dir/run, device: cpu, seed: 5}
data: {path: $dir/corpus.txt}
model: {type: gpt, block_size: 32, n_layer: 2, n_head: 2, n_embd: 32, bias: true, gelu: erf}
train: {steps: 30, batch_size: 8, eval_interval: 30, eval_iters: 2, log_interval: 10}
optimizer: {lr: 0.01}
YAML
for gelu in erf tanh; do
  "$bin" train "$dir/gpt.yaml" --set model.gelu=$gelu --set run.out_dir="$dir/$gelu" > "$dir/train_$gelu.log" 2>&1 || { cat "$dir/train_$gelu.log"; fail "train ($gelu) failed"; }
  ours=$("$bin" eval "$dir/$gelu/last.h5" --data "$dir/eval.txt" 2>&1) || fail "eval failed: $ours"
  ours=$(echo "$ours" | sed -n 's/.*| loss \([0-9.]*\) nats\/token |.*/\1/p')
  theirs=$($py "$here/python/torch_load_test.py" "$here/../README.md" "$dir/$gelu/last.h5" "$dir/eval.txt" $gelu 2>&1) || fail "the README recipe failed ($gelu): $theirs"
  theirs=$(echo "$theirs" | sed -n 's/^loss \([0-9.]*\) .*/\1/p')
  $py -c "import sys; a, b = float('$ours'), float('$theirs'); sys.exit(0 if abs(a - b) < 2e-4 else 1)" || fail "gelu $gelu: bitgrad eval $ours, nanoGPT in PyTorch $theirs"
  echo "gelu $gelu: bitgrad eval $ours, nanoGPT in PyTorch $theirs"
  [ $gelu = erf ] && erf_loss=$theirs
done
# A BIDE head (the frequency code: patterns are not the ids) by its own README recipe.
"$bin" train "$dir/gpt.yaml" --set model.head=bide --set head.bide.code=frequency \
  --set run.out_dir="$dir/bide" > "$dir/train_bide.log" 2>&1 || { cat "$dir/train_bide.log"; fail "train (bide) failed"; }
ours=$("$bin" eval "$dir/bide/last.h5" --data "$dir/eval.txt" 2>&1) || fail "eval failed: $ours"
ours=$(echo "$ours" | sed -n 's/.*| loss \([0-9.]*\) nats\/token |.*/\1/p')
theirs=$($py "$here/python/torch_load_test.py" "$here/../README.md" "$dir/bide/last.h5" "$dir/eval.txt" erf 2>&1) || fail "the README's BIDE recipe failed: $theirs"
theirs=$(echo "$theirs" | sed -n 's/^loss \([0-9.]*\) .*/\1/p')
$py -c "import sys; a, b = float('$ours'), float('$theirs'); sys.exit(0 if abs(a - b) < 2e-4 else 1)" || fail "bide head: bitgrad eval $ours, nanoGPT + the README's BIDE head in PyTorch $theirs"
echo "bide head: bitgrad eval $ours, nanoGPT + the README's BIDE head in PyTorch $theirs"

# The erf model is not the tanh one: evaluated with the other GELU, PyTorch disagrees.
wrong=$($py "$here/python/torch_load_test.py" "$here/../README.md" "$dir/erf/last.h5" "$dir/eval.txt" tanh | sed -n 's/^loss \([0-9.]*\) .*/\1/p')
[ -n "$wrong" ] && [ "$wrong" != "$erf_loss" ] || fail "the GELU form made no difference ($wrong)"

# h5py re-sets string attributes: a str (variable-length UTF-8) and numpy bytes (fixed-length
# ASCII); bitgrad reads both.
cp "$dir/erf/last.h5" "$dir/edited.h5"
$py - "$dir/edited.h5" "$dir/eval.txt" <<'PY' || fail "h5py could not edit the checkpoint"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    f.attrs["val_data"] = sys.argv[2]                                  # str: vlen UTF-8
    f.attrs["vocab_chars"] = np.bytes_(f.attrs["vocab_chars"].encode())  # fixed-length ASCII
    f.attrs["val_fraction"] = 0.5                                      # float
PY
out=$("$bin" eval "$dir/edited.h5" 2>&1) || fail "eval of the h5py-edited checkpoint failed: $out"
echo "$out" | grep -q "$dir/eval.txt (last 0.50)" || fail "the edited val_data/val_fraction were not read: $out"
"$bin" sample "$dir/edited.h5" --prompt "First" --tokens 5 --temperature 0 > "$dir/s.txt" 2>&1 || fail "sample of the edited checkpoint failed: $(cat "$dir/s.txt")"
"$bin" sample "$dir/erf/last.h5" --prompt "First" --tokens 5 --temperature 0 > "$dir/s0.txt" 2>&1
cmp -s "$dir/s.txt" "$dir/s0.txt" || fail "the re-set vocabulary changed the text"
# An integer attribute re-set to a string is refused in one line, naming it.
$py -c "import sys, h5py; f = h5py.File(sys.argv[1], 'r+'); f.attrs['step'] = 'seven'; f.close()" "$dir/edited.h5"
msg=$("$bin" eval "$dir/edited.h5" 2>&1) && fail "a string step was accepted"
[ "$(echo "$msg" | wc -l)" -eq 1 ] || fail "error is not one line: $msg"
echo "$msg" | grep -q "attribute 'step' is a string, expected an integer" || fail "unexpected error: $msg"
# What the attributes say is checked against what the datasets hold: each h5py edit below makes
# the file describe another model than its datasets, and is refused in one line naming it.
h5edit() {  # h5edit SRC DST PYTHON (f is the open file)
  cp "$1" "$2" && $py -c "import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], 'r+')
$3
f.close()" "$2" || fail "h5py could not edit $2"
}
refused() {  # refused TEXT FILE
  local msg
  msg=$("$bin" eval "$2" --data "$dir/eval.txt" 2>&1) && fail "accepted $2: $msg"
  [ "$(echo "$msg" | wc -l)" -eq 1 ] || fail "error is not one line: $msg"
  echo "$msg" | grep -qF -- "$1" || fail "$2: expected '$1', got: $msg"
}
h5edit "$dir/bide/last.h5" "$dir/code_id.h5" "f.attrs['head.bide.code'] = 'id'"
refused "holds a token code table (head/bide_code_of_id) but head.bide.code is id" "$dir/code_id.h5"
h5edit "$dir/erf/last.h5" "$dir/alias.h5" "f['lm_head.weight'][0, 0] += 1"
refused "lm_head.weight differs from transformer.wte.weight" "$dir/alias.h5"
h5edit "$dir/erf/last.h5" "$dir/extra.h5" "f['transformer.h.9.mlp.c_fc.weight'] = np.zeros((4, 4), 'f4')"
refused "dataset 'transformer.h.9.mlp.c_fc.weight' is not a parameter of the model" "$dir/extra.h5"
h5edit "$dir/erf/last.h5" "$dir/nan.h5" "f['transformer.ln_f.weight'][3] = float('nan')"
refused "tensor 'transformer.ln_f.weight' element 3 is nan" "$dir/nan.h5"
# A resumed run's metrics (its loss.svg) must be numbers that can be drawn.
mkdir -p "$dir/resume"
h5edit "$dir/erf/last.h5" "$dir/resume/last.h5" "f.attrs['metrics_csv'] = f.attrs['metrics_csv'].replace('\\n10,', '\\n10,inf', 1)"
msg=$("$bin" train "$dir/gpt.yaml" --set run.out_dir="$dir/resume" --set run.resume=true --set train.steps=40 2>&1 >/dev/null) && fail "a non-finite metrics_csv was resumed"
echo "$msg" | grep -q "attribute metrics_csv:[0-9]*: 'inf[0-9.]*' is not a finite number" || fail "unexpected error: $msg"
echo "torch_load_test: all checks passed"

#!/usr/bin/env bash
# cli_weights_test.sh BITGRAD: pretrained weights in and out. A small GPT-2-shaped model (biases,
# tanh GELU) exported for transformers (a folder: model.safetensors, config.json) and for llm.c
# (.bin, fp32 and bf16); runs started from each with model.init_from take the same first step
# (the same fp32 weights, whichever file carried them); the bf16 file differs only by its
# rounding; a BIDE or hybrid head trains on the pretrained trunk, frozen for its first steps; `bitgrad import` of each file evaluates to the source checkpoint's loss; what
# another tool has no place for, and bad arguments, are refused in one line.
set -uo pipefail
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
source "$here/cli_lib.sh"
cd "$dir"
head -c 30000 "$here/../README.md" > corpus.txt
cat > gpt2ish.yaml <<YAML
run: {out_dir: $dir/src, seed: 5, device: cpu}
data: {path: corpus.txt}
model: {type: gpt, block_size: 16, n_layer: 2, n_head: 2, n_embd: 16, bias: true, attention: composed}
train: {steps: 6, batch_size: 2, eval_interval: 3, eval_iters: 1, log_interval: 1}
YAML
"$bin" train gpt2ish.yaml > train.log 2>&1 || fail "train failed: $(tail -3 train.log)"
"$bin" export src/last.h5 --format safetensors --out hf > /dev/null 2>&1 || fail "export safetensors failed"
[ -s hf/model.safetensors ] && [ -s hf/config.json ] || fail "the folder lacks model.safetensors or config.json"
grep -q '"activation_function": "gelu_new"' hf/config.json || fail "config.json names no gelu_new"
"$bin" export src/last.h5 --format llmc --out gpt.bin > /dev/null 2>&1 || fail "export llmc failed"
"$bin" export src/last.h5 --format llmc --dtype bf16 --out gpt_bf16.bin > /dev/null 2>&1 || fail "export llmc bf16 failed"
[ "$(( $(stat -c %s gpt.bin) - 1024 ))" -eq "$(( 2 * ($(stat -c %s gpt_bf16.bin) - 1024) ))" ] ||
  fail "the bf16 file is not half the fp32 one's data"
# The same weights through three files: the same first step.
first_step() {  # first_step INIT_FROM: the loss at step 1 of a run started from it
  "$bin" train gpt2ish.yaml --set model.init_from="$1" --set run.out_dir="$dir/ft_$2" \
    --set train.steps=1 > "ft_$2.log" 2>&1 || fail "init_from $1 failed: $(tail -2 "ft_$2.log")"
  grep -oE '^step +1/1 \| loss [0-9.]+' "ft_$2.log"
}
a=$(first_step hf folder); b=$(first_step hf/model.safetensors file); c=$(first_step gpt.bin llmc)
[ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ] || fail "first steps differ: '$a' '$b' '$c'"
fresh=$("$bin" train gpt2ish.yaml --set run.out_dir="$dir/fresh" --set train.steps=1 2>&1 |
  grep -oE '^step +1/1 \| loss [0-9.]+')
[ "$fresh" != "$a" ] || fail "a run from the pretrained weights starts where a fresh one does"
d=$(first_step gpt_bf16.bin bf16)
[ -n "$d" ] || fail "no step from the bf16 file"
# A BIDE head and a tied hybrid one on the pretrained trunk (their own parameters drawn).
for head in "" "--set head.bide.softmax_ids=8 --set head.bide.tie_softmax=true --set head.bide.code=frequency"; do
  "$bin" train gpt2ish.yaml --set model.init_from=hf --set model.head=bide $head \
    --set run.out_dir="$dir/bide_ft" --set train.steps=2 > bide_ft.log 2>&1 ||
    fail "a BIDE head on the pretrained trunk failed ($head): $(tail -2 bide_ft.log)"
  rm -rf "$dir/bide_ft"
done
# Import: a byte-level model's exported files back as checkpoints that eval and sample read,
# with the source checkpoint's loss to the last digit.
"$bin" train gpt2ish.yaml --set data.tokenizer=byte --set run.out_dir="$dir/byte" > byte.log 2>&1 ||
  fail "the byte-level run failed: $(tail -2 byte.log)"
"$bin" export byte/last.h5 --format safetensors --out hfb > /dev/null 2>&1 || fail "export of the byte model failed"
"$bin" export byte/last.h5 --format llmc --out byte.bin > /dev/null 2>&1 || fail "llmc export of the byte model failed"
want=$("$bin" eval byte/last.h5 --data corpus.txt 2>&1 | grep -oE 'loss [0-9.]+ nats/token')
[ -n "$want" ] || fail "no eval of the source checkpoint"
for src in hfb hfb/model.safetensors byte.bin; do
  out="imp_$(echo "$src" | tr '/.' '__').h5"
  "$bin" import "$src" --tokenizer byte --out "$out" > imp.log 2>&1 || fail "import $src failed: $(cat imp.log)"
  got=$("$bin" eval "$out" --data corpus.txt 2>&1 | grep -oE 'loss [0-9.]+ nats/token')
  [ "$got" = "$want" ] || fail "import $src evaluates to '$got', its source to '$want'"
done
"$bin" sample imp_hfb.h5 --tokens 8 > /dev/null 2>&1 || fail "sample of an import failed"
# HDF5 -> safetensors -> HDF5 and HDF5 -> llm.c .bin -> HDF5: every weight bit for bit.
weights() { "$bin" checksum "$1" | grep -E ' (transformer\.|lm_head\.weight)' | sort; }
[ -n "$(weights byte/last.h5)" ] || fail "no weight digests"
for f in imp_hfb.h5 imp_hfb_model_safetensors.h5 imp_byte_bin.h5; do
  [ "$(weights "$f")" = "$(weights byte/last.h5)" ] || fail "$f's weights differ from the source checkpoint's"
done
# llm.c's bf16 file: its weights widened exactly; the loss within bf16's rounding of the source's.
"$bin" export byte/last.h5 --format llmc --dtype bf16 --out byte16.bin > /dev/null 2>&1 || fail "bf16 llmc export failed"
"$bin" import byte16.bin --tokenizer byte --out imp16.h5 > /dev/null 2>&1 || fail "import of the bf16 file failed"
got16=$("$bin" eval imp16.h5 --data corpus.txt 2>&1 | grep -oE 'loss [0-9.]+' | cut -d' ' -f2)
ref=$(echo "$want" | cut -d' ' -f2)
awk -v a="$got16" -v b="$ref" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d < 0.01 * b) }' ||
  fail "the bf16 import evaluates to $got16, its source to $ref"
"$bin" import byte.bin --tokenizer byte --vocab-size 320 --out wide.h5 > /dev/null 2>&1 || fail "import --vocab-size failed"
got=$("$bin" eval wide.h5 --data corpus.txt 2>&1 | grep -oE 'loss [0-9.]+ nats/token')
[ -n "$got" ] || fail "no eval of the padded import"
gpt2dir="$here/../../shared/data/gpt2"
if [ -f "$gpt2dir/encoder.json" ] && [ -f "$gpt2dir/vocab.bpe" ]; then
  one_line_error "has 256 token ids; the gpt2 tokenizer has 50257" "$bin" import hfb --gpt2-dir "$gpt2dir" --out no.h5
fi
one_line_error "vocab.bpe" "$bin" import hfb --gpt2-dir "$dir" --out no.h5
one_line_error "--vocab-size" "$bin" import hfb --tokenizer byte --vocab-size 100 --out no.h5
one_line_error "no such file or folder" "$bin" import missing_dir --tokenizer byte --out no.h5
one_line_error "--gpt2-dir: not used with --tokenizer byte" "$bin" import hfb --tokenizer byte --gpt2-dir x --out no.h5
[ ! -e no.h5 ] || fail "a refused import wrote its file"
one_line_error "--out" "$bin" import byte.bin --tokenizer byte --out byte.bin  # never over its input
[ "$(stat -c %s byte.bin)" -gt 1024 ] || fail "a refused import changed its input"
# model.freeze_trunk_steps: a BIDE head on the trunk, the trunk as the file holds it for the first
# N steps (its datasets' digests equal the import's), moving after them.
trunk() { "$bin" checksum "$1" | grep ' transformer\.' | sort; }
frozen_run() {  # frozen_run STEPS OUT
  "$bin" train gpt2ish.yaml --set data.tokenizer=byte --set model.init_from=hfb --set model.head=bide \
    --set model.freeze_trunk_steps=2 --set train.steps="$1" --set run.out_dir="$dir/$2" > "$2.log" 2>&1 ||
    fail "the frozen-trunk run failed: $(tail -2 "$2.log")"
}
frozen_run 2 frz2; frozen_run 3 frz3
[ -n "$(trunk imp_hfb.h5)" ] && [ "$(trunk frz2/last.h5)" = "$(trunk imp_hfb.h5)" ] ||
  fail "two frozen steps changed the trunk"
[ "$(trunk frz3/last.h5)" != "$(trunk imp_hfb.h5)" ] || fail "the trunk did not move after the freeze"
one_line_error "model.freeze_trunk_steps: not used when model.init_from is not set" "$bin" train gpt2ish.yaml \
  --set model.freeze_trunk_steps=2 --set run.out_dir="$dir/nofile"
one_line_error "the tied softmax head has no parameters of its own" "$bin" train gpt2ish.yaml \
  --set model.init_from=hf --set model.freeze_trunk_steps=2 --set run.out_dir="$dir/nohead"
mkdir -p imprun && cp imp_hfb.h5 imprun/last.h5
one_line_error "was written by bitgrad import" "$bin" train gpt2ish.yaml --set data.tokenizer=byte \
  --set run.out_dir="$dir/imprun" --set run.resume=true
# Refusals.
one_line_error "has no place for ternary weights" "$bin" export \
  "$( "$bin" train gpt2ish.yaml --set model.linear=bitlinear --set run.out_dir="$dir/bit" \
      --set train.steps=1 > /dev/null 2>&1; echo "$dir/bit/last.h5")" --format safetensors --out bitdir
[ ! -e bitdir ] || fail "a refused export made its folder"
one_line_error "--format onnx" "$bin" export src/last.h5 --format onnx --out x
one_line_error "not both" "$bin" export src/last.h5 --packed --format llmc --out x.bin
one_line_error "--dtype applies to --format llmc" "$bin" export src/last.h5 --format safetensors --dtype bf16 --out y
one_line_error "--dtype fp16" "$bin" export src/last.h5 --format llmc --dtype fp16 --out z.bin
one_line_error "width 16; the config asks for 2, 2, 32" "$bin" train gpt2ish.yaml \
  --set model.init_from="$dir/hf" --set model.n_embd=32 --set run.out_dir="$dir/wide"
one_line_error "nothing.bin" "$bin" train gpt2ish.yaml --set model.init_from="$dir/nothing.bin" \
  --set run.out_dir="$dir/none"
cat > nobias.yaml <<YAML
run: {out_dir: $dir/nb, seed: 5, device: cpu}
data: {path: corpus.txt}
model: {type: gpt, block_size: 16, n_layer: 1, n_head: 2, n_embd: 16}
train: {steps: 1, batch_size: 2, eval_interval: 1, eval_iters: 1}
YAML
"$bin" train nobias.yaml > /dev/null 2>&1 || fail "the bias-free run failed"
one_line_error "with biases" "$bin" export nb/last.h5 --format llmc --out nb.bin
[ ! -e nb.bin ] || fail "a refused export wrote its file"
echo "cli_weights_test: ok"

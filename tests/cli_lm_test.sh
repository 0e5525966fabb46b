#!/usr/bin/env bash
# cli_lm_test.sh BITGRAD: the language-model commands end to end on the CPU: prepare (llm.c
# shards), train from shards, sample, eval, and their bad input (one-line errors, non-zero
# exits, checkpoints left intact).
set -u
bin=$1
source "$(dirname "$0")/cli_lib.sh"
printf 'First Citizen:\nBefore we proceed any further, hear me speak.\n' > "$dir/line.txt"
for i in $(seq 1 200); do cat "$dir/line.txt"; done > "$dir/corpus.txt"

# prepare: byte shards in llm.c's format (header 1024 bytes + 2 bytes per token).
"$bin" prepare "$dir/corpus.txt" --out "$dir/shards" --tokenizer byte --val-fraction 0.1 > "$dir/prep.log" 2>&1 || { cat "$dir/prep.log"; fail "prepare failed"; }
bytes=$(wc -c < "$dir/corpus.txt")
total=$(( $(wc -c < "$dir/shards/train.bin") + $(wc -c < "$dir/shards/val.bin") - 2048 ))
[ "$total" -eq $((2 * bytes)) ] || fail "shards hold $total bytes of tokens, expected $((2 * bytes))"
# GPT-2 shards where the vocabulary is at hand (the test data folder; a fresh clone has no
# datasets/, prepare's default).
gpt2_dir=${BITGRAD_DATA_DIR:-../shared/data}/gpt2
if [ -f "$gpt2_dir/encoder.json" ]; then
  "$bin" prepare "$dir/corpus.txt" --out "$dir/bpe" --gpt2-dir "$gpt2_dir" > "$dir/bpe.log" 2>&1 || fail "gpt2 prepare failed: $(cat "$dir/bpe.log")"
  [ -s "$dir/bpe/train.bin" ] || fail "no gpt2 train shard"
fi

# train a byte-level GPT from the shards, then sample and evaluate it.
cat > "$dir/gpt.yaml" <<YAML
run: {out_dir: $dir/run, device: cpu, seed: 3}
data: {train_bin: $dir/shards/train.bin, val_bin: $dir/shards/val.bin, tokenizer: byte}
model: {type: gpt, block_size: 16, n_layer: 2, n_head: 2, n_embd: 16, dropout: 0.0, vocab_size: 320}
train: {steps: 40, batch_size: 8, eval_interval: 20, eval_iters: 2, log_interval: 10}
optimizer: {lr: 0.01, betas: [0.9, 0.99], weight_decay: 0.1}
schedule: {type: cosine, warmup_steps: 3, min_lr: 0.001}
YAML
"$bin" train "$dir/gpt.yaml" > "$dir/train.log" 2>&1 || { cat "$dir/train.log"; fail "train from shards failed"; }
grep -q "vocab 256" "$dir/train.log" || fail "byte vocabulary not used: $(head -3 "$dir/train.log")"
"$bin" sample "$dir/run/best.h5" --prompt "First" --tokens 30 --seed 7 > "$dir/s1.txt" 2>&1 || { cat "$dir/s1.txt"; fail "sample failed"; }
"$bin" sample "$dir/run/best.h5" --prompt "First" --tokens 30 --seed 7 > "$dir/s2.txt" 2>&1
cmp -s "$dir/s1.txt" "$dir/s2.txt" || fail "the same seed sampled different text"
head -c 5 "$dir/s1.txt" | grep -q "^First" || fail "sample does not continue the prompt: $(head -c 40 "$dir/s1.txt")"
# Past block_size the window slides (16-token model, 60 new tokens).
"$bin" sample "$dir/run/best.h5" --tokens 60 --temperature 0 > /dev/null 2>&1 || fail "long greedy sample failed"
"$bin" eval "$dir/run/best.h5" > "$dir/eval.log" 2>&1 || { cat "$dir/eval.log"; fail "eval failed"; }
grep -q "perplexity" "$dir/eval.log" || fail "eval printed no perplexity: $(cat "$dir/eval.log")"
"$bin" eval "$dir/run/best.h5" --data "$dir/corpus.txt" --batch-size 3 > /dev/null 2>&1 || fail "eval on a text file failed"

# Bad input.
one_line_error "longer than the model's block_size = 16" "$bin" sample "$dir/run/best.h5" --prompt "$(head -c 40 "$dir/corpus.txt")"
one_line_error "not a readable HDF5 file" "$bin" sample "$dir/corpus.txt"
one_line_error "nope.txt: cannot open text file (No such file" "$bin" prepare "$dir/nope.txt" --out "$dir/x"
head -c 600 "$dir/shards/train.bin" > "$dir/short.bin"
one_line_error "shorter than the 1024-byte header" "$bin" train "$dir/gpt.yaml" --set data.train_bin="$dir/short.bin" --set run.out_dir="$dir/x"
# A checkpoint of another architecture: resuming with another n_layer is refused, untouched.
cp "$dir/run/last.h5" "$dir/last.before"
one_line_error "model.n_layer: 2 vs 3" "$bin" train "$dir/gpt.yaml" --set run.resume=true --set model.n_layer=3
# train.cuda_graph: a GPT's step only.
grep -v '^model:' "$dir/gpt.yaml" > "$dir/mlp.yaml" && echo 'model: {type: char_mlp}' >> "$dir/mlp.yaml"
one_line_error "captures a GPT's step only" "$bin" train "$dir/mlp.yaml" --set train.cuda_graph=true --set run.out_dir="$dir/graph"
cmp -s "$dir/run/last.h5" "$dir/last.before" || fail "a refused resume changed last.h5"

# A char model: a prompt character outside its vocabulary.
cat > "$dir/char.yaml" <<YAML
run: {out_dir: $dir/char, device: cpu, seed: 3}
data: {path: $dir/corpus.txt}
model: {type: gpt, block_size: 16, n_layer: 1, n_head: 2, n_embd: 16}
train: {steps: 4, batch_size: 4, eval_interval: 4, eval_iters: 1, log_interval: 2}
YAML
"$bin" train "$dir/char.yaml" > /dev/null 2>&1 || fail "char train failed"
: > "$dir/empty.txt"
one_line_error "empty.txt: file is empty" "$bin" train "$dir/char.yaml" --set data.path="$dir/empty.txt" --set run.out_dir="$dir/x"
one_line_error "'Z' (byte 90) at position 1 is not in the" "$bin" sample "$dir/char/last.h5" --prompt "FZ"
# NaN loss (SGD at lr 10 diverges within a few steps): the run stops naming the first
# non-finite step, exits non-zero, and last.h5 stays the checkpoint of the last evaluation
# before it (every 2 steps), which the message names.
nan_run=(train "$dir/char.yaml" --set train.steps=40 --set train.grad_clip=0 --set optimizer.type=sgd --set optimizer.lr=10 --set optimizer.momentum=0.99)
msg=$("$bin" "${nan_run[@]}" --set run.out_dir="$dir/nan" --set train.log_interval=1 --set train.eval_interval=2 2>&1 >/dev/null) && fail "a diverging run exited 0"
[ "$(echo "$msg" | wc -l)" -eq 1 ] || fail "error is not one line: $msg"
bad_step=$(echo "$msg" | sed -n 's/.*became non-finite at step \([0-9]*\);.*/\1/p')
[ -n "$bad_step" ] && [ "$bad_step" -gt 2 ] || fail "unexpected NaN message: $msg"
good_step=$(( (bad_step - 1) / 2 * 2 ))
echo "$msg" | grep -q "the last checkpoint, $dir/nan/last.h5 (step $good_step), is kept as it was" || fail "the NaN message names no checkpoint of step $good_step: $msg"
"$bin" eval "$dir/nan/last.h5" 2>&1 | grep -q "step $good_step " || fail "last.h5 is not the step-$good_step checkpoint after the NaN at step $bad_step"
# The same run logging and evaluating only at step 40: the first non-finite step is still the
# one reported (a device-side flag, not the next log line), and no checkpoint is claimed.
msg=$("$bin" "${nan_run[@]}" --set run.out_dir="$dir/nan2" --set train.log_interval=40 --set train.eval_interval=40 2>&1 >/dev/null) && fail "a diverging run exited 0"
echo "$msg" | grep -q "became non-finite at step $bad_step; stopping: no checkpoint was saved by this run" || fail "expected step $bad_step and no checkpoint, got: $msg"
[ ! -e "$dir/nan2/last.h5" ] || fail "a diverged run left a last.h5"
echo "cli_lm_test: all checks passed"

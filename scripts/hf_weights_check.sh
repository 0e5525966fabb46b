#!/usr/bin/env bash
# hf_weights_check.sh: pretrained weights against transformers itself, on the GPU machine
# (transformers and PyTorch there; scripts/hf_weights_check.py is its side). Under $OUT:
# weights_check.txt, one line per check, and the per-token files; then scripts/llmc_weights_check.sh
# (llm.c itself, from the sources in .llmc/) on the trained model of (3).
# (1) A random GPT2LMHeadModel saved by transformers, imported by `bitgrad import`: bitgrad eval's
#     per-token nats over the Shakespeare validation shard against transformers' (|diff| <= 1e-4).
# (2) That checkpoint exported again (`bitgrad export --format safetensors`): transformers loads
#     it with the tensors it saved.
# (3) A GPT trained by bitgrad (a few hundred steps of a small GPT-2-shaped config over GPT-2's
#     50,257 ids, unpadded: an export keeps the tokenizer's rows only), exported:
#     transformers' per-token nats against bitgrad eval's, and the greedy continuation of a
#     prompt from both.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
py="python3 scripts/hf_weights_check.py"
w=/tmp/weights && rm -rf $w && mkdir -p $w
sum=$out/weights_check.txt
$bin prepare datasets/tinyshakespeare.txt --out $w/shards --gpt2-dir datasets/gpt2 > /dev/null
check() { echo "$1: $2" | tee -a $sum; }
$py make $w/hf 7
$bin import $w/hf --out $w/imp.h5 --gpt2-dir datasets/gpt2 | tee -a $sum
$bin eval $w/imp.h5 --data $w/shards/val.bin --per-token $out/bitgrad_random.csv --device cpu | tail -1 | tee -a $sum
$py score $w/hf $w/shards/val.bin $out/transformers_random.csv | tee -a $sum
check "random model, per-token nats" "$($py compare $out/bitgrad_random.csv $out/transformers_random.csv; echo rc=$?)"
$bin export $w/imp.h5 --format safetensors --out $w/exp > /dev/null
check "import then export" "$($py same $w/hf $w/exp; echo rc=$?)"
cat > $w/small.yaml <<YAML
run: {out_dir: $w/run, seed: 3}
data: {tokenizer: gpt2, gpt2_dir: datasets/gpt2, train_bin: $w/shards/train.bin, val_bin: $w/shards/val.bin}
model: {type: gpt, block_size: 128, n_layer: 2, n_head: 2, n_embd: 64, vocab_size: 50257, bias: true, dropout: 0.0}
train: {steps: 300, batch_size: 16, eval_interval: 300, eval_iters: 4, log_interval: 100, precision: bf16}
YAML
$bin train $w/small.yaml > $w/train.log 2>&1 || check "trained model" "train failed: $(tail -2 $w/train.log)"
$bin export $w/run/last.h5 --format safetensors --out $w/trained > /dev/null
$bin eval $w/run/last.h5 --data $w/shards/val.bin --per-token $out/bitgrad_trained.csv --device cpu | tail -1 | tee -a $sum
$py score $w/trained $w/shards/val.bin $out/transformers_trained.csv | tee -a $sum
check "trained model, per-token nats" "$($py compare $out/bitgrad_trained.csv $out/transformers_trained.csv; echo rc=$?)"
# Greedy text (a random model's logits are nearly flat, so ties make its argmax fragile: the
# trained one's), compared byte for byte. `sample` ends each sample with a line of dashes.
prompt="First Citizen:
Before we proceed any further, hear me"
$bin sample $w/run/last.h5 --prompt "$prompt" --tokens 24 --temperature 0 --device cpu 2>/dev/null |
  head -c -17 > $out/greedy_bitgrad.txt
$py greedy $w/trained datasets/gpt2 "$prompt" 24 > $out/greedy_transformers.txt
cmp -s $out/greedy_bitgrad.txt $out/greedy_transformers.txt &&
  check "trained model, greedy text (24 tokens)" "equal: $(tr '\n' '/' < $out/greedy_bitgrad.txt)" ||
  check "trained model, greedy text" "DIFFER: bitgrad '$(cat $out/greedy_bitgrad.txt)' transformers '$(cat $out/greedy_transformers.txt)'"
# (4), (5): the same trained model exported for llm.c and evaluated by llm.c itself.
bash scripts/llmc_weights_check.sh $w

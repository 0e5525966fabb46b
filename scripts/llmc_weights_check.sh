#!/usr/bin/env bash
# llmc_weights_check.sh DIR: a bitgrad checkpoint exported for llm.c, evaluated by llm.c itself, on
# the GPU machine. DIR is scripts/hf_weights_check.sh's work folder (its trained GPT-2-shaped model
# DIR/run/last.h5 and the Shakespeare shards DIR/shards). llm.c's sources travel in .llmc/ (a
# snapshot's train_gpt2.cu, Makefile and llmc/; .llmc/COMMIT names it). Appends to
# $out/weights_check.txt:
# (4) llm.c (built with PRECISION=FP32, TF32 off, no cuDNN) loads `bitgrad export --format llmc`'s
#     .bin with -e and prints its val loss over the whole validation shard (-m -1, B 8 x T 128);
#     bitgrad eval's per-token nats over the same positions must average to it within 1e-3.
# (5) The bf16 file in llm.c's default BF16 build, against bitgrad eval of the same file imported:
#     reported (bf16 arithmetic on both sides), not asserted.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
w=${1:?usage: llmc_weights_check.sh DIR}
sum=$out/weights_check.txt
check() { echo "$1: $2" | tee -a $sum; }
[ -f .llmc/train_gpt2.cu ] || { check "llm.c" "no .llmc/ sources travelled with this call"; exit 1; }
echo "llm.c: $(cat .llmc/COMMIT)" | tee -a $sum
build() {  # build PRECISION: llm.c's train_gpt2cu in /tmp/llmc_PRECISION
  local d=/tmp/llmc_$1
  rm -rf $d && cp -r .llmc $d
  # CUDA 13 takes a cudaMemLocation where llm.c passes a device id (its out-of-memory fallback).
  sed -i 's/cudaMemAdvise(\*out, bytes, cudaMemAdviseSetPreferredLocation, cudaCpuDeviceId)/cudaMemAdvise(*out, bytes, cudaMemAdviseSetPreferredLocation, cudaMemLocation{cudaMemLocationTypeHost, 0})/' $d/llmc/cuda_utils.cuh
  (cd $d && make train_gpt2cu PRECISION=$1 NO_MULTI_GPU=1 USE_CUDNN=0 > build.log 2>&1) ||
    { check "llm.c $1 build" "failed: $(grep -m3 -i error $d/build.log)"; return 1; }
}
build FP32 & p32=$!
build BF16 & p16=$!
$bin export $w/run/last.h5 --format llmc --out $w/model.bin | tee -a $sum
$bin export $w/run/last.h5 --format llmc --dtype bf16 --out $w/model_bf16.bin > /dev/null
$bin eval $w/run/last.h5 --data $w/shards/val.bin --per-token $out/bitgrad_llmc.csv --device cpu | tail -1
llmc_val() {  # llmc_val PRECISION FILE LOG: llm.c's val loss before any step
  (cd /tmp/llmc_$1 && ./train_gpt2cu -e $2 -i $w/shards/train.bin -j $w/shards/val.bin -b 8 -t 128 \
    -x 0 -v 1 -m -1 -s 0 -f 0 -ge 0 -r 0 -h 0) > $3 2>&1
}
block_mean() {  # block_mean CSV N: the mean nats of the first N positions
  awk -F, -v n="$2" 'NR > 1 && NR <= n + 1 { s += $3; k++ } END { printf "%.6f %d", s / k, k }' "$1"
}
if wait $p32; then
  llmc_val FP32 $w/model.bin $out/llmc_fp32.log
  batches=$(grep -oE 'val_num_batches +\| [0-9]+' $out/llmc_fp32.log | grep -oE '[0-9]+$')
  theirs=$(grep -m1 -oE '^val loss [0-9.]+' $out/llmc_fp32.log | cut -d' ' -f3)
  read -r ours k < <(block_mean $out/bitgrad_llmc.csv $((batches * 8 * 128)))
  verdict=$(awk -v a="$ours" -v b="$theirs" 'BEGIN { d = a - b; if (d < 0) d = -d;
    printf "%s (|difference| %.2e)", (b != "" && d <= 1e-3) ? "equal within 1e-3" : "DIFFER", d }')
  check "llm.c fp32 val loss" "llm.c $theirs over $batches batches of 8 x 128; bitgrad eval $ours over the same $k positions: $verdict"
fi
if wait $p16; then
  llmc_val BF16 $w/model_bf16.bin $out/llmc_bf16.log
  theirs=$(grep -m1 -oE '^val loss [0-9.]+' $out/llmc_bf16.log | cut -d' ' -f3)
  batches=$(grep -oE 'val_num_batches +\| [0-9]+' $out/llmc_bf16.log | grep -oE '[0-9]+$')
  $bin import $w/model_bf16.bin --out $w/imp_bf16.h5 --gpt2-dir datasets/gpt2 > /dev/null
  $bin eval $w/imp_bf16.h5 --data $w/shards/val.bin --per-token $out/bitgrad_llmc_bf16.csv --device cpu > /dev/null
  read -r ours k < <(block_mean $out/bitgrad_llmc_bf16.csv $((batches * 8 * 128)))
  check "llm.c bf16 val loss (reported)" "llm.c BF16 build $theirs; bitgrad eval (fp32) of the same file imported $ours"
fi

#!/usr/bin/env bash
# llmc_step_compare.sh: GPT-2 124M's training step in bitgrad and in llm.c, with and without
# cuDNN flash attention, in one call on the GPU machine (the trunk-speed targets are set against
# llm.c + cuDNN measured beside bitgrad). The same Shakespeare token shards, B 16 x T 1024, bf16:
# llm.c `train_gpt2cu -e d12` (random init, recompute off, no evaluation) and bitgrad's
# configs/gpt2_124m.yaml in the f32 (default) and bf16 residual streams, 40 steps each, two
# interleaved rounds; the median ms/step after the first 10 steps. Writes $out/llmc_compare.txt
# and the logs (llmc_compare_logs.tgz).
# Needs: the bundle, datasets/ (tinyshakespeare.txt, gpt2/), llm.c's sources in .llmc/ with
# NVIDIA/cudnn-frontend's include/ in .llmc/cudnn-frontend/include, and cuDNN 9 from PyTorch's
# wheel (nvidia.cudnn) on the machine.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
sum=$out/llmc_compare.txt
logs=/tmp/llmc_compare_logs && rm -rf $logs && mkdir -p $logs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $sum
[ -f .llmc/train_gpt2.cu ] || { echo "no .llmc/ sources travelled with this call" | tee -a $sum; exit 1; }
echo "llm.c: $(cat .llmc/COMMIT)" | tee -a $sum
# cuDNN from PyTorch's wheel: headers on CPATH, libcudnn.so (the linker's name) beside its .so.9.
cudnn=$(python3 -c 'import nvidia.cudnn, os; print(list(nvidia.cudnn.__path__)[0])')
mkdir -p /tmp/cudnn_link && ln -sf $cudnn/lib/libcudnn.so.9 /tmp/cudnn_link/libcudnn.so
export CPATH=$cudnn/include:${CPATH:-} LIBRARY_PATH=/tmp/cudnn_link:${LIBRARY_PATH:-}
export LD_LIBRARY_PATH=$cudnn/lib:$LD_LIBRARY_PATH
build() {  # build NAME USE_CUDNN: llm.c's BF16 train_gpt2cu in /tmp/llmc_NAME
  local d=/tmp/llmc_$1
  rm -rf $d && cp -r .llmc $d
  # CUDA 13 takes a cudaMemLocation where llm.c passes a device id (its out-of-memory fallback).
  sed -i 's/cudaMemAdvise(\*out, bytes, cudaMemAdviseSetPreferredLocation, cudaCpuDeviceId)/cudaMemAdvise(*out, bytes, cudaMemAdviseSetPreferredLocation, cudaMemLocation{cudaMemLocationTypeHost, 0})/' $d/llmc/cuda_utils.cuh
  (cd $d && make train_gpt2cu PRECISION=BF16 NO_MULTI_GPU=1 USE_CUDNN=$2 \
     NVCC_LDLIBS="-lnvrtc -lcuda" > build.log 2>&1) ||
    { echo "llm.c $1 build failed: $(grep -m3 -i error $d/build.log)" | tee -a $sum; return 1; }
}
build cudnn 1 & pc=$!
build plain 0 & pp=$!
$bin prepare datasets/tinyshakespeare.txt --out /tmp/shards --gpt2-dir datasets/gpt2 > /dev/null
wait $pc; ok_cudnn=$?
wait $pp; ok_plain=$?
llmc_ms() {  # the median ms of llm.c's step lines after step 10
  grep -oE '^step +[0-9]+/[0-9]+ .*\| [0-9.]+ ms' "$1" | awk -F'|' '{split($1, a, /[ \/]+/);
    if (a[2] > 10) { n = split($(NF), b, " "); print b[1] } }' | sort -n |
    awk '{v[NR] = $1} END {print (NR ? v[int((NR + 1) / 2)] : "nan")}'
}
llmc_loss() { grep -E "^step +$1/" "$2" | grep -oE 'loss [0-9.]+' | awk '{print $2}'; }
for rep in 1 2; do
  for run in llmc_cudnn llmc_plain bitgrad_f32 bitgrad_bf16; do
    log=$logs/${run}_$rep.log
    case $run in
      llmc_*)
        [ $run = llmc_cudnn ] && [ $ok_cudnn != 0 ] && continue
        [ $run = llmc_plain ] && [ $ok_plain != 0 ] && continue
        (cd /tmp/$run && ./train_gpt2cu -e d12 -i /tmp/shards/train.bin -j /tmp/shards/val.bin \
           -b 16 -t 1024 -x 40 -v 100000 -s 0 -h 0 -r 0 -z 0) > $log 2>&1
        rc=$?
        ms=$(llmc_ms $log)
        echo "$run rep $rep: rc=$rc $ms ms/step = $(awk -v m=$ms 'BEGIN{printf "%.0f", 16384 / m * 1000}') tokens/s; loss@40 $(llmc_loss 40 $log)" | tee -a $sum ;;
      bitgrad_*)
        act=fp32; [ $run = bitgrad_bf16 ] && act=bf16
        $bin train "${gpt2_40[@]}" --set train.activations=$act --set run.out_dir=/tmp/bg_$act > $log 2>&1
        rc=$?
        ms=$(median_step_ms $log 1)
        echo "$run rep $rep: rc=$rc $ms ms/step = $(awk -v m=$ms 'BEGIN{printf "%.0f", 16384 / m * 1000}') tokens/s; loss@40 $(losses 40 $log)" | tee -a $sum
        rm -rf /tmp/bg_$act ;;
    esac
  done
done
cp /tmp/llmc_cudnn/build.log $logs/llmc_cudnn_build.log 2>/dev/null
tar -C $logs -czf $out/llmc_compare_logs.tgz .

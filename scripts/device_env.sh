# device_env.sh: sourced by the scripts that run on the GPU machine. Goes to the repository
# root, unpacks the bundle that travelled with this call (scripts/make_device_bundle.sh),
# points the loader at its libraries and makes the output folder $out ($OUT, or ./gpu_out).
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${OUT:-gpu_out}
mkdir -p "$out"
# Always the bundle that travelled with this call, unpacked once: a script sourced while another
# runs (in the background) finds it unpacked and leaves it alone. The check and the unpacking
# hold a lock (flock on .bundle.lock): two scripts sourced at once would otherwise both find it
# unpacked by neither, and each remove .bundle under the other's running binary.
{
  flock 9
  for bundle in .bundle.tgz .bundle.txz; do
    [ -f $bundle ] || continue
    stamp="$(stat -c '%s %Y' $bundle)"
    [ "$(cat .bundle/.unpacked_from 2>/dev/null)" = "$stamp" ] ||
      { rm -rf .bundle && mkdir -p .bundle && tar xf $bundle -C .bundle && echo "$stamp" > .bundle/.unpacked_from; }
    break
  done
} 9> .bundle.lock
export LD_LIBRARY_PATH=$PWD/.bundle/lib:${LD_LIBRARY_PATH:-}
# Multi-GPU runs: never NVLink multicast (the machines' rule), and NCCL from PyTorch's wheel
# where the loader finds none (bitgrad loads it by BITGRAD_NCCL_LIB).
export NCCL_NVLS_ENABLE=0
if [ -z "${BITGRAD_NCCL_LIB:-}" ]; then
  lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  [ -n "$lib" ] && [ -f "$lib" ] && export BITGRAD_NCCL_LIB=$lib
fi
# Helpers the measuring scripts share. digest FILE: one 16-hex fingerprint of every dataset of a
# checkpoint (bitgrad checksum's lines, hashed). median_step_ms LOG [SKIP]: the median ms/step of a
# run's progress lines after the first SKIP (default 2: warm-up); "nan" without any.
digest() { "${bin:-.bundle/bitgrad}" checksum "$1" 2>&1 | grep -v '^#' | sha256sum | cut -c1-16; }
# losses PATTERN LOG: the losses a run's progress lines print at the steps PATTERN names ('10|20|40').
losses() { grep -E "^step +($1)/" "$2" | grep -oE 'loss [0-9.]+' | awk '{printf "%s ", $2}'; }
# GPT-2 124M's 40-step measuring run (the shards scripts prepare in /tmp/shards): warm-up 10, one
# eval batch at the end only, a progress line every 10 steps.
gpt2_40=(configs/gpt2_124m.yaml --set data.train_bin=/tmp/shards/train.bin --set data.val_bin=/tmp/shards/val.bin
         --set train.eval_iters=1 --set train.eval_interval=100000 --set schedule.warmup_steps=10
         --set train.log_interval=10 --set run.stop_after_steps=40)
median_step_ms() {
  grep -oE '[0-9.]+ ms/step' "$1" | awk -v skip="${2:-2}" 'NR>skip{print $1}' | sort -n |
    awk '{a[NR]=$1} END{print (NR? a[int((NR+1)/2)] : "nan")}'
}

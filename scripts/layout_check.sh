#!/usr/bin/env bash
# layout_check.sh: on the GPU machine, the current build (.bundle.tgz) against the previous one
# (.bundle_before.tgz, its bitgrad only): the CUDA test suite of the current build; checkpoint
# hashes of a few GPU steps of the baby GPT (bf16 standard and deterministic) from each; and the
# step times of the baby GPT and GPT-2 124M (bf16), the two builds interleaved. Logs under $OUT.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
rm -rf .bundle_before && mkdir -p .bundle_before && tar xzf .bundle_before.tgz -C .bundle_before
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
.bundle/bitgrad_tests > "$out/suite.log" 2>&1
grep -E "test cases|assertions" "$out/suite.log"
grep -B3 -A8 "ERROR\|FATAL" "$out/suite.log" | head -60
run() {  # run BIN TAG CONFIG STEPS [--set ...]
  local bin=$1 tag=$2 cfg=$3 steps=$4; shift 4
  LD_LIBRARY_PATH=$PWD/.bundle/lib $bin/bitgrad train "$cfg" --set run.out_dir=/tmp/lc_$tag \
    --set run.stop_after_steps=$steps --set train.eval_interval=100000 --set train.eval_iters=1 \
    --set train.log_interval=10 "$@" > "$out/$tag.log" 2>&1 || tail -3 "$out/$tag.log"
}
for build in before after; do
  bin=.bundle; [ $build = before ] && bin=.bundle_before
  for det in false true; do
    run $bin hash_${build}_$det configs/shakespeare_char.yaml 3 --set train.deterministic=$det
    echo "$build det=$det $(.bundle/bitgrad checksum /tmp/lc_hash_${build}_$det/last.h5 | sha256sum | cut -c1-16) $(grep -o 'compute: .*' "$out/hash_${build}_$det.log")" | tee -a "$out/hashes.txt"
  done
done
[ "${PART:-all}" = hashes ] && exit 0
for rep in 1 2; do
  for build in before after; do
    bin=.bundle; [ $build = before ] && bin=.bundle_before
    run $bin baby_${build}_$rep configs/shakespeare_char.yaml 300
    run $bin gpt2_${build}_$rep configs/gpt2_124m.yaml 60 --set data.gpt2_dir=datasets/gpt2
  done
done
# The median ms/step of each run's progress lines past its warm-up (50 steps; GPT-2 20).
for f in "$out"/baby_*.log "$out"/gpt2_*.log; do
  name=$(basename "$f" .log)
  awk -v name="$name" '/^step/ {split($2, s, "/"); st = s[1] + 0
      if ((name ~ /baby/ && st > 50) || (name ~ /gpt2/ && st > 20))
        for (i = 1; i <= NF; i++) if ($i == "ms/step") print $(i - 1)}' "$f" | sort -n |
    awk -v name="$name" '{v[NR] = $1} END {printf "%s median %.3f ms/step over %d windows\n", name, v[int((NR + 1) / 2)], NR}'
done | tee "$out/step_times.txt"

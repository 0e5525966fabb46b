#!/usr/bin/env bash
# bide_head_experiments.sh: on the GPU machine, the baby GPT with the softmax head and with the
# BIDE head (configs/shakespeare_char_bide.yaml) at H = 16, 32, 64, the same trunk, steps and
# seed; then `bitgrad eval` of each best.h5. STEPS (default the configs' 5000) shortens them.
# Logs, metrics and evals are packed into $OUT/bide_head_runs.tgz; the CUDA suite log beside it.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
steps=${STEPS:-5000}
runs=$out/runs && mkdir -p "$runs"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$runs/gpu.txt"
if [ "${SUITE:-1}" = 1 ]; then
  .bundle/bitgrad_tests > "$out/suite.log" 2>&1
  grep -E "test cases|assertions" "$out/suite.log"
  grep -B2 -A6 "ERROR" "$out/suite.log" | head -30
fi
train() {  # train NAME CONFIG [--set ...]
  local name=$1 cfg=$2; shift 2
  .bundle/bitgrad train "$cfg" --set run.out_dir=/tmp/bh_$name --set train.steps=$steps "$@" \
    > "$runs/$name.log" 2>&1 || tail -3 "$runs/$name.log"
  cp /tmp/bh_$name/metrics.csv "$runs/${name}_metrics.csv" 2>/dev/null
  .bundle/bitgrad eval /tmp/bh_$name/best.h5 > "$runs/${name}_eval.txt" 2>&1
  echo "$name: $(grep -o 'best val loss [0-9.]*' "$runs/$name.log") | $(grep -o 'peak [0-9.]* MiB allocated' "$runs/$name.log") | $(cut -d'|' -f3- "$runs/${name}_eval.txt")"
}
# VARIANTS: "name:key=value,key=value ..." runs of the BIDE config; default: the softmax head
# and the H sweep.
if [ -z "${VARIANTS:-}" ]; then
  train softmax configs/shakespeare_char.yaml
  for h in 32 16 64; do
    train bide_h$h configs/shakespeare_char_bide.yaml --set head.bide.hidden=$h
  done
else
  for v in $VARIANTS; do
    sets=(); IFS=, read -ra kv <<< "${v#*:}"
    for x in "${kv[@]}"; do sets+=(--set "$x"); done
    train "${v%%:*}" configs/shakespeare_char_bide.yaml "${sets[@]}"
  done
fi
for f in "$runs"/*.log; do  # median ms/step of the progress lines past step 100
  awk '/^step/ {split($2, s, "/"); if (s[1] + 0 > 100) for (i = 1; i <= NF; i++) if ($i == "ms/step") print $(i - 1)}' "$f" |
    sort -n | awk -v n="$(basename "$f" .log)" '{v[NR] = $1} END {if (NR) printf "%s: median %.2f ms/step\n", n, v[int((NR + 1) / 2)]}'
done | tee "$runs/step_times.txt"
tar -C "$out" -czf "$out/bide_head_runs.tgz" runs && rm -rf "$runs"

#!/usr/bin/env bash
# bide_head_grid.sh: on the GPU machine, the grid of GPT runs that compares the BIDE head with
# the softmax head (scripts/bide_head_grid.runs: one run a line, NAME CONFIG [key=value ...]).
#   MODE=full    every run to its config's steps, all at once (under CUDA MPS where the machine
#                has it, so small models share the GPU; at most PARALLEL at a time), then
#                `bitgrad eval` of each best.h5 (with each target's nats: NAME_per_token.csv).
#                Losses only: the step times of runs sharing a GPU are not results. A run still
#                going at DEADLINE seconds is stopped by SIGINT (its log keeps every evaluation
#                so far). Logs, metrics and evals: $OUT/grid_runs.tgz.
#   MODE=timing  each run alone for TIMING_STEPS steps without evaluation: the median ms/step of
#                its progress lines past step 20 and its peak device memory, $OUT/grid_timing.txt
#                (the runs' logs: $OUT/grid_timing_logs.tgz).
# ONLY="name1 name2" restricts either mode to those runs.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
mode=${MODE:-full}
runs_file=${RUNS:-scripts/bide_head_grid.runs}
deadline=${DEADLINE:-540}
start=$(date +%s)
dir=$out/grid && mkdir -p "$dir"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$dir/gpu.txt"

selected() {  # the runs file's lines, restricted to ONLY
  grep -Ev '^\s*(#|$)' "$runs_file" | while read -r name rest; do
    if [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $name "* ]]; then echo "$name $rest"; fi
  done
}
sets_of() {  # key=value ... -> --set key=value ...
  for kv in "$@"; do printf -- '--set\n%s\n' "$kv"; done
}

if [ "$mode" = timing ]; then
  steps=${TIMING_STEPS:-60}
  selected | while read -r name cfg rest; do
    # shellcheck disable=SC2086  # the key=value words
    mapfile -t sets < <(sets_of $rest)
    .bundle/bitgrad train "$cfg" "${sets[@]}" --set run.out_dir=/tmp/grid_t_$name \
      --set train.steps=$steps --set schedule.warmup_steps=10 --set train.eval_interval=100000 \
      --set train.eval_iters=1 --set train.log_interval=10 > "$dir/t_$name.log" 2>&1 ||
      { echo "$name: failed: $(tail -1 "$dir/t_$name.log")"; continue; }
    ms=$(awk '/^step/ {split($2, s, "/"); if (s[1] + 0 > 20) for (i = 1; i <= NF; i++) if ($i == "ms/step") print $(i - 1)}' "$dir/t_$name.log" |
      sort -n | awk '{v[NR] = $1} END {if (NR) printf "%.2f", v[int((NR + 1) / 2)]}')
    params=$(grep -o '[0-9]* parameters' "$dir/t_$name.log" | head -1)
    peak=$(grep -o 'peak [0-9.]* MiB allocated' "$dir/t_$name.log")
    echo "$name: $ms ms/step | $params | $peak"
    rm -rf /tmp/grid_t_$name
  done | tee "$out/grid_timing.txt"
  tar -C "$out" -czf "$out/grid_timing_logs.tgz" grid && rm -rf "$dir"
  exit 0
fi

# Full runs, all at once. MPS lets the runs' kernels share the SMs instead of time-slicing.
if command -v nvidia-cuda-mps-control > /dev/null && nvidia-cuda-mps-control -d 2> /dev/null; then
  echo "MPS on" | tee -a "$dir/gpu.txt"
fi
# At most PARALLEL runs at once (default: one per 8 GiB of GPU memory), in the runs file's order
# (longest first there, so the last to start are the short ones).
gib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2> /dev/null | head -1)
parallel=${PARALLEL:-$((${gib:-16384} / 8192))}
echo "at most $parallel runs at once" | tee -a "$dir/gpu.txt"
while read -r name cfg rest; do
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do sleep 2; done
  if [ $(($(date +%s) - start)) -ge "$deadline" ]; then
    echo "$name: not started before the deadline" | tee -a "$dir/gpu.txt"
    continue
  fi
  (
    # shellcheck disable=SC2086
    mapfile -t sets < <(sets_of $rest)
    .bundle/bitgrad train "$cfg" "${sets[@]}" --set run.out_dir=/tmp/grid_$name > "$dir/$name.log" 2>&1
    cp /tmp/grid_$name/metrics.csv "$dir/${name}_metrics.csv" 2> /dev/null
    [ -f /tmp/grid_$name/best.h5 ] &&
      timeout "${EVAL_LIMIT:-60}" .bundle/bitgrad eval /tmp/grid_$name/best.h5 \
        --per-token "$dir/${name}_per_token.csv" > "$dir/${name}_eval.txt" 2>&1
  ) &
done < <(selected)
while [ -n "$(jobs -rp)" ] && [ $(($(date +%s) - start)) -lt "$deadline" ]; do sleep 5; done
if [ -n "$(jobs -rp)" ]; then
  echo "deadline: stopping the runs still going" | tee -a "$dir/gpu.txt"
  pkill -INT -f "bitgrad train" ; sleep 20
fi
wait
echo quit | nvidia-cuda-mps-control 2> /dev/null
for f in "$dir"/*.log; do
  name=$(basename "$f" .log)
  last=$(grep -o '^step *[0-9]*/[0-9]*' "$f" | tail -1 | tr -s ' ')
  best=$(grep -o '| val [0-9][0-9.]*' "$f" | awk '{print $3}' | sort -g | head -1)
  echo "$name: $last | best val $best | $(cut -d'|' -f3- "$dir/${name}_eval.txt" 2> /dev/null)"
done | tee "$dir/summary.txt"
cp "$dir/summary.txt" "$out/grid_summary.txt"
tar -C "$out" -czf "$out/grid_runs.tgz" grid && rm -rf "$dir"

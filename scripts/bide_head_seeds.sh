#!/usr/bin/env bash
# bide_head_seeds.sh: on the GPU machine, the BIDE head's headline comparisons as the docs report
# them: each head trained with SEEDS seeds (default 3) on the same trunk and data, and each run's
# best.h5 scored by `bitgrad eval` over the whole validation split; then every head's mean and
# spread (min..max) against the softmax head's. SET=char (the baby GPT on characters: softmax,
# the plain BIDE head, the hybrid with 16 softmax ids) or SET=bpe (configs/shakespeare_bpe*.yaml
# on GPT-2 BPE: softmax, plain, hybrid with 8,192 softmax ids; the shards made here). Step times:
# the median ms/step past step 100 of each run (each run alone on the GPU).
# ONLY=HEAD and SEED_LIST="2 3" run a part (a call that ran out of time), appending to the same
# results. Under $OUT: summary_$SET.txt and runs_$SET.tgz (logs, metrics, evals).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
set=${SET:-char}
seeds=${SEEDS:-3}
runs=$out/runs_$set && mkdir -p "$runs"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$runs/gpu.txt"
case $set in
  char)
    heads=("softmax configs/shakespeare_char.yaml"
           "bide configs/shakespeare_char_bide.yaml"
           "hybrid configs/shakespeare_char_bide.yaml --set head.bide.softmax_ids=16 --set head.bide.code=frequent_first --set head.bide.tie_softmax=true") ;;
  bpe)
    .bundle/bitgrad prepare datasets/tinyshakespeare.txt --out runs/data/shakespeare_gpt2 \
      --gpt2-dir datasets/gpt2 > /dev/null || exit 1
    heads=("softmax configs/shakespeare_bpe.yaml"
           "bide configs/shakespeare_bpe_bide.yaml"
           "hybrid configs/shakespeare_bpe_hybrid.yaml") ;;
  *) echo "SET must be char or bpe" >&2; exit 2 ;;
esac
step_ms() {  # the median ms/step of a log's progress lines past step 100
  awk '/^step/ {split($2, s, "/"); if (s[1] + 0 > 100) for (i = 1; i <= NF; i++) if ($i == "ms/step") print $(i - 1)}' "$1" |
    sort -n | awk '{v[NR] = $1} END {if (NR) printf "%.2f", v[int((NR + 1) / 2)]; else printf "nan"}'
}
for entry in "${heads[@]}"; do
  read -r head cfg sets <<< "$entry"
  [ -n "${ONLY:-}" ] && [ "$head" != "$ONLY" ] && continue
  for seed in ${SEED_LIST:-$(seq 1 "$seeds")}; do
    name=${head}_s$seed
    # shellcheck disable=SC2086
    .bundle/bitgrad train "$cfg" $sets --set run.seed=$((1336 + seed)) --set run.out_dir=/tmp/bs_$name \
      > "$runs/$name.log" 2>&1 || { tail -3 "$runs/$name.log"; continue; }
    cp /tmp/bs_$name/metrics.csv "$runs/${name}_metrics.csv"
    .bundle/bitgrad eval /tmp/bs_$name/best.h5 > "$runs/${name}_eval.txt" 2>&1
    loss=$(sed -n 's/.*| loss \([0-9.]*\) nats.*/\1/p' "$runs/${name}_eval.txt")
    echo "$head $seed $loss $(step_ms "$runs/$name.log")" | tee -a "$runs/results.txt"
    rm -rf /tmp/bs_$name
  done
done
# Mean and spread of each head's full-validation loss, and its difference to the softmax head's.
awk '{n[$1]++; s[$1] += $3; if (!($1 in lo) || $3 < lo[$1]) lo[$1] = $3; if (!($1 in hi) || $3 > hi[$1]) hi[$1] = $3;
      t[$1] = t[$1] " " $4}
     END {for (h in n) printf "%s: eval loss mean %.4f (min %.4f, max %.4f, %d seeds) | vs softmax %+.4f | ms/step%s\n",
                             h, s[h] / n[h], lo[h], hi[h], n[h], s[h] / n[h] - s["softmax"] / n["softmax"], t[h]}' \
  "$runs/results.txt" | sort | tee "$out/summary_$set.txt"
cp "$runs/results.txt" "$out/results_$set.txt"
tar -C "$out" -czf "$out/runs_$set.tgz" "runs_$set" && rm -rf "$runs"

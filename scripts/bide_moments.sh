#!/usr/bin/env bash
# bide_moments.sh: the fitted-moments experiment on the GPU machine (after
# scripts/make_device_bundle.sh here): configs/bide_moments.yaml under bide.range auto for
# SEEDS (default 0 1 2 3 4) and once under all, then the paper's experiment
# (configs/bide_fit.yaml) under auto and all. Each run's summary table is appended to
# $out/moments.txt; full logs of the seed-0 runs go to $out.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
table() {  # table LABEL LOG: the summary rows of a fit-bide log, labelled
  echo "== $1" >> "$out/moments.txt"
  sed -n '/^distribution /,/^training:/p' "$2" >> "$out/moments.txt"
}
for seed in ${SEEDS:-0 1 2 3 4}; do
  $bin fit-bide configs/bide_moments.yaml --set run.seed=$seed --set run.out_dir=/tmp/mom_$seed "$@" > /tmp/mom_$seed.log 2>&1
  table "bide_moments.yaml auto seed $seed $*" /tmp/mom_$seed.log
done
cp /tmp/mom_0.log "$out/bide_moments_auto.log"
$bin fit-bide configs/bide_moments.yaml --set bide.range=all --set run.out_dir=/tmp/mom_all "$@" > /tmp/mom_all.log 2>&1
table "bide_moments.yaml all seed 0 $*" /tmp/mom_all.log
for range in auto all; do
  $bin fit-bide configs/bide_fit.yaml --set bide.range=$range --set run.out_dir=/tmp/paper_$range > /tmp/paper_$range.log 2>&1
  table "bide_fit.yaml $range" /tmp/paper_$range.log
done
cp /tmp/paper_auto/fit.svg "$out/bide_fit_auto_fit.svg"

#!/usr/bin/env bash
# forecast_experiments.sh BITGRAD OUT [SEEDS] [STEPS]: every synthetic family under every head on
# the identical trunk (configs/forecast_synthetic.yaml), each scored one step ahead on every
# series' last point against the family's true law (bitgrad eval --truth): OUT/<family>/<head>_s<seed>.json
# and the training logs. The data: scripts/forecast_synthetic.py datasets/forecast --series 256.
# FAMILIES and HEADS narrow the sweep; EXTRA adds --set overrides to every run (EXTRA="--set
# model.input=bits"), and TAG names such runs (<head><TAG>_s<seed>); SEED_LIST runs those seeds
# instead of 1..SEEDS. Runs may go side by side on one GPU (forecast_gpu.sh synthetic_sweep): the
# evaluations, which hold several GB each, take turns (flock).
set -euo pipefail
bin=$1 out=$2 seeds=${3:-1} steps=${4:-1500}
families=${FAMILIES:-"gaussian_ar1 student_t_ar1 bimodal lognormal_seasonal intermittent floor"}
heads=${HEADS:-"bide gaussian student_t binned"}
mkdir -p "$out"
for fam in $families; do
  for head in $heads; do
    for seed in ${SEED_LIST:-$(seq 1 "$seeds")}; do
      mkdir -p "$out/$fam"
      run=$out/$fam/${head}${TAG:-}_s$seed
      "$bin" train configs/forecast_synthetic.yaml --set data.path=datasets/forecast/synthetic_$fam.csv \
        --set model.head=$head --set run.seed=$seed --set train.steps=$steps \
        --set run.out_dir="$run" ${EXTRA:-} > "$run.log" 2>&1 || { echo "$fam $head $seed: train failed"; tail -3 "$run.log"; continue; }
      flock /tmp/bitgrad_forecast_eval.lock "$bin" eval "$run/best.h5" --horizon 1 --truth datasets/forecast/synthetic_${fam}_truth.csv \
        --json "$run.json" 2>&1 | tee -a "$out/eval.log" | sed "s|^|$fam $head s$seed: |" | cut -c1-400 ||
        echo "$fam $head $seed: eval failed"
      rm -f "$run/last.h5"
    done
  done
done

#!/usr/bin/env bash
# forecast_gpu.sh PHASE [ARGS]: the forecasting measurements on the GPU machine, after
# scripts/make_device_bundle.sh here (run there with the bundle and datasets/forecast carried).
#   check                 the whole CUDA suite (the forecaster's cases among them) -> $out/tests.log
#   synthetic "FAMILIES"  scripts/forecast_experiments.sh over those families (256 series of 400
#                         points each, made here by scripts/forecast_synthetic.py) -> $out/synthetic.tgz
#   real                  configs/forecast_real.yaml pooled over datasets/forecast/all.csv, per head,
#                         scored on each dataset of REAL_SETS (name:horizon:season), for each of
#                         VARIANTS (tag=overrides;...), JOBS runs at a time -> $out/real.tgz
#   synthetic_sweep NAME  VARIANTS ("tag=--set k=v;...") of the synthetic runs, JOBS families at
#                         a time -> $out/synthetic_NAME.tgz
#   per_dataset           configs/forecast_real.yaml on each dataset of REAL_SETS alone -> $out/per_dataset.tgz
#   rolling               configs/forecast_real.yaml trained on datasets/forecast/rolling/train.csv
#                         (scripts/forecast_rolling.py: every series cut before its first test
#                         window) per head (HEADS) and seed (SEEDS), EXTRA overrides, scored on
#                         each dataset's rolling windows (ROLLING_SETS name:horizon:season) -> $out/rolling.tgz
#   bench                 bitgrad bench forecast -> $out/bench_forecast.json
#   plots                 the one-step laws and fans scripts/forecast_plots.py draws -> $out/plots.tgz
#   zero_shot NAME H:M    configs/forecast_real.yaml without dataset NAME, scored on it (EXTRA:
#                         further --set overrides)
# STEPS and SEEDS override the experiments' training steps and seeds. Logs and JSON (no
# checkpoints) come back packed, as the machine returns at most 8 files.
set -uo pipefail
REAL_SETS=${REAL_SETS:-"co2:12:12 elec_equip:12:12 elnino:12:12 macro:8:4 nile:8:1 sunspots:8:1"}
source "$(dirname "$0")/device_env.sh"
bin=$PWD/.bundle/bitgrad
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
# train_and_score RUN_DIR JSON_DIR DATA_DIR SETS LABEL [--set ...]: configs/forecast_real.yaml
# trained with the overrides (their model.head and run.seed name the run, <head>_s<seed>), then
# scored on each dataset of SETS (name:horizon:season, DATA_DIR/<name>.csv) ->
# JSON_DIR/<name>_<head>_s<seed>.json.
train_and_score() {
  local dir=$1 json=$2 data=$3 sets=$4 label=$5; shift 5
  local head seed args=("$@")
  for ((i = 0; i < ${#args[@]}; i++)); do
    case ${args[i]} in model.head=*) head=${args[i]#*=} ;; run.seed=*) seed=${args[i]#*=} ;; esac
  done
  local run=$dir/${head}_s$seed
  "$bin" train configs/forecast_real.yaml --set run.out_dir="$run" "$@" > "$run.log" 2>&1 ||
    { echo "$label: train failed"; return; }
  for d in $sets; do
    IFS=: read -r name h m <<< "$d"
    "$bin" eval "$run/best.h5" --data "$data/$name.csv" --horizon "$h" --season "$m" \
      --seed "$seed" --json "$json/${name}_${head}_s$seed.json" > /dev/null
  done
  echo "$label: done"
}
case $1 in
  check)
    .bundle/bitgrad_tests > "$out/tests.log" 2>&1
    grep -E "ERROR|test cases|assertions|values:" "$out/tests.log" | head -40 ;;
  synthetic)
    python3 scripts/forecast_synthetic.py datasets/forecast --series 256 --length 400 --seed 1 > /dev/null
    FAMILIES=$2 scripts/forecast_experiments.sh "$bin" "$out/synthetic" "${SEEDS:-1}" "${STEPS:-1500}"
    for log in "$out"/synthetic/*/*.log; do  # the step time of each run
      echo "$log $(median_step_ms "$log") ms/step"; done | sed "s|$out/||" > "$out/synthetic/step_ms.txt"
    tar czf "$out/synthetic_${3:-part}.tgz" --exclude='*.h5' -C "$out" synthetic && rm -rf "$out/synthetic" ;;
  synthetic_sweep)
    # Variants of the synthetic runs: VARIANTS "tag=--set k=v ...;..." (the tag names the runs,
    # <head><tag>_s<seed>) over FAMILIES, HEADS and SEEDS, JOBS families at a time -> $out/synthetic_$2.tgz
    python3 scripts/forecast_synthetic.py datasets/forecast --series 256 --length 400 --seed 1 > /dev/null
    IFS=';' read -r -a variants <<< "${VARIANTS:-=}"
    for v in "${variants[@]}"; do
      for fam in ${FAMILIES:-gaussian_ar1 student_t_ar1 bimodal lognormal_seasonal intermittent floor}; do
        FAMILIES=$fam TAG=_${v%%=*} EXTRA=${v#*=} scripts/forecast_experiments.sh "$bin" \
          "$out/synthetic" "${SEEDS:-1}" "${STEPS:-1500}" > "$out/sweep_${fam}_${v%%=*}.log" 2>&1 &
        while [ "$(jobs -rp | wc -l)" -ge "${JOBS:-6}" ]; do sleep 1; done
      done
    done
    wait
    cat "$out"/sweep_*.log > "$out/synthetic/sweep.log"; rm -f "$out"/sweep_*.log
    tar czf "$out/synthetic_${2:-sweep}.tgz" --exclude='*.h5' -C "$out" synthetic && rm -rf "$out/synthetic" ;;
  real)
    # One model pooled over every real series per head (configs/forecast_real.yaml), each scored
    # on every dataset at that dataset's horizon and season. VARIANTS: "tag=--set k=v ...;..."
    # (tag "" is the config as it ships; "tag@bide,binned=..." runs only those heads); AUGMENT=N adds datasets/forecast/all_aug.csv, the real
    # series plus N synthetic ones (scripts/forecast_augment.py), for variants to train on. The
    # runs go JOBS at a time: these small models leave the GPU mostly idle (their step times are
    # not speed measurements).
    [ -n "${AUGMENT:-}" ] && python3 scripts/forecast_augment.py datasets/forecast/all.csv \
      datasets/forecast/all_aug.csv --series "$AUGMENT"
    IFS=';' read -r -a variants <<< "${VARIANTS:-=}"
    for v in "${variants[@]}"; do
      tag=${v%%=*} extra=${v#*=} heads=${HEADS:-bide gaussian student_t binned}
      if [[ $tag == *@* ]]; then heads=${tag#*@} heads=${heads//,/ } tag=${tag%@*}; fi
      dir=$out/real${tag:+_$tag}
      mkdir -p "$dir"
      for head in $heads; do
        for seed in $(seq 1 "${SEEDS:-1}"); do
          # shellcheck disable=SC2086  # extra is a list of --set arguments
          train_and_score "$dir" "$dir" datasets/forecast "$REAL_SETS" "$tag $head $seed" \
            --set model.head=$head --set run.seed=$seed $extra &
          while [ "$(jobs -rp | wc -l)" -ge "${JOBS:-6}" ]; do sleep 1; done
        done
      done
    done
    wait
    (cd "$out" && tar czf real.tgz --exclude='*.h5' real*/ && rm -rf real*/) ;;
  rolling)
    dir=$out/rolling && mkdir -p "$dir/real"
    for head in ${HEADS:-bide student_t quantile}; do
      for seed in $(seq 1 "${SEEDS:-3}"); do
        # shellcheck disable=SC2086  # EXTRA is a list of --set arguments
        train_and_score "$dir" "$dir/real" datasets/forecast/rolling \
          "${ROLLING_SETS:-co2:18:12 elec_equip:18:12 elnino:18:12 macro:8:4 nile:6:1 sunspots:6:1}" \
          "$head $seed" --set model.head=$head --set run.seed=$seed \
          --set data.path=datasets/forecast/rolling/train.csv ${EXTRA:-} &
        while [ "$(jobs -rp | wc -l)" -ge "${JOBS:-9}" ]; do sleep 1; done
      done
    done
    wait
    (cd "$out" && tar czf rolling.tgz --exclude='*.h5' rolling && rm -rf rolling) ;;
  per_dataset)
    # configs/forecast_real.yaml trained on each dataset of REAL_SETS alone (HEADS, SEEDS), scored
    # on it: the per-dataset models beside the pooled one -> $out/per_dataset.tgz (the JSON named
    # as real/'s, so scripts/forecast_tables.py reads the folder as a variant).
    dir=$out/real_per_dataset
    mkdir -p "$dir"
    for d in $REAL_SETS; do
      IFS=: read -r name h m <<< "$d"
      for head in ${HEADS:-bide gaussian student_t binned}; do
        for seed in $(seq 1 "${SEEDS:-1}"); do
          (
            run=$dir/${name}_${head}_s$seed
            # shellcheck disable=SC2086  # EXTRA is a list of --set arguments
            "$bin" train configs/forecast_real.yaml --set data.path=datasets/forecast/$name.csv \
              --set model.head=$head --set run.seed=$seed --set run.out_dir="$run" ${EXTRA:-} \
              > "$run.log" 2>&1 || { echo "$name $head $seed: train failed"; exit; }
            "$bin" eval "$run/best.h5" --data datasets/forecast/$name.csv --horizon "$h" --season "$m" \
              --seed "$seed" --json "$dir/${name}_${head}_s$seed.json" > /dev/null
            echo "$name $head $seed: done"
          ) &
          while [ "$(jobs -rp | wc -l)" -ge "${JOBS:-8}" ]; do sleep 1; done
        done
      done
    done
    wait
    (cd "$out" && tar czf per_dataset.tgz --exclude='*.h5' real_per_dataset && rm -rf real_per_dataset) ;;
  bench)
    "$bin" bench forecast --out "$out/bench_forecast.json" ;;
  zero_shot)
    # The pooled model trained without one dataset ($2), scored on it ($3 = horizon:season).
    IFS=: read -r h m <<< "$3"
    mkdir -p "$out/zero_shot"
    for head in bide binned; do
      run=$out/zero_shot/${head}_without_$2
      # shellcheck disable=SC2086  # EXTRA is a list of --set arguments
      "$bin" train configs/forecast_real.yaml --set data.path=datasets/forecast/all_but_$2.csv \
        --set model.head=$head --set run.out_dir="$run" ${EXTRA:-} > "$run.log" 2>&1 || { echo "$head: train failed"; continue; }
      "$bin" eval "$run/best.h5" --data datasets/forecast/$2.csv --horizon "$h" --season "$m" \
        --json "$out/zero_shot/${2}_${head}.json" | cut -c1-300
    done
    tar czf "$out/zero_shot_$2.tgz" --exclude='*.h5' -C "$out" zero_shot && rm -rf "$out/zero_shot" ;;
  plots)
    # What scripts/forecast_plots.py draws (run it here on $out/plots.tgz): one-step BIDE laws on
    # three synthetic families, 199 exact quantiles at each of three series' last point (the
    # context every point before it: the truth file holds that point's law), and 12- or 8-step
    # fans of the pooled real-series config (seed 1) from the context before each test window.
    python3 scripts/forecast_synthetic.py datasets/forecast --series 256 --length 400 --seed 1 > /dev/null
    mkdir -p "$out/plots"
    levels=$(seq -s, 0.005 0.005 0.995)
    # all but each series' last DROP rows, of the first three series
    head_of() { awk -F, -v drop="$2" 'NR==1 {print; next} {id[NR]=$1; row[NR]=$0}
      END {n=0; for (i=2; i<=NR; i++) { if (id[i]!=id[i-1]) { n++; k=0 } ; if (n>3) break;
             last=i; while (last+1<=NR && id[last+1]==id[i]) last++; if (i<=last-drop) print row[i] } }' "$1"; }
    for fam in bimodal intermittent floor; do
      (
        run=$out/plots/$fam
        "$bin" train configs/forecast_synthetic.yaml --set data.path=datasets/forecast/synthetic_$fam.csv \
          --set model.head=bide --set run.out_dir="$run" > "$run.log" 2>&1 || { echo "$fam: train failed"; exit; }
        head_of datasets/forecast/synthetic_$fam.csv 1 > "$run.context.csv"
        "$bin" forecast "$run/best.h5" --data "$run.context.csv" --horizon 1 --quantiles "$levels" \
          --out "$out/plots/${fam}_onestep.csv" > /dev/null && echo "$fam: done"
      ) &
    done
    (
      run=$out/plots/real
      "$bin" train configs/forecast_real.yaml --set model.head=bide --set run.out_dir="$run" > "$run.log" 2>&1 ||
        { echo "real: train failed"; exit; }
      for d in co2:12 elec_equip:12 elnino:12 sunspots:8; do
        IFS=: read -r name h <<< "$d"
        head_of datasets/forecast/$name.csv "$h" > "$run.$name.csv"
        "$bin" forecast "$run/best.h5" --data "$run.$name.csv" --horizon "$h" --samples 400 \
          --quantiles 0.05,0.25,0.5,0.75,0.95 --out "$out/plots/${name}_fan.csv" > /dev/null
      done
      echo "real: done"
    ) &
    wait
    (cd "$out" && tar czf plots.tgz --exclude='*.h5' plots && rm -rf plots) ;;
  *) echo "unknown phase $1"; exit 2 ;;
esac

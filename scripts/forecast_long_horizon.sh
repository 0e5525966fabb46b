#!/usr/bin/env bash
# forecast_long_horizon.sh: on the GPU machine, the forecaster's long horizons and new head: the
# CUDA forecaster cases; the synthetic config trained STEPS steps (default 300, deterministic)
# with the BIDE head and with the quantile head; then each forecasts every series HORIZON steps
# (default 720) ahead with 100 paths, the window sliding in its 128-value block: wall time and
# the GPU's peak memory in use (nvidia-smi every 100 ms), and the quantile head's eval. One line
# a result in $OUT/long_horizon_summary.txt.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
steps=${STEPS:-300}
horizon=${HORIZON:-720}
summary=$out/long_horizon_summary.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $summary
.bundle/bitgrad_tests -tc="cuda: *forecast*" 2>&1 | grep -E "test cases|assertions" | tee -a $summary
python3 scripts/forecast_synthetic.py /tmp/forecast64 --series 64 > /dev/null
data=/tmp/forecast64/synthetic_gaussian_ar1.csv
echo "data: $data, $(tail -n +2 $data | cut -d, -f1 | sort -u | wc -l) series" | tee -a $summary
for head in bide quantile; do
  dir=/tmp/long_$head
  $bin train configs/forecast_synthetic.yaml --set model.head=$head --set train.steps=$steps \
    --set data.path=$data \
    --set train.eval_interval=$steps --set train.log_interval=50 --set run.out_dir=$dir > $dir.log 2>&1
  echo "$head train: rc=$? val $(grep -oE 'val +[0-9.]+' $dir.log | tail -1 | awk '{print $2}') $(median_step_ms $dir.log 2) ms/step" | tee -a $summary
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > $dir.mem &
  poll=$!
  start=$(date +%s%N)
  $bin forecast $dir/best.h5 --data $data --horizon $horizon --samples 100 --out $dir/f.csv > $dir/f.log 2>&1
  rc=$?
  end=$(date +%s%N)
  kill $poll
  echo "$head forecast $horizon steps x 100 paths: rc=$rc $(awk -v a=$start -v b=$end 'BEGIN{printf "%.2f", (b - a) / 1e9}') s, peak GPU memory $(sort -n $dir.mem | tail -1) MiB, $(tail -n +2 $dir/f.csv | wc -l) rows, NaN rows $(grep -ci nan $dir/f.csv)" | tee -a $summary
  $bin eval $dir/best.h5 --data $data --horizon 8 > $dir/eval.log 2>&1
  echo "$head eval horizon 8: rc=$? $(grep -E 'CRPS' $dir/eval.log | head -1 | cut -c1-160)" | tee -a $summary
done

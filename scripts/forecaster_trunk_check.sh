#!/usr/bin/env bash
# forecaster_trunk_check.sh: on the GPU machine, the forecaster of a change against the binary
# before it (BASE, default .bundle/bitgrad_base): the synthetic config (datasets/forecast,
# written here by scripts/forecast_synthetic.py) trained STEPS steps (default 200) by both, in
# fp32, bf16 precision and train.deterministic, each head given by HEADS (default bide
# student_t): the checkpoints' digests (equal: the same bits) and the median ms/step of each;
# then the bf16 residual stream (train.activations: bf16, which the base refuses) by the new
# binary alone, in the default and the deterministic mode, each forecasting every series' 100
# paths 16 steps ahead from its checkpoint, and the deterministic one's forecast twice (the same bits).
# One line a run in $OUT/forecaster_summary.txt.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
base=${BASE:-.bundle/bitgrad_base}
new=.bundle/bitgrad
steps=${STEPS:-200}
summary=$out/forecaster_summary.txt
[ -f datasets/forecast/synthetic_gaussian_ar1.csv ] ||
  python3 scripts/forecast_synthetic.py datasets/forecast --series 64 > /dev/null
for head in ${HEADS:-bide student_t}; do
  for mode in fp32 bf16 deterministic; do
    for which in base new; do
      bin=$base; [ $which = new ] && bin=$new
      dir=/tmp/f_${head}_${mode}_$which
      $bin train configs/forecast_synthetic.yaml --set model.head=$head \
        --set train.deterministic=$([ $mode = deterministic ] && echo true || echo false) \
        --set train.precision=$([ $mode = bf16 ] && echo bf16 || echo fp32) \
        --set train.steps=$steps --set train.eval_interval=$steps --set train.log_interval=10 \
        --set run.out_dir=$dir > $dir.log 2>&1
      echo "$head $mode $which: rc=$? $(median_step_ms $dir.log 2) ms/step digest $(digest $dir/last.h5)" | tee -a $summary
    done
  done
done
for head in ${HEADS:-bide student_t}; do
  for det in false true; do
    dir=/tmp/f_${head}_stream_$det
    $new train configs/forecast_synthetic.yaml --set model.head=$head --set train.precision=bf16 \
      --set train.activations=bf16 --set train.deterministic=$det --set train.steps=$steps \
      --set train.eval_interval=$steps --set train.log_interval=10 --set run.out_dir=$dir > $dir.log 2>&1
    echo "$head bf16_stream deterministic=$det new: rc=$? $(median_step_ms $dir.log 2) ms/step digest $(digest $dir/last.h5)" | tee -a $summary
    for rep in 1 2; do
      $new forecast $dir/last.h5 --data datasets/forecast/synthetic_gaussian_ar1.csv --horizon 16 \
        --samples 100 --out $dir/forecast_$rep.csv > $dir/forecast_$rep.log 2>&1
      echo "  forecast $rep: rc=$? sha $(sha256sum < $dir/forecast_$rep.csv | cut -c1-16)" | tee -a $summary
    done
  done
done

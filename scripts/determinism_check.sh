#!/usr/bin/env bash
# determinism_check.sh: issue 15's device pass. The whole test suite (CUDA cases included), the
# GEMM benchmark (pinned batch-invariant cuBLASLt beside cuBLAS's default choice), the whole
# training step with and without train.deterministic (Baby GPT and GPT-2 124M), and two
# deterministic Baby GPT runs whose checkpoints must hash alike. Logs and JSON under $OUT.
# Needs the bundle (scripts/make_device_bundle.sh) and runs/data with tinyshakespeare.txt, the
# GPT-2 vocabulary in runs/data/gpt2 and its shards in runs/data/shakespeare_gpt2.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
bin=.bundle/bitgrad
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
if [ -z "${SKIP_TESTS:-}" ]; then
  .bundle/bitgrad_tests > "$out/tests.log" 2>&1
  grep -E "ERROR|THREW|test cases|assertions" "$out/tests.log" | head -40
fi
$bin bench gemm --out "$out/gemm.json" > "$out/gemm.log" 2>&1
cat "$out/gemm.log"
baby=(configs/shakespeare_char.yaml --set data.path=runs/data/tinyshakespeare.txt
  --set train.eval_interval=100000 --set train.eval_iters=1 --set train.log_interval=100)
gpt2=(configs/gpt2_124m.yaml --set data.gpt2_dir=runs/data/gpt2 --set train.eval_interval=100000
  --set train.eval_iters=1 --set train.log_interval=10)
for rep in 1 2; do  # interleaved, twice
  for det in false true; do
    $bin train "${baby[@]}" --set train.deterministic=$det --set run.stop_after_steps=400 \
      --set run.out_dir=/tmp/baby_$det > "$out/baby_step_${det}_$rep.log" 2>&1
    echo "baby det=$det rep=$rep: $(grep -E '^step +(300|400)/' "$out/baby_step_${det}_$rep.log" | tr '\n' ' ')"
    $bin train "${gpt2[@]}" --set train.deterministic=$det --set run.stop_after_steps=40 \
      --set run.out_dir=/tmp/gpt2_$det > "$out/gpt2_step_${det}_$rep.log" 2>&1
    echo "gpt2 det=$det rep=$rep: $(grep -E '^step +(30|40)/' "$out/gpt2_step_${det}_$rep.log" | tr '\n' ' ')"
  done
done
grep -h "rror" "$out"/baby_step_* "$out"/gpt2_step_* | head -5
for r in 1 2; do
  $bin train "${baby[@]}" --set train.deterministic=true --set train.steps=200 \
    --set run.out_dir=/tmp/det_run$r > "$out/det_run$r.log" 2>&1 || tail -3 "$out/det_run$r.log"
  $bin checksum /tmp/det_run$r/last.h5 > "$out/det_run$r.sha256"
done
if cmp -s "$out/det_run1.sha256" "$out/det_run2.sha256"; then
  echo "two deterministic Baby GPT runs (200 steps): all $(wc -l < "$out/det_run1.sha256") datasets identical"
else
  echo "two deterministic Baby GPT runs DIFFER:"; diff "$out/det_run1.sha256" "$out/det_run2.sha256" | head
fi

#!/usr/bin/env bash
# lmul_check.sh: issue 17's device pass so far. The whole test suite; bitgrad bench lmul at
# mantissa bits 23 and 7; 150 steps of the baby GPT in fp32 (composed attention), standard and
# with every matmul an L-Mul, for ms/step. Under $OUT: tests.log, lmul*.json, std.log, lm.log.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
.bundle/bitgrad_tests > $out/tests.log 2>&1
grep -E "ERROR|test cases|assertions" $out/tests.log | head -20
.bundle/bitgrad bench lmul --out $out/lmul.json 2>&1 | tee $out/lmul_bench.log
.bundle/bitgrad bench lmul --mantissa-bits 7 --out $out/lmul_m7.json 2>&1 | tail -3
d=(--set data.path=runs/data/tinyshakespeare.txt --set train.precision=fp32 --set model.attention=composed
   --set train.eval_interval=100000 --set train.eval_iters=1 --set train.log_interval=50 --set run.stop_after_steps=150)
.bundle/bitgrad train configs/shakespeare_char.yaml "${d[@]}" --set run.out_dir=/tmp/std > $out/std.log 2>&1
grep -E "^step +150/|memory" $out/std.log
.bundle/bitgrad train configs/shakespeare_char.yaml "${d[@]}" --set train.matmul=lmul --set run.out_dir=/tmp/lm > $out/lm.log 2>&1
grep -E "^step +150/|memory|rror" $out/lm.log

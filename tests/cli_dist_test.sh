#!/usr/bin/env bash
# cli_dist_test.sh BITGRAD: data-parallel training on CPU ranks over sockets (`bitgrad launch
# --cpus N`, the same code path as GPU ranks except the transport). Under train.deterministic 1,
# 2 and 3 ranks give the same checkpoint bits at the same global batch, with dropout on; a run
# stopped at 2 ranks resumes at 1 to the uninterrupted run's bits; the default mode trains; and
# the fault paths end every rank with a line naming the rank: a config that differs between
# ranks, a rank that hangs (stopped), a rank killed, SIGINT to the launcher (one checkpoint).
set -uo pipefail
bin=$1
source "$(dirname "$0")/cli_lib.sh"
cd "$dir"
python_text=$(printf 'First Citizen:\nBefore we proceed any further, hear me speak.\n%.0s' $(seq 300))
printf '%s\n' "$python_text" > text.txt
cat > dp.yaml <<'YAML'
run:
  out_dir: out
  seed: 7
  device: cpu
data:
  path: text.txt
model:
  type: gpt
  block_size: 16
  n_layer: 1
  n_head: 2
  n_embd: 32
  dropout: 0.1
train:
  steps: 4
  batch_size: 4
  grad_accum: 6
  eval_interval: 2
  eval_iters: 2
  log_interval: 1
  deterministic: true
optimizer:
  lr: 1.0e-3
schedule:
  type: constant
YAML
digest() { "$bin" checksum "$1" | grep -v '^#' | sha256sum | cut -c1-16; }

# 1, 2 and 3 ranks: the same bits.
"$bin" train dp.yaml --set run.out_dir=r1 > r1.log 2>&1 || { cat r1.log; fail "one process"; }
want=$(digest r1/last.h5)
for n in 2 3; do
  "$bin" launch --cpus $n dp.yaml --set run.out_dir=r$n > r$n.log 2>&1 || { cat r$n.log; fail "$n ranks"; }
  grep -q "data parallel: $n ranks over sockets" r$n.log || fail "$n ranks: no data-parallel line"
  [ "$(digest r$n/last.h5)" = "$want" ] || fail "$n ranks: checkpoint differs from one process's"
done
echo "ok: 1, 2 and 3 ranks give the same checkpoint ($want)"

# Stopped at 2 ranks after 2 steps, resumed in one process: the uninterrupted run's bits.
"$bin" launch --cpus 2 dp.yaml --set run.out_dir=rr --set run.stop_after_steps=2 > rr.log 2>&1 ||
  { cat rr.log; fail "2 ranks, stop after 2"; }
"$bin" train dp.yaml --set run.out_dir=rr --set run.resume=true > rr2.log 2>&1 || { cat rr2.log; fail "resume"; }
[ "$(digest rr/last.h5)" = "$want" ] || fail "2 ranks resumed at 1: checkpoint differs"
echo "ok: a checkpoint written by 2 ranks resumes in one process to the same bits"

# ZeRO-1 (train.shard_optimizer): 3 ranks each keeping a third of AdamW's state give the same
# bits; stopped on 2 sharded ranks, resumed on 3, the same again.
"$bin" launch --cpus 3 dp.yaml --set run.out_dir=z3 --set train.shard_optimizer=true > z3.log 2>&1 ||
  { cat z3.log; fail "3 sharded ranks"; }
grep -q "AdamW's state sharded over the ranks" z3.log || fail "sharded: no line saying so"
[ "$(digest z3/last.h5)" = "$want" ] || fail "3 sharded ranks: checkpoint differs from one process's"
"$bin" launch --cpus 2 dp.yaml --set run.out_dir=zr --set train.shard_optimizer=true \
  --set run.stop_after_steps=2 > zr.log 2>&1 || { cat zr.log; fail "2 sharded ranks, stop after 2"; }
"$bin" launch --cpus 3 dp.yaml --set run.out_dir=zr --set train.shard_optimizer=true \
  --set run.resume=true > zr2.log 2>&1 || { cat zr2.log; fail "sharded resume on 3 ranks"; }
[ "$(digest zr/last.h5)" = "$want" ] || fail "sharded 2 ranks resumed on 3: checkpoint differs"
echo "ok: AdamW's state sharded over 2 and 3 ranks gives the same bits, and resumes across them"

# The default mode trains on 2 ranks and its checkpoint samples.
"$bin" launch --cpus 2 dp.yaml --set run.out_dir=rd --set train.deterministic=false > rd.log 2>&1 ||
  { cat rd.log; fail "default mode, 2 ranks"; }
"$bin" sample rd/last.h5 --tokens 5 > /dev/null 2>&1 || fail "sample from a 2-rank checkpoint"
echo "ok: the default mode trains on 2 ranks"

# Bad input: a step that cannot be shared; --gpus without GPUs; no flag.
one_line_error "cannot be shared by 4 ranks" "$bin" launch --cpus 4 dp.yaml --set run.out_dir=bad
[ ! -e bad/last.h5 ] || fail "a refused run wrote a checkpoint"
one_line_error "usage: bitgrad launch" "$bin" launch dp.yaml
one_line_error "shards AdamW's state; optimizer.type is sgd" "$bin" launch --cpus 2 dp.yaml \
  --set run.out_dir=bad --set train.shard_optimizer=true --set optimizer.type=sgd
WORLD_SIZE=2 RANK=1 one_line_error "only train runs as a rank" "$bin" check-determinism dp.yaml
if ! "$bin" info | grep -q "cuda:0"; then
  one_line_error "--gpus 2 but this host has 0 CUDA device(s)" "$bin" launch --gpus 2 dp.yaml
fi

# Two ranks started by hand with different configs: both refused, naming rank 1.
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + RANDOM % 20000)) WORLD_SIZE=2
RANK=0 "$bin" train dp.yaml --set run.out_dir=m > m0.log 2>&1 &
p0=$!
RANK=1 "$bin" train dp.yaml --set run.out_dir=m --set train.steps=5 > m1.log 2>&1
rc1=$?
wait $p0
rc0=$?
[ $rc0 -ne 0 ] && [ $rc1 -ne 0 ] || fail "mismatched configs: rank exit codes $rc0 $rc1"
grep -q "rank 1's config differs from rank 0's" m0.log || fail "rank 0 said: $(cat m0.log)"
grep -q "(rank 1): .*rank 1's config differs" m1.log || fail "rank 1 said: $(cat m1.log)"
unset MASTER_ADDR MASTER_PORT WORLD_SIZE
echo "ok: configs that differ between ranks are refused on every rank"

# A rank that hangs (SIGSTOP): the others give up after BITGRAD_DIST_TIMEOUT and the launcher
# ends every rank, naming the one that failed first.
long=(--set train.steps=100000 --set train.eval_interval=100000)
start=$(date +%s)
BITGRAD_DIST_TIMEOUT=3 "$bin" launch --cpus 2 dp.yaml --set run.out_dir=h "${long[@]}" > h.log 2>&1 &
launcher=$!
for _ in $(seq 100); do [ "$(pgrep -P $launcher | wc -l)" -ge 2 ] && break; sleep 0.1; done
sleep 2
rank1=$(pgrep -P $launcher | sort -n | tail -1)
[ -n "$rank1" ] || fail "a hung rank: no rank processes"
kill -STOP "$rank1"
wait $launcher
rc=$?
took=$(( $(date +%s) - start ))
[ $rc -ne 0 ] || fail "a hung rank: the launcher exited 0"
[ $took -lt 40 ] || fail "a hung rank: the launcher took $took s"
grep -q "no word from rank 1 for 3 s" h.log || fail "a hung rank: $(cat h.log | tail -3)"
pgrep -P $launcher > /dev/null && fail "ranks left running"
echo "ok: a hung rank ends the run in ${took} s, naming it"

# A rank killed: the launcher stops the other and says which rank died and how.
"$bin" launch --cpus 2 dp.yaml --set run.out_dir=k "${long[@]}" > k.log 2>&1 &
launcher=$!
for _ in $(seq 100); do [ "$(pgrep -P $launcher | wc -l)" -ge 2 ] && break; sleep 0.1; done
sleep 2
kill -KILL "$(pgrep -P $launcher | sort -n | tail -1)"
wait $launcher
rc=$?
[ $rc -ne 0 ] || fail "a killed rank: the launcher exited 0"
grep -q "bitgrad launch: rank 1 was killed by Killed" k.log || fail "a killed rank: $(tail -3 k.log)"
echo "ok: a killed rank stops the run, named"

# SIGINT to the launcher: every rank stops after one agreed step, rank 0 saves, exit 130.
"$bin" launch --cpus 2 dp.yaml --set run.out_dir=s "${long[@]}" > s.log 2>&1 &
launcher=$!
for _ in $(seq 100); do grep -q "^step" s.log 2>/dev/null && break; sleep 0.1; done
kill -INT $launcher
wait $launcher
rc=$?
[ $rc -eq 130 ] || fail "SIGINT: launcher exit $rc ($(tail -3 s.log))"
grep -q "stopped by signal 2 after step" s.log || fail "SIGINT: no stop line"
"$bin" checksum s/last.h5 > /dev/null || fail "SIGINT: no readable checkpoint"
echo "ok: SIGINT stops every rank with one checkpoint"

#!/usr/bin/env bash
# cli_hostile_test.sh BITGRAD: what a hostile user tried, one kind at a time (docs/files.md):
#  1. no output is a file the command reads, named or implicit (a checkpoint's recorded data);
#  2. a FIFO or a device is written in place, never replaced; a socket or folder is refused;
#  3. no cost grows with a setting instead of the work (BIDE bits, vocabulary padding);
#  4. nothing given is silently unused (empty values, a rank without a world, run.name);
#  5. nothing that cannot be drawn is drawn (plot);
#  6. a record of other settings is refused naming the setting;
#  7. a non-standard HDF5 number type is refused, by checksum too;
#  8. a dead process's temporary is removed at the next save, a live one's kept; a signal
#     stops a long CPU step within seconds and the run resumes to the uninterrupted bits.
set -uo pipefail
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
source "$here/cli_lib.sh"
cd "$dir"
printf 'First Citizen:\nBefore we proceed any further, hear me speak.\n' > line.txt
for i in $(seq 1 200); do cat line.txt; done > corpus.txt
cat > tiny.yaml <<YAML
run: {out_dir: $dir/run, seed: 5, device: cpu}
data: {path: corpus.txt}
model: {type: gpt, block_size: 8, n_layer: 1, n_head: 2, n_embd: 16}
train: {steps: 4, batch_size: 2, eval_interval: 2, eval_iters: 1, log_interval: 2}
YAML
sha() { sha256sum "$1" | cut -d' ' -f1; }
"$bin" train tiny.yaml > /dev/null 2>&1 || fail "tiny train failed"

# 1. Implicit inputs. eval without --data reads the checkpoint's recorded data: a hard link to it
# as --per-token is that file; prepare's outputs onto its own text through a symlink.
ln corpus.txt alias.txt
before=$(sha corpus.txt)
one_line_error "--per-token alias.txt is the input" "$bin" eval run/last.h5 --per-token alias.txt
mkdir -p shards && ln -s ../corpus.txt shards/val.bin
one_line_error "shards/val.bin is the input" "$bin" prepare corpus.txt --tokenizer byte --out shards
[ "$(sha corpus.txt)" = "$before" ] && [ -L shards/val.bin ] || fail "an input was written over"

# 2. Not regular files: a FIFO with a reader and /dev/null take the bytes in place; a FIFO
# without a reader, a socket and a folder are refused; a symlink is written through.
mkfifo pipe
(cat pipe > from_pipe.csv &)
"$bin" eval run/last.h5 --per-token pipe > /dev/null 2>&1 || fail "eval into a read FIFO failed"
sleep 0.3
[ -p pipe ] || fail "the FIFO was replaced"
head -1 from_pipe.csv | grep -q '^position,target,nats$' || fail "the FIFO's reader got: $(head -c 80 from_pipe.csv)"
one_line_error "pipe: a FIFO that no process reads" "$bin" eval run/last.h5 --per-token pipe
"$bin" export run/last.h5 --packed --out /dev/null > /dev/null 2>&1 && fail "export of a dense model accepted"
"$bin" plot run/metrics.csv --out /dev/null > /dev/null || fail "plot onto /dev/null failed"
[ -c /dev/null ] || fail "/dev/null is no longer a character device"
perl -MIO::Socket::UNIX -e 'IO::Socket::UNIX->new(Local => $ARGV[0], Listen => 1) or die' sock
one_line_error "--out sock: is a socket" "$bin" plot run/metrics.csv --out sock
mkdir -p folder.svg
one_line_error "--out folder.svg: is a folder" "$bin" plot run/metrics.csv --out folder.svg
ln -s target.svg link.svg
"$bin" plot run/metrics.csv --out link.svg > /dev/null || fail "plot through a symlink failed"
[ -L link.svg ] && [ -f target.svg ] || fail "the symlink was replaced instead of written through"

# 3. Settings whose cost is not the work's: BIDE patterns far past the ids, padded vocabularies.
one_line_error "head.bide.bits: 20 bits make 1048576 patterns" "$bin" train tiny.yaml --set model.head=bide --set head.bide.bits=20
one_line_error "model.vocab_size: 5000 pads" "$bin" train tiny.yaml --set model.vocab_size=5000
"$bin" train tiny.yaml --set model.head=bide --set head.bide.bits=7 --set run.out_dir="$dir/b7" > /dev/null 2>&1 || fail "a BIDE head of 7 bits (2 spare) was refused"

# 4. Nothing given is ignored: empty flags, a rank with no world, launchers that disagree, a
# run name that would not move the output or is not a folder name, --set without '='.
one_line_error "option --prompt-file: empty value" "$bin" sample run/last.h5 --prompt-file ''
one_line_error "option --record: empty value" "$bin" check-determinism tiny.yaml --record ''
one_line_error "LOCAL_RANK=1 is set but WORLD_SIZE is not" env LOCAL_RANK=1 "$bin" train tiny.yaml
one_line_error "disagree with Open MPI's" env WORLD_SIZE=2 RANK=0 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_RANK=0 "$bin" train tiny.yaml
one_line_error "the config pins run.out_dir: $dir/run, so the output would not move" "$bin" train tiny.yaml --set run.name=other
one_line_error "run.name: '..' is not a folder name" "$bin" fit-bide "$here/../configs/bide_fit.yaml" --set run.name=..
one_line_error "--set train.steps: expected key.path=value" "$bin" train tiny.yaml --set train.steps 3

# 5. plot draws only what can be drawn: a step past 2^53 is refused, extreme losses are drawn
# with finite coordinates.
printf 'step,train_loss,val_loss,lr,ms_per_step\n1,2,,0.1,1\n9e99,1,,0.1,1\n' > huge_step.csv
one_line_error "huge_step.csv:3: step '9e99' is not a whole number" "$bin" plot huge_step.csv --out x.svg
printf 'step,train_loss,val_loss,lr,ms_per_step\n1,-1e308,1e308,0.1,1\n2,1e308,-1e308,0.1,1\n' > extreme.csv
"$bin" plot extreme.csv --out extreme.svg > /dev/null || fail "plot of finite extremes failed"
! grep -qiE 'nan|inf' extreme.svg || fail "the plot holds a non-finite coordinate"

# 6. A record of other settings is refused before any run, naming the setting.
"$bin" check-determinism tiny.yaml --runs 2 --steps 2 --out cd1 --record rec.txt > /dev/null 2>&1 || fail "check-determinism --record failed"
one_line_error "records a run of other settings (here 'train.batch_size: 3', in the record 'train.batch_size: 2')" "$bin" check-determinism tiny.yaml --runs 2 --steps 2 --out cd2 --compare rec.txt --set train.batch_size=3
one_line_error "--record cd1/run2/last.h5 is the input" "$bin" check-determinism tiny.yaml --runs 2 --steps 2 --out cd1 --record cd1/run2/last.h5

# 7. Integer datatypes whose precision was changed (HDF5 would read other numbers): the
# attributes' and the token code table's (a dataset, which checksum reads).
"$bin" train tiny.yaml --set model.head=bide --set head.bide.code=frequency --set run.out_dir="$dir/freq" > /dev/null 2>&1 || fail "bide (frequency) train failed"
# int64 little-endian signed: version 1 fixed-point, size 8, offset 0, precision 64 -> 40.
perl -0777 -pe '$n = s/\x10\x08\x00\x00\x08\x00\x00\x00\x00\x00\x40\x00/\x10\x08\x00\x00\x08\x00\x00\x00\x00\x00\x28\x00/g;
  die "too few int64 datatype messages\n" if $n < 2' freq/last.h5 > bad_int.h5 || fail "could not patch the int64 types"
one_line_error "is stored as a non-standard integer (8 bytes, precision 40 at bit 0)" "$bin" eval bad_int.h5
out=$("$bin" checksum bad_int.h5 2>/dev/null) && fail "checksum accepted a non-standard integer"
[ -z "$out" ] || fail "checksum printed digests before refusing: $out"

# 8. Temporaries: a dead process's is removed at the next save of its file, a live one's kept.
sh -c 'echo $$' > dead.pid
dead=$(cat dead.pid)
echo partial > "run/last.h5.tmp-$dead-0"
echo partial > "run/last.h5.tmp-$$-0"
"$bin" train tiny.yaml > /dev/null 2>&1 || fail "the second train failed"
[ ! -e "run/last.h5.tmp-$dead-0" ] || fail "a dead process's temporary was left"
[ -e "run/last.h5.tmp-$$-0" ] || fail "a live process's temporary was removed"
# A signal during a long CPU step stops it within seconds; resumed, the run ends with the
# uninterrupted run's bits (the abandoned step's draws undone).
cat > slow.yaml <<YAML
run: {out_dir: $dir/slow, seed: 5, device: cpu}
data: {path: corpus.txt}
model: {type: gpt, block_size: 64, n_layer: 4, n_head: 4, n_embd: 128, dropout: 0.1}
train: {steps: 3, batch_size: 64, eval_interval: 3, eval_iters: 1, log_interval: 1}
YAML
"$bin" train slow.yaml --set run.out_dir="$dir/whole" > /dev/null 2>&1 || fail "the slow run failed"
"$bin" train slow.yaml > slow.log 2>&1 &
pid=$!
until grep -q '^step      1/3' slow.log 2>/dev/null; do sleep 0.05; kill -0 $pid 2>/dev/null || break; done
sleep 0.2  # inside step 2
start=$(date +%s%N)
kill -TERM $pid
wait $pid
rc=$?
took=$(( ($(date +%s%N) - start) / 1000000 ))
[ $rc -eq 130 ] || fail "SIGTERM during a step exited $rc: $(tail -2 slow.log)"
[ $took -lt 5000 ] || fail "SIGTERM took $took ms to stop the step"
grep -q 'stopped by signal 15 after step 1' slow.log || fail "the stop line: $(tail -1 slow.log)"
"$bin" train slow.yaml --set run.resume=true > /dev/null 2>&1 || fail "resume after the stop failed"
[ "$("$bin" checksum slow/last.h5)" = "$("$bin" checksum whole/last.h5)" ] || fail "the resumed run differs from the uninterrupted one"
"$bin" --version | grep -qE '^bitgrad [0-9]+\.[0-9]+\.[0-9]+ \(' || fail "--version: $("$bin" --version)"
echo "cli_hostile_test: all kinds checked (stopped a step in $took ms)"

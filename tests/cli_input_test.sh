#!/usr/bin/env bash
# cli_input_test.sh BITGRAD: what a new user gets wrong, each refused in one line that names the
# file:line or the flag, with a non-zero exit, before anything is written: empty or null values,
# scalars where a section belongs, duplicate keys and sections, directories given as files,
# pathological YAML, resume with nothing to resume, exclusive flags, keys another setting makes
# irrelevant, unwritable output folders, failed saves (no .tmp left). Also --help per command,
# `bitgrad help`, and `sample` writing tokens as they come (SIGINT keeps them).
set -u
bin=$1
source "$(dirname "$0")/cli_lib.sh"
printf 'First Citizen:\nBefore we proceed any further, hear me speak.\n' > "$dir/line.txt"
for i in $(seq 1 100); do cat "$dir/line.txt"; done > "$dir/corpus.txt"
ok="$dir/ok.yaml"
cat > "$ok" <<YAML
run: {out_dir: $dir/run, device: cpu}
data:
  path: $dir/corpus.txt
model: {type: gpt, block_size: 16, n_layer: 1, n_head: 2, n_embd: 16}
train:
  steps: 4
  batch_size: 4
  eval_interval: 4
  eval_iters: 1
YAML
cfg() { printf "$2" > "$dir/$1"; echo "$dir/$1"; }

# Empty and null values never become defaults.
one_line_error "empty.yaml:2:3: train.steps: empty value" "$bin" train "$(cfg empty.yaml 'train:\n  steps:\n')"
one_line_error "null.yaml:2:3: model.type: empty value" "$bin" train "$(cfg null.yaml 'model:\n  type: ~\n')"
one_line_error "--set train.steps=: empty value" "$bin" train "$ok" --set train.steps=
one_line_error "--set model.type=~: empty value" "$bin" train "$ok" --set model.type=~
# A scalar where a section belongs.
one_line_error "scalar.yaml:1:8: model: expected a section (with keys such as model.type), got 'gpt'" "$bin" train "$(cfg scalar.yaml 'model: gpt\n')"
one_line_error "optimizer: expected a section" "$bin" train "$(cfg opt.yaml "data: {path: $dir/corpus.txt}\noptimizer: sgd\n")"
one_line_error "--set model=3: model: expected a section" "$bin" train "$ok" --set model=3
# Duplicate keys and sections name both lines.
one_line_error "dup.yaml:3:3: train.steps: duplicate key (first at line 2)" "$bin" train "$(cfg dup.yaml 'train:\n  steps: 3\n  steps: 4\n')"
one_line_error "dups.yaml:3:1: train: duplicate key (first at line 1)" "$bin" train "$(cfg dups.yaml 'train:\n  steps: 3\ntrain:\n  batch_size: 4\n')"
# Directories where files belong: config, data, prompt, sample file, checkpoint.
mkdir -p "$dir/adir"
one_line_error "adir: is a directory, expected a config file" "$bin" train "$dir/adir"
one_line_error "adir: is a directory, expected a text file" "$bin" train "$ok" --set data.path="$dir/adir"
one_line_error "adir: is a directory, expected a checkpoint" "$bin" sample "$dir/adir"
one_line_error "adir: is a directory, expected a sample file" "$bin" fit-bide "$(cfg fit.yaml "run: {out_dir: $dir/fit, device: cpu}\nbide: {dtype: uint, bits: 8, hidden: 4}\ntrain: {steps: 2}\ndistributions:\n  - {kind: file, path: $dir/adir}\n")"
# Pathological YAML: deep nesting and huge files fail fast.
head -c 300000 /dev/zero | tr '\0' '[' | sed 's/^/a: /' > "$dir/deep.yaml"
one_line_error "nested deeper than 32 levels" "$bin" train "$dir/deep.yaml"
head -c 30000000 /dev/zero | tr '\0' '#' > "$dir/huge.yaml"
one_line_error "huge.yaml: config file is larger than 1048576 bytes; refused" "$bin" train "$dir/huge.yaml"
# A 1 MiB map of 85,000 keys: duplicates are found by hashing, so this is refused at once (with
# a scan per key it took 3 minutes; the test's CTest timeout catches that).
awk 'BEGIN { print "x:"; for (i = 0; i < 85000; i++) printf "  k%d: 1\n", i }' > "$dir/flat.yaml"
one_line_error "flat.yaml:1:1: unknown key 'x'" "$bin" train "$dir/flat.yaml"
# Resume with nothing to resume.
one_line_error "run.resume is true but there is no checkpoint to resume: $dir/fresh/last.h5 does not exist" "$bin" train "$ok" --set run.resume=true --set run.out_dir="$dir/fresh"
# Keys another setting makes irrelevant are named as such.
# bf16 activations: the operands of bf16 matmuls, in the dense GPT with a softmax head only.
one_line_error "train.activations: bf16 activations are the operands of bf16 matmuls; set train.precision: bf16" "$bin" train "$ok" --set train.activations=bf16
bf16=(--set train.precision=bf16 --set train.activations=bf16)
one_line_error "train.activations: bf16 activations run dense projections" "$bin" train "$ok" "${bf16[@]}" --set model.linear=bitlinear
one_line_error "train.activations: bf16 activations feed the softmax head" "$bin" train "$ok" "${bf16[@]}" --set model.head=bide
one_line_error "train.activations: bf16 activations are a transformer trunk's (model.type: gpt or forecaster)" "$bin" train "$(cfg mlp16.yaml "data: {path: $dir/corpus.txt}\nmodel: {type: char_mlp}\n")" "${bf16[@]}"
one_line_error "data.path: not used when data.train_bin is set" "$bin" train "$ok" --set data.train_bin=x.bin --set data.val_bin=y.bin --set data.tokenizer=byte
one_line_error "model.n_hidden: not used when model.type is gpt" "$bin" train "$ok" --set model.n_hidden=8
one_line_error "optimizer.momentum: not used when optimizer.type is adamw" "$bin" train "$ok" --set optimizer.momentum=0.9
one_line_error "distributions.0.sigma: not used when kind is gamma" "$bin" fit-bide "$(cfg kind.yaml "distributions:\n  - {kind: gamma, alpha: 2, sigma: 1}\n")"
# An unwritable output folder is reported before training (no progress line printed).
out=$("$bin" train "$ok" --set run.out_dir="$dir/corpus.txt/run" 2>&1) && fail "an output folder under a file was accepted"
echo "$out" | grep -qF "cannot create the output folder (Not a directory)" || fail "unexpected: $out"
echo "$out" | grep -q "^step" && fail "training started before the output folder was checked"
# A failed save (last.h5 is a non-empty folder) fails in one line and leaves no .tmp.
mkdir -p "$dir/blocked/last.h5/x"
one_line_error "blocked/last.h5: is a folder" "$bin" train "$ok" --set run.out_dir="$dir/blocked"
! ls "$dir/blocked" | grep -q "tmp" || fail "a failed save left a temporary behind: $(ls "$dir/blocked")"

# A checkpoint for the sample flags.
"$bin" train "$ok" > "$dir/train.log" 2>&1 || { cat "$dir/train.log"; fail "train failed"; }
one_line_error "--prompt and --prompt-file cannot be used together" "$bin" sample "$dir/run/last.h5" --prompt a --prompt-file "$dir/line.txt"
one_line_error "option --tokens given twice" "$bin" sample "$dir/run/last.h5" --tokens 3 --tokens 4
one_line_error "adir: is a directory, expected a text file" "$bin" sample "$dir/run/last.h5" --prompt-file "$dir/adir"
# checksum: one sha256 line per dataset; a second run from the same seed has the same lines.
"$bin" checksum "$dir/run/last.h5" > "$dir/sum1" || fail "checksum failed"
grep -qE "^[0-9a-f]{64}  transformer.wte.weight$" "$dir/sum1" || fail "checksum lacks transformer.wte.weight: $(head -3 "$dir/sum1")"
grep -qE "^[0-9a-f]{64}  optimizer/exp_avg$" "$dir/sum1" || fail "checksum lacks optimizer/exp_avg"
"$bin" train "$ok" --set run.out_dir="$dir/run2" > /dev/null 2>&1 || fail "second train failed"
"$bin" checksum "$dir/run2/last.h5" | cmp -s - "$dir/sum1" || fail "two runs from one seed differ in their checkpoints"
one_line_error "not a readable HDF5 file" "$bin" checksum "$dir/corpus.txt"
one_line_error "usage: bitgrad checksum FILE.h5" "$bin" checksum
# train.deterministic: two runs give checkpoints with the same datasets; the mode is printed.
# check-determinism: three runs bitwise equal, batch invariance and sampler = trainer, a table
# and exit 0; bad flags refused in one line.
"$bin" train "$ok" --set train.deterministic=true --set run.out_dir="$dir/det1" > "$dir/det1.log" 2>&1 || fail "deterministic train failed: $(tail -2 "$dir/det1.log")"
"$bin" train "$ok" --set train.deterministic=true --set run.out_dir="$dir/det2" > /dev/null 2>&1 || fail "second deterministic train failed"
grep -q "compute: fp32 batch_invariant deterministic" "$dir/det1.log" || fail "no compute line: $(grep compute "$dir/det1.log")"
cmp -s <("$bin" checksum "$dir/det1/last.h5") <("$bin" checksum "$dir/det2/last.h5") || fail "two deterministic runs differ"
"$bin" check-determinism "$ok" --runs 3 --steps 4 --out "$dir/chk" > "$dir/chk.log" 2>&1 || fail "check-determinism failed: $(tail -4 "$dir/chk.log")"
for row in "run to run         equal   3 runs x 4 steps" "batch invariance   equal" "sampler = trainer  equal   KV-cached head outputs = training forward in a batch of 64 at all 16 positions"; do
  grep -q "^$row" "$dir/chk.log" || fail "check-determinism printed no '$row' row: $(tail -4 "$dir/chk.log")"
done
one_line_error "--runs: 1 is outside [2, 100]" "$bin" check-determinism "$ok" --runs 1
# A char MLP has the same checks through the LanguageModel interface; its sampler is the training
# forward itself, so that row says skipped.
cat > "$dir/mlp.yaml" <<YAML
run: {device: cpu}
data: {path: $dir/corpus.txt}
model: {type: char_mlp, context: 8, n_embd: 8, n_hidden: 16}
train: {steps: 2, batch_size: 4, eval_interval: 2, eval_iters: 1}
YAML
"$bin" check-determinism "$dir/mlp.yaml" --runs 2 --steps 2 --out "$dir/chk_mlp" > "$dir/chk_mlp.log" 2>&1 || fail "check-determinism of a char MLP failed: $(tail -4 "$dir/chk_mlp.log")"
for row in "batch invariance   equal   head outputs and dx of a sequence alone" "sampler = trainer  skipped char_mlp"; do
  grep -q "^$row" "$dir/chk_mlp.log" || fail "check-determinism printed no '$row' row: $(tail -4 "$dir/chk_mlp.log")"
done
# docs/config.md is the validator's own schema (bitgrad config): every key the reader accepts is
# documented there, every documented key is read; an unknown key names the nearest known one.
scripts/config_docs.sh "$bin" --check || fail "docs/config.md has drifted from bitgrad config"
"$bin" config train | grep -q "^train.steps " || fail "bitgrad config train lists no train.steps"
one_line_error "usage: bitgrad config train|fit-bide" "$bin" config
one_line_error "expected train or fit-bide, got 'eval'" "$bin" config eval
one_line_error "unknown key 'optimiser' (did you mean 'optimizer'?)" "$bin" train "$ok" --set optimiser.lr=1
one_line_error "--set foo.bar=1: unknown key 'foo'" "$bin" train "$ok" --set foo.bar=1
one_line_error "--set model.=3: empty part in key 'model.'" "$bin" train "$ok" --set model.=3
# Resume compares the compute mode: a checkpoint trained in one arithmetic is not continued in
# another unless run.resume_mode_change says so (and then the run says it once).
"$bin" train "$ok" --set run.out_dir="$dir/mode" --set run.stop_after_steps=2 > /dev/null 2>&1 || fail "a stopped train failed"
one_line_error "(checkpoint vs config: train.matmul: standard vs lmul)" "$bin" train "$ok" --set run.out_dir="$dir/mode" --set run.resume=true --set train.matmul=lmul
one_line_error "split its data otherwise (checkpoint vs config: data.val_fraction: 0.1 vs 0.2)" "$bin" train "$ok" --set run.out_dir="$dir/mode" --set run.resume=true --set data.val_fraction=0.2
one_line_error "(checkpoint vs config: train.deterministic: false vs true)" "$bin" train "$ok" --set run.out_dir="$dir/mode" --set run.resume=true --set train.deterministic=true
one_line_error "run.resume_mode_change: not used when run.resume is false" "$bin" train "$ok" --set run.out_dir="$dir/mode2" --set run.resume_mode_change=true
"$bin" train "$ok" --set run.out_dir="$dir/mode" --set run.resume=true --set train.matmul=lmul --set run.resume_mode_change=true > "$dir/mode.log" 2>&1 || fail "resume_mode_change did not resume: $(tail -2 "$dir/mode.log")"
grep -q "note: resuming in another compute mode (checkpoint vs config: train.matmul: standard vs lmul)" "$dir/mode.log" || fail "a mode change was not said: $(head -3 "$dir/mode.log")"
# A flag or key that would make the report describe something that did not run is refused.
one_line_error "--steps 5 is past the config's train.steps = 4" "$bin" check-determinism "$ok" --steps 5
one_line_error "the config sets train.deterministic: false" "$bin" check-determinism "$ok" --set train.deterministic=false
one_line_error "usage: bitgrad check-determinism CONFIG" "$bin" check-determinism
# The BIDE output head: trains, resumes bit for bit, evaluates (nats/token, bits/byte, the mass
# it would put outside the vocabulary unrestricted), samples and passes check-determinism;
# a head that cannot hold the vocabulary, or a mixed one, is refused in one line.
"$bin" train "$ok" --set model.head=bide --set head.bide.hidden=8 --set run.out_dir="$dir/bide1" > "$dir/bide.log" 2>&1 || fail "bide-head train failed: $(tail -2 "$dir/bide.log")"
"$bin" train "$ok" --set model.head=bide --set head.bide.hidden=8 --set run.out_dir="$dir/bide2" --set run.stop_after_steps=2 > /dev/null 2>&1 || fail "a stopped bide-head train failed"
"$bin" train "$ok" --set model.head=bide --set head.bide.hidden=8 --set run.out_dir="$dir/bide2" --set run.resume=true > /dev/null 2>&1 || fail "a bide-head resume failed"
cmp -s <("$bin" checksum "$dir/bide1/last.h5") <("$bin" checksum "$dir/bide2/last.h5") || fail "a resumed bide-head run differs from an uninterrupted one"
"$bin" eval "$dir/bide1/last.h5" > "$dir/bide_eval.log" 2>&1 || fail "bide-head eval failed: $(cat "$dir/bide_eval.log")"
grep -q "nats/token | [0-9.]* bits/byte .* outside the vocabulary" "$dir/bide_eval.log" || fail "bide-head eval: $(cat "$dir/bide_eval.log")"
"$bin" sample "$dir/bide1/last.h5" --tokens 5 > /dev/null 2>&1 || fail "bide-head sample failed"
# eval --per-token: one CSV row per scored token, whose nats average to the printed loss.
"$bin" eval "$dir/bide1/last.h5" --per-token "$dir/per_token.csv" > "$dir/pt.log" 2>&1 || fail "eval --per-token failed: $(cat "$dir/pt.log")"
scored=$(grep -o '[0-9]* tokens' "$dir/pt.log" | head -1 | cut -d' ' -f1)
[ "$(head -1 "$dir/per_token.csv")" = "position,target,nats" ] && [ "$(($(wc -l < "$dir/per_token.csv") - 1))" = "$scored" ] || fail "eval --per-token wrote $(wc -l < "$dir/per_token.csv") lines for $scored tokens"
printed=$(grep -o 'loss [0-9.]*' "$dir/pt.log" | cut -d' ' -f2)
awk -F, -v want="$printed" 'NR > 1 {s += $3; n++} END {m = s / n; exit !(m - want < 1e-4 && want - m < 1e-4)}' "$dir/per_token.csv" || fail "eval --per-token's nats do not average to the printed loss $printed"
one_line_error "--per-token $dir/bide1/last.h5 is the input" "$bin" eval "$dir/bide1/last.h5" --per-token "$dir/bide1/last.h5"
"$bin" check-determinism "$ok" --set model.head=bide --set head.bide.hidden=8 --runs 2 --steps 2 --out "$dir/bidechk" > "$dir/bidechk.log" 2>&1 || fail "bide-head check-determinism: $(tail -4 "$dir/bidechk.log")"
# --record / --compare: a run's digests, checked by another run (here the same machine: equal;
# a record whose digest differs: DIFFER and exit 1); a record of other steps and a file that is
# no record are refused before any run.
"$bin" check-determinism "$ok" --runs 2 --steps 2 --out "$dir/rec" --record "$dir/record.txt" > "$dir/rec.log" 2>&1 || fail "check-determinism --record: $(tail -3 "$dir/rec.log")"
head -1 "$dir/record.txt" | grep -q "check-determinism record" || fail "--record wrote no record"
"$bin" check-determinism "$ok" --runs 2 --steps 2 --out "$dir/rec" --compare "$dir/record.txt" > "$dir/rec.log" 2>&1 || fail "check-determinism --compare of an equal run: $(tail -3 "$dir/rec.log")"
grep -q "against record     equal" "$dir/rec.log" || fail "--compare printed no equal row: $(cat "$dir/rec.log")"
one_line_error "records a run of other settings (here 'run.stop_after_steps: 1', in the record 'run.stop_after_steps: 2')" "$bin" check-determinism "$ok" --runs 2 --steps 1 --out "$dir/rec" --compare "$dir/record.txt"
# A record made before a setting existed (no line for it) compares while the run leaves the
# setting at its default, and is refused, naming it, when the run sets it; a setting this build
# does not read is refused.
grep -v '^#| model.dropout:' "$dir/record.txt" > "$dir/older.txt"
! cmp -s "$dir/record.txt" "$dir/older.txt" || fail "the record lists no model.dropout"
"$bin" check-determinism "$ok" --runs 2 --steps 2 --out "$dir/rec" --compare "$dir/older.txt" > "$dir/rec.log" 2>&1 || fail "--compare of a record older than a setting: $(tail -3 "$dir/rec.log")"
grep -q "against record     equal" "$dir/rec.log" || fail "--compare of an older record printed no equal row: $(cat "$dir/rec.log")"
one_line_error "records a run without 'model.dropout' (made before the setting existed, at its default); here 'model.dropout: 0.1' is set" "$bin" check-determinism "$ok" --runs 2 --steps 2 --out "$dir/rec" --compare "$dir/older.txt" --set model.dropout=0.1
{ head -2 "$dir/record.txt"; echo '#| model.flux: 3'; tail -n +3 "$dir/record.txt"; } > "$dir/newer.txt"
one_line_error "records 'model.flux: 3', a setting this build does not read" "$bin" check-determinism "$ok" --runs 2 --steps 2 --out "$dir/rec" --compare "$dir/newer.txt"
# The first digest with its first hex digit changed (0 <-> 1, anything else -> 0).
perl -pe 'if (!$done && /^[0-9a-f]{64}  /) { s/^(.)/$1 eq "0" ? "1" : "0"/e; $done = 1 }' \
  "$dir/record.txt" > "$dir/tampered.txt"
if "$bin" check-determinism "$ok" --runs 2 --steps 2 --out "$dir/rec" --compare "$dir/tampered.txt" > "$dir/rec.log" 2>&1; then fail "--compare of a different digest exited 0"; fi
grep -q "against record     DIFFER .*1 of [0-9]* datasets differ" "$dir/rec.log" || fail "--compare printed no DIFFER row: $(cat "$dir/rec.log")"
one_line_error "not a check-determinism record" "$bin" check-determinism "$ok" --runs 2 --steps 1 --out "$dir/rec" --compare "$ok"
one_line_error "head.bide.bits: 3 bits hold 8 ids" "$bin" train "$ok" --set model.head=bide --set head.bide.bits=3
one_line_error "head.bide.hidden: value 257 is out of range [1, 256]" "$bin" train "$ok" --set model.head=bide --set head.bide.hidden=257
one_line_error "head.bide.sick.variant: the precomputed kernel holds up to 64 hidden units" "$bin" train "$ok" --set model.head=bide --set head.bide.hidden=65 --set head.bide.sick.variant=precomputed
one_line_error "head.bide.code: 'rank' is not one of: id, frequency" "$bin" train "$ok" --set model.head=bide --set head.bide.code=rank
one_line_error "model.input: bits leaves no token embedding for the softmax head" "$bin" train "$ok" --set model.input=bits
one_line_error "data.tokenizer: byte_pair predicts 65,536 pair ids jointly" "$bin" train "$ok" --set data.tokenizer=byte_pair
one_line_error "head.bide.code: frequency ranks single tokens" "$bin" train "$ok" --set data.tokenizer=byte_pair --set model.head=bide --set head.bide.code=frequency
one_line_error "model.vocab_size: byte_pair pairs ids as first * 256 + second" "$bin" train "$ok" --set data.tokenizer=byte_pair --set model.head=bide --set model.vocab_size=320
one_line_error "head.bide.softmax_ids: the softmax takes the most frequent ids" "$bin" train "$ok" --set model.head=bide --set head.bide.softmax_ids=4
one_line_error "head.bide.softmax_ids: 100000 leaves the BIDE none of the char tokenizer's" "$bin" train "$ok" --set model.head=bide --set head.bide.code=frequency --set head.bide.softmax_ids=100000
one_line_error "head.bide.code: frequent_first ranks the hybrid's softmax ids first" "$bin" train "$ok" --set model.head=bide --set head.bide.code=frequent_first
one_line_error "head.bide.tie_softmax: ties the hybrid's softmax rows" "$bin" train "$ok" --set model.head=bide --set head.bide.tie_softmax=true
one_line_error "head.bide.tie_softmax: model.input: bits leaves no token embedding" "$bin" train "$ok" --set model.head=bide --set head.bide.code=frequency --set head.bide.softmax_ids=4 --set head.bide.tie_softmax=true --set model.input=bits
"$bin" check-determinism "$ok" --set model.head=bide --set head.bide.hidden=8 --set head.bide.code=frequency --set head.bide.softmax_ids=8 --runs 2 --steps 2 --out "$dir/hybridchk" > "$dir/hybridchk.log" 2>&1 || fail "hybrid-head check-determinism: $(tail -4 "$dir/hybridchk.log")"
# The BIDE head's variants: a vocabulary-free GPT (bit input) with frequency-ranked ids, byte
# pairs, and the hybrid (a softmax over the 8 most frequent ids tied to their embedding rows,
# the BIDE over the rest in id order); each trains, resumes bit for bit, evaluates and samples.
for variant in "model.input=bits --set head.bide.code=frequency" "head.bide.code=frequent_first --set head.bide.softmax_ids=8 --set head.bide.tie_softmax=true" "data.tokenizer=byte_pair"; do
  tag=$(echo "$variant" | tr -c 'a-z' _)
  # shellcheck disable=SC2086  # the variant is two --set arguments
  "$bin" train "$ok" --set model.head=bide --set head.bide.hidden=8 --set $variant --set run.out_dir="$dir/v1$tag" > "$dir/v.log" 2>&1 || fail "$variant: train failed: $(tail -2 "$dir/v.log")"
  # shellcheck disable=SC2086
  "$bin" train "$ok" --set model.head=bide --set head.bide.hidden=8 --set $variant --set run.out_dir="$dir/v2$tag" --set run.stop_after_steps=2 > /dev/null 2>&1 || fail "$variant: a stopped train failed"
  # shellcheck disable=SC2086
  "$bin" train "$ok" --set model.head=bide --set head.bide.hidden=8 --set $variant --set run.out_dir="$dir/v2$tag" --set run.resume=true > /dev/null 2>&1 || fail "$variant: resume failed"
  cmp -s <("$bin" checksum "$dir/v1$tag/last.h5") <("$bin" checksum "$dir/v2$tag/last.h5") || fail "$variant: a resumed run differs from an uninterrupted one"
  "$bin" eval "$dir/v1$tag/last.h5" > "$dir/v_eval.log" 2>&1 || fail "$variant: eval failed: $(cat "$dir/v_eval.log")"
  grep -q "nats/t[a-z]* | [0-9.]* bits/byte" "$dir/v_eval.log" || fail "$variant: eval: $(cat "$dir/v_eval.log")"
  [ "$("$bin" sample "$dir/v1$tag/last.h5" --tokens 5 --prompt Fi 2>/dev/null | head -c 7 | wc -c)" = 7 ] || fail "$variant: sample did not write the prompt and 5 tokens"
done
grep -q "targets, [0-9]* bytes | loss [0-9.]* nats/target" "$dir/v_eval.log" || fail "byte_pair eval does not count targets: $(cat "$dir/v_eval.log")"
one_line_error "head.bide.hidden: not used when model.head is softmax" "$bin" train "$ok" --set head.bide.hidden=8
one_line_error "head.bide.sick.dtype: 'fp8' is not one of: fp32, fp16" "$bin" train "$ok" --set model.head=bide --set head.bide.sick.dtype=fp8
one_line_error "bitlinear.lm_head: replaced by model.head: bitlinear" "$bin" train "$ok" --set model.linear=bitlinear --set bitlinear.lm_head=true
one_line_error "model.head: bitlinear makes the tied head a BitLinear product like the projections; it needs model.linear: bitlinear" "$bin" train "$ok" --set model.head=bitlinear
# The linear-layer factory's kinds: dense (the default) and bitlinear, whose quantisers the
# checkpoint records, so sample and eval rebuild the BitNet model; bad bitlinear.* keys refused.
"$bin" train "$ok" --set model.linear=bitlinear --set bitlinear.weight_scale=absmedian --set model.head=bitlinear --set run.out_dir="$dir/bitnet" > "$dir/bitnet.log" 2>&1 || fail "bitlinear train failed: $(tail -2 "$dir/bitnet.log")"
"$bin" eval "$dir/bitnet/last.h5" > "$dir/bitnet_eval.log" 2>&1 || fail "eval of a bitlinear checkpoint failed: $(tail -2 "$dir/bitnet_eval.log")"
"$bin" sample "$dir/bitnet/last.h5" --tokens 5 > /dev/null 2>&1 || fail "sample of a bitlinear checkpoint failed"
# The packed export: eval and greedy sample from it print what the checkpoint gives; bad uses
# and a truncated file are refused in one line.
"$bin" export "$dir/bitnet/last.h5" --packed --out "$dir/bitnet/packed.h5" > "$dir/export.log" 2>&1 || fail "export failed: $(tail -2 "$dir/export.log")"
grep -q "8.00x" "$dir/export.log" || fail "export did not report 2-bit codes at 1/8 of fp16: $(cat "$dir/export.log")"
[ "$("$bin" eval "$dir/bitnet/packed.h5" 2>&1 | sed 's/^[^:]*://')" = "$(sed 's/^[^:]*://' "$dir/bitnet_eval.log")" ] || fail "eval of the packed file differs from the checkpoint's"
[ "$("$bin" sample "$dir/bitnet/packed.h5" --tokens 20 --temperature 0 2>&1)" = "$("$bin" sample "$dir/bitnet/last.h5" --tokens 20 --temperature 0 2>&1)" ] || fail "greedy samples of the packed file and the checkpoint differ"
one_line_error "say --packed" "$bin" export "$dir/bitnet/last.h5" --out "$dir/x.h5"
one_line_error "is the input" "$bin" export "$dir/bitnet/last.h5" --packed --out "$dir/bitnet/last.h5"
one_line_error "no BitLinear layers" "$bin" export "$dir/run/last.h5" --packed --out "$dir/x.h5"
one_line_error "unknown option '--packed'" "$bin" sample "$dir/bitnet/packed.h5" --packed
head -c 4000 "$dir/bitnet/packed.h5" > "$dir/truncated.h5"
one_line_error "not a readable HDF5 file" "$bin" eval "$dir/truncated.h5"
[ ! -e "$dir/x.h5" ] || fail "a refused export left $dir/x.h5"
# bitgrad plot: runs' metrics.csv side by side; anything else refused in one line.
"$bin" plot "dense=$dir/run/metrics.csv" "bitnet=$dir/bitnet/metrics.csv" --out "$dir/runs.svg" > /dev/null 2>&1 || fail "plot of two runs failed"
grep -q "bitnet" "$dir/runs.svg" || fail "plot left out a run's label"
one_line_error "not a bitgrad metrics.csv" "$bin" plot "$dir/corpus.txt" --out "$dir/bad.svg"
one_line_error "cannot open metrics file" "$bin" plot "$dir/missing.csv" --out "$dir/bad.svg"
one_line_error "bitlinear.act_bits" "$bin" train "$ok" --set model.linear=bitlinear --set bitlinear.act_bits=9
one_line_error "bitlinear.norm" "$bin" train "$ok" --set model.linear=bitlinear --set bitlinear.norm=batchnorm
one_line_error "bitlinear.norm: not used when model.linear is dense" "$bin" train "$ok" --set bitlinear.norm=none
one_line_error "model.linear" "$bin" train "$ok" --set model.linear=ternary
one_line_error "model.linear: not used when model.type is char_mlp" "$bin" train "$(cfg mlp.yaml "data: {path: $dir/corpus.txt}\nmodel: {type: char_mlp, linear: dense}\n")"
# sample writes tokens as they are drawn: interrupted, it keeps what it wrote and exits 130.
"$bin" sample "$dir/run/last.h5" --tokens 10000000 > "$dir/stream.txt" 2> "$dir/stream.err" &
pid=$!
for i in $(seq 1 600); do [ "$(wc -c < "$dir/stream.txt")" -gt 20 ] && break; sleep 0.1; done  # a minute on a busy machine
[ "$(wc -c < "$dir/stream.txt")" -gt 20 ] || { kill $pid; fail "sample wrote nothing while generating"; }
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] || fail "an interrupted sample exited $rc, expected 130: $(cat "$dir/stream.err")"
[ "$(wc -c < "$dir/stream.txt")" -gt 20 ] || fail "the interrupted sample's text was lost"

# Usage: per command with --help (exit 0), every flag of every command with help.
for c in fit-bide train sample eval prepare bench checksum info; do
  out=$("$bin" $c --help) || fail "$c --help exited non-zero"
  echo "$out" | grep -q "bitgrad $c" || fail "$c --help does not show its usage: $out"
done
all=$("$bin" help) || fail "bitgrad help exited non-zero"
for flag in --set --prompt --prompt-file --tokens --temperature --top-k --seed --samples --device --data --batch-size --out --tokenizer --gpt2-dir --val-fraction --reps --batch --dtype --variant; do
  echo "$all" | grep -q -- "$flag " || fail "bitgrad help does not list $flag"
done
echo "cli_input_test: all checks passed"

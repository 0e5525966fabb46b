#!/usr/bin/env bash
# config_docs.sh BITGRAD [--check]: writes docs/config.md from `bitgrad config` (the validator's
# own schema), or with --check exits 1 when docs/config.md differs from what it would write.
set -euo pipefail
bin=$1
cd "$(dirname "$0")/.."
render() {
  cat <<'HEAD'
# Config keys

Made by `scripts/config_docs.sh` from `bitgrad config train|fit-bide --markdown`, which reads
every key from the validator itself: a key listed here is one the command reads, and every key
it reads is listed (the test suite compares this page with the command's output). Every value
is checked when the config is read: its type, its range, and that no other setting makes it
irrelevant; an unknown key is refused, naming the nearest known one.

Ranges: `[lo, hi]` inclusive; `>= lo` has no upper bound; a range naming another key follows
it. A `choice` takes exactly one of the names listed. Override any key on the command line with
`--set key.path=value`.

## `bitgrad train`

HEAD
  "$bin" config train --markdown
  printf '\n## `bitgrad fit-bide`\n\n'
  "$bin" config fit-bide --markdown
  cat <<'TAIL'

`distributions` is a list; each entry has a `kind`, an optional `name` and the kind's own
parameters (those of another kind are refused, naming the kind). Row d of the fit's W
embedding, reshaped to (H, B), is distribution d's W; bit j of a value is column j (LSB first),
b_j = +1 for a set bit and -1 otherwise.
TAIL
}
if [ "${2:-}" = "--check" ]; then
  diff <(render) docs/config.md >/dev/null || { echo "docs/config.md differs from bitgrad config (run scripts/config_docs.sh)" >&2; diff <(render) docs/config.md | head -20 >&2; exit 1; }
else
  render > docs/config.md
fi

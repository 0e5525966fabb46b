#!/usr/bin/env python3
"""hf_weights_check.py: the transformers side of scripts/hf_weights_check.sh (run on the GPU
machine, which has transformers and PyTorch; no network needed).

  make DIR [SEED]                 a randomly initialised GPT2LMHeadModel (2 layers, 2 heads, width 64,
                                  128 positions, GPT-2's 50,257 ids, gelu_new) saved by transformers
                                  (model.safetensors, config.json)
  score DIR SHARD OUT.csv         per-token nats of the model in DIR over an llm.c token shard,
                                  windowed as `bitgrad eval` windows a stream (non-overlapping
                                  windows of n_positions tokens, every position scored, the tail
                                  alone): position,target,nats in fp32 on the CPU
  compare A.csv B.csv             the largest |nats difference| between two per-token files (same
                                  positions and targets required); exit 1 past 1e-4
  greedy DIR GPT2_DIR PROMPT N    N greedy tokens after PROMPT (GPT-2's tokenizer from GPT2_DIR's
                                  encoder.json and vocab.bpe), printed as text
  same DIR_A DIR_B                whether two saved models hold equal tensors (exit 1 if not)
"""
import csv
import sys

import numpy as np
import torch


def read_shard(path):
    header = np.fromfile(path, dtype=np.int32, count=256)
    assert header[0] == 20240520, f"{path}: not an llm.c token shard"
    n = int(header[2])
    return np.fromfile(path, dtype=np.uint16, offset=256 * 4, count=n).astype(np.int64)


def load(path):
    from transformers import GPT2LMHeadModel
    return GPT2LMHeadModel.from_pretrained(path, torch_dtype=torch.float32).eval()


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "make":
        from transformers import GPT2Config, GPT2LMHeadModel
        torch.manual_seed(int(args[1]) if len(args) > 1 else 0)
        cfg = GPT2Config(n_layer=2, n_head=2, n_embd=64, n_positions=128, vocab_size=50257,
                         activation_function="gelu_new", resid_pdrop=0, embd_pdrop=0, attn_pdrop=0)
        GPT2LMHeadModel(cfg).save_pretrained(args[0], safe_serialization=True)
    elif cmd == "score":
        model, tokens = load(args[0]), read_shard(args[1])
        block, n = model.config.n_positions, len(tokens)
        rows, w = [], 0
        with torch.no_grad():
            while w < n - 1:
                length = min(block, n - 1 - w)
                x = torch.tensor(tokens[w:w + length]).unsqueeze(0)
                y = torch.tensor(tokens[w + 1:w + length + 1])
                logp = torch.log_softmax(model(x).logits[0].float(), dim=-1)
                nats = -logp[torch.arange(length), y]
                rows += [(w + i, int(y[i]), float(nats[i])) for i in range(length)]
                w += length
        with open(args[2], "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["position", "target", "nats"])
            out.writerows(rows)
        print(f"{args[0]}: {len(rows)} positions, mean {np.mean([r[2] for r in rows]):.6f} nats")
    elif cmd == "compare":
        def rows(p):
            with open(p) as f:
                return [(int(r["position"]), int(r["target"]), float(r["nats"]))
                        for r in csv.DictReader(f)]
        a, b = rows(args[0]), rows(args[1])
        assert len(a) == len(b), f"{len(a)} against {len(b)} positions"
        assert all(x[:2] == y[:2] for x, y in zip(a, b)), "positions or targets differ"
        diff = max(abs(x[2] - y[2]) for x, y in zip(a, b))
        print(f"{len(a)} positions, largest |nats difference| {diff:.3g}, means "
              f"{np.mean([x[2] for x in a]):.6f} and {np.mean([y[2] for y in b]):.6f}")
        sys.exit(0 if diff <= 1e-4 else 1)
    elif cmd == "greedy":
        # GPT-2's byte-level BPE from the same two files bitgrad reads (the tokenizers library,
        # which transformers' fast tokenizer wraps), and greedy decoding by hand: argmax of the
        # last position's logits, N times. Prints the prompt and the continuation, as
        # `bitgrad sample` does.
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers
        tok = Tokenizer(models.BPE.from_file(f"{args[1]}/encoder.json", f"{args[1]}/vocab.bpe"))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        model, ids = load(args[0]), tok.encode(args[2]).ids
        with torch.no_grad():
            for _ in range(int(args[3])):
                logits = model(torch.tensor([ids[-model.config.n_positions:]])).logits[0, -1]
                ids.append(int(torch.argmax(logits)))
        sys.stdout.write(tok.decode(ids))
    elif cmd == "same":
        a, b = load(args[0]).state_dict(), load(args[1]).state_dict()
        keys = [k for k in a if not k.endswith(("attn.bias", "attn.masked_bias"))]
        bad = [k for k in keys if k not in b or not torch.equal(a[k], b[k])]
        print("equal" if not bad else f"differ: {bad[:5]}")
        sys.exit(0 if not bad else 1)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

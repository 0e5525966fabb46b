#!/usr/bin/env python3
"""torch_softmax_head.py: PyTorch's GPT softmax head, the baseline `bitgrad bench bide_head` is
compared with in the same device call. The nanoGPT head: hidden states h (N, 768) f32, logits =
h wte^T with the tied 50,304 x 768 embedding under bf16 autocast, cross-entropy over the GPT-2
vocabulary, backward to h and wte. Eager and torch.compile; median milliseconds of forward +
backward (and forward alone) over two inputs in turn, and the extra peak memory over the inputs.

Usage (where PyTorch and a GPU are): python3 scripts/torch_softmax_head.py [--out FILE] [--reps N]
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F

N_EMBD, VOCAB, PADDED = 768, 50257, 50304


def head_loss(h, wte, targets):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = h @ wte.t()
    return F.cross_entropy(logits[:, :VOCAB].float(), targets)


def time_head(fn, hs, wte, targets, reps):
    start, mid, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    both, fwd = [], []
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    for it in range(reps + 3):
        h = hs[it % 2].detach().requires_grad_(True)
        wte.grad = None
        start.record()
        loss = fn(h, wte, targets)
        mid.record()
        loss.backward()
        end.record()
        torch.cuda.synchronize()
        if it >= 3:
            fwd.append(start.elapsed_time(mid))
            both.append(start.elapsed_time(end))
    extra = (torch.cuda.max_memory_allocated() - base) / 2**20
    return statistics.median(both), statistics.median(fwd), extra


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="torch_softmax_head.json")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(2)
    wte = (torch.randn(PADDED, N_EMBD, device=dev) * 0.02).requires_grad_(True)
    compiled = torch.compile(head_loss)
    results = []
    print(f"{'N':<8} {'head':<30} {'fwd+bwd_ms':>10} {'fwd_ms':>10} {'extra_MiB':>12}")
    for n in (16384, 65536):
        g = torch.Generator(device=dev).manual_seed(1)
        hs = [torch.randn(n, N_EMBD, device=dev, generator=g) for _ in range(2)]
        targets = (torch.arange(n, device=dev) * 7919) % VOCAB
        for name, fn in (("torch softmax eager", head_loss), ("torch softmax compiled", compiled)):
            both, fwd, extra = time_head(fn, hs, wte, targets, args.reps)
            print(f"{n:<8} {name:<30} {both:>10.3f} {fwd:>10.3f} {extra:>12.1f}")
            results.append({"positions": n, "head": name, "fwd_bwd_ms": both, "fwd_ms": fwd,
                            "extra_peak_mib": extra})
        del hs
        torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump({"benchmark": "torch_softmax_head", "device": torch.cuda.get_device_name(0),
                   "torch": torch.__version__, "reps": args.reps, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()

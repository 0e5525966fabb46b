#!/usr/bin/env python3
"""torch_sdpa_baseline.py: PyTorch's scaled_dot_product_attention on the shapes `bitgrad bench
attention` times (causal, bf16, head dim 64), per backend (cuDNN, flash, memory-efficient):
median milliseconds of the forward and of forward + backward, q/k/v rotating through sets
past the L2 cache, as the bitgrad benchmark does. The baseline for the fused attention kernel;
run on the GPU machine beside `bitgrad bench attention` (same call). Writes JSON to argv[1].
Tooling only: nothing in bitgrad's training runs Python.
"""
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = [("baby_gpt", 64, 6, 256), ("gpt2_124m", 16, 12, 1024)]
BACKENDS = [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
            ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
HEAD_DIM = 64
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 30
L2_BYTES = 60 << 20  # H100 50 MiB, H200 60 MiB (REFERENCES.md): each set is larger


def median_ms(fn, sets):
    times = []
    for i in range(REPS + 3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        args = sets[i % len(sets)]
        start.record()
        fn(*args)
        end.record()
        torch.cuda.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    out = sys.argv[1]
    dev = torch.device("cuda")
    results = []
    for name, b, h, t in SHAPES:
        per_set = 4 * b * h * t * HEAD_DIM * 2  # q, k, v, dy in bf16
        n_sets = max(2, -(-2 * L2_BYTES // per_set))
        sets = []
        for _ in range(n_sets):
            q, k, v = (torch.randn(b, h, t, HEAD_DIM, device=dev, dtype=torch.bfloat16,
                                   requires_grad=True) for _ in range(3))
            sets.append((q, k, v, torch.randn(b, h, t, HEAD_DIM, device=dev, dtype=torch.bfloat16)))
        # Causal FLOPs: QK^T and PV over the lower triangle (fwd 2 products, bwd 5).
        fwd_flops = 2 * 2 * b * h * (t * (t + 1) / 2) * HEAD_DIM
        for backend_name, backend in BACKENDS:
            row = {"shape": name, "batch": b, "heads": h, "t": t, "backend": backend_name,
                   "fwd_flops": fwd_flops, "fwd_bwd_flops": fwd_flops * 3.5}
            try:
                with sdpa_kernel([backend]):
                    def fwd(q, k, v, dy):
                        with torch.no_grad():
                            F.scaled_dot_product_attention(q, k, v, is_causal=True)

                    def fwd_bwd(q, k, v, dy):
                        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                        torch.autograd.grad(y, (q, k, v), dy)  # no .grad accumulation

                    row["fwd_ms"] = median_ms(fwd, sets)
                    row["fwd_bwd_ms"] = median_ms(fwd_bwd, sets)
                    row["fwd_bwd_tflops"] = row["fwd_bwd_flops"] / row["fwd_bwd_ms"] / 1e9
            except RuntimeError as e:  # a backend this build or GPU lacks
                row["error"] = str(e).splitlines()[0]
            print(json.dumps(row))
            results.append(row)
    with open(out, "w") as f:
        json.dump({"benchmark": "torch scaled_dot_product_attention, causal, bf16",
                   "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                   "head_dim": HEAD_DIM, "reps": REPS, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()

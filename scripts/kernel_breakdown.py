#!/usr/bin/env python3
"""kernel_breakdown.py: the GPU time of training steps per kernel class, from ncu's CSV of the
steps the trainer put in the profiler's capture range (BITGRAD_PROFILE_STEPS=FIRST:COUNT;
`ncu --profile-from-start off --metrics gpu__time_duration.sum --csv --print-units base`).
ncu runs each kernel alone, so the sum is the step's kernel time without overlap; given the
unprofiled run's ms/step, "launch gaps and overlap" is the difference. Tooling for the docs'
breakdown tables (scripts/gpt2_breakdown.sh), not part of training.
Usage: kernel_breakdown.py NCU.csv STEPS [STEP_MS] > breakdown.json
"""
import csv
import json
import re
import sys

CLASSES = [  # first match wins
    ("attention", r"attention_|attn::"),
    ("BitLinear int8 product", r"int8_gemm"),
    ("BitLinear quantisers and dequantisers",
     r"abs_sum_chunks|abs_mean_finish|radix_histogram|radix_pick|ternary_round|act_quantize|"
     r"dequantize_|ternary_weights|bitlinear_input_backward"),
    ("GEMM", r"gemm|sm90_xmma|nvjet|cutlass|cublas|xmma|splitKreduce"),
    ("layernorm", r"layernorm"),
    ("GELU and other unary", r"unary_"),
    ("dropout and residual add", r"dropout_kernel|random_kernel"),
    ("casts and copies", r"copy_|convert_"),
    ("bias gradients and other reductions", r"reduce_|sum_chunks"),
    ("cross-entropy", r"cross_entropy"),
    ("embedding", r"embedding"),
    ("optimizer", r"adamw|sgd_kernel|mark_first_nonfinite"),
    ("binary elementwise", r"binary_kernel|where_kernel"),
    ("fill", r"fill_kernel"),
]


def kernel_class(name):
    for label, pattern in CLASSES:
        if re.search(pattern, name):
            return label
    return "other"


def main():
    path, steps = sys.argv[1], int(sys.argv[2])
    step_ms = float(sys.argv[3]) if len(sys.argv) > 3 else None
    per_class, per_kernel, launches = {}, {}, 0
    with open(path) as f:
        lines = [l for l in f if l.startswith('"')]  # ncu's own messages are not CSV rows
    for r in csv.DictReader(lines):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        ns = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "ns")
        ns *= {"ns": 1, "nsecond": 1, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}.get(unit, 1)
        name = r["Kernel Name"]
        c = kernel_class(name)
        per_class[c] = per_class.get(c, 0) + ns
        short = name.split("(")[0][:90]
        per_kernel[short] = per_kernel.get(short, 0) + ns
        launches += 1
    if launches == 0:
        sys.exit("kernel_breakdown: no gpu__time_duration.sum rows in " + path)
    ms = lambda ns: round(ns / steps / 1e6, 3)
    busy = sum(per_class.values())
    out = {"steps": steps, "kernels_per_step": round(launches / steps, 1),
           "kernel_ms": ms(busy)}
    if step_ms:
        out["step_ms_unprofiled"] = step_ms
        out["launch_gaps_and_overlap_ms"] = round(step_ms - busy / steps / 1e6, 3)
    out["classes_ms"] = {k: ms(v) for k, v in sorted(per_class.items(), key=lambda kv: -kv[1])}
    out["top_kernels_ms"] = {k: ms(v) for k, v in
                             sorted(per_kernel.items(), key=lambda kv: -kv[1])[:25]}
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""forecast_tables.py RESULTS_DIR: the markdown tables of docs/forecasting.md from the JSON that
`bitgrad eval --json` wrote under RESULTS_DIR (scripts/forecast_gpu.sh's layout):
  synthetic/<family>/<head>_s<seed>.json   one-step forecasts scored against the true law;
  real/<dataset>_<head>_s<seed>.json       the pooled model per dataset (real_<tag>/: a variant);
  baselines/<dataset>_<model>.json         statsmodels' ETS and ARIMA paths, scored the same way.
forecast_tables.py --variants VARIANTS_DIR BASE_DIR: the BIDE head's synthetic runs under other
settings (VARIANTS_DIR/<family>/bide_<tag>_s<seed>.json) beside BASE_DIR/<family>/bide_s*.json.
Means over seeds with their standard deviation; ratios to seasonal naive aggregated by their
geometric mean over the datasets (per seed, then averaged)."""
import glob
import json
import math
import os
import statistics as st
import sys

HEADS = ("bide", "gaussian", "student_t", "binned", "quantile")


def mean_sd(v):
    return st.mean(v), (st.stdev(v) if len(v) > 1 else 0.0)


def geo(v):
    return math.exp(st.mean(math.log(x) for x in v))


def synthetic(root):
    runs = {}
    for f in glob.glob(f"{root}/synthetic/*/*.json"):
        fam = f.split("/")[-2]
        head = os.path.basename(f).rsplit("_s", 1)[0]
        runs.setdefault(fam, {}).setdefault(head, []).append(json.load(open(f)))
    print("| family | " + " | ".join(HEADS) + " | true law's CRPS, NLL |")
    print("| --- |" + " --- |" * (len(HEADS) + 1))
    for fam in sorted(runs):
        cells = []
        best = min(st.mean(j["crps"] / j["truth_crps"] for j in runs[fam][h]) for h in HEADS)
        for h in HEADS:
            js = runs[fam][h]
            m, s = mean_sd([j["crps"] / j["truth_crps"] for j in js])
            n, _ = mean_sd([j["nll"] for j in js])
            cell = f"{m:.4f} ± {s:.4f} (NLL {n:.3f})"
            cells.append(f"**{cell}**" if m == best else cell)
        t = runs[fam][HEADS[0]][0]
        print(f"| {fam} | " + " | ".join(cells) + f" | {t['truth_crps']:.4f}, {t['truth_nll']:.3f} |")


def real_runs(folder):
    runs = {}
    for f in glob.glob(f"{folder}/*.json"):
        base, seed = os.path.basename(f)[:-5].rsplit("_s", 1)
        head = next(h for h in HEADS if base.endswith("_" + h))
        runs.setdefault(head, {}).setdefault(base[: -len(head) - 1], {})[int(seed)] = json.load(open(f))
    return runs


def real(root):
    """One row per head of each real*/ folder: real/ is the config as shipped, real_<tag>/ a
    variant (scripts/forecast_gpu.sh's VARIANTS), labelled by its tag."""
    folders = sorted(glob.glob(f"{root}/real*/"))
    base = {}
    for f in glob.glob(f"{root}/baselines/*.json"):
        name, model = os.path.basename(f)[:-5].rsplit("_", 1)
        base.setdefault(model, {})[name] = json.load(open(f))
    sets = sorted(next(iter(real_runs(folders[0]).values())))
    print("| forecaster | " + " | ".join(sets) + " | geometric mean CRPS / MASE ratio | 80% coverage |")
    print("| --- |" + " --- |" * (len(sets) + 2))
    for folder in folders:
        runs, tag = real_runs(folder), os.path.basename(folder.rstrip("/"))[5:]
        for head in HEADS:
            if head not in runs or sorted(runs[head]) != sets:
                continue
            seeds = sorted(runs[head][sets[0]])
            cells = [f"{st.mean(runs[head][d][s]['crps_ratio'] for s in seeds):.3f}" for d in sets]
            gc = mean_sd([geo([runs[head][d][s]["crps_ratio"] for d in sets]) for s in seeds])
            gm = mean_sd([geo([runs[head][d][s]["mase_ratio"] for d in sets]) for s in seeds])
            cov = st.mean(runs[head][d][s]["coverage80"] for d in sets for s in seeds)
            label = f"{head}{' ' + tag if tag else ''} ({len(seeds)} seeds)"
            print(f"| {label} | " + " | ".join(cells) +
                  f" | {gc[0]:.3f} ± {gc[1]:.3f} / {gm[0]:.3f} ± {gm[1]:.3f} | {cov:.2f} |")
    for model in sorted(base):
        if not all(d in base[model] for d in sets):
            continue
        cells = [f"{base[model][d]['crps_ratio']:.3f}" for d in sets]
        gc = geo([base[model][d]["crps_ratio"] for d in sets])
        gm = geo([base[model][d]["mase_ratio"] for d in sets])
        cov = st.mean(base[model][d]["coverage80"] for d in sets)
        print(f"| {model} (statsmodels) | " + " | ".join(cells) + f" | {gc:.3f} / {gm:.3f} | {cov:.2f} |")


def synthetic_variants(variants, base):
    runs = {}
    for f in glob.glob(f"{base}/*/bide_s*.json") + glob.glob(f"{variants}/*/bide_*_s*.json"):
        fam = f.split("/")[-2]
        tag = os.path.basename(f).rsplit("_s", 1)[0]
        runs.setdefault(fam, {}).setdefault(tag, []).append(json.load(open(f)))
    tags = ["bide"] + sorted({t for fam in runs.values() for t in fam if t != "bide"})
    print("| family | " + " | ".join(tags) + " |")
    print("| --- |" + " --- |" * len(tags))
    for fam in sorted(runs):
        cells = []
        for t in tags:
            js = runs[fam].get(t, [])
            if not js:
                cells.append("-")
                continue
            m, s = mean_sd([j["crps"] / j["truth_crps"] for j in js])
            cells.append(f"{m:.4f} ± {s:.4f} ({len(js)} seeds)")
        print(f"| {fam} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if sys.argv[1] == "--variants":
        synthetic_variants(sys.argv[2], sys.argv[3])
        sys.exit(0)
    root = sys.argv[1]
    synthetic(root)
    print()
    real(root)

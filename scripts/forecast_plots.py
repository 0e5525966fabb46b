#!/usr/bin/env python3
"""forecast_plots.py PLOTS_DIR DATA_DIR OUT_DIR: the figures of docs/forecasting.md, from what
`scripts/forecast_gpu.sh plots` wrote (PLOTS_DIR: its plots.tgz unpacked) and the data it used
(DATA_DIR: scripts/forecast_synthetic.py ... --series 256 --length 400 --seed 1 and
scripts/forecast_data.py, for the true laws and the held-out values). Writes
  OUT_DIR/forecast_onestep.svg  the BIDE's one-step law at a series' last point against the true
                                law: CDF (199 exact quantiles) and density, three families;
  OUT_DIR/forecast_fans.svg     the pooled real-series model's 50% and 90% bands and median over
                                each test window, with the values that came.
Needs matplotlib and scipy (Debian: python3-matplotlib, python3-scipy)."""
import csv
import math
import sys

import matplotlib

matplotlib.use("svg")
matplotlib.rcParams["svg.hashsalt"] = "bitgrad"  # the same file for the same inputs
import matplotlib.pyplot as plt  # noqa: E402
from scipy import stats  # noqa: E402

FAMILIES = ("bimodal", "intermittent", "floor")
FANS = (("co2", 12), ("elec_equip", 12), ("elnino", 12), ("sunspots", 8))


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def component(kind, loc, scale, df):
    if kind == "normal":
        return stats.norm(loc, scale)
    if kind == "student_t":
        return stats.t(df, loc, scale)
    if kind == "lognormal":
        return stats.lognorm(scale, scale=math.exp(loc))
    if kind == "normal_pos":  # N(loc, scale) above 0, renormalised (its weight is P(N > 0))
        return stats.truncnorm(-loc / scale, math.inf, loc, scale)
    raise ValueError(kind)


def truth_law(row):
    """(zero_mass, [(weight, frozen law)]) of a truth file's row."""
    parts = []
    for k in ("1", "2"):
        w = float(row["w" + k])
        if w > 0:
            parts.append((w, component(row["kind" + k], float(row["loc" + k]),
                                       float(row["scale" + k]), float(row["df" + k]))))
    return float(row["zero_mass"]), parts


def onestep(plots, data, out):
    fig, axes = plt.subplots(2, 3, figsize=(13, 6.5))
    for col, fam in enumerate(FAMILIES):
        model = rows(f"{plots}/{fam}_onestep.csv")[0]
        levels = sorted(float(k[1:]) for k in model if k.startswith("q"))
        xs = [float(model[f"q{q:g}"]) for q in levels]
        truth = {(r["unique_id"], r["ds"]): r for r in rows(f"{data}/synthetic_{fam}_truth.csv")}
        zero, parts = truth_law(truth[(model["unique_id"], model["ds"])])
        lo, hi = xs[0] - 0.5 * (xs[-1] - xs[0]) * 0.2, xs[-1] + 0.5 * (xs[-1] - xs[0]) * 0.2
        grid = [lo + (hi - lo) * i / 800 for i in range(801)]
        cdf = [zero * (x >= 0) + sum(w * d.cdf(x) for w, d in parts) for x in grid]
        pdf = [sum(w * d.pdf(x) for w, d in parts) for x in grid]
        ax = axes[0][col]
        ax.plot(grid, cdf, color="black", lw=1.2, label="true law")
        ax.step(xs, levels, where="post", color="tab:red", lw=1.2, label="BIDE (199 quantiles)")
        ax.set_title(f"{fam}: {model['unique_id']}, one step ahead")
        ax.set_ylabel("CDF")
        ax.legend(loc="upper left", fontsize=8)
        ax = axes[1][col]
        ax.plot(grid, pdf, color="black", lw=1.2, label="true density (continuous part)")
        # The model's density between distinct quantiles; levels sharing one value are an atom.
        dens_x, dens_y, atoms = [], [], {}
        for i in range(1, len(xs)):
            if xs[i] == xs[i - 1]:
                atoms[xs[i]] = atoms.get(xs[i], 0.005) + 0.005
                continue
            dens_x += [xs[i - 1], xs[i]]
            dens_y += [0.005 / (xs[i] - xs[i - 1])] * 2
        ax.plot(dens_x, dens_y, color="tab:red", lw=1.0, label="BIDE (between quantiles)")
        for x, m in atoms.items():
            if m >= 0.02:
                ax.annotate(f"BIDE P(y = {x:g}) ~ {m:.2f}\ntrue P(y = 0) = {zero:.2f}",
                            xy=(x, 0), xytext=(0.45, 0.75), textcoords="axes fraction",
                            fontsize=8, arrowprops={"arrowstyle": "->", "lw": 0.8})
        ax.set_xlabel("y")
        ax.set_ylabel("density")
        ax.set_ylim(0, 1.3 * max(max(pdf), 1e-9))
        ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(f"{out}/forecast_onestep.svg", metadata={"Date": None})


def fans(plots, data, out):
    fig, axes = plt.subplots(2, 2, figsize=(13, 7))
    for ax, (name, h) in zip([a for r in axes for a in r], FANS):
        series = rows(f"{data}/{name}.csv")
        ys = [float(r["y"]) for r in series]
        fan = rows(f"{plots}/{name}_fan.csv")
        n = len(ys)
        hist = range(max(0, n - h - 60), n - h)
        steps = range(n - h, n)
        q = {k: [float(r[k]) for r in fan] for k in ("q0.05", "q0.25", "q0.5", "q0.75", "q0.95")}
        ax.plot(list(hist), [ys[i] for i in hist], color="black", lw=1.0, label="history")
        ax.plot(list(steps), ys[n - h:], "o", color="black", ms=3, label="held-out values")
        ax.fill_between(list(steps), q["q0.05"], q["q0.95"], color="tab:red", alpha=0.15,
                        label="90% band")
        ax.fill_between(list(steps), q["q0.25"], q["q0.75"], color="tab:red", alpha=0.3,
                        label="50% band")
        ax.plot(list(steps), q["q0.5"], color="tab:red", lw=1.2, label="median")
        ax.set_title(f"{name}: last {h} points from the context before them")
        ax.set_xlabel(f"point (of {n})")
        ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(f"{out}/forecast_fans.svg", metadata={"Date": None})


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    plots, data, out = sys.argv[1:]
    onestep(plots, data, out)
    fans(plots, data, out)


if __name__ == "__main__":
    main()

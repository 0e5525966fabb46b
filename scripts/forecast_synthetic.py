#!/usr/bin/env python3
"""forecast_synthetic.py [OUT_DIR] [--series N] [--length T] [--seed S]: synthetic series whose
one-step predictive distribution is known exactly, one long-format file per family
(OUT_DIR/synthetic_<family>.csv: unique_id,ds,y) and beside it the truth at every point from the
second on (OUT_DIR/synthetic_<family>_truth.csv), so that a forecaster's CRPS and NLL can be set
against the true process's, the floor no model can beat. Standard library only; the same files
for the same seed. Default: datasets/forecast, 16 series of 600 points, seed 2026.

Families (e_t independent; every series draws its own parameters within the ranges shown):
  gaussian_ar1    y_t = c + phi y_{t-1} + sigma e_t, e_t ~ N(0, 1): the Gaussian head is exact.
  student_t_ar1   the same with e_t ~ Student-t(3): heavy tails.
  bimodal         y_t = phi y_{t-1} + s_t delta + sigma e_t, s_t = +-1 with probability 1/2: a
                  two-humped predictive (two regimes drawn afresh each step).
  lognormal_seasonal  y_t = level * season(t) * exp(sigma e_t - sigma^2 / 2), season(t) = 1 + a
                  sin(2 pi t / 12): multiplicative noise, monthly seasonality.
  intermittent    y_t = 0 with probability p (0.6 to 0.8), else exp(mu + sigma e_t): demand that
                  is mostly exact zeros.
  floor           y_t = max(0, c + phi y_{t-1} + sigma e_t): a floor at zero holding mass there.

The truth file: unique_id,ds,zero_mass,w1,kind1,loc1,scale1,df1,w2,kind2,loc2,scale2,df2. The
predictive law of y at (unique_id, ds) is zero_mass at exactly 0 plus up to two components of
weights w1 and w2 (zero_mass + w1 + w2 = 1; w2 = 0 for one component). A component's kind:
  normal      N(loc, scale^2)
  student_t   loc + scale * T(df)
  lognormal   exp(N(loc, scale^2)): positive values
  normal_pos  N(loc, scale^2) conditioned on being above 0, with weight w1 = P(N(loc, scale^2)
              > 0): the continuous part of the law censored at 0 (its mass below 0 is zero_mass)
"""
import math
import os
import random
import sys

FAMILIES = ["gaussian_ar1", "student_t_ar1", "bimodal", "lognormal_seasonal", "intermittent",
            "floor"]


def student_t(rng, df):
    return rng.gauss(0, 1) / math.sqrt(rng.gammavariate(df / 2, 2) / df)


def norm_cdf(z):
    return 0.5 * math.erfc(-z / math.sqrt(2))


def simulate(family, rng, length):
    """Returns (values, truths); truths[t] for t >= 1 is (zero_mass, comp1, comp2)."""
    ys, truth = [], [None]
    if family in ("gaussian_ar1", "student_t_ar1", "bimodal", "floor"):
        phi = rng.uniform(0.5, 0.95)
        sigma = rng.uniform(0.5, 2.0)
        c = rng.uniform(-1.0, 1.0) if family != "floor" else rng.uniform(0.2, 1.0)
        delta = rng.uniform(2.0, 4.0) * sigma
        y = c / (1 - phi)
        for t in range(length):
            mean = (c if family != "bimodal" else 0.0) + phi * y
            if t > 0:
                if family == "gaussian_ar1":
                    truth.append((0.0, (1.0, "normal", mean, sigma, 0.0), None))
                elif family == "student_t_ar1":
                    truth.append((0.0, (1.0, "student_t", mean, sigma, 3.0), None))
                elif family == "bimodal":
                    truth.append((0.0, (0.5, "normal", mean - delta, sigma, 0.0),
                                  (0.5, "normal", mean + delta, sigma, 0.0)))
                else:
                    above = norm_cdf(mean / sigma)
                    truth.append((1.0 - above, (above, "normal_pos", mean, sigma, 0.0), None))
            if family == "gaussian_ar1" or family == "floor":
                y = mean + sigma * rng.gauss(0, 1)
            elif family == "student_t_ar1":
                y = mean + sigma * student_t(rng, 3.0)
            else:
                y = mean + (delta if rng.random() < 0.5 else -delta) + sigma * rng.gauss(0, 1)
            if family == "floor":
                y = max(0.0, y)
            ys.append(y)
        return ys, truth
    if family == "lognormal_seasonal":
        level = rng.uniform(10.0, 1000.0)
        amp = rng.uniform(0.2, 0.6)
        sigma = rng.uniform(0.05, 0.3)
        for t in range(length):
            loc = math.log(level * (1 + amp * math.sin(2 * math.pi * t / 12))) - sigma * sigma / 2
            if t > 0:
                truth.append((0.0, (1.0, "lognormal", loc, sigma, 0.0), None))
            ys.append(math.exp(loc + sigma * rng.gauss(0, 1)))
        return ys, truth
    # intermittent
    p = rng.uniform(0.6, 0.8)
    mu = rng.uniform(0.0, 2.0)
    sigma = rng.uniform(0.3, 0.8)
    for t in range(length):
        if t > 0:
            truth.append((p, (1.0 - p, "lognormal", mu, sigma, 0.0), None))
        ys.append(0.0 if rng.random() < p else math.exp(mu + sigma * rng.gauss(0, 1)))
    return ys, truth


def main():
    args = sys.argv[1:]
    opts = {"--series": 16, "--length": 600, "--seed": 2026}
    out = "datasets/forecast"
    i = 0
    while i < len(args):
        if args[i] in opts:
            opts[args[i]] = int(args[i + 1])
            i += 2
        else:
            out = args[i]
            i += 1
    os.makedirs(out, exist_ok=True)
    for f_index, family in enumerate(FAMILIES):
        rng = random.Random(opts["--seed"] * 1000 + f_index)
        data = open(os.path.join(out, f"synthetic_{family}.csv"), "w")
        truth = open(os.path.join(out, f"synthetic_{family}_truth.csv"), "w")
        data.write("unique_id,ds,y\n")
        truth.write("unique_id,ds,zero_mass,w1,kind1,loc1,scale1,df1,w2,kind2,loc2,scale2,df2\n")
        for s in range(opts["--series"]):
            sid = f"{family}_{s}"
            ys, tr = simulate(family, rng, opts["--length"])
            for t, y in enumerate(ys):
                data.write(f"{sid},{t},{y!r}\n")
                if tr[t] is None:
                    continue
                zero, c1, c2 = tr[t]
                c2 = c2 or (0.0, "normal", 0.0, 1.0, 0.0)
                truth.write(f"{sid},{t},{zero!r}," + ",".join(
                    f"{c[0]!r},{c[1]},{c[2]!r},{c[3]!r},{c[4]!r}" for c in (c1, c2)) + "\n")
        data.close()
        truth.close()
        print(f"{family}: {opts['--series']} series x {opts['--length']} points -> {out}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""forecast_augment.py IN.csv OUT.csv [--series N] [--seed S]: IN's series followed by N synthetic
structural series (unique_id synth_<i>, monthly dates from 1900-01): the augmentation that
forecasting foundation models train with (Chronos' KernelSynth draws Gaussian-process series; these
are drawn as their parts instead). Standard library only; the same file for the same seed.

Each series draws its parts independently:
  level      exp(U(-1, 6)), or 0 (30%): series around zero and far from it;
  trend      none (40%), linear, a linear trend that bends once, or an integrated random walk;
  season     (60%) a period of 4, 7, 12, 24 or 52 with one to three harmonics, added to the level
             or multiplying it;
  noise      AR(1) with phi ~ U(-0.5, 0.95) and a scale of 1-20% of the level (1-20 when the
             level is 0);
  floor      (20%) values clipped at zero, as counts and demand are.
Lengths are uniform on [120, 400].
"""
import math
import random
import sys


def series(rng, length):
    level = 0.0 if rng.random() < 0.3 else math.exp(rng.uniform(-1, 6))
    unit = level if level > 0 else 1.0
    sigma = unit * rng.uniform(0.01, 0.2) * (1 if level > 0 else 10)
    phi = rng.uniform(-0.5, 0.95)
    kind = rng.choices(["none", "linear", "bend", "walk"], [0.4, 0.25, 0.15, 0.2])[0]
    slope = rng.gauss(0, 1) * unit * 0.004
    bend_at, slope2 = rng.randrange(length), rng.gauss(0, 1) * unit * 0.004
    walk_sd = unit * rng.uniform(0.002, 0.02)
    period = rng.choice([4, 7, 12, 24, 52]) if rng.random() < 0.6 else 0
    harmonics = [(rng.uniform(0, 0.3) / (k + 1), rng.uniform(0, 2 * math.pi))
                 for k in range(rng.randint(1, 3))] if period else []
    multiplicative = level > 0 and rng.random() < 0.5
    floor = rng.random() < 0.2
    out, noise, trend, walk = [], 0.0, 0.0, 0.0
    for t in range(length):
        if kind == "linear":
            trend = slope * t
        elif kind == "bend":
            trend = slope * t if t < bend_at else slope * bend_at + slope2 * (t - bend_at)
        elif kind == "walk":
            walk += rng.gauss(0, walk_sd)
            trend = walk
        season = sum(a * math.sin(2 * math.pi * (k + 1) * t / period + ph)
                     for k, (a, ph) in enumerate(harmonics)) if period else 0.0
        noise = phi * noise + sigma * math.sqrt(1 - phi * phi) * rng.gauss(0, 1)
        base = level + trend
        y = base * (1 + season) if multiplicative else base + unit * season
        y += noise
        out.append(max(0.0, y) if floor else y)
    return out


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    src, dst = args[0], args[1]
    n, seed = 1000, 7
    for i, a in enumerate(args):
        if a == "--series":
            n = int(args[i + 1])
        if a == "--seed":
            seed = int(args[i + 1])
    rng = random.Random(seed)
    with open(src) as f, open(dst, "w") as out:
        out.write(f.read())
        for i in range(n):
            for t, y in enumerate(series(rng, rng.randint(120, 400))):
                out.write(f"synth_{i},{1900 + t // 12:04d}-{t % 12 + 1:02d}-01,{y:.6g}\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""forecast_baselines.py DATA.csv OUT_PREFIX [--horizon H] [--season M] [--samples N] [--seed S]:
the statistical baselines a forecaster is measured against, fitted by statsmodels (Debian's
python3-statsmodels) outside bitgrad's loop, on exactly the windows `bitgrad eval` scores: each
series' last H points are the test window, everything before it the context. Writes sample paths
of the test window, OUT_PREFIX_ets.csv and OUT_PREFIX_arima.csv (unique_id,ds,path,y: the format
`bitgrad forecast --paths` writes), which `bitgrad eval PATHS.csv --data DATA.csv` scores with the
same code as a forecaster's own forecasts.

ETS: statsmodels' ETSModel, additive errors, the trend (none, additive, damped) and seasonality
(none, additive with period M when two seasons fit) with the lowest AICc; paths by simulating the
fitted state space model from the end of the context. ARIMA: order (p, d, q) with p <= 3, d <= 1,
q <= 2 (and seasonal (P, D, Q) <= (1, 1, 1) with period M when three seasons fit) by AICc, fitted
by statsmodels' ARIMA; paths simulated the same way. A model that fails to fit, or whose paths
stray more than 50 times the context's range from its last value, falls back to the next best by
AICc; a series where none fits takes seasonal naive with its residuals' Gaussian
noise (said on stderr).
"""
import argparse
import csv
import itertools
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")
from statsmodels.tsa.arima.model import ARIMA  # noqa: E402
from statsmodels.tsa.exponential_smoothing.ets import ETSModel  # noqa: E402


def read_series(path):
    series = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            s = series.setdefault(row["unique_id"], ([], []))
            s[0].append(row["ds"])
            s[1].append(float(row["y"]))
    return series


def aicc(res, n):
    k = len(res.params)
    return res.aic + (2 * k * (k + 1) / (n - k - 1) if n - k - 1 > 0 else np.inf)


def ets_candidates(y, season):
    for trend, damped in ((None, False), ("add", False), ("add", True)):
        for seasonal in (None, "add") if season > 1 and len(y) >= 2 * season + 2 else (None,):
            yield dict(error="add", trend=trend, damped_trend=damped, seasonal=seasonal,
                       seasonal_periods=season if seasonal else None)


def arima_candidates(y, season):
    seasonal = [(0, 0, 0)]
    if season > 1 and len(y) >= 3 * season + 2:
        seasonal = list(itertools.product((0, 1), (0, 1), (0, 1)))
    for p, d, q in itertools.product(range(4), range(2), range(3)):
        for P, D, Q in seasonal:
            yield (p, d, q), (P, D, Q, season if (P, D, Q) != (0, 0, 0) else 0)


def fitted(kind, y, season):
    """The candidates that fit, best AICc first: (aicc, result)."""
    out = []
    if kind == "ets":
        for spec in ets_candidates(y, season):
            try:
                res = ETSModel(y, **spec).fit(disp=False, maxiter=2000)
                out.append((aicc(res, len(y)), res))
            except Exception:
                pass
    else:
        for order, sorder in arima_candidates(y, season):
            trend = "c" if order[1] + sorder[1] == 0 else "n"
            try:
                res = ARIMA(y, order=order, seasonal_order=sorder, trend=trend).fit()
                out.append((aicc(res, len(y)), res))
            except Exception:
                pass
    out.sort(key=lambda t: t[0])
    return out


def paths_of(kind, y, season, h, samples, rng):
    for score, res in fitted(kind, y, season):
        if not np.isfinite(score):
            continue
        try:
            sims = res.simulate(nsimulations=h, repetitions=samples, anchor="end",
                                random_state=rng)
            sims = np.asarray(sims).reshape(h, -1)
            # A fit whose simulation explodes (an integrated model near its stability edge: paths
            # 10^13 away) is no forecast: the next best by AICc instead.
            if np.all(np.isfinite(sims)) and np.max(np.abs(sims - y[-1])) < 50 * (np.ptp(y) + 1e-9):
                return sims.T  # (samples, h)
        except Exception:
            pass
    # Seasonal naive with Gaussian noise of its in-sample errors.
    m = season if len(y) > season else 1
    base = np.array([y[len(y) - m + (t % m)] for t in range(h)])
    resid = y[m:] - y[:-m] if len(y) > m else np.ones(1)
    print(f"{kind}: no model fits; seasonal naive with noise", file=sys.stderr)
    return base + rng.normal(0, np.std(resid) or 1.0, size=(samples, h))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("out_prefix")
    ap.add_argument("--horizon", type=int, default=1)
    ap.add_argument("--season", type=int, default=1)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    series = read_series(args.data)
    rng = np.random.RandomState(args.seed)  # what both models' simulate() accept
    for kind in ("ets", "arima"):
        path = f"{args.out_prefix}_{kind}.csv"
        with open(path, "w", newline="") as f:
            f.write("unique_id,ds,path,y\n")
            for sid, (ds, y) in series.items():
                y = np.asarray(y)
                ctx, test_ds = y[: -args.horizon], ds[-args.horizon:]
                sims = paths_of(kind, ctx, args.season, args.horizon, args.samples, rng)
                for t in range(args.horizon):
                    for j in range(args.samples):
                        f.write(f"{sid},{test_ds[t]},{j},{sims[j, t]:.9g}\n")
        print(f"{kind}: {len(series)} series -> {path}")


if __name__ == "__main__":
    main()

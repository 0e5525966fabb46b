#!/usr/bin/env python3
"""forecast_rolling.py DATA_DIR [--windows W]: the rolling-origin protocol's files from the series
files scripts/forecast_data.py writes, so that a model and the statistical baselines are scored on
the same several windows per series, none of which the model trained on.

For each dataset of DATASETS (name, horizon H by its frequency: yearly 6, quarterly 8, monthly 18;
its season M), each series of n points gives W test windows, the last W x H points in steps of H:
  DATA_DIR/rolling/<name>.csv   W copies of each series, copy w (id "<id>@<w>") cut after point
                                n - (W - 1 - w) H, so `bitgrad eval --horizon H` (and
                                scripts/forecast_baselines.py --horizon H) scores window w, its
                                context every point before it (the origin rolls forward);
  DATA_DIR/rolling/train.csv    every series cut before its first window (n - W H points): what a
                                model trains on (its own validation split inside), so no scored
                                point is ever a training target.
Standard library only; the same files every time. Default W: 3."""
import argparse
import csv
import os
from collections import OrderedDict

# name, horizon (by frequency), season
DATASETS = [("co2", 18, 12), ("elec_equip", 18, 12), ("elnino", 18, 12), ("macro", 8, 4),
            ("nile", 6, 1), ("sunspots", 6, 1)]


def read(path):
    series = OrderedDict()
    with open(path, newline="") as f:
        r = csv.reader(f)
        header = next(r)
        i_id, i_ds, i_y = header.index("unique_id"), header.index("ds"), header.index("y")
        for row in r:
            series.setdefault(row[i_id], []).append((row[i_ds], row[i_y]))
    return series


def write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["unique_id", "ds", "y"])
        w.writerows(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("--windows", type=int, default=3)
    a = ap.parse_args()
    out = os.path.join(a.data_dir, "rolling")
    os.makedirs(out, exist_ok=True)
    train = []
    for name, h, season in DATASETS:
        rows = []
        for sid, points in read(os.path.join(a.data_dir, name + ".csv")).items():
            n = len(points)
            first = n - a.windows * h
            if first <= 2 * season + h:
                raise SystemExit(f"forecast_rolling.py: series {sid} ({n} points) is too short "
                                 f"for {a.windows} windows of {h}")
            train += [(sid, ds, y) for ds, y in points[:first]]
            for w in range(a.windows):
                end = n - (a.windows - 1 - w) * h
                rows += [(f"{sid}@{w}", ds, y) for ds, y in points[:end]]
        write(os.path.join(out, name + ".csv"), rows)
        print(f"{name}: horizon {h}, season {season}, {a.windows} windows a series")
    write(os.path.join(out, "train.csv"), train)
    print(f"train: {len(train)} points -> {out}")


if __name__ == "__main__":
    main()

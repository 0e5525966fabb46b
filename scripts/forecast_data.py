#!/usr/bin/env python3
"""forecast_data.py [OUT_DIR]: the real series Debian's python3-statsmodels ships (CSV files under
its datasets/ folder), written as bitgrad's long-format series files (unique_id,ds,y), one file per
dataset, all.csv with every series (the pooled model's data) and all_but_<name>.csv without one
(zero-shot). Standard library only; the same files every time. Default OUT_DIR: datasets/forecast.

  sunspots    yearly sunspot activity, 1700-2008 (ds: YYYY-01-01, so that one file holds every series)
  nile        the Nile's yearly volume at Aswan, 1871-1970 (ds: YYYY-01-01)
  elnino      monthly sea-surface temperature, 1950-2010, from the wide table (ds: YYYY-MM-01)
  elec_equip  monthly euro-area electrical equipment orders index, 1995-2016
  co2         Mauna Loa CO2, weekly 1958-2001 as monthly means; a month without a reading
              (5 of 526) is interpolated linearly between its neighbours
  macro_*     US quarterly macro data 1959-2009 (macrodata): realgdp, realcons, realinv, cpi,
              unemp, infl (ds: the quarter's first month)
"""
import csv
import os
import sys

SRC = "/usr/lib/python3/dist-packages/statsmodels/datasets"
MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
ABBR = {m.capitalize(): i + 1 for i, m in enumerate(MONTHS)}


def rows(name):
    path = os.path.join(SRC, name, name + ".csv")
    if not os.path.exists(path):
        sys.exit(f"forecast_data.py: {path} is missing (apt-get install python3-statsmodels)")
    with open(path, newline="") as f:
        return list(csv.reader(f))


def yearly(name, column):
    r = rows(name)
    col = r[0].index(column)
    return {name: [(f"{int(float(x[0]))}-01-01", float(x[col])) for x in r[1:]]}


def elnino():
    r = rows("elnino")
    out = []
    for x in r[1:]:
        for m, v in enumerate(x[1:13]):
            out.append((f"{int(float(x[0]))}-{m + 1:02d}-01", float(v)))
    return {"elnino": out}


def elec_equip():
    out = []
    for x in rows("elec_equip")[1:]:
        mon, _, year = x[0].split("-")
        out.append((f"{year}-{ABBR[mon]:02d}-01", float(x[1])))
    return {"elec_equip": out}


def co2():
    sums = {}
    for x in rows("co2")[1:]:
        if x[1] == "":
            continue
        key = (int(x[0][:4]), int(x[0][4:6]))
        s = sums.setdefault(key, [0.0, 0])
        s[0] += float(x[1])
        s[1] += 1
    first, last = min(sums), max(sums)
    months = []
    y, m = first
    while (y, m) <= last:
        months.append((y, m))
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    values = [sums[k][0] / sums[k][1] if k in sums else None for k in months]
    for i, v in enumerate(values):  # interpolate the months without a reading
        if v is None:
            lo = max(j for j in range(i) if values[j] is not None)
            hi = min(j for j in range(i + 1, len(values)) if values[j] is not None)
            values[i] = values[lo] + (values[hi] - values[lo]) * (i - lo) / (hi - lo)
    return {"co2": [(f"{y}-{m:02d}-01", v) for (y, m), v in zip(months, values)]}


def macro():
    r = rows("macrodata")
    head = r[0]
    out = {}
    for column in ["realgdp", "realcons", "realinv", "cpi", "unemp", "infl"]:
        col = head.index(column)
        out["macro_" + column] = [
            (f"{int(float(x[0]))}-{3 * int(float(x[1])) - 2:02d}-01", float(x[col])) for x in r[1:]]
    return out


def write(path, series):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["unique_id", "ds", "y"])
        for sid, points in series.items():
            for ds, y in points:
                w.writerow([sid, ds, repr(y)])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "datasets/forecast"
    os.makedirs(out, exist_ok=True)
    datasets = {
        "sunspots": yearly("sunspots", "SUNACTIVITY"),
        "nile": yearly("nile", "volume"),
        "elnino": elnino(),
        "elec_equip": elec_equip(),
        "co2": co2(),
        "macro": macro(),
    }
    pooled = {}
    for name, series in datasets.items():
        write(os.path.join(out, name + ".csv"), series)
        pooled.update(series)
        print(f"{name}: {len(series)} series, {sum(len(p) for p in series.values())} points")
    write(os.path.join(out, "all.csv"), pooled)
    # Zero-shot: the pool without one dataset, for a model scored on the series it never saw.
    for name, series in datasets.items():
        write(os.path.join(out, f"all_but_{name}.csv"),
              {sid: p for sid, p in pooled.items() if sid not in series})
    print(f"all: {len(pooled)} series (and all_but_<name>.csv for each) -> {out}")


if __name__ == "__main__":
    main()

"""Benchmark the monitor's alarm rule (issue 29): false alarms, detection, delay, and time.

Streams: ``--rows`` rows (default 10^6) spread uniformly over 52 weekly periods and 50 disjoint
segments of 2% of the rows each; scores ~ Beta(2, 5) (mean 0.29); responses ~ Bernoulli(score)
(calibrated, "null") or Bernoulli(score + 0.05) in segment 7 from period 30 on ("shift").
The reference is the first quarter of the time range (periods 0-12 or 0-13, as
``monitor_calibration`` chooses it). ``--null-draws`` calibrated streams (default 1,000) and
``--draws`` shifted ones (default 200).

Rules compared, on the same streams, over the 50 segments and the full population:

* ``mcviz``: the windowed-Kuiper scan of :mod:`mcviz.monitor.alarm` at alpha = 0.05. The
  design (scores, segments, periods) is the same in every stream, so its threshold is computed
  by the library's ``null_maxima`` (999 normal cell draws) once per seed, for 10 seeds; stream
  ``i`` uses seed ``i mod 10`` (the Monte-Carlo variability of the threshold is in the table).
  ``--check`` runs ``monitor_calibration`` end to end on the first streams and checks it raises
  the same alarms.
* ``3 sigma``: per segment, a period alarms when its gap (mean response - mean score) lies
  outside the reference periods' mean gap +- 3 standard deviations of the reference periods'
  gaps (NannyML's chunk rule).
* ``kuiper``: per segment and period, the Kuiper statistic of the period's rows in score order
  (eqs. (2), (5) of paper 000) with p = P(Brownian range > D/sigma) < 0.05, unadjusted.

Columns: FWER (share of null streams with any alarm, with its exact 95% Clopper-Pearson
interval), false alarms per horizon (mean count of alarming segment-periods in null streams),
detection (share of shift streams where segment 7 alarms at or after period 30), median delay
(first alarm - 30 among detections), other alarms (shift streams with an alarm elsewhere).

Run:  nice -n 10 prlimit --as=4000000000 -- python benchmarks/bench_monitor.py [--rows N]
      [--null-draws 1000] [--draws 200] [--check 2] [--rules mcviz,3 sigma,kuiper] [--seed S]

Measured (2-core machine shared by 7 developers; 10^6 rows, 13 reference weeks):

    rule     FWER   95% CI        false/horizon  detected  median delay  other alarms
    mcviz    0.049  0.036-0.064   0.10           0.990     5.0           0.070
    3 sigma  1.000  0.996-1.000   27.13          0.715     2.0           1.000
    kuiper   1.000  0.996-1.000   86.66          0.485     1.0           1.000

(default run, 1,000 null and 200 shift streams; threshold mean 4.513, sd 0.025 over 10
seeds). More streams for the mcviz rule: ``--rules mcviz --null-draws 4000 --draws 0 --seed
777``: FWER 0.052 [0.046, 0.060] (14 reference weeks; 0.055 [0.048, 0.063] before the
Cornish-Fisher correction of the null draws); ``--rules mcviz --null-draws 200 --draws 1000
--seed 4242``: detected 0.992, median delay 4.0 (53% of detections within 4 periods; delays
0, 1, 2, ...: 8, 66, 120, 175, 160, 128, 70, ...). ``monitor_calibration`` end to end on
10^6 rows x 52 weeks x 50 segments, 999 null draws: 1.3-2.2 s (``--check``; 4.3-5 s at load
average 20).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from mcviz import Predictions
from mcviz.core import brownian_range_sf
from mcviz.monitor import MonitorSettings, make_periods, monitor_calibration
from mcviz.monitor.alarm import CellSums, null_maxima, scan, threshold, window_plan

PERIODS, SEGMENTS, SHIFT, SHIFT_SEGMENT, SHIFT_START = 52, 50, 0.05, 7, 30
ALPHA = 0.05


class Design:
    """The fixed part of every stream: scores, segments, periods, sort orders."""

    def __init__(self, rows: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.n = rows
        self.score = rng.beta(2.0, 5.0, rows)
        self.segment = rng.integers(0, SEGMENTS, rows)
        second = rng.integers(0, 7 * 86_400, rows)
        self.period_true = rng.integers(0, PERIODS, rows)
        self.when = (pd.Timestamp("2026-01-05")
                     + pd.to_timedelta(self.period_true * 7 * 86_400 + second, unit="s"))
        periods = make_periods(pd.Series(self.when), column="when", period="week")
        self.periods = periods
        self.period = periods.code.astype(np.int64)
        self.r = periods.n_reference
        p = periods.n_periods
        self.code = (self.segment + 1) * p + self.period
        self.cells = SEGMENTS + 1
        size = self.cells * p
        self.cell_n = np.bincount(self.code, minlength=size).reshape(self.cells, p).astype(float)
        self.cell_v = np.bincount(self.code, weights=self.score * (1 - self.score),
                                  minlength=size).reshape(self.cells, p)
        self.cell_k3 = np.bincount(self.code, weights=self.score * (1 - self.score) * (
            1 - 2 * self.score), minlength=size).reshape(self.cells, p)
        self.incidence = np.vstack([np.ones(self.cells), np.eye(self.cells)[1:]])
        self.n_series = self.incidence @ self.cell_n
        self.v_series = self.incidence @ self.cell_v
        self.plan = window_plan(p - self.r)
        # score order within (segment, period) cells and within periods (full population)
        self.by_cell = np.lexsort((self.score, self.period, self.segment))
        self.by_period = np.lexsort((self.score, self.period))

    def responses(self, rng: np.random.Generator, shift: bool) -> np.ndarray:
        p = self.score.copy()
        if shift:
            planted = (self.segment == SHIFT_SEGMENT) & (self.period >= SHIFT_START)
            p[planted] = np.minimum(p[planted] + SHIFT, 1.0)
        return (rng.random(self.n) < p).astype(float)

    def series_x(self, label: np.ndarray) -> np.ndarray:
        size = self.cells * self.periods.n_periods
        cell_x = np.bincount(self.code, weights=label - self.score, minlength=size)
        return self.incidence @ cell_x.reshape(self.cells, -1)

    def thresholds(self, seeds: int, draws: int, method: str = "normal") -> np.ndarray:
        cells = CellSums(self.cell_n, np.zeros_like(self.cell_n), self.cell_v, self.incidence,
                         self.segment + 1, self.period, self.score, np.ones(self.n), self.cell_k3)
        return np.array([threshold(null_maxima(cells, self.r, self.plan, n_draws=draws,
                                               method=method,
                                               rng=np.random.default_rng(1000 + s)).maxima,
                                   ALPHA) for s in range(seeds)])


def mcviz_alarms(design: Design, label: np.ndarray, c: float) -> np.ndarray:
    """Alarming (series, monitored period) cells of the scan: T_k(b) > c."""
    x = design.series_x(label)
    return scan(x, design.n_series, design.v_series, design.r, design.plan) > c


def sigma3_alarms(design: Design, label: np.ndarray) -> np.ndarray:
    x = design.series_x(label)
    gap = x / np.where(design.n_series > 0, design.n_series, 1.0)
    ref = gap[:, :design.r]
    mean, sd = ref.mean(axis=1, keepdims=True), ref.std(axis=1, ddof=1, keepdims=True)
    return np.abs(gap[:, design.r:] - mean) > 3 * sd


def kuiper_alarms(design: Design, label: np.ndarray) -> np.ndarray:
    p = design.periods.n_periods
    out = np.zeros((SEGMENTS + 1, p), dtype=bool)
    variance = design.score * (1 - design.score)
    for row, order, key in ((slice(1, None), design.by_cell,
                             design.segment * p + design.period),
                            (slice(0, 1), design.by_period, design.period)):
        keys = key[order]
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        path = np.cumsum((label - design.score)[order])
        base = np.r_[0.0, path][starts]  # the path just before each cell
        high = np.maximum(np.maximum.reduceat(path, starts) - base, 0.0)
        low = np.minimum(np.minimum.reduceat(path, starts) - base, 0.0)
        sigma = np.sqrt(np.add.reduceat(variance[order], starts))  # eq. (5), unnormalised
        z = (high - low) / sigma  # eq. (2) over eq. (5): D / sigma
        flags = brownian_range_sf(z) < ALPHA
        cell = keys[starts]
        out[row].flat[cell] = flags
    return out[:, design.r:]


def summarise(name: str, null: list[np.ndarray], shifted: list[np.ndarray], r: int) -> dict:
    any_alarm = np.array([a.any() for a in null])
    fwer = any_alarm.mean()
    ci = binomtest(int(any_alarm.sum()), any_alarm.size).proportion_ci(method="exact")
    detected, delays, elsewhere = [], [], []
    target = SHIFT_SEGMENT + 1
    for a in shifted:
        fired = np.flatnonzero(a[target])
        first = r + fired[0] if fired.size else None
        hit = first is not None and first >= SHIFT_START
        detected.append(hit)
        if hit:
            delays.append(first - SHIFT_START)
        others = np.delete(a, target, axis=0)
        elsewhere.append(others.any())
    return {"rule": name, "fwer": fwer, "fwer_ci": (ci.low, ci.high),
            "false_alarms_per_horizon": float(np.mean([a.sum() for a in null])),
            "detection": float(np.mean(detected)),
            "median_delay": float(np.median(delays)) if delays else float("nan"),
            "delays": np.bincount(np.asarray(delays, dtype=int)) if delays else np.zeros(1),
            "other_alarms": float(np.mean(elsewhere))}


def check_end_to_end(design: Design, labels: list[np.ndarray], fast: list[np.ndarray]) -> None:
    segment = pd.Categorical.from_codes(design.segment, [f"s{k:02d}" for k in range(SEGMENTS)])
    for label, alarms in zip(labels, fast, strict=True):
        pred = Predictions.from_arrays(design.score, label, covariates={
            "when": design.when, "segment": segment})
        started = time.perf_counter()
        result = monitor_calibration(pred,
                                     settings=MonitorSettings(time="when", period="week",
                                                              segments=["segment"], seed=0))
        seconds = time.perf_counter() - started
        library = [s.alarm for s in result.series]
        print(f"  end to end: {seconds:.2f} s; alarms {sum(library)} (library, seed 0) vs "
              f"{int(alarms.any(axis=1).sum())} (benchmark, its own threshold seed); "
              f"threshold {result.threshold:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--draws", type=int, default=200, help="shift streams")
    parser.add_argument("--null-draws", type=int, default=1000, help="null streams")
    parser.add_argument("--exact", action="store_true",
                        help="also one threshold from row-level Bernoulli redraws (slow)")
    parser.add_argument("--check", type=int, default=2)
    parser.add_argument("--rules", default="mcviz,3 sigma,kuiper",
                        help="comma-separated rules to run (default: all three)")
    parser.add_argument("--seed", type=int, default=12345, help="seed of the streams")
    args = parser.parse_args()
    started = time.perf_counter()
    design = Design(args.rows)
    cs = design.thresholds(10, 999)
    print(f"{args.rows:,} rows, {design.periods.n_periods} weeks ({design.r} reference), "
          f"{SEGMENTS} segments + full population, {args.null_draws} null and {args.draws} "
          f"shift streams")
    print(f"threshold c_0.05 over 10 null simulations of 999 draws: mean {cs.mean():.3f}, "
          f"sd {cs.std(ddof=1):.3f}, range {cs.min():.3f}-{cs.max():.3f}")
    if args.exact:
        exact = design.thresholds(1, 999, method="bernoulli")[0]
        print(f"threshold from 999 row-level Bernoulli redraws (seed 1000): {exact:.3f}")
    rng = np.random.default_rng(args.seed)
    rules = {"mcviz": lambda label, i: mcviz_alarms(design, label, cs[i % cs.size]),
             "3 sigma": lambda label, i: sigma3_alarms(design, label),
             "kuiper": lambda label, i: kuiper_alarms(design, label)}
    rules = {name: rules[name] for name in args.rules.split(",")}
    results = {name: ([], []) for name in rules}
    kept = []
    for scenario in (0, 1):
        for i in range(args.draws if scenario else args.null_draws):
            label = design.responses(rng, shift=bool(scenario))
            if scenario == 0 and i < args.check:
                kept.append((label, mcviz_alarms(design, label, cs[0])))
            for name, rule in rules.items():
                results[name][scenario].append(rule(label, i))
    print(f"\n{'rule':<8} {'FWER':>6} {'95% CI':>15} {'false/horizon':>14} {'detected':>9} "
          f"{'median delay':>13} {'other alarms':>13}")
    for name, (null, shifted) in results.items():
        s = summarise(name, null, shifted or null[:1], design.r)
        print(f"{name:<8} {s['fwer']:>6.3f} {s['fwer_ci'][0]:>7.3f}-{s['fwer_ci'][1]:<7.3f} "
              f"{s['false_alarms_per_horizon']:>14.2f} {s['detection']:>9.3f} "
              f"{s['median_delay']:>13.1f} {s['other_alarms']:>13.3f}")
        print(f"{'':<8} delays 0, 1, 2, ...: {s['delays'].tolist()}")
    if kept:
        print("\nmonitor_calibration end to end on the first null streams:")
        check_end_to_end(design, [k[0] for k in kept], [k[1] for k in kept])
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

"""The stated bound of the curves along a numeric variable drawn from an engine's fine bins
(``mcviz.stats.variable_bound``): DuckDB's GROUP BY in equal-width bins with each bin's range,
then ``variable_calibration_from_sums``, against the curves of the original rows in memory at
the same grid points and span (``spiked_fits``, the fits ``variable_calibration`` draws) and
``variable_calibration`` itself (VECE, D/sigma along V).

Measured here (20,000 weighted rows, 5% missing; over the supported points, the largest bound
and the largest measured distance / bound of the three curves): smooth (1,443 bins) 0.7
percentage points, 0.006; step (2,000 bins, span 0.3) 1.1 points, 0.020; heavy ties (494 bins
of 2-decimal values) 1.4 points, 0.020; skewed (log-normal, 992 bins) 3.9 points, 0.006; rows
placed in each bin at the edge that moves the fit most (200 bins): 0.28. VECE measured 2% to
8% of its bound, D/sigma 0.5% to 5%. The bound is a worst case over where the rows sit within
their bins; real rows' moves mostly cancel (``benchmarks/bench_variable_bound.py``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("duckdb")

from mcviz.core.arrays import sorted_copy
from mcviz.engines.base import Columns
from mcviz.engines.calibration import value_sums_table
from mcviz.engines.tables import open_table
from mcviz.io import load_predictions
from mcviz.stats.smoothing import spiked_fits
from mcviz.stats.smoothing.curves import SPIKE_SHARE
from mcviz.stats.variable_curves import prediction_errors, variable_calibration
from mcviz.stats.variable_sums import variable_calibration_from_sums

COLUMNS = Columns("score", "label", "w")


def _shaped(shape: str, n: int, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = {"smooth": lambda: rng.normal(size=n),
         "step": lambda: rng.uniform(-2, 2, n),
         "ties": lambda: np.round(rng.normal(size=n), 2),
         "skewed": lambda: rng.lognormal(0, 0.5, n)}[shape]()
    score = rng.uniform(0.02, 0.98, n)
    shift = {"smooth": 0.12 * np.sin(2 * x), "step": np.where(x > 0.3, 0.2, -0.05),
             "ties": 0.1 * np.cos(3 * x), "skewed": 0.15 * np.tanh(x - 1)}[shape]
    frame = pd.DataFrame({"score": score, "label": (rng.random(n) < np.clip(
        score + shift, 0, 1)).astype(int), "x": x, "w": rng.uniform(0.3, 2.5, n)})
    frame.loc[rng.random(n) < 0.05, "x"] = np.nan
    return frame


def _adversarial(n: int, bins: int, seed: int = 3) -> pd.DataFrame:
    """V in [-1, 1] at the two edges of each of ``bins`` equal-width bins; the error is 1
    exactly at the edge nearer 0 (constant score 0.3, so the error is the label): moving the
    rows to their bins' means moves every error-1 row away from 0, all in one direction."""
    rng = np.random.default_rng(seed)
    width = 2.0 / bins
    k = rng.integers(0, bins, n)
    upper = rng.random(n) < 0.5
    x = -1.0 + width * (k + np.where(upper, 1 - 1e-9, 1e-9))
    x[:2] = -1.0, 1.0
    near = np.where(-1.0 + width * (k + 0.5) < 0, upper, ~upper)
    return pd.DataFrame({"score": np.full(n, 0.3), "label": near.astype(int), "x": x,
                         "w": np.ones(n)})


def _binned(tmp_path, frame: pd.DataFrame, limit: int, span: float | None = None):
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path, index=False)
    table = open_table("duckdb", [str(path)])
    try:
        sums, missing, width = value_sums_table(table, COLUMNS, "x", limit=limit)
    finally:
        table.close()
    assert width is not None  # fine bins
    return variable_calibration_from_sums("x", sums, missing=missing, weighted=True, span=span)


def _rows_at(frame: pd.DataFrame, drawn) -> dict:
    """The curves of the original rows at the drawn grid and span (as drawn: rates clipped to
    [0, 1], the gap to [-1, 1]), and the rows' own ``variable_calibration``."""
    pred = load_predictions(frame, score="score", label="label", weight="w", covariates=["x"])
    error, predicted = prediction_errors(pred)
    x = pred.covariates["x"].to_numpy(dtype=float)
    present = ~np.isnan(x)
    x, error, predicted, weight = x[present], error[present], predicted[present], \
        pred.weight[present]
    fits = spiked_fits(x, [error, predicted], weight, np.asarray(drawn.error.x),
                       span=drawn.span, degree=2, exact=None, sorted_x=sorted_copy(x),
                       spike_share=SPIKE_SHARE)
    return {"error": np.clip(fits.fit[:, 0], 0, 1), "predicted": np.clip(fits.fit[:, 1], 0, 1),
            "gap": np.clip(fits.fit[:, 0] - fits.fit[:, 1], -1, 1),
            "whole": variable_calibration(pred, "x", span=drawn.span)}


def _ratios(drawn, rows: dict) -> dict:
    """Measured distance / bound per curve at every grid point (each at most 1)."""
    out = {}
    for name in ("error", "predicted", "gap"):
        bound = getattr(drawn.within, name)
        distance = np.abs(rows[name] - getattr(drawn, name).fit)
        assert (distance <= bound).all(), (name, np.flatnonzero(distance > bound))
        out[name] = np.where(np.isfinite(bound), distance / bound, 0.0)
    return out


@pytest.mark.parametrize(("shape", "limit"), [("smooth", 2000), ("step", 2000), ("ties", 600),
                                              ("skewed", 2000)])
def test_the_rows_curves_lie_within_the_stated_bound(tmp_path, shape, limit):
    """At every drawn grid point the original rows' error, predicted-error and gap fits lie
    within the bound; VECE and D/sigma along V too; and the bound says something: finite at
    every supported point, under 5 percentage points there (a median under 2)."""
    frame = _shaped(shape, 20_000)
    drawn = _binned(tmp_path, frame, limit, span=0.3 if shape == "step" else None)
    within = drawn.within
    rows = _rows_at(frame, drawn)
    ratios = _ratios(drawn, rows)
    supported = within.supported
    assert supported.sum() > 200
    for name in ("error", "predicted", "gap"):
        bound = getattr(within, name)[supported]
        assert np.isfinite(bound).all()
        assert bound.max() < 0.05, name
        assert np.median(bound) < 0.02, name
        assert ratios[name].max() > 1e-4  # the bound is not astronomically loose either
    whole = rows["whole"]
    assert abs(drawn.vece - whole.vece) <= within.vece
    assert -1e-9 <= whole.kuiper_z - drawn.kuiper_z <= within.kuiper_z + 1e-9
    rates, without = within.rates_within()
    assert without == 0
    assert within.words().startswith(
        f"each point of the curves is within {100 * rates:.2g} percentage points of the curve "
        "from every row at the same span")


def test_rows_placed_to_move_the_fit_most_come_close_to_the_bound(tmp_path):
    """Every error-1 row at the edge of its bin nearer 0, and moved to the bin's mean: the fits
    near 0 move all one way, by over a tenth of the bound, and still within it."""
    frame = _adversarial(20_000, 200)
    drawn = _binned(tmp_path, frame, 200, span=0.5)
    rows = _rows_at(frame, drawn)
    ratios = _ratios(drawn, rows)
    assert ratios["error"].max() > 0.1
    assert ratios["gap"].max() > 0.1
    assert np.abs(rows["error"] - drawn.error.fit).max() > 0.01  # a real move: 1 point


def test_a_spike_of_one_value_is_exact_and_a_spike_share_spanning_values_has_no_bound(
        tmp_path):
    """A value holding 20% of the weight alone in its bin (V = 5 beside normal values): the
    rows' spike, its point exact (bound 1e-12, the order of additions), the other points
    bounded. Half its rows at 5 + 1e-7 instead, in the same bin: the rows may hold a spike
    there or not, so no bound at all (inf everywhere, said in words)."""
    frame = _shaped("smooth", 20_000)
    at_spike = np.random.default_rng(1).random(len(frame)) < 0.2
    frame.loc[at_spike, "x"] = 5.0
    drawn = _binned(tmp_path, frame, 2000)
    spike = drawn.error.spike
    assert spike.sum() == 1
    assert (drawn.within.error[spike] <= 1e-12).all()
    assert (drawn.within.gap[spike] <= 1e-12).all()
    assert np.isfinite(drawn.within.error[drawn.within.supported]).mean() > 0.9
    _ratios(drawn, _rows_at(frame, drawn))
    frame.loc[at_spike, "x"] = np.where(np.arange(at_spike.sum()) % 2, 5.0 + 1e-7, 5.0)
    drawn = _binned(tmp_path, frame, 2000)
    assert np.isinf(drawn.within.error).all()
    assert np.isinf(drawn.within.vece)
    assert drawn.within.words() == ("no bound on the difference from every row could be "
                                    "derived")
    assert drawn.record()["within"]["rates_within"] is None


@pytest.mark.spark
def test_spark_s_fine_bins_carry_the_same_bound(tmp_path):
    """One Spark test (local[2]): its GROUP BY in fine bins returns each bin's range, and the
    curves drawn from it carry the DuckDB run's bound, the rows' curves within it."""
    from spark_available import spark_table

    frame = _shaped("step", 6_000, seed=12)
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path, index=False)
    with spark_table(str(path)) as table:
        sums, missing, width = value_sums_table(table, COLUMNS, "x", limit=500)
    assert width is not None
    assert (sums["hi"] > sums["lo"]).any()
    drawn = variable_calibration_from_sums("x", sums, missing=missing, weighted=True)
    duck = _binned(tmp_path, frame, 500)
    np.testing.assert_allclose(drawn.within.error, duck.within.error, rtol=1e-9)
    _ratios(drawn, _rows_at(frame, drawn))

"""The curves along a numeric variable at scale: DuckDB's GROUP BY of the variable's values
(``value_sums_table``) -> ``variable_calibration_from_sums`` against ``variable_calibration``
of the same rows in memory.

* groups = distinct values (tied, spiked or continuous V; weighted or not; 5% missing, NaN
  among them): every field to 1e-9 (curves, bands, flags, VCE(v*), v*, its support and band,
  VECE and its bins, histogram, rank knots, span and the cumulative view's D/sigma and p);
* more rows than CV_ROWS: the span cross-validated on every row (the in-memory rule applied
  to all rows, not to its subsample);
* fine bins (the limit below the distinct values): the in-memory curves of the rows moved to
  their bin's mean value, exactly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("duckdb")

from mcviz.engines.base import Columns
from mcviz.engines.calibration import value_sums_table
from mcviz.engines.tables import open_table
from mcviz.io import load_predictions
from mcviz.stats.variable_curves import variable_calibration
from mcviz.stats.variable_sums import variable_calibration_from_sums

SCALARS = ("vce", "vce_at", "vce_support", "vece", "n", "n_missing", "span", "kuiper_z",
           "p_value", "span_chosen", "vce_significant")
ARRAYS = ("bin_edges", "bin_weight", "bin_error", "bin_predicted", "histogram_edges",
          "histogram_counts", "rank_knots", "vce_ci")
CURVE = ("x", "fit", "lower", "upper", "se", "thin", "spike", "degenerate")


def _rows(tmp_path, shape, weighted, n, seed=5, wave=(0.12, 2.0)):
    rng = np.random.default_rng(seed)
    x = {"tied": lambda: rng.integers(0, 60, n).astype(float),
         "spiked": lambda: np.where(rng.random(n) < 0.3, 0.0, np.round(rng.exponential(3, n), 2)),
         "continuous": lambda: rng.normal(size=n)}[shape]()
    score = rng.uniform(0.02, 0.98, n)
    frame = pd.DataFrame({"score": score, "label": (rng.random(n) < np.clip(
        score + wave[0] * np.sin(wave[1] * x), 0, 1)).astype(int), "x": x})
    if weighted:
        frame["w"] = rng.uniform(0.3, 2.5, n)
    frame.loc[rng.random(n) < 0.05, "x"] = np.nan  # missing (NULL in Parquet)
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path, index=False)
    return path, frame, Columns("score", "label", "w" if weighted else None)


def _from_engine(path, columns, limit=1 << 20):
    table = open_table("duckdb", [str(path)])
    try:
        sums, missing, width = value_sums_table(table, columns, "x", limit=limit)
    finally:
        table.close()
    return variable_calibration_from_sums("x", sums, missing=missing,
                                          weighted=columns.weight is not None), width, sums


def _moved(frame, width, bins):
    """The rows each moved to the mean value of its equal-width bin (missing stay missing)."""
    x = frame["x"].to_numpy()
    moved = frame.copy()
    present = ~np.isnan(x)
    slot = np.minimum(np.floor((x[present] - np.nanmin(x)) / width), bins - 1).astype(int)
    mean = pd.Series(x[present]).groupby(slot).mean()
    moved.loc[present, "x"] = mean.loc[slot].to_numpy()
    return moved


def _in_memory(frame, columns, **options):
    pred = load_predictions(frame, score="score", label="label",
                            weight=columns.weight or False, covariates=["x"])
    return variable_calibration(pred, "x", **options)


def _same(got, want, tol=1e-9):
    for name in SCALARS:
        np.testing.assert_allclose(float(getattr(got, name)), float(getattr(want, name)),
                                   rtol=tol, atol=tol, err_msg=name)
    for name in ARRAYS:
        np.testing.assert_allclose(np.asarray(getattr(got, name), dtype=float),
                                   np.asarray(getattr(want, name), dtype=float),
                                   rtol=tol, atol=tol, err_msg=name)
    for curve in ("error", "predicted", "gap"):
        a, b = getattr(got, curve), getattr(want, curve)
        for name in CURVE:
            np.testing.assert_allclose(np.asarray(getattr(a, name), dtype=float),
                                       np.asarray(getattr(b, name), dtype=float),
                                       rtol=tol, atol=tol, err_msg=f"{curve}.{name}")
        np.testing.assert_allclose([a.sigma, a.df], [b.sigma, b.df], rtol=tol, atol=tol)
        np.testing.assert_allclose(a.support, b.support, rtol=tol)
    assert got.warnings == want.warnings


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("shape", ["tied", "spiked", "continuous"])
def test_curves_from_the_engine_s_value_sums_equal_the_rows(tmp_path, shape, weighted):
    path, frame, columns = _rows(tmp_path, shape, weighted, 8000)
    got, width, _ = _from_engine(path, columns)
    assert width is None
    want = _in_memory(frame, columns)
    assert want.n_missing > 300
    assert want.span_chosen
    if shape == "spiked":
        assert want.gap.spike.any()
    if shape == "continuous":
        assert want.gap.binned  # the Taylor-binned LOESS (over 2,048 distinct values)
    _same(got, want)


def test_above_cv_rows_the_span_is_cross_validated_on_every_row(tmp_path, monkeypatch):
    """The in-memory span is chosen on CV_ROWS rows evenly spaced in score order; from the
    sums it is chosen on all rows: the in-memory rule with CV_ROWS above the rows."""
    import mcviz.stats.variable_curves as curves

    path, frame, columns = _rows(tmp_path, "tied", True, 6000, seed=0, wave=(0.25, 0.25))
    monkeypatch.setattr(curves, "CV_ROWS", 1000)  # the in-memory choice subsamples now
    got, _, _ = _from_engine(path, columns)
    assert _in_memory(frame, columns).span != got.span  # the subsample's choice differs
    monkeypatch.setattr(curves, "CV_ROWS", 10**9)
    want = _in_memory(frame, columns)
    assert want.span < 0.9
    _same(got, want)


def test_fine_bins_give_the_curves_of_the_rows_moved_to_their_bins(tmp_path):
    """300 bins of a continuous V: the in-memory curves of the rows each moved to its bin's
    mean value (by less than the width), exactly; against the rows themselves, measured."""
    path, frame, columns = _rows(tmp_path, "continuous", True, 8000, seed=9)
    got, width, sums = _from_engine(path, columns, limit=300)
    x = frame["x"].to_numpy()
    assert width == pytest.approx((np.nanmax(x) - np.nanmin(x)) / 300)
    assert sums["n"].size <= 300
    moved = _moved(frame, width, 300)
    present = ~np.isnan(x)
    assert np.abs(moved.loc[present, "x"].to_numpy() - x[present]).max() < width
    _same(got, _in_memory(moved, columns))
    rows = _in_memory(frame, columns, span=got.span)
    # measured (the stated bound: tests/engines/test_variable_bound_engines.py)
    assert np.abs(np.interp(rows.gap.x, got.gap.x, got.gap.fit) - rows.gap.fit).max() < 0.01


@pytest.mark.spark
def test_spark_s_value_sums_give_the_same_curves(tmp_path):
    """One Spark test (local[2]): its GROUP BY of the values gives the rows' curves to 1e-9
    (spiked V, weighted, missing values), and its fine bins those of the moved rows."""
    from spark_available import spark_table

    path, frame, columns = _rows(tmp_path, "spiked", True, 6000, seed=12)
    with spark_table(str(path)) as table:
        exact = value_sums_table(table, columns, "x", limit=1 << 20)
        binned = value_sums_table(table, columns, "x", limit=200)
    assert exact[2] is None
    _same(variable_calibration_from_sums("x", exact[0], missing=exact[1], weighted=True),
          _in_memory(frame, columns))
    sums, missing, width = binned
    assert width is not None
    _same(variable_calibration_from_sums("x", sums, missing=missing, weighted=True),
          _in_memory(_moved(frame, width, 200), columns))


def test_a_variable_missing_everywhere_or_single_valued_is_refused_as_in_memory(tmp_path):
    """One value where V is present: the in-memory refusal in the same words; V missing on
    every row (in memory the loader drops such a covariate): refused, not an IndexError."""
    from mcviz.errors import ValidationError

    path, frame, columns = _rows(tmp_path, "tied", False, 500)
    frame["x"] = frame["x"].where(frame["x"].isna(), 3.0)
    frame.to_parquet(path, index=False)
    said = r"'x' takes a single value \(3\) on the \d+ rows where it is present"
    with pytest.raises(ValidationError, match=said):
        _in_memory(frame, columns)
    with pytest.raises(ValidationError, match=said):
        _from_engine(path, columns)
    frame["x"] = np.nan
    frame.to_parquet(path, index=False)
    with pytest.raises(ValidationError, match="'x' is missing on every row"):
        _from_engine(path, columns)


@pytest.mark.parametrize("kind", ["naive", "zoned", "date"])
def test_curves_along_a_time_column_equal_the_rows(tmp_path, kind):
    # a timestamp (wall time), a zoned one (its instant) and a date column (midnight), summed
    # by their nanoseconds since 1970: the in-memory curves along them, to 1e-9, as dates
    rng = np.random.default_rng(11)
    n = 6000
    hours = rng.integers(0, 24 * 90, n)
    when = pd.Timestamp("2025-03-01") + pd.to_timedelta(hours, unit="h")
    if kind == "zoned":
        when = when.tz_localize("Europe/Paris", nonexistent="shift_forward", ambiguous=False)
    score = rng.uniform(0.02, 0.98, n)
    drift = 0.15 * np.sin(hours / (24 * 14.0))
    frame = pd.DataFrame({"score": score, "label": (rng.random(n) < np.clip(score + drift, 0, 1)
                                                    ).astype(int), "x": when})
    if kind == "date":
        frame["x"] = frame["x"].dt.normalize()
    frame.loc[rng.random(n) < 0.05, "x"] = pd.NaT
    path = tmp_path / "rows.parquet"
    if kind == "date":  # a Parquet DATE column
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(frame, preserve_index=False)
        table = table.set_column(2, "x", table.column("x").cast(pa.date32()))
        pq.write_table(table, path)
        frame = pq.read_table(path).to_pandas()
        frame["x"] = pd.to_datetime(frame["x"])
    else:
        frame.to_parquet(path, index=False)
    columns = Columns("score", "label", None)
    table = open_table("duckdb", [str(path)])
    try:
        assert table.kinds["x"] == "timestamp"
        sums, missing, width = value_sums_table(table, columns, "x", limit=1 << 20)
    finally:
        table.close()
    assert width is None
    got = variable_calibration_from_sums("x", sums, missing=missing, weighted=False, dates=True)
    want = _in_memory(frame, columns)
    assert want.dates and got.dates
    assert want.n_missing > 200
    _same(got, want)
    first = pd.Timestamp(frame["x"].min())
    if first.tzinfo is not None:
        first = first.tz_convert("UTC").tz_localize(None)
    assert got.histogram_edges[0] == float(first.value)  # nanoseconds of the first time

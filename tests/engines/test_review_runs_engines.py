"""The review's full-population results from DuckDB's score runs equal the rows' in memory.

Reference: :func:`mcviz.present.review.review_results` of the same rows in memory (the
cumulative path at every tie-run end, the reliability diagrams, the LCS curve and score).
:func:`mcviz.present.review.review_from_runs` reads only the engine's ``GROUP BY`` of the score
(:func:`mcviz.engines.calibration.score_runs_table`):

* runs of one distinct score each (tied scores, or every score distinct): every number to 1e-9;
* fine score bins (the engine's limit set low): the drawn path points are in-memory path
  points, the in-memory path lies within the stated ``path_within`` (so does D, twice it),
  sigma² within ``sigma_square_within``, the LCS curve within its per-point bound, the
  diagrams whose bins nest exact; the LCS score's change is measured (no bound is claimed).

20,000 to 60,000 rows: a few seconds each.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("duckdb")

from mcviz.engines.base import Columns
from mcviz.engines.calibration import score_runs_table
from mcviz.engines.tables import open_table
from mcviz.io import load_predictions
from mcviz.present.review import review_from_runs, review_results
from mcviz.stats.measures.runs import ScoreRuns

BINS = (10, 20, 50)
DIAGRAM = ("count", "weight", "effective_size", "mean_score", "mean_response", "interval_low",
           "interval_high")
CURVE = ("grid", "fit", "lower", "upper", "weights", "count", "events")


def _table_rows(tmp_path, score, weighted, seed):
    rng = np.random.default_rng(seed)
    n = score.size
    frame = pd.DataFrame({"score": score})
    frame["label"] = (rng.random(n) < np.clip(score**1.3 + 0.08 * (score > 0.6), 0, 1)
                      ).astype(int)
    if weighted:
        frame["w"] = rng.uniform(0.3, 2.5, n)
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path, index=False)
    pred = load_predictions(frame, score="score", label="label",
                            weight="w" if weighted else False)
    return path, Columns("score", "label", "w" if weighted else None), pred


def _runs(path, columns, limit):
    table = open_table("duckdb", [str(path)])
    try:
        return ScoreRuns(**score_runs_table(table, columns, limit=limit))
    finally:
        table.close()


def _close(got, want, tol=1e-9):
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("ties", [True, False], ids=["tied", "distinct"])
def test_review_from_distinct_score_runs_equals_the_rows(tmp_path, weighted, ties):
    rng = np.random.default_rng(21)
    n = 20_000
    score = rng.beta(2, 5, n)
    if ties:
        score = np.clip(np.round(score, 3), 0.05, 0.6)  # long tie runs, at both ends too
    path, columns, pred = _table_rows(tmp_path, score, weighted, 22)
    runs = _runs(path, columns, 1 << 20)
    assert runs.bins is None
    got, about = review_from_runs(runs, bins=BINS)
    want = review_results(pred, None, variable=None, bins=BINS)
    assert about["exact"]
    assert about["path_within"] == 0.0
    assert about["lcs_fit_within"] == 0.0
    a, b = got.cumulative, want.cumulative
    assert a.path.size == b.path.size == runs.score.size + 1
    for name in ("x", "fraction", "position", "path"):
        _close(getattr(a, name), getattr(b, name))
    for name in ("kuiper", "ks", "sigma", "kuiper_z", "p_value", "weight_total"):
        _close(getattr(a, name), getattr(b, name))
    assert a.n == b.n == n
    assert a.weighted == b.weighted == weighted
    np.testing.assert_array_equal(a.plot_index, b.plot_index)
    assert got.reliability.n_bins == want.reliability.n_bins == BINS
    for mine, theirs in zip(got.reliability.full, want.reliability.full, strict=True):
        for name in DIAGRAM:
            _close(getattr(mine, name), getattr(theirs, name))
    _close(got.reliability.histogram_full, want.reliability.histogram_full)
    assert got.lcs.k == want.lcs.k
    assert got.lcs.n == want.lcs.n
    for name in CURVE:
        _close(getattr(got.lcs, name), getattr(want.lcs, name))
    for name in ("lcs", "bandwidth", "boundary_below", "boundary_above"):
        _close(getattr(got.lcs, name), getattr(want.lcs, name))
    np.testing.assert_array_equal(got.lcs.boundary, want.lcs.boundary)
    _close(got.lcs.density_y, want.lcs.density_y)


@pytest.mark.parametrize("shape", ["beta", "spiked", "u"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_review_from_fine_score_bins_stays_within_its_bounds(tmp_path, weighted, shape):
    """2,000 fine bins (h = 5e-4) of 60,000 continuous scores: the bounds hold and bite."""
    rng = np.random.default_rng(31)
    n = 60_000
    score = {"beta": rng.beta(2, 5, n),
             "spiked": np.where(rng.random(n) < 0.3, 0.1234567, rng.random(n)),
             "u": rng.beta(0.3, 0.3, n)}[shape]
    path, columns, pred = _table_rows(tmp_path, score, weighted, 32)
    runs = _runs(path, columns, 2_000)
    assert runs.bins == 2_000
    got, about = review_from_runs(runs, bins=BINS)
    want = review_results(pred, None, variable=None, bins=BINS)
    assert not about["exact"]
    assert about["reliability_exact"] == list(BINS)
    a, b = got.cumulative, want.cumulative
    at = np.searchsorted(b.fraction, a.fraction)  # the bins' ends are tie-run ends
    _close(b.fraction[at], a.fraction)
    _close(b.path[at], a.path, tol=1e-12)  # the drawn points are the rows' own points
    beta = about["path_within"]
    assert 0 < beta < 0.05
    ends = np.concatenate((at[1:], [b.path.size]))
    for start, stop, level in zip(at, ends, a.path, strict=True):  # between two drawn points
        assert np.all(np.abs(b.path[start:stop] - level) <= beta + 1e-12)
    assert a.kuiper - 1e-12 <= b.kuiper <= a.kuiper + 2 * beta + 1e-12
    assert abs(a.sigma**2 - b.sigma**2) <= about["sigma_square_within"]
    for mine, theirs in zip(got.reliability.full, want.reliability.full, strict=True):
        for name in ("count", "weight", "mean_score", "mean_response"):
            _close(getattr(mine, name), getattr(theirs, name))
    lcs, expected = got.lcs, want.lcs
    grid = np.intersect1d(lcs.grid, expected.grid)  # points within h of the score range's ends
    assert grid.size >= expected.grid.size - 2  # may differ
    mine = np.searchsorted(lcs.grid, grid)
    theirs = np.searchsorted(expected.grid, grid)
    from mcviz.stats.smoothing.lcs_runs import lcs_from_runs

    _, bound = lcs_from_runs(runs.score, runs.count, runs.weight, runs.positive,
                             weighted=runs.weighted, bin_width=1.0 / runs.bins)
    gap = np.abs(lcs.fit[mine] - expected.fit[theirs])
    assert np.all(gap <= bound[mine] + 1e-12)
    assert about["lcs_fit_within"] == pytest.approx(bound.max())
    # measured (no bound claimed): |delta LCS| up to 1.3e-5 on these shapes (LCS 1.5e-3-5.5e-3)
    assert abs(lcs.lcs - expected.lcs) <= 5e-5


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_levels_from_the_engine_s_sums_equal_the_rows(tmp_path, weighted):
    """Error and predicted error per level (Kelly & Smyth's e and ê) from DuckDB's GROUP BY:
    every field of level_calibration of the same rows, missing values as their own level."""
    from mcviz.engines.calibration import level_sums_table
    from mcviz.stats.variable_levels import level_calibration, level_calibration_from_sums

    rng = np.random.default_rng(41)
    n = 20_000
    score = np.round(rng.beta(2, 2, n), 3)  # some scores at exactly 0.5
    path, columns, pred = _table_rows(tmp_path, score, weighted, 42)
    frame = pd.read_parquet(path)
    level = rng.choice(["a", "b", "c10", "c2", "rare"], n, p=[0.4, 0.3, 0.2, 0.0995, 0.0005])
    frame["group"] = pd.Series(level).where(rng.random(n) > 0.01)  # 1% missing
    frame.to_parquet(path, index=False)
    pred = load_predictions(frame, score="score", label="label",
                            weight="w" if weighted else False, covariates=["group"])
    table = open_table("duckdb", [str(path)])
    try:
        got = level_calibration_from_sums("group", *level_sums_table(table, columns, "group"))
    finally:
        table.close()
    want = level_calibration(pred, "group")
    assert got.levels == want.levels
    assert want.levels[-1] == "(missing)"
    for name in ("count", "effective_size", "weight_share", "error", "predicted", "gap",
                 "error_lower", "error_upper", "predicted_lower", "predicted_upper",
                 "gap_lower", "gap_upper"):
        _close(getattr(got, name), getattr(want, name))
    np.testing.assert_array_equal(got.eligible, want.eligible)
    assert not got.eligible.all()  # the rare level is left out of VCE
    _close([got.vce, got.vece, *got.vce_ci], [want.vce, want.vece, *want.vce_ci])
    assert (got.vce_at, got.n, got.warnings) == (want.vce_at, want.n, want.warnings)


@pytest.mark.spark
def test_spark_s_sums_give_the_same_review(tmp_path):
    """One Spark test (local[2]): its GROUP BY of the score and of a level give the rows'
    review (path, reliability, LCS) and per-level errors to 1e-9."""
    from spark_available import spark_table

    from mcviz.engines.calibration import level_sums_table
    from mcviz.stats.variable_levels import level_calibration, level_calibration_from_sums

    rng = np.random.default_rng(51)
    n = 20_000
    path, columns, _ = _table_rows(tmp_path, np.round(rng.beta(2, 5, n), 3), True, 52)
    frame = pd.read_parquet(path)
    frame["group"] = rng.choice(["a", "b", "c"], n)
    frame.to_parquet(path, index=False)
    pred = load_predictions(frame, score="score", label="label", weight="w",
                            covariates=["group"])
    with spark_table(str(path)) as table:
        runs = ScoreRuns(**score_runs_table(table, columns, limit=1 << 20))
        levels = level_calibration_from_sums("group", *level_sums_table(table, columns, "group"))
    got, about = review_from_runs(runs, bins=BINS)
    want = review_results(pred, None, variable=None, bins=BINS)
    assert about["exact"]
    _close(got.cumulative.path, want.cumulative.path)
    _close(got.cumulative.x, want.cumulative.x)
    for mine, theirs in zip(got.reliability.full, want.reliability.full, strict=True):
        for name in DIAGRAM:
            _close(getattr(mine, name), getattr(theirs, name))
    for name in CURVE:
        _close(getattr(got.lcs, name), getattr(want.lcs, name))
    expected = level_calibration(pred, "group")
    assert levels.levels == expected.levels
    for name in ("count", "error", "predicted", "gap", "gap_lower", "gap_upper"):
        _close(getattr(levels, name), getattr(expected, name))

"""A finding's deviation from the full population (paper 003) from DuckDB's score runs.

Reference: :func:`mcviz.stats.deviation.subpopulation_deviation` of the same rows in memory.
:func:`mcviz.stats.deviation.deviation_from_runs` reads only two ``GROUP BY`` s of the score
(:func:`mcviz.engines.calibration.score_runs_table`): every row's, and the finding's rows'
(its ``WHERE``):

* runs of one distinct score each (tied scores, or every score distinct): every number to
  1e-9, and the finding's reliability diagrams (beside the full population's) too;
* every row summed between the finding's distinct scores (DuckDB's ASOF join at the edges of
  eq. (7)) beside its runs per distinct score: to 1e-9 again, the full population's runs in
  fine bins or not, tied scores on the edges included;
* fine score bins (the engine's limit set low): exactly the in-memory deviation of the rows
  with every score moved to its bin's centre; against the rows themselves D and sigma are
  measured (no bound is claimed: the docstring says what differs): each 16-25% larger, their
  ratio D/sigma within 0.7 of the rows' 22-27.

20,000 to 60,000 rows: a few seconds each.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("duckdb")

from mcviz.engines.base import Columns
from mcviz.engines.calibration import (
    comparison_sums_table,
    finding_runs_table,
    score_runs_table,
)
from mcviz.engines.tables import open_table
from mcviz.io import load_predictions
from mcviz.present.review import finding_review_from_runs, review_from_runs, review_results
from mcviz.stats.deviation import (
    deviation_edges,
    deviation_from_runs,
    subpopulation_deviation,
)
from mcviz.stats.measures.runs import ScoreRuns, score_runs
from mcviz.subpopulations.filters import filter_subpopulation

BINS = (10, 20)
ARRAYS = ("x", "fraction", "position", "path", "subpopulation_cumulative", "full_cumulative",
          "bin_edges", "full_mean", "full_variance", "full_count")
NUMBERS = ("kuiper", "ks", "sigma", "kuiper_z", "ks_z", "p_value", "weight_total")
FINDING = "g == 2 and x >= 0.25"


def _rows(tmp_path, score, weighted, seed):
    rng = np.random.default_rng(seed)
    n = score.size
    frame = pd.DataFrame({"score": score, "g": rng.integers(0, 4, n),
                          "x": rng.random(n)})
    lift = 0.12 * ((frame["g"] == 2) & (frame["x"] >= 0.25)).to_numpy()
    frame["label"] = (rng.random(n) < np.clip(score + lift, 0, 1)).astype(int)
    if weighted:
        frame["w"] = rng.uniform(0.3, 2.5, n)
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path, index=False)
    return path, frame, Columns("score", "label", "w" if weighted else None)


def _pred(frame, weighted):
    return load_predictions(frame, score="score", label="label",
                            weight="w" if weighted else False, covariates=["g", "x"])


def _both_runs(path, columns, limit, sub):
    table = open_table("duckdb", [str(path)])
    try:
        full = ScoreRuns(**score_runs_table(table, columns, limit=limit))
        mine = ScoreRuns(**score_runs_table(table, columns, limit=limit,
                                            conditions=tuple(sub.conditions),
                                            binned=full.bins is not None))
    finally:
        table.close()
    return full, mine


def _close(got, want, tol=1e-9):
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                               rtol=tol, atol=tol)


def _same_deviation(got, want):
    for name in ARRAYS:
        _close(getattr(got, name), getattr(want, name))
    for name in NUMBERS:
        _close(getattr(got, name), getattr(want, name))
    assert (got.n, got.n_full, got.weighted) == (want.n, want.n_full, want.weighted)
    # the points kept for drawing keep the same extremes (which of two points equal to
    # rounding is kept may differ)
    for extreme in (np.max, np.min):
        _close(extreme(got.path[got.plot_index]), extreme(want.path[want.plot_index]))


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("ties", [True, False], ids=["tied", "distinct"])
def test_a_finding_s_deviation_from_runs_equals_the_rows(tmp_path, weighted, ties):
    score = np.random.default_rng(41).beta(2, 5, 20_000)  # long tie runs, at both ends too:
    path, frame, columns = _rows(tmp_path, np.clip(np.round(score, 3), 0.05, 0.6) if ties
                                 else score, weighted, 42)
    pred = _pred(frame, weighted)
    sub = filter_subpopulation(pred, FINDING)
    full, mine = _both_runs(path, columns, 1 << 20, sub)
    assert full.bins is None and mine.bins is None
    assert int(mine.count.sum()) == sub.size
    want = subpopulation_deviation(pred, sub.index, description=sub.description)
    got = deviation_from_runs(full, mine, description=sub.description)
    assert got.path.size == np.unique(pred.score[sub.index]).size + 1
    assert got.kuiper_z > 3  # the planted lift: a deviation worth drawing
    _same_deviation(got, want)
    # the whole finding review: its diagrams beside the full population's, as in memory
    scope, _ = review_from_runs(full, bins=BINS)
    review, about = finding_review_from_runs(full, mine, sub, bins=BINS,
                                             full_reliability=scope.reliability)
    assert about["deviation_exact"]
    memory = review_results(pred, sub, variable=None, bins=BINS)
    for part in ("full", "subpopulation"):
        for a, b in zip(getattr(review.reliability, part), getattr(memory.reliability, part),
                        strict=True):
            for name in ("count", "weight", "mean_score", "mean_response", "interval_low",
                         "interval_high"):
                _close(getattr(a, name), getattr(b, name))
    _close(review.reliability.histogram_subpopulation, memory.reliability.histogram_subpopulation)
    for name in ("x", "fraction", "position", "path", "kuiper", "sigma"):  # its own, from runs
        _close(getattr(review.own, name), getattr(memory.own, name))


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("ties", [True, False], ids=["tied", "distinct"])
def test_a_finding_s_runs_for_its_deviation_are_the_sums_of_its_rows(tmp_path, weighted, ties):
    """The deck's runs of a finding (only the sums its deviation and charts read, ordered by
    DuckDB): each distinct score's rows, sum W, sum W R and sum W^2 of the finding's rows in
    memory; the totals of the classical measures are not read (NaN)."""
    rng = np.random.default_rng(31)
    score = rng.beta(2, 5, 20_000)
    path, frame, columns = _rows(tmp_path, np.round(score, 3) if ties else score, weighted, 32)
    pred = _pred(frame, weighted)
    sub = filter_subpopulation(pred, FINDING)
    table = open_table("duckdb", [str(path)])
    try:
        got = ScoreRuns(**finding_runs_table(table, columns, tuple(sub.conditions)))
    finally:
        table.close()
    want = score_runs(pred.subset(sub.index))
    assert got.bins is None
    assert got.weighted == weighted
    assert got.score.size == np.unique(pred.score[sub.index]).size
    if ties:
        assert got.score.size < sub.size  # runs of tied rows
    np.testing.assert_array_equal(got.score, want.score)
    np.testing.assert_array_equal(got.count, want.count)
    for name in ("weight", "positive", "square_weight"):
        _close(getattr(got, name), getattr(want, name), 1e-12)
    assert np.isnan([got.square_error, got.log_likelihood, got.spiegelhalter_numerator,
                     got.spiegelhalter_variance]).all()


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("shape", ["tied", "beta", "u"])
def test_a_finding_s_deviation_with_every_row_summed_between_its_scores_equals_the_rows(
        tmp_path, weighted, shape):
    """60,000 rows, the engine's limit 15,000: the full population's runs are fine bins, the
    finding's 11,000 rows are runs of distinct scores; every row summed in the finding's bins
    of eq. (7) gives the in-memory deviation to 1e-9. Tied scores (to 0.001): edges fall on
    scores of the full population (right-closed bins)."""
    rng = np.random.default_rng(71)
    n = 60_000
    score = {"tied": np.round(rng.beta(2, 5, n), 3), "beta": rng.beta(2, 5, n),
             "u": rng.beta(0.3, 0.3, n)}[shape]
    path, frame, columns = _rows(tmp_path, score, weighted, 72)
    pred = _pred(frame, weighted)
    sub = filter_subpopulation(pred, FINDING)
    table = open_table("duckdb", [str(path)])
    try:
        full = ScoreRuns(**score_runs_table(table, columns, limit=15_000))
        mine = ScoreRuns(**finding_runs_table(table, columns, tuple(sub.conditions)))
        edges = deviation_edges(mine.score)
        comparison = comparison_sums_table(table, columns, edges)
    finally:
        table.close()
    assert (full.bins is None) == (shape == "tied") and mine.bins is None
    if shape == "tied":
        assert np.isin(edges, pred.score).any()  # an edge on a score: it belongs below
    got = deviation_from_runs(full, mine, comparison=comparison)
    want = subpopulation_deviation(pred, sub.index)
    _same_deviation(got, want)
    # handed over as a list (the deck's way: its sums let go as read), the same deviation
    handed = list(comparison)
    _same_deviation(deviation_from_runs(full, mine, comparison=handed), want)
    assert handed == []


@pytest.mark.parametrize("shape", ["beta", "u"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_a_finding_s_deviation_from_fine_bins_is_that_of_scores_at_their_bins_centres(
        tmp_path, weighted, shape):
    """2,000 fine bins (h = 5e-4) of 60,000 continuous scores: the deviation drawn is the
    in-memory deviation of the rows moved to their bins' centres, to 1e-9; against the rows
    themselves D and sigma move by what the docstring states as measured."""
    rng = np.random.default_rng(51)
    n = 60_000
    score = {"beta": rng.beta(2, 5, n), "u": rng.beta(0.3, 0.3, n)}[shape]
    path, frame, columns = _rows(tmp_path, score, weighted, 52)
    pred = _pred(frame, weighted)
    sub = filter_subpopulation(pred, FINDING)
    full, mine = _both_runs(path, columns, 2_000, sub)
    assert full.bins == mine.bins == 2_000
    got = deviation_from_runs(full, mine, description=sub.description)
    # each row's bin (right-closed, the first also holds 0), as the engine's runs count them
    k = np.clip(np.ceil(frame["score"].to_numpy() * 2_000).astype(np.int64) - 1, 0, 1_999)
    np.testing.assert_array_equal(np.bincount(k, minlength=2_000)[full.bin_index], full.count)
    moved = frame.assign(score=(k + 0.5) / 2_000)
    centred = _pred(moved, weighted)
    _same_deviation(got, subpopulation_deviation(centred, filter_subpopulation(
        centred, FINDING).index, description=sub.description))
    rows = subpopulation_deviation(pred, sub.index)
    assert got.path.size < rows.path.size  # fewer points: one per fine bin of the finding
    change = abs(got.kuiper - rows.kuiper)
    print(f"{shape} weighted={weighted}: D rows {rows.kuiper:.5f}, bins {got.kuiper:.5f}, "
          f"|dD| {change:.2e} = {change / rows.sigma:.2f} sigma, "
          f"|d sigma| {abs(got.sigma - rows.sigma):.2e}, D/sigma {rows.kuiper_z:.2f} "
          f"{got.kuiper_z:.2f}")
    # measured: D and sigma each 16-25% larger than the rows' (the comparison of eq. (6)
    # averages whole fine bins), D/sigma within 0.7 of the rows' 22-27
    assert abs(got.kuiper_z - rows.kuiper_z) < 1.5
    assert change < 0.3 * rows.kuiper


@pytest.mark.spark
def test_spark_s_runs_give_the_same_deviation(tmp_path):
    """One Spark test (local[2]): its GROUP BY of the score over every row and over the
    finding's WHERE give the rows' deviation to 1e-9."""
    from spark_available import spark_table

    score = np.round(np.random.default_rng(61).beta(2, 5, 20_000), 3)
    path, frame, columns = _rows(tmp_path, score, True, 62)
    pred = _pred(frame, True)
    sub = filter_subpopulation(pred, FINDING)
    with spark_table(str(path)) as table:
        full = ScoreRuns(**score_runs_table(table, columns, limit=1 << 20))
        mine = ScoreRuns(**score_runs_table(table, columns, limit=1 << 20,
                                            conditions=tuple(sub.conditions), binned=False))
    _same_deviation(deviation_from_runs(full, mine), subpopulation_deviation(pred, sub.index))


@pytest.mark.spark
def test_spark_sums_every_row_between_a_finding_s_scores_as_the_rows(tmp_path, monkeypatch):
    """Spark has no ASOF join: its comparison (the rows and the edges of eq. (7) in cells of
    the score, a window per cell) beside the finding's runs per distinct score and the full
    population's fine bins gives the rows' deviation to 1e-9. 20,000 rows tied to 0.001 (edges
    on scores: right-closed bins), 64 cells (many edges in a cell, and cells with none); the
    one-scan counts give the finding's rows exactly."""
    from spark_available import spark_table

    import mcviz.engines.calibration as calibration

    monkeypatch.setattr(calibration, "COMPARISON_CELLS", 64)
    score = np.round(np.random.default_rng(81).beta(2, 5, 20_000), 3)
    path, frame, columns = _rows(tmp_path, score, True, 82)
    pred = _pred(frame, True)
    sub = filter_subpopulation(pred, FINDING)
    with spark_table(str(path)) as table:
        full = ScoreRuns(**score_runs_table(table, columns, limit=200))
        mine = ScoreRuns(**finding_runs_table(table, columns, tuple(sub.conditions)))
        edges = deviation_edges(mine.score)
        comparison = comparison_sums_table(table, columns, edges)
        (rows, distinct), = calibration.finding_counts_table(table, columns,
                                                             (tuple(sub.conditions),))
    assert full.bins is not None
    assert mine.bins is None
    assert np.isin(edges, pred.score).any()
    cells = np.floor(edges * 64).astype(int)
    assert np.bincount(cells).max() > 10
    assert np.unique(cells).size < 64
    assert rows == sub.size
    assert abs(distinct - mine.score.size) <= 0.05 * mine.score.size
    _same_deviation(deviation_from_runs(full, mine, comparison=comparison),
                    subpopulation_deviation(pred, sub.index))


def test_one_scan_counts_every_finding_s_rows_and_distinct_scores(tmp_path):
    """DuckDB: every finding's rows (exactly) and distinct scores (within the few per cent of
    approx_count_distinct) from one aggregate, as pandas counts them."""
    from mcviz.engines.calibration import finding_counts_table

    score = np.round(np.random.default_rng(91).beta(2, 5, 30_000), 4)
    path, frame, columns = _rows(tmp_path, score, False, 92)
    pred = _pred(frame, False)
    subs = [filter_subpopulation(pred, text) for text in (FINDING, "g == 1", "x < 0.1")]
    table = open_table("duckdb", [str(path)])
    try:
        got = finding_counts_table(table, columns, tuple(tuple(s.conditions) for s in subs))
    finally:
        table.close()
    for (rows, distinct), sub in zip(got, subs, strict=True):
        want = np.unique(pred.score[sub.index]).size
        assert rows == sub.size
        assert abs(distinct - want) <= 0.05 * want, (distinct, want)


def _beta_rows(tmp_path, shape, weighted, seed, finding):
    """30,000 rows of Beta(2, 5) scores, tied to 0.001 or not; the finding's rows."""
    score = np.random.default_rng(seed).beta(2, 5, 30_000)
    path, frame, columns = _rows(tmp_path, np.round(score, 3) if shape == "tied" else score,
                                 weighted, seed + 1)
    pred = _pred(frame, weighted)
    return path, frame, columns, pred, filter_subpopulation(pred, finding)


def _brute_comparison(frame, edges, weighted):
    """Every row's bin of eq. (7) (the edges below its score) and its sums, in numpy."""
    score = frame["score"].to_numpy()
    k = np.searchsorted(edges, score, side="left")  # edges strictly below the score
    w = frame["w"].to_numpy() if weighted else np.ones(score.size)
    r = frame["label"].to_numpy(dtype=float)
    q = edges.size + 1
    return k, (np.bincount(k, minlength=q), np.bincount(k, w, minlength=q),
               np.bincount(k, w * r, minlength=q))


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("shape", ["tied", "beta"])
def test_every_row_summed_between_a_finding_s_scores_in_passes_that_fit_duckdb(
        tmp_path, monkeypatch, weighted, shape):
    """DuckDB's ASOF join of every row to the finding's edges grows with the rows (10^8 rows
    ran a 304 MiB share out of memory): cut into passes of score ranges planned from the full
    population's fine bins, each within DuckDB's memory_limit (1 GiB, its floor off: 896 MiB,
    here at 2,000 rows a pass: FINDING_ENGINE_ROW_BYTES raised to 469,762), the sums are the
    one join's and numpy's, and the deviation the in-memory one to 1e-9. 30,000 rows, tied
    to 0.001 (500 fine bins, edges on scores) or continuous (15,000 fine bins). Each pass's
    rows, counted in numpy, fit the budget it was planned for; a sparse set of edges makes
    bins of more rows than a pass holds: those passes join nothing, and still sum right."""
    import mcviz.engines.memory as memory
    from mcviz.engines.calibration import comparison_passes

    budget = (1 << 30) - memory.DUCKDB_FLOOR
    monkeypatch.setattr(memory, "FINDING_ENGINE_ROW_BYTES", budget // 2_000)
    path, frame, columns, pred, sub = _beta_rows(tmp_path, shape, weighted, 93, FINDING)
    sparse = np.array([0.05, 0.1, 0.1005, 0.2, 0.4, 0.41, 0.8, 0.85, 0.9, 0.95])
    table = open_table("duckdb", [str(path)], memory_limit="1GiB")
    try:
        full = ScoreRuns(**score_runs_table(table, columns,
                                            limit=500 if shape == "tied" else 15_000))
        mine = ScoreRuns(**finding_runs_table(table, columns, tuple(sub.conditions)))
        edges = deviation_edges(mine.score)
        comparison = comparison_sums_table(table, columns, edges, full_runs=full)
        apart = comparison_sums_table(table, columns, sparse, full_runs=full)
    finally:
        table.close()
    assert full.bins is not None
    assert mine.bins is None
    for cut, got in ((edges, comparison), (sparse, apart)):
        k, want = _brute_comparison(frame, cut, weighted)
        np.testing.assert_array_equal(got[0], want[0])
        _close(got[1], want[1])
        _close(got[2], want[2])
        passes = comparison_passes(cut, full, budget)
        assert passes[0][0] == 0
        assert passes[-1][1] == cut.size
        assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(passes))
        rows = [int(((k >= a) & (k <= b)).sum()) for a, b in passes]
        joined = [(a, b, n) for (a, b), n in zip(passes, rows, strict=True) if a < b]
        assert all(memory.FINDING_ENGINE_ROW_BYTES * n + memory.FINDING_ENGINE_RUN_BYTES
                   * (b - a + 1) <= budget for a, b, n in joined)
        if cut is edges:
            assert len(joined) >= 10  # 30,000 rows at most 2,000 a pass
        else:
            assert 0 < len(joined) < len(passes)  # bins of more rows than a pass: no join
            assert max(rows) > 2_000
    if shape == "tied":
        assert np.isin(edges, pred.score).any()
    _same_deviation(deviation_from_runs(full, mine, comparison=comparison),
                    subpopulation_deviation(pred, sub.index))


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("shape", ["tied", "beta"])
@pytest.mark.parametrize("interval", ["score >= 0.1 and score < 0.35", "score <= 0.2"])
def test_a_score_interval_s_inner_bins_are_its_runs_with_no_join(tmp_path, monkeypatch,
                                                                  weighted, shape, interval):
    """A finding that bounds the score alone holds every row at its scores: every row between
    its scores is its own (the inner bins of eq. (7) are its runs), only the two end bins sum
    rows outside it. Given its runs (``interval``) DuckDB runs no join (no ASOF in any query),
    and the sums are numpy's bins of every row: counts exactly, sums and the deviation to
    1e-9. 30,000 rows, tied to 0.001 (edges on scores) or continuous."""
    path, frame, columns, pred, sub = _beta_rows(tmp_path, shape, weighted, 95, interval)
    table = open_table("duckdb", [str(path)], memory_limit="1GiB")
    queries = []
    through = type(table).frame
    monkeypatch.setattr(type(table), "frame",
                        lambda self, q, text: queries.append(text) or through(self, q, text))
    try:
        full = ScoreRuns(**score_runs_table(table, columns, limit=500))
        mine = ScoreRuns(**finding_runs_table(table, columns, tuple(sub.conditions)))
        edges = deviation_edges(mine.score)
        queries.clear()
        got = comparison_sums_table(table, columns, edges, full_runs=full, interval=mine)
    finally:
        table.close()
    assert full.bins is not None
    assert mine.bins is None
    assert edges.size > 100
    assert len(queries) == 2
    assert not any("ASOF" in text for text in queries)
    _, want = _brute_comparison(frame, edges, weighted)
    np.testing.assert_array_equal(got[0], want[0])
    _close(got[1], want[1])
    _close(got[2], want[2])
    assert want[0][-1] > mine.count[-1]  # the end bins reach past it
    assert (want[0][0] > mine.count[0]) == (">=" in interval)
    _same_deviation(deviation_from_runs(full, mine, comparison=got),
                    subpopulation_deviation(pred, sub.index))


@pytest.mark.spark
def test_spark_sums_a_score_interval_s_end_bins_alone(tmp_path):
    """Spark, a finding on the score alone (``interval``): its inner bins are its runs, the two
    end bins two aggregates (no window over the cells); every bin numpy's, the deviation the
    rows' to 1e-9 (30,000 rows tied to 0.001)."""
    from spark_available import spark_table

    path, frame, columns, pred, sub = _beta_rows(tmp_path, "tied", True, 97,
                                                 "score >= 0.1 and score < 0.3")
    with spark_table(str(path)) as table:
        full = ScoreRuns(**score_runs_table(table, columns, limit=200))
        mine = ScoreRuns(**finding_runs_table(table, columns, tuple(sub.conditions)))
        edges = deviation_edges(mine.score)
        got = comparison_sums_table(table, columns, edges, interval=mine)
    _, want = _brute_comparison(frame, edges, True)
    np.testing.assert_array_equal(got[0], want[0])
    _close(got[1], want[1])
    _close(got[2], want[2])
    _same_deviation(deviation_from_runs(full, mine, comparison=got),
                    subpopulation_deviation(pred, sub.index))

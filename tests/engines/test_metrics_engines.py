"""``mcviz metrics --engine duckdb|spark``: the calibration block and the classical measures.

The reference is :func:`mcviz.cumulative_differences` on the same rows. Scores are rounded to
two decimals (long tie runs) and the batches are 7 rows long, so tie runs straddle batches:
the path is evaluated at the end of each run only, as in memory. On Spark the range
partitions are about 97 rows (many partition edges, each between two tie runs).

The classical measures come from the engine's sums per distinct score
(:func:`~mcviz.engines.calibration.score_runs_table`): equal to the in-memory measures to 1e-9;
with more distinct scores than the limit, from fine score bins, where the measures
:mod:`mcviz.stats.measures.runs` calls exact stay exact and the equal-count ECE stays within
its bound (the binning itself is checked against an independent numpy binning in
``tests/stats/measures/test_measures_runs.py``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from spark_available import shared_spark

from mcviz import cumulative_differences
from mcviz.engines.base import Columns
from mcviz.engines.calibration import calibration_block, score_runs_table
from mcviz.engines.duckdb_engine import DuckDBEngine
from mcviz.engines.memory import resident_bytes
from mcviz.engines.tables import DuckDBTable
from mcviz.io import load_predictions
from mcviz.stats.binning import reliability_diagrams
from mcviz.stats.measures import classical_measures
from mcviz.stats.measures.runs import ScoreRuns, binned_bound, classical_from_runs, score_runs

KEYS = ("kuiper", "ks", "sigma", "kuiper_z", "p_value")


@pytest.fixture(scope="module")
def spark():
    """The process's local[2] session (skipped without Spark)."""
    return shared_spark()


@pytest.fixture(scope="module", params=[False, True], ids=["unweighted", "weighted"])
def rows(request, tmp_path_factory):
    rng = np.random.default_rng(5)
    n = 3_000
    score = np.round(rng.uniform(0, 1, n), 2)
    label = (rng.random(n) < np.clip(score + 0.1 * (score > 0.7), 0, 1)).astype(int)
    frame = pd.DataFrame({"score": score, "label": label})
    if request.param:
        frame["w"] = rng.uniform(0.2, 3.0, n)
    path = tmp_path_factory.mktemp("metrics") / "rows.parquet"
    frame.to_parquet(path, index=False)
    weight = "w" if request.param else False
    pred = load_predictions(frame, score="score", label="label", weight=weight)
    return path, Columns("score", "label", "w" if request.param else None), pred


@pytest.mark.parametrize("batch_rows", [7, 1 << 17])
def test_calibration_from_sorted_batches_equals_the_library(rows, batch_rows):
    path, columns, pred = rows
    expected = cumulative_differences(pred)
    engine = DuckDBEngine(path, columns, batch_rows=batch_rows)
    try:
        n, total, got = calibration_block(engine)
    finally:
        engine.close()
    assert n == pred.n
    assert total == pytest.approx(pred.weight_total, rel=1e-12)
    for key in KEYS:
        assert got[key] == pytest.approx(getattr(expected, key), rel=1e-12, abs=1e-15), key


def test_cli_metrics_engine_calibration_equals_numpy(cli, rows):
    path, columns, pred = rows
    weight = ["--weight", columns.weight] if columns.weight else ["--no-weight"]
    args = ["metrics", path, "--score", "score", "--label", "label", *weight, "--json"]
    # --memory-limit bounds the whole process, this test worker's: 600 MB above what it holds
    limit = f"{resident_bytes() // 10**6 + 600}MB"
    numpy_run, duck_run = cli(*args), cli(*args, "--engine", "duckdb", "--memory-limit", limit)
    assert numpy_run.status == 0, numpy_run.err
    assert duck_run.status == 0, duck_run.err
    a, b = numpy_run.json, duck_run.json
    assert (b["n"], b["engine"]) == (a["n"], "duckdb")
    assert b["classical_runs"] == {"runs": 101, "exact": True}  # scores rounded to 2 decimals
    assert list(b["classical"]) == list(a["classical"])
    for key, value in a["classical"].items():
        if isinstance(value, float | list):
            assert b["classical"][key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
        else:
            assert b["classical"][key] == value, key
    for key in KEYS:
        assert b["calibration"][key] == pytest.approx(a["calibration"][key], rel=1e-12), key
    assert b["calibration"]["p_value_kind"] == a["calibration"]["p_value_kind"]
    # the review's reliability diagrams, from the same sums: those of the rows
    expected = reliability_diagrams(pred, n_bins=(10, 20, 50), n_bootstrap=0).full
    for got, want in zip(b["reliability"]["diagrams"], expected, strict=True):
        assert got["n_bins"] == want.n_bins
        for field in ("count", "mean_score", "mean_response", "interval_low", "interval_high"):
            values = np.array([np.nan if v is None else v for v in got[field]], dtype=float)
            np.testing.assert_allclose(values, getattr(want, field), rtol=1e-12, atol=1e-15,
                                       equal_nan=True, err_msg=field)


def test_metrics_engine_refuses_what_it_does_not_compute(cli, rows):
    path = rows[0]
    run = cli("metrics", path, "--covariates", "score", "--engine", "duckdb")
    assert run.status == 2
    assert "use mcviz screen --engine duckdb" in run.err


@pytest.mark.spark
def test_spark_calibration_equals_the_library(spark, rows):
    from mcviz.engines.calibration import spark_calibration_block
    from mcviz.engines.spark_engine import SparkEngine

    path, columns, pred = rows
    expected = cumulative_differences(pred)
    # ~97-row range partitions: many edges between runs
    engine = SparkEngine(path, columns, spark=spark, partition_rows=97)
    n, total, got = spark_calibration_block(engine)
    assert n == pred.n
    assert total == pytest.approx(pred.weight_total, rel=1e-12)
    for key in KEYS:
        assert got[key] == pytest.approx(getattr(expected, key), rel=1e-12, abs=1e-15), key


EXACT_WHEN_BINNED = ("ece", "brier", "log_loss", "spiegelhalter_z", "calibration_in_the_large",
                     "oe_ratio", "mce", "ace", "brier_uncertainty", "n", "weight_total")


@pytest.fixture(scope="module")
def continuous(tmp_path_factory):
    """3,000 weighted rows with (almost surely) distinct scores."""
    rng = np.random.default_rng(8)
    n = 3_000
    frame = pd.DataFrame({"score": rng.beta(2, 5, n), "w": rng.uniform(0.2, 3.0, n)})
    frame["label"] = (rng.random(n) < np.clip(1.2 * frame["score"], 0, 1)).astype(int)
    path = tmp_path_factory.mktemp("runs") / "continuous.parquet"
    frame.to_parquet(path, index=False)
    return path, Columns("score", "label", "w"), load_predictions(frame, score="score",
                                                                  label="label", weight="w")


def _runs(table, columns, limit):
    try:
        return score_runs_table(table, columns, limit=limit)
    finally:
        table.close()


def _check_runs(parts, pred, limit):
    runs = ScoreRuns(**parts)
    expected = classical_measures(pred).as_json()
    got = classical_from_runs(runs).as_json()
    if runs.bins is None:  # one run per distinct score: the rows' own sums
        memory = score_runs(pred)
        for name in ("score", "count", "weight", "positive", "square_weight"):
            assert getattr(runs, name) == pytest.approx(getattr(memory, name), rel=1e-12), name
        keys = [k for k, v in expected.items() if isinstance(v, float)]
    else:
        assert runs.bins == limit and 0 < runs.score.size <= limit
        assert runs.count.sum() == pred.n and (np.diff(runs.score) > 0).all()
        keys = EXACT_WHEN_BINNED
        bound = binned_bound(runs).ece_equal_count
        assert abs(got["ece_equal_count"] - expected["ece_equal_count"]) <= bound + 1e-12
    for key in keys:
        assert got[key] == pytest.approx(expected[key], rel=1e-9, abs=1e-12), key


@pytest.mark.parametrize("limit", [1 << 20, 200], ids=["exact", "binned"])
def test_duckdb_runs_give_the_classical_measures(continuous, rows, limit):
    for path, columns, pred in (continuous, rows):
        parts = _runs(DuckDBTable(path), columns, limit)
        assert (parts["bins"] is not None) == (limit == 200 and path == continuous[0])
        _check_runs(parts, pred, limit)


@pytest.mark.spark
def test_spark_runs_equal_duckdb_runs(spark, continuous):
    from mcviz.engines.tables import SparkTable

    path, columns, pred = continuous
    table = SparkTable(path, spark=spark)
    results = {limit: score_runs_table(table, columns, limit=limit) for limit in (1 << 20, 200)}
    for limit, spark in results.items():
        duck = _runs(DuckDBTable(path), columns, limit)
        for name, value in duck.items():
            assert spark[name] == pytest.approx(value, rel=1e-12), name
        _check_runs(spark, pred, limit)


@pytest.mark.parametrize("limit", [1 << 20, 200], ids=["exact", "binned"])
def test_run_sums_of_a_sorted_pass_equal_the_group_by(continuous, rows, limit):
    """``compare --engine``'s run sums from score-sorted batches of 7 rows (tie runs and bins
    cross batch ends) = :func:`score_runs_table`'s ``GROUP BY`` (distinct scores or bins)."""
    from mcviz.engines.calibration import RunSums

    for path, columns, _ in (continuous, rows):
        want = _runs(DuckDBTable(path), columns, limit)
        frame = pd.read_parquet(path).sort_values("score", kind="stable")
        weight = frame["w"] if columns.weight else pd.Series(1.0, index=frame.index)
        summed = RunSums(binned=want["bins"] is not None, limit=limit,
                         weighted=columns.weight is not None)
        for start in range(0, len(frame), 7):
            part = slice(start, start + 7)
            summed.add(frame["score"].to_numpy(float)[part], frame["label"].to_numpy(float)[part],
                       weight.to_numpy(float)[part])
        got = summed.finish()
        assert got.keys() == want.keys()
        for name, value in want.items():
            assert got[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name

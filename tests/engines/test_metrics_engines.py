"""``mcviz metrics --engine duckdb|spark``: the calibration block from score-sorted batches.

The reference is :func:`mcviz.cumulative_differences` on the same rows. Scores are rounded to
two decimals (long tie runs) and the batches are 7 rows long, so tie runs straddle batches:
the path is evaluated at the end of each run only, as in memory. On Spark the range
partitions are about 97 rows (many partition edges, each between two tie runs).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from spark_available import spark_table

from mcviz import cumulative_differences
from mcviz.engines.base import Columns
from mcviz.engines.calibration import calibration_block
from mcviz.engines.duckdb_engine import DuckDBEngine
from mcviz.io import load_predictions

KEYS = ("kuiper", "ks", "sigma", "kuiper_z", "p_value")


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
    path, columns, _ = rows
    weight = ["--weight", columns.weight] if columns.weight else ["--no-weight"]
    args = ["metrics", path, "--score", "score", "--label", "label", *weight, "--json"]
    numpy_run, duck_run = cli(*args), cli(*args, "--engine", "duckdb", "--memory-limit", "300MB")
    assert numpy_run.status == 0, numpy_run.err
    assert duck_run.status == 0, duck_run.err
    a, b = numpy_run.json, duck_run.json
    assert (b["n"], b["engine"], b["classical"]) == (a["n"], "duckdb", None)
    assert "classical measures" in duck_run.err
    for key in KEYS:
        assert b["calibration"][key] == pytest.approx(a["calibration"][key], rel=1e-12), key
    assert b["calibration"]["p_value_kind"] == a["calibration"]["p_value_kind"]


def test_metrics_engine_refuses_what_it_does_not_compute(cli, rows):
    path = rows[0]
    run = cli("metrics", path, "--covariates", "score", "--engine", "duckdb")
    assert run.status == 2
    assert "use mcviz screen --engine duckdb" in run.err


@pytest.mark.spark
def test_spark_calibration_equals_the_library(rows):
    from mcviz.engines.calibration import spark_calibration_block
    from mcviz.engines.spark_engine import SparkEngine

    path, columns, pred = rows
    expected = cumulative_differences(pred)
    with spark_table(path) as table:  # ~97-row range partitions: many edges between runs
        engine = SparkEngine(path, columns, spark=table.spark, partition_rows=97)
        n, total, got = spark_calibration_block(engine)
    assert n == pred.n
    assert total == pytest.approx(pred.weight_total, rel=1e-12)
    for key in KEYS:
        assert got[key] == pytest.approx(getattr(expected, key), rel=1e-12, abs=1e-15), key

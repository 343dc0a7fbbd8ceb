"""``mcviz decide --engine --no-fix``: the engine's sums give the in-memory net benefit.

The reference is :func:`mcviz.decision.net_benefit` on the same rows (weighted, with text
labels naming the positive class, and scores tied at a threshold so that ``score >= t`` is
tested exactly there).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from spark_available import spark_table

from mcviz.decision import net_benefit
from mcviz.decision.at_scale import net_benefit_table
from mcviz.engines.base import Columns
from mcviz.engines.tables import DuckDBTable
from mcviz.io import load_predictions

THRESHOLDS = [0.1, 0.25, 0.5]
COLUMNS = Columns("score", "outcome", "w", positive="churned", negative="stayed")


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    rng = np.random.default_rng(3)
    n = 5_000
    score = np.round(rng.uniform(0, 1, n), 2)  # ties, many exactly at 0.1, 0.25 and 0.5
    outcome = np.where(rng.random(n) < score, "churned", "stayed")
    frame = pd.DataFrame({"score": score, "outcome": outcome, "w": rng.uniform(0.2, 3.0, n)})
    path = tmp_path_factory.mktemp("decide") / "rows.parquet"
    frame.to_parquet(path, index=False)
    pred = load_predictions(frame, score="score", label="outcome", positive="churned",
                            weight="w")
    return path, net_benefit(pred, thresholds=THRESHOLDS)


def assert_same(got, expected) -> None:
    np.testing.assert_array_equal(got.thresholds, expected.thresholds)
    for name in ("model", "treat_all", "treat_none", "treated"):
        np.testing.assert_allclose(getattr(got, name), getattr(expected, name), rtol=0,
                                   atol=1e-12, err_msg=name)
    assert got.n == expected.n
    assert got.weight_total == pytest.approx(expected.weight_total, rel=1e-12)


def test_duckdb_net_benefit_equals_the_in_memory_one(rows):
    path, expected = rows
    with DuckDBTable(path) as table:
        assert_same(net_benefit_table(table, COLUMNS, thresholds=THRESHOLDS), expected)


def test_cli_decide_engine_json_equals_numpy(cli, rows):
    path, _ = rows
    args = ["decide", path, "--score", "score", "--label", "outcome", "--positive", "churned",
            "--weight", "w", "--thresholds", "0.1,0.25,0.5", "--no-fix", "--json"]
    numpy_run, duck_run = cli(*args), cli(*args, "--engine", "duckdb")
    assert numpy_run.status == 0, numpy_run.err
    assert duck_run.status == 0, duck_run.err
    assert duck_run.json["engine"] == "duckdb"
    assert duck_run.json["thresholds"] == numpy_run.json["thresholds"]
    assert duck_run.json["n"] == numpy_run.json["n"]
    for key, values in numpy_run.json["net_benefit"].items():
        np.testing.assert_allclose(duck_run.json["net_benefit"][key], values, rtol=0, atol=1e-12)


def test_decide_engine_needs_no_fix_and_valid_rows(cli, rows, tmp_path):
    path, _ = rows
    run = cli("decide", path, "--label", "outcome", "--positive", "churned", "--engine",
              "duckdb")
    assert run.status == 2
    assert "add --no-fix" in run.err
    frame = pd.read_parquet(path)
    frame.loc[::250, "w"] = -1.0
    frame.to_parquet(tmp_path / "bad.parquet")
    run = cli("decide", tmp_path / "bad.parquet", "--label", "outcome", "--positive",
              "churned", "--weight", "w", "--no-fix", "--engine", "duckdb")
    assert run.status == 2
    assert "column 'w': 20 of 5,000 rows are missing, infinite, zero or negative" in run.err


@pytest.mark.spark
def test_spark_net_benefit_equals_the_in_memory_one(rows):
    with spark_table(rows[0]) as table:
        assert_same(net_benefit_table(table, COLUMNS, thresholds=THRESHOLDS), rows[1])

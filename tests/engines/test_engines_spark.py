"""Spark engine (PySpark local[2], bound to 127.0.0.1, UI off) against the numpy reference.

Skipped with a reason when pyspark or Java is missing, except on CI (CI=true), where a missing
Spark is a failure: .ci/run must install both.
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
from spark_available import shared_spark, skip_module_without_spark

from mcviz.engines import Columns, NumpyEngine
from mcviz.subpopulations import Condition, generate_subpopulations

skip_module_without_spark()

from test_engines import COLUMNS, HANDMADE, assert_same, assert_same_m, make_frame  # noqa: E402

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    return shared_spark()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("spark") / "data.parquet"
    frame = make_frame(400, seed=7)
    frame.to_parquet(path)
    numpy_engine = NumpyEngine(path, COLUMNS)
    generated = generate_subpopulations(numpy_engine.pred, n_subpopulations=8, seed=1)
    subpopulations = list(HANDMADE) + [list(s.conditions) for s in generated][1:]
    return path, numpy_engine, subpopulations


def test_spark_session_is_local(spark):
    conf = spark.sparkContext.getConf()
    assert spark.sparkContext.master == "local[2]"
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert conf.get("spark.ui.enabled") == "false"


def test_spark_exact_and_histogram_agree_with_numpy(spark, data):
    from mcviz.engines.spark_engine import SparkEngine

    path, numpy_engine, subpopulations = data
    engine = SparkEngine(path, COLUMNS, spark=spark)
    exact = engine.screen(subpopulations)
    assert exact.engine == "spark"
    assert exact.exact
    assert_same(numpy_engine.screen(subpopulations), exact)
    hist = engine.screen(subpopulations, exact=False, bins=8)
    assert_same(numpy_engine.screen(subpopulations, exact=False, bins=8), hist)
    reference = numpy_engine.screen(subpopulations).table["kuiper"]
    assert (hist.table["kuiper"] <= reference + 1e-12).all()
    assert (reference <= hist.table["kuiper"] + hist.table["kuiper_bound"] + 1e-12).all()


def test_spark_invalid_rows_and_text_labels(spark, tmp_path):
    from mcviz.engines.spark_engine import SparkEngine
    from mcviz.errors import ValidationError

    frame = make_frame(60, seed=2)
    frame["label"] = np.where(frame["label"] == 1, "yes", "no")
    frame.loc[[4, 5], "score"] = -0.5
    path = tmp_path / "bad.parquet"
    frame.to_parquet(path)
    columns = Columns("score", "label", "weight", positive="yes", negative="no")
    with pytest.raises(ValidationError, match=r"2 of 60 rows lie outside \[0, 1\]"):
        SparkEngine(path, columns, spark=spark).screen([[]])
    subpopulations = [[], [Condition("cat", "not in", ("a",))]]
    got = SparkEngine(path, columns, spark=spark, drop_invalid=True).screen(subpopulations)
    expected = NumpyEngine(path, columns, drop_invalid=True).screen(subpopulations)
    assert got.n == 58
    assert got.n_dropped == 2
    assert_same(expected, got)


def test_a_missing_java_is_a_message_not_a_traceback(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "small.parquet"
    make_frame(200).to_parquet(path)
    completed = subprocess.run(
        [sys.executable, "-m", "mcviz", "screen", str(path), "--engine", "spark",
         "--out", str(tmp_path / "out.parquet")],
        env={**os.environ, "JAVA_HOME": str(tmp_path / "no-java")},
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert completed.returncode == 2
    assert "could not start a local Spark" in completed.stderr
    assert "Java 17+ runtime" in completed.stderr
    assert "Traceback" not in completed.stderr


def _heavy_ties_frame(n: int, seed: int):
    # 40% of the rows share score 0.5 and the rest take 9 other values: equal-count cuts into
    # 8 partitions would split the run at 0.5 (and others) - range partitions must not.
    import pandas as pd

    rng = np.random.default_rng(seed)
    score = np.where(rng.random(n) < 0.4, 0.5, rng.integers(0, 9, n) / 8)
    frame = pd.DataFrame({"score": score, "x": rng.normal(size=n),
                          "g": rng.choice(["u", "v", "w"], n),
                          "weight": rng.random(n) + 0.5})
    frame["label"] = (rng.random(n) < np.clip(score + 0.1 * (frame["g"] == "v"), 0, 1)).astype(int)
    return frame


@pytest.mark.parametrize("case", ["ordinary", "sigma0_zero"])
def test_spark_m_equals_the_library_with_ties_across_partitions(spark, tmp_path, case):
    from test_engines import _sigma0_zero_frame

    from mcviz.engines.spark_engine import SparkEngine
    from mcviz.stats.multical import multicalibration

    frame = _heavy_ties_frame(4000, 3) if case == "ordinary" else _sigma0_zero_frame()
    path = tmp_path / "ties.parquet"
    frame.to_parquet(path)
    pred = NumpyEngine(path, COLUMNS).pred
    generated = generate_subpopulations(pred, covariates=["x", "g"] if case == "ordinary"
                                        else ["x"], n_subpopulations=30, seed=2)
    expected = multicalibration(pred, list(generated)[1:])
    engine = SparkEngine(path, COLUMNS, spark=spark, partition_rows=250)  # 16 partitions asked
    got = engine.screen(list(generated)[1:])
    parts = engine.partitions
    # several non-empty partitions (sigma0_zero has only the scores 0 and 1), each whole runs
    assert len(parts) >= (3 if case == "ordinary" else 1)
    assert sum(rows for _, _, rows in parts) == len(frame)
    assert all(hi < lo for (_, hi, _), (lo, _, _) in itertools.pairwise(parts))
    # each partition holds every row of each of its scores
    for low, high, rows in parts:
        assert rows == int(((frame["score"] >= low) & (frame["score"] <= high)).sum())
    assert_same_m(got, expected, sigma0_zero=case == "sigma0_zero")


def test_search_and_report_on_spark_give_duckdbs(spark, tmp_path, monkeypatch):
    """``mcviz search|report --engine spark`` (4,000 of 6,000 rows sampled: the held-out rows
    outside the sample too) in this module's session: DuckDB's JSON to 1e-9, the engine's
    name aside. tests/engines/test_search_engines.py and test_report_engines.py check DuckDB's
    against the in-memory search and report and a brute force over the rows not searched."""
    import contextlib
    import io
    import json
    import sys
    from pathlib import Path

    from mcviz.cli import main
    from mcviz.engines.spark_engine import SparkEngine

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from bench_find import planted

    frame, _ = planted(6000, "level", 0.3, seed=3)
    path = tmp_path / "planted.parquet"
    frame.to_parquet(path)
    monkeypatch.setattr(SparkEngine, "close", lambda self: None)  # the session is shared

    def run(command, engine):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = main([command, str(path), "--score", "score", "--label", "label",
                           "--no-weight", "--findings", "2", "--seed", "2", "--json",
                           "--engine", engine, "--sample-rows", "4000"])
        assert status == 0, (command, engine)
        return json.loads(out.getvalue())

    def close(a, b, where):
        if isinstance(b, dict):
            assert a.keys() == b.keys(), where
            for key in b:
                close(a[key], b[key], f"{where}.{key}")
        elif isinstance(b, float):
            assert abs(a - b) <= 1e-9 * max(1.0, abs(b)), (where, a, b)
        elif isinstance(b, list):
            assert len(a) == len(b), where
            for k, (x, y) in enumerate(zip(a, b, strict=True)):
                close(x, y, f"{where}[{k}]")
        else:
            assert a == b, (where, a, b)

    for command in ("search", "report"):
        want, got = run(command, "duckdb"), run(command, "spark")
        assert got["findings"][0]["description"] == "region == r7"  # the planted group
        assert got["held_out"] == {"engine": "spark", "rows": 6000 - 2800}
        if command == "search":
            del want["search"]["seconds"], got["search"]["seconds"]
        close(got, json.loads(json.dumps(want).replace("duckdb", "spark")), command)

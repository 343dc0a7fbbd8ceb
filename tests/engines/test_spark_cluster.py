"""A standalone Spark cluster (a master and two workers on this machine) gives the local answer.

The cluster is started with Spark's own daemon script (:func:`spark_available.standalone_cluster`),
and ``mcviz screen``, ``monitor``, ``search`` and ``compare`` run against it with
``--spark-master spark://...`` in a process of their own (a process holds one SparkSession).
The reference of screen and monitor is the in-memory answer (``--engine numpy``), which Spark
``local[2]`` equals (``test_engines_spark.py``, ``test_monitor_engines.py``): the screened
subpopulations' descriptions, sizes, D and sigma to 1e-9, and the monitor's alarms, change
windows and adjusted p identical. Search and compare sample 12,000 of the rows (so the engine
confirms on the rows outside the sample): their reference is DuckDB's JSON for the same sample
(to 1e-9, the engine's name aside), itself checked against memory and brute force in
``test_search_engines.py`` and ``test_compare_engines.py``. 20,000 rows; skipped
when Spark, Java or the scripts are missing, and unless ``MCVIZ_SPARK_CLUSTER=1`` (it takes
minutes: 22 min measured at load 8-17 on 2 cores, about 7 for the start and screen, 4 for monitor,
3 for search and 7 for compare; too long for every CI run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from spark_available import standalone_cluster
from test_monitor_engines import assert_same_monitor_json

from mcviz.engines.results import read_screen

pytestmark = pytest.mark.spark
OPT_IN = "MCVIZ_SPARK_CLUSTER"

MONITOR = ["--time", "when", "--segments", "group", "--filter", "age >= 60", "--period", "week",
           "--draws", "1999", "--no-weight", "--json"]


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    rng = np.random.default_rng(11)
    n = 20_000
    day = rng.integers(0, 200, n)
    group = rng.choice(["a", "b", "c"], n)
    age = rng.uniform(18, 90, n)
    score = rng.uniform(0.05, 0.95, n)
    shift = 0.15 * ((group == "b") & (day >= 120)) + 0.1 * (age > 70)
    frame = pd.DataFrame({
        "score": score, "label": (rng.random(n) < np.clip(score + shift, 0, 1)).astype(int),
        "when": (pd.Timestamp("2024-01-01") + pd.to_timedelta(day, unit="D")).astype(
            "datetime64[us]"),
        "group": group, "age": age})
    # a challenger that knows the old age effect and misses group b's drift (after the draws
    # above, so the other columns are the same)
    frame["score_b"] = np.clip(score + 0.1 * (age > 70) - 0.1 * (group == "c")
                               + rng.normal(0.0, 0.02, n), 0.01, 0.99)
    path = tmp_path_factory.mktemp("cluster") / "log.parquet"
    frame.to_parquet(path, index=False)
    return path


def _on_cluster(url, env, *argv):
    run = subprocess.run([sys.executable, "-m", "mcviz", *map(str, argv), "--engine", "spark",
                          "--spark-master", url], env=env, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    return run


SAMPLED = ["--label", "label", "--no-weight", "--covariates", "group,age", "--sample-rows",
           "12000", "--json"]
SEARCH = ["search", "--score", "score", *SAMPLED, "--findings", "2", "--seed", "2"]
COMPARE = ["compare", "--score", "score", "--score-b", "score_b", *SAMPLED]


def _assert_close(got, want, where=""):
    """The same keys and values, numbers to 1e-9."""
    if isinstance(want, dict):
        assert got.keys() == want.keys(), where
        for key in want:
            _assert_close(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for k, (a, b) in enumerate(zip(got, want, strict=True)):
            _assert_close(a, b, f"{where}[{k}]")
    elif isinstance(want, float):
        assert abs(got - want) <= 1e-9 * max(1.0, abs(want)), (where, got, want)
    else:
        assert got == want, (where, got, want)


def _as_spark(output: dict) -> dict:
    """DuckDB's JSON with the engine's name as Spark's (timings left out)."""
    output = json.loads(json.dumps(output).replace("duckdb", "spark"))
    output.get("search", {}).pop("seconds", None)
    return output


def test_cluster_screen_monitor_search_and_compare_equal_the_local_answer(cli, logged, tmp_path):
    if not os.environ.get(OPT_IN):  # three JVMs and two drivers: minutes, not seconds
        pytest.skip(f"set {OPT_IN}=1 to start a master and two workers (measured 22 min at "
                    "load 8-17 on 2 cores)")
    screen = ["screen", logged, "--score", "score", "--label", "label", "--covariates",
              "group,age", "--subpopulations", "200"]
    local = cli(*screen, "--out", tmp_path / "local.parquet")
    assert local.status == 0, local.err
    monitor_local = cli("monitor", logged, *MONITOR)
    assert monitor_local.status == 0, monitor_local.err
    sampled = {}
    for command in (SEARCH, COMPARE):
        local = cli(command[0], logged, *command[1:], "--engine", "duckdb")
        assert local.status == 0, local.err
        sampled[command[0]] = _as_spark(local.json)
    with standalone_cluster(tmp_path / "spark") as (url, env):
        _on_cluster(url, env, *screen, "--out", tmp_path / "cluster.parquet")
        monitor_cluster = json.loads(_on_cluster(url, env, "monitor", logged, *MONITOR).stdout)
        on_cluster = {command[0]: _as_spark(json.loads(_on_cluster(
            url, env, command[0], logged, *command[1:]).stdout)) for command in (SEARCH, COMPARE)}
    for command, want in sampled.items():
        _assert_close(on_cluster[command], want, command)
    assert sampled["search"]["held_out"] == {"engine": "spark", "rows": 20_000 - 8400}
    assert "confirmed by spark on the" in sampled["compare"]["notice"]
    a, b = read_screen(tmp_path / "local.parquet"), read_screen(tmp_path / "cluster.parquet")
    assert (b.engine, b.n, b.argmax) == ("spark", a.n, a.argmax)
    assert list(b.table["description"]) == list(a.table["description"])
    assert list(b.table["size"]) == list(a.table["size"])
    for column in ("kuiper", "sigma"):
        np.testing.assert_allclose(b.table[column], a.table[column], rtol=1e-9, atol=1e-12)
    assert b.metric == pytest.approx(a.metric, rel=1e-9)
    assert any(s["alarm"] for s in monitor_local.json["segments"])  # the planted drift, found
    assert_same_monitor_json(monitor_local.json, monitor_cluster)

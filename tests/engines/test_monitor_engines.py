"""``mcviz monitor --engine``: cell sums from one grouped pass give the in-memory monitor.

The reference is :func:`mcviz.monitor.monitor_calibration` on the same rows with the null drawn
the same way (``null="normal"``, the cell-level draws the engines use; in memory ``"auto"``
picks them too above 2e7 rows x draws): the same periods, reference, segments and
descriptions, identical alarms, first alarms and adjusted p-values, shifts and intervals to
1e-9. The data plant a drift in one segment after day 120, with missing segment values, and
times at every second of the day (so that week and month boundaries are crossed inside days).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from spark_available import spark_table

from mcviz.engines.base import Columns
from mcviz.engines.memory import resident_bytes
from mcviz.engines.tables import DuckDBTable
from mcviz.io import load_predictions
from mcviz.monitor import monitor_calibration
from mcviz.monitor.at_scale import monitor_table
from mcviz.settings import MonitorSettings

CASES = [
    ("week", ("group",), (), None),
    ("month", ("group",), ("age >= 60",), "w"),  # overlapping segments, weighted
    (7, (), ("age >= 60", 'group == "b"'), None),  # equal-width periods
]


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    rng = np.random.default_rng(1)
    n = 20_000
    day = rng.integers(0, 200, n)
    group = rng.choice(["a", "b", "c"], n).astype(object)
    group[::97] = None
    score = rng.uniform(0.05, 0.95, n)
    drift = (group == "b") & (day >= 120)
    label = (rng.random(n) < np.clip(score + 0.15 * drift, 0, 1)).astype(int)
    when = (pd.Timestamp("2024-01-01") + pd.to_timedelta(day, unit="D")
            + pd.to_timedelta(rng.integers(0, 86_400, n), unit="s"))
    frame = pd.DataFrame({"score": score, "label": label, "when": when.astype("datetime64[us]"),
                          "group": group, "age": rng.uniform(18, 90, n),
                          "w": rng.uniform(0.5, 2.0, n)})
    path = tmp_path_factory.mktemp("monitor") / "log.parquet"
    frame.to_parquet(path, index=False)
    return path, pd.read_parquet(path)


def in_memory(frame, settings, weight):
    pred = load_predictions(frame, score="score", label="label", weight=weight or False,
                            covariates=["when", "group", "age"])
    return monitor_calibration(pred, settings=settings)


def assert_same_monitor(got, expected) -> None:
    assert got.periods.labels == expected.periods.labels
    assert got.periods.n_reference == expected.periods.n_reference
    assert got.n == expected.n
    assert [s.description for s in got.series] == [s.description for s in expected.series]
    for a, b in zip(got.series, expected.series, strict=True):
        assert (a.alarm, a.first_alarm, a.change_start, a.change_end) == (
            b.alarm, b.first_alarm, b.change_start, b.change_end), a.description
        assert a.p_adjusted == b.p_adjusted
        np.testing.assert_allclose([a.shift, a.ci_low, a.ci_high, a.kuiper_z],
                                   [b.shift, b.ci_low, b.ci_high, b.kuiper_z], rtol=0, atol=1e-9)
        np.testing.assert_array_equal(a.count, b.count)
        np.testing.assert_allclose(a.z, b.z, rtol=0, atol=1e-9)
    assert got.threshold == pytest.approx(expected.threshold, abs=1e-9)


@pytest.mark.parametrize(("period", "segments", "filters", "weight"), CASES)
def test_duckdb_monitor_equals_the_in_memory_monitor(logged, period, segments, filters,
                                                     weight):
    path, frame = logged
    settings = MonitorSettings(period=period, segments=segments, filters=filters, draws=199,
                               null="normal", time="when")
    expected = in_memory(frame, settings, weight)
    assert any(s.alarm for s in expected.series)  # the planted drift is found
    with DuckDBTable(path) as table:
        got = monitor_table(table, Columns("score", "label", weight), time="when",
                            settings=settings)
    assert_same_monitor(got, expected)


def test_cli_monitor_engine_json_equals_numpy(cli, logged):
    """Above 2e7 rows x draws the in-memory monitor draws the cells as the engines do."""
    path, _ = logged
    args = [path, "--time", "when", "--segments", "group", "--filter", "age >= 60",
            "--period", "week", "--draws", "1999", "--no-weight", "--json"]
    numpy_run = cli("monitor", *args)
    # --memory-limit bounds the whole process, this test worker's: 600 MB above what it holds
    duck_run = cli("monitor", *args, "--engine", "duckdb", "--memory-limit",
                   f"{resident_bytes() // 10**6 + 600}MB")
    assert numpy_run.status == 0, numpy_run.err
    assert duck_run.status == 0, duck_run.err
    assert_same_monitor_json(numpy_run.json, duck_run.json)


def assert_same_monitor_json(a: dict, b: dict) -> None:
    """Two ``mcviz monitor --json`` outputs agree: alarms, windows, adjusted p; shifts to 1e-9."""
    for key in ("n", "time", "period", "periods", "reference_end", "alpha", "draws"):
        assert a[key] == b[key], key
    for x, y in zip([a["full"], *a["segments"]], [b["full"], *b["segments"]], strict=True):
        for key in ("description", "alarm", "first_alarm", "change_start", "change_end",
                    "p_adjusted"):
            assert x[key] == y[key], key
        assert x["shift"] == pytest.approx(y["shift"], abs=1e-9)


def test_engine_monitor_refusals_are_one_line(cli, logged, tmp_path):
    path, frame = logged
    run = cli("monitor", path, "--time", "when", "--engine", "duckdb", "--search-reference")
    assert run.status == 2
    assert "--search-reference needs the rows in memory" in run.err
    frame.assign(when=frame["when"].astype(str)).to_parquet(tmp_path / "text.parquet")
    run = cli("monitor", tmp_path / "text.parquet", "--time", "when", "--engine", "duckdb")
    assert run.status == 2
    assert "column 'when' holds string values" in run.err
    frame.assign(score=frame["score"].where(frame.index % 100 != 0)).to_parquet(
        tmp_path / "missing.parquet")
    run = cli("monitor", tmp_path / "missing.parquet", "--time", "when", "--engine", "duckdb")
    assert run.status == 2
    assert "column 'score': 200 of 20,000 rows are missing or NaN" in run.err


@pytest.mark.spark
def test_spark_monitor_equals_the_in_memory_monitor(logged):
    path, frame = logged
    with spark_table(path) as table:
        for period, segments, filters, weight in CASES:
            settings = MonitorSettings(period=period, segments=segments, filters=filters,
                                       draws=199, null="normal", time="when")
            got = monitor_table(table, Columns("score", "label", weight), time="when",
                                settings=settings)
            assert_same_monitor(got, in_memory(frame, settings, weight))

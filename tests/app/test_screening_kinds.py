"""The Screening page opens every kind of engine table and drills into a row by its rows alone.

``mcviz search --engine duckdb --out`` (findings, held-out numbers on every held-out row) and
``mcviz monitor --engine duckdb --out`` (one row per series) are written from 6,000 planted
rows (``x > 0.8`` under-predicted by 0.25; segment ``g == "v"`` drifting from day 60). The
page must show each table's headline, and its drill-down must read exactly the chosen row's
rows: the count it reports is the table's size, and the size is the planted group's own count.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from test_pages import metrics, new_app, no_exceptions, shown


def _planted(tmp_path):
    rng = np.random.default_rng(21)
    n = 6_000
    score = rng.uniform(0.05, 0.9, n).round(3)
    x = rng.uniform(size=n).round(3)
    day = rng.integers(0, 100, n)
    g = rng.choice(["u", "v"], n)
    truth = np.clip(score + 0.25 * (x > 0.8) + 0.2 * ((g == "v") & (day >= 60)), 0, 1)
    frame = pd.DataFrame({"score": score, "label": (rng.random(n) < truth).astype(int), "x": x,
                          "g": g, "when": pd.Timestamp("2025-01-06")
                          + pd.to_timedelta(day, unit="D")})
    data = tmp_path / "logs.parquet"
    frame.to_parquet(data, row_group_size=1000)
    return data, frame


def _open(at, path):
    at.file_uploader(key="screen_upload").set_value(
        (path.name, path.read_bytes(), "application/octet-stream")).run()
    no_exceptions(at)
    return " ".join(m.value for m in at.markdown)


def test_search_and_monitor_tables_open_and_drill_down(tmp_path, capsys, monkeypatch):
    from mcviz.cli import main

    monkeypatch.setenv("MCVIZ_DATA_ROOTS", str(tmp_path))
    data, frame = _planted(tmp_path)
    found, watched = tmp_path / "found.parquet", tmp_path / "watched.parquet"
    assert main(["search", str(data), "--score", "score", "--label", "label", "--covariates",
                 "x,g", "--engine", "duckdb", "--out", str(found), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["findings"][0]
    assert main(["monitor", str(data), "--time", "when", "--segments", "g", "--no-weight",
                 "--engine", "duckdb", "--out", str(watched), "--json"]) == 0
    watch = json.loads(capsys.readouterr().out)
    assert [s["description"] for s in watch["segments"] if s["alarm"]] == ["g == v"]
    alarms = sum(s["alarm"] for s in [watch["full"], *watch["segments"]])

    at = new_app()
    at.switch_page("pages/screening.py").run()
    no_exceptions(at)
    markdown = _open(at, found)
    assert metrics(at)["Rows"] == "6,000"
    assert first["description"] in shown(at.info[0].value)
    assert "confirmed on the rows the search never saw" in at.info[0].value
    written = pd.read_parquet(found).iloc[1]  # the first finding's interval, in points
    interval = at.dataframe[0].value["95% interval (points)"].iloc[0]
    low, high = (float(v.replace("−", "-")) for v in interval.split(" to "))
    assert low == pytest.approx(100 * written["ci_low"], rel=2e-3)  # three digits
    assert high == pytest.approx(100 * written["ci_high"], rel=2e-3)
    size = first["all_rows_size"] if "all_rows_size" in first else first["size"]
    planted = int((frame["x"] > 0.8).sum())
    assert abs(size - planted) <= 0.05 * planted  # the planted group, found
    assert f"{size:,} rows read" in markdown  # the drill-down read the finding's rows alone
    assert metrics(at)["p-value"] == "not tested"  # its own p is no test (rows searched)

    markdown = _open(at, watched)
    assert metrics(at)["Alarms"] == str(alarms)
    assert "first: **g == v**" in shown(at.info[0].value)  # the alarmed segment, not the whole
    assert f"{int((frame['g'] == 'v').sum()):,} rows read" in markdown  # its rows alone

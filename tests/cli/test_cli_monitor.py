"""``mcviz monitor --json``: the keys of the contract, a planted drift, and bad input (exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from mcviz import cli


def _frame(seed=0, n=6000, days=120, shift=0.25):
    rng = np.random.default_rng(seed)
    day = rng.integers(0, days, n)
    region = rng.choice(["north", "south", "east"], n)
    score = rng.uniform(0.1, 0.9, n)
    drift = (region == "east") & (day >= 70)
    label = (rng.random(n) < np.clip(score + shift * drift, 0, 1)).astype(int)
    when = (pd.Timestamp("2026-01-05") + pd.to_timedelta(day, unit="D")).strftime("%Y-%m-%d")
    return pd.DataFrame({"score": score, "label": label, "date": when, "region": region,
                         "x": rng.normal(size=n)})


@pytest.fixture(scope="module")
def drift_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("monitor") / "drift.csv"
    _frame().to_csv(path, index=False)
    return path


def test_json_keys_and_the_planted_drift(drift_csv, capsys):
    status = cli.main(["monitor", str(drift_csv), "--score", "score", "--label", "label",
                       "--time", "date", "--period", "week", "--segments", "region",
                       "--filter", "region != east and x >= 0", "--draws", "199", "--json"])
    assert status == 0
    output = json.loads(capsys.readouterr().out)
    assert list(output) == ["n", "time", "period", "periods", "reference_end", "alpha", "draws",
                            "full", "segments", "notices"]
    assert output["periods"][:2] == ["2026-01-05", "2026-01-12"]
    assert output["reference_end"] in output["periods"]
    assert (output["alpha"], output["draws"]) == (0.05, 199)
    for item in output["segments"]:
        assert list(item) == ["description", "alarm", "first_alarm", "change_start",
                              "change_end", "shift", "ci_low", "ci_high", "p_adjusted",
                              "sentence"]
        if not item["alarm"]:  # the shift's window: every monitored period
            assert item["change_start"] == output["reference_end"]
            assert item["change_end"] == output["periods"][-1]
    by_name = {item["description"]: item for item in output["segments"]}
    assert set(by_name) == {"region == east", "region == north", "region == south",
                           "region ≠ east and x ≥ 0"}
    east = by_name["region == east"]
    planted = "2026-03-16"  # day 70 after Monday 2026-01-05 is Monday 2026-03-16
    assert east["alarm"]
    assert planted <= east["first_alarm"] <= "2026-04-20"
    assert east["ci_low"] < east["shift"] < east["ci_high"]
    assert east["p_adjusted"] <= 0.05
    assert not any(item["alarm"] for name, item in by_name.items() if name != "region == east")
    assert len(output["full"]["count"]) == len(output["periods"])
    # the change window is the one the shift was measured over: recomputed from the rows
    # (mean of label - score over the window minus over the reference periods, unweighted)
    assert planted <= east["change_start"] <= east["change_end"]
    frame = _frame()
    frame = frame[frame["region"] == "east"]
    residual = frame["label"] - frame["score"]
    labels = output["periods"]
    after = labels.index(east["change_end"]) + 1
    end = labels[after] if after < len(labels) else "9999"
    window = (frame["date"] >= east["change_start"]) & (frame["date"] < end)
    reference = frame["date"] < output["reference_end"]
    shift = residual[window].mean() - residual[reference].mean()
    assert east["shift"] == pytest.approx(shift, rel=1e-9)
    assert east["change_start"] in east["sentence"]


def test_text_output_is_sentences_and_a_compact_table(drift_csv, capsys):
    status = cli.main(["monitor", str(drift_csv), "--score", "score", "--label", "label",
                       "--time", "date", "--segments", "region", "--draws", "199"])
    assert status == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("Monitored 6,000 rows over ")
    assert "2 of 4 series alarmed" in lines[0] + " " + lines[1]  # east, and so the population
    # the alarmed series' sentences first, in words, then one table row per series
    bullets = [line for line in lines if line.startswith("- ")]
    assert len(bullets) == 4
    assert any(line.startswith("- Segment region is east: from the week of 2026-")  # words
               for line in bullets[:2])
    assert all("no alarm" in line for line in bullets[2:])
    header = next(line for line in lines if line.startswith("series"))
    assert "window of the shift" in header
    table = lines[lines.index(header) + 1:]
    assert [row.split()[0] for row in table] == ["full", "region", "region", "region"]
    assert "=" not in header
    assert not any("periods:" in line or line.startswith("  - ") for line in lines)  # no dump


def test_inferred_time_column_and_table_output(drift_csv, capsys):
    status = cli.main(["monitor", str(drift_csv), "--score", "score", "--label", "label",
                       "--period", "month", "--draws", "99"])
    assert status == 0
    assert "the reference ends at 2026-02-01" in capsys.readouterr().out


@pytest.mark.parametrize(("frame_change", "options", "message"), [
    ({"date": lambda f: f["date"].where(f.index % 50 != 3, "soon")}, ["--time", "date"],
     "column 'date': 6 of 300 rows cannot be parsed as dates (first: 'soon') (rows 3, 53, 103)"),
    ({}, ["--time", "date", "--period", "quarter"], "every row falls in one quarter"),
    ({}, ["--time", "date", "--period", "day"], "have no rows"),
    ({}, ["--time", "date", "--reference", "2030-01-01"], "covers every period"),
    ({}, ["--time", "date", "--period", "fortnight"], "the --period value must be one of"),
    ({}, ["--time", "nothing"], "no covariate 'nothing'"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, frame_change, options, message):
    frame = _frame(n=300, days=60).assign(**frame_change)
    if "--period" in options and "day" in options:
        frame = frame[~frame["date"].isin(["2026-01-07"])]
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    status = cli.main(["monitor", str(path), "--score", "score", "--label", "label",
                       "--draws", "99", "--json", *options])
    error = capsys.readouterr().err
    assert status == 2, error
    assert message in error
    assert "Traceback" not in error


def test_the_command_line_exits_2_on_bad_input(tmp_path):
    path = tmp_path / "one.csv"
    _frame(n=200, days=10).to_csv(path, index=False)
    process = subprocess.run(
        [sys.executable, "-m", "mcviz", "monitor", str(path), "--time", "date", "--period",
         "month", "--json"], capture_output=True, text=True, env=dict(os.environ), timeout=120)
    assert process.returncode == 2
    assert process.stderr.strip().endswith("monitoring needs at least 2 periods: choose "
                                           "shorter periods.")
    assert "Traceback" not in process.stderr


def test_a_monitor_over_the_memory_budget_is_refused_with_what_to_change(drift_csv, capsys,
                                                                          monkeypatch):
    # 20,000 null draws over 120 daily periods: batches of about 800 draws of the 3 x 120 cells
    # and 4 series' paths (about 16 MB) under a 10 MB budget; the file reads in about 2 MB
    monkeypatch.setenv("MCVIZ_MEMORY_BUDGET", "10MB")
    status = cli.main(["monitor", str(drift_csv), "--score", "score", "--label", "label",
                       "--time", "date", "--period", "day", "--segments", "region",
                       "--draws", "20000", "--json"])
    error = capsys.readouterr().err
    assert status == 2, error
    assert "refused before starting: monitor: 6,000 rows" in error
    assert "> budget 10 MB" in error
    assert "fewer null draws (--draws)" in error
    assert "Traceback" not in error
    monkeypatch.setenv("MCVIZ_MEMORY_BUDGET", "2GB")
    assert cli.main(["monitor", str(drift_csv), "--score", "score", "--label", "label",
                     "--time", "date", "--period", "week", "--draws", "99", "--json"]) == 0

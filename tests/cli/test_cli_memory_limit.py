"""``--memory-limit`` bounds the whole process of every engine command, or is refused.

Each command runs in a child process (``python -m mcviz``) on 200,000 rows of Parquet with
DuckDB. A limit the process cannot hold (50 MB: less than the interpreter alone) is refused in
one line naming ``--memory-limit`` and the smallest limit that works, exit status 2, no
traceback, before any row is read: the child's peak stays near its start-up (the same command
given a file that does not exist and a limit it can hold: every import done, nothing read),
where drawing the sample first added 51-129 MiB. The limit it names is relative to what that
child process holds (not to this test worker, which may hold far more); given it (plus 50 MB,
the rounding of a process that holds a few MB more on the second run), the command runs, or is
refused once more by its later check (what the sample showed: the screen's members per row),
naming a larger limit that runs; the child's peak resident memory, the kernel's ``ru_maxrss``,
stays under the limit it ran with. The peak is read by a small wrapper process whose one child
is the command: the kernel counts a child's peak from the process it was forked from, and this
worker may hold more than the limit.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("duckdb")

ROWS = 200_000
ROOT = Path(__file__).resolve().parents[2]
# run the command; write its peak RSS (KiB: Linux's ru_maxrss) to argv[1]; exit with its status
WRAPPER = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[2:]).returncode; "
           "open(sys.argv[1], 'w').write(str(resource.getrusage("
           "resource.RUSAGE_CHILDREN).ru_maxrss)); sys.exit(code)")
WHAT = {"screen": "this screen", "decide": "this decision", "apply": "this apply",
        "monitor": "this monitor",
        "metrics": "this metrics run", "compare": "this comparison", "search": "this search",
        "report": "this search", "report-deck": ("this report's deck", "this search")}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """200,000 rows: a score and a challenger, a label, a weight, covariates and a day."""
    from mcviz.io import load_predictions
    from mcviz.recalibration import Recalibrator

    directory = tmp_path_factory.mktemp("memory_limit")
    rng = np.random.default_rng(0)
    group = rng.integers(0, 6, ROWS)
    p = rng.uniform(0.05, 0.9, ROWS)
    frame = pd.DataFrame({
        "score": np.clip(p + 0.1 * (group == 1), 0, 1),  # distinct scores: one run per row
        "chall": np.clip(np.round(p + 0.1 * (group == 4), 4), 0, 1),
        "label": (rng.random(ROWS) < p).astype(int),
        "region": np.array([f"r{g}" for g in range(6)])[group],
        "seg": rng.integers(0, 50, ROWS).astype(str),
        "age": rng.uniform(18, 90, ROWS).round(1),
        "w": rng.uniform(0.5, 2.0, ROWS),
        "when": (pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 364, ROWS),
                                                               unit="D")).astype("datetime64[us]"),
    })
    frame.to_parquet(directory / "rows.parquet", index=False)
    pred = load_predictions(frame.head(5000), score="score", label="label", weight="w",
                            covariates=["region", "age"])
    (directory / "map.json").write_text(Recalibrator("platt").fit(pred).to_json())
    return directory


def _argv(command: str, directory: Path, out: Path) -> list[str]:
    rows = str(directory / "rows.parquet")
    roles = ["--score", "score", "--label", "label", "--weight", "w"]
    sampled = ["--sample-rows", "20000"]  # fewer than the rows: the engine's passes run
    return {
        "decide": ["decide", rows, *roles, "--thresholds", "0.1,0.25,0.5", "--no-fix"],
        "apply": ["apply", str(directory / "map.json"), rows, "--out", str(out)],
        "monitor": ["monitor", rows, "--time", "when", "--segments", "seg", "--period", "week",
                    "--no-weight"],
        "metrics": ["metrics", rows, *roles],
        "compare": ["compare", rows, *roles, "--score-b", "chall", "--covariates", "region,age",
                    "--thresholds", "0.2,0.5", *sampled],
        "search": ["search", rows, *roles, "--covariates", "region,age,seg", *sampled],
        "report": ["report", rows, *roles, "--covariates", "region,age,seg", *sampled],
        "report-deck": ["report", rows, *roles, "--covariates", "region,age,seg", *sampled,
                        "--deck", str(out.with_suffix(".pptx"))],
        "screen": ["screen", rows, "--covariates", "region,age,seg", "--out", str(out)],
    }[command] + ["--json", "--engine", "duckdb"]


def _run(argv: list[str], limit: str, peak_file: Path) -> tuple[subprocess.CompletedProcess, int]:
    """Run ``mcviz argv --memory-limit limit`` in a child; return it and its peak RSS (bytes)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", WRAPPER, str(peak_file), sys.executable, "-m",
                           "mcviz", *argv, "--memory-limit", limit],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    return done, int(peak_file.read_text()) * 1024


def _smallest(err: str, limit: str, command: str) -> int:
    """The smallest limit (MB) a one-line refusal of ``limit`` names."""
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    what = WHAT[command] if isinstance(WHAT[command], tuple) else (WHAT[command],)
    assert any(f"--memory-limit {limit} cannot hold {w}" in err for w in what), err
    return int(re.search(r"Give --memory-limit (\d+)MB or more\.$", err.strip()).group(1))


START_UP_SLACK = 32 << 20
"""What a refusal before any read may hold over the start-up: DuckDB's library (12 MiB) and
the Parquet footers. Measured at 2*10^5 rows: 0-20 MiB; drawing the sample first, 51-129."""


@pytest.mark.parametrize("command", list(WHAT))
def test_a_hopeless_limit_is_refused_before_any_row_is_read(data, tmp_path, command):
    out = tmp_path / "scored.parquet"
    argv = _argv(command, data, out)
    missing = [str(tmp_path / "none.parquet") if a == str(data / "rows.parquet") else a
               for a in argv]
    gone, start = _run(missing, "100GB", tmp_path / "peak")  # start-up: nothing to read
    assert gone.returncode == 2, gone.stderr
    assert "none.parquet" in gone.stderr
    refused, peak = _run(argv, "50MB", tmp_path / "peak")
    assert refused.returncode == 2, refused.stderr
    smallest = _smallest(refused.stderr, "50MB", command)
    assert refused.stdout == ""
    assert not out.exists()  # apply and screen wrote nothing
    # a fresh process holds well over 100 MB (Python, numpy, pandas, pyarrow, DuckDB) and
    # DuckDB's floor (128 MiB) and margins come on top
    assert 300 < smallest < 2000
    assert peak < start + START_UP_SLACK, (
        f"{command}: refused at {peak / 2**20:,.0f} MiB, start-up {start / 2**20:,.0f} MiB")


@pytest.mark.parametrize("command", list(WHAT))
def test_the_limit_named_holds_the_whole_process(data, tmp_path, command):
    out = tmp_path / "scored.parquet"
    argv = _argv(command, data, out)
    done, limit = _run(argv, "50MB", tmp_path / "peak")[0], "50MB"
    for _ in range(3):  # the check before any read, then (the screen) the one after the sample
        if done.returncode != 2:
            break
        limit = f"{_smallest(done.stderr, limit, command) + 50}MB"
        done, peak = _run(argv, limit, tmp_path / "peak")
    assert done.returncode == 0, done.stderr
    assert isinstance(json.loads(done.stdout), dict)
    assert peak < int(limit[:-2]) * 10**6, f"{command}: peak {peak / 1e6:,.0f} MB over {limit}"
    if command == "apply":
        assert len(pd.read_parquet(out)) == ROWS
    if command == "report-deck":  # drawn from every row by DuckDB, within the limit
        assert json.loads(done.stdout)["deck"] == [str(out.with_suffix(".pptx"))]
        assert "full-population charts were drawn by duckdb" in json.loads(done.stdout)["notice"]

"""Signals, closed pipes and atomic outputs of the command line (issues #16 and #20).

The signal tests run ``mcviz screen --engine duckdb`` on a generated Parquet file big enough that
the screening runs for many seconds, signal it mid-run, and check: exit 130 (SIGINT) or 143
(SIGTERM) within seconds, a one-line message and no traceback, no DuckDB spill files left in
TMPDIR, and the previous ``--out`` table untouched.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb  # noqa: F401 - a test requirement: the engine under test
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mcviz.cli import _common

ROOT = Path(__file__).resolve().parents[2]
ROWS = 5_000_000  # DuckDB's one-pass screen of 200 subpopulations: ~10 s (2 cores, load 2)


@pytest.fixture(scope="session")
def big_file(tmp_path_factory) -> Path:
    rng = np.random.default_rng(0)
    score = rng.random(ROWS)
    table = pa.table({
        "score": score,
        "label": (rng.random(ROWS) < score).astype(np.int8),
        "a": rng.normal(size=ROWS),
        "b": rng.integers(0, 50, ROWS),
        "c": rng.choice(np.array(["x", "y", "z", "w"]), ROWS),
    })
    path = tmp_path_factory.mktemp("big") / "big.parquet"
    pq.write_table(table, path)
    return path


def _environment(tmp: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)}


def _start_screen(big_file: Path, out: Path, tmp: Path) -> subprocess.Popen:
    # --memory-limit bounds the process: about 180 MB of Python and 100 MB of the screen's
    # buffers beside DuckDB, which gets about 230 MB once the rows stream (below about 600MB
    # the limit is refused)
    command = [sys.executable, "-m", "mcviz", "screen", str(big_file), "--engine", "duckdb",
               "--memory-limit", "800MB", "--subpopulations", "200", "--sample-rows", "20000",
               "--covariates", "a,b,c", "--out", str(out), "--json"]
    return subprocess.Popen(command, env=_environment(tmp), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for_duckdb_phase(process: subprocess.Popen, tmp: Path) -> None:
    """Wait until the spill directory exists, then a few seconds into the engine's work."""
    deadline = time.monotonic() + 60
    while not any(tmp.glob("mcviz-screen-*")):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "mcviz screen did not start"
        time.sleep(0.1)
    time.sleep(3)
    assert process.poll() is None, "the screening finished before the signal: use more rows"


def _signal(process: subprocess.Popen, signum: int, wait) -> tuple[str, float]:
    """Wait, check the process still runs, signal it; return its stderr and the seconds it took."""
    try:
        wait()
        assert process.poll() is None, "finished before the signal: " + str(process.communicate())
        sent = time.monotonic()
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
        return stderr, time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.parametrize(("signum", "status", "message"), [
    (signal.SIGINT, 130, "mcviz: interrupted"),
    (signal.SIGTERM, 143, "mcviz: terminated"),
])
def test_signal_stops_duckdb_screen_cleanly(big_file, tmp_path, signum, status, message):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "table.parquet"
    previous = b"the previous output table"
    out.write_bytes(previous)
    process = _start_screen(big_file, out, tmp)
    stderr, elapsed = _signal(process, signum, lambda: _wait_for_duckdb_phase(process, tmp))
    assert process.returncode == status, stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == message
    assert elapsed < 15, f"took {elapsed:.1f} s to stop (target 5 s on a quiet machine)"
    assert list(tmp.iterdir()) == [], "spill files left behind"
    assert out.read_bytes() == previous
    assert [p.name for p in out_dir.iterdir()] == ["table.parquet"]  # no temporary file left


@pytest.mark.parametrize(("command", "signum", "status"), [
    # 1000 null draws keep it busy for minutes within the budget (20,000 subpopulations of 5M
    # rows are refused by the budget, about 5 s in once the file is read: a race with the signal)
    (["metrics", "--covariates", "a,b,c", "--subpopulations", "200", "--null-draws", "1000"],
     signal.SIGTERM, 143),
    (["screen", "--engine", "numpy", "--subpopulations", "200", "--out", "OUT"],
     signal.SIGINT, 130),
])
def test_signal_stops_other_commands(big_file, tmp_path, command, signum, status):
    # Every subcommand: main() turns the signal into one line and the exit status.
    name, *options = command
    options = [str(tmp_path / "t.parquet") if o == "OUT" else o for o in options]
    process = subprocess.Popen(
        [sys.executable, "-m", "mcviz", name, str(big_file), *options],
        env=_environment(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stderr, elapsed = _signal(process, signum, lambda: time.sleep(5))
    assert process.returncode == status, stderr
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    message = {signal.SIGINT: "mcviz: interrupted", signal.SIGTERM: "mcviz: terminated"}[signum]
    assert lines[-1] == message, stderr
    # Before it, at most the line naming the columns read (printed once the file is read, so
    # whether it is there depends on when the signal lands); nothing else.
    assert all(line.startswith("mcviz: columns: ") for line in lines[:-1]), stderr
    assert len(lines) <= 2, stderr
    assert elapsed < 15


def test_closed_output_pipe_ends_quietly(tmp_path, random_frame, write_csv):
    # The reader closes the pipe before mcviz writes: print() meets EPIPE.
    path = write_csv(random_frame(5000, 3))
    command = [sys.executable, "-m", "mcviz", "groupings", str(path), "--score", "prob",
               "--label", "y", "--json"]
    process = subprocess.Popen(command, env=_environment(tmp_path), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    process.stdout.close()
    stderr = process.stderr.read()
    process.wait(timeout=120)
    assert process.returncode in (0, 141), stderr
    assert "Traceback" not in stderr
    assert "BrokenPipeError" not in stderr


def test_closed_pipe_through_head(tmp_path, random_frame, write_csv):
    path = write_csv(random_frame(3000, 4))
    shell = (f"{sys.executable} -m mcviz groupings {path} --score prob --label y --json "
             "| head -c 30 > /dev/null; echo ${PIPESTATUS[0]} >&2")
    done = subprocess.run(["bash", "-c", shell], env=_environment(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] in ("0", "141")


def test_atomic_output_keeps_the_previous_file_on_failure(tmp_path):
    path = tmp_path / "table.parquet"
    path.write_text("old")
    def interrupted_write():
        with _common.atomic_output(path) as temporary:
            temporary.write_text("half-writ")
            raise RuntimeError("killed during the write")

    with pytest.raises(RuntimeError, match="killed"):
        interrupted_write()
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["table.parquet"]
    with _common.atomic_output(path) as temporary:
        assert temporary.parent == tmp_path
        assert temporary != path
        temporary.write_text("new")
    assert path.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["table.parquet"]


def test_atomic_output_needs_an_existing_directory(tmp_path):
    from mcviz.errors import ValidationError

    with pytest.raises(ValidationError, match="does not exist"), \
            _common.atomic_output(tmp_path / "missing" / "t.parquet"):
        pass


def test_interruptible_cancels_until_the_worker_returns():
    # The worker ignores the first cancel (a second query started); the loop cancels again.
    import threading

    cancels = []
    stop = threading.Event()

    def work():
        while not stop.wait(0.01):
            pass
        return "done"

    def cancel():
        cancels.append(time.monotonic())
        if len(cancels) >= 3:
            stop.set()

    timer = threading.Timer(0.3, lambda: signal.raise_signal(signal.SIGINT))
    with _common.signals_as_exceptions():
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            _common.interruptible(work, cancel)
    assert len(cancels) == 3
    assert stop.is_set()
    assert not _common.work_abandoned()

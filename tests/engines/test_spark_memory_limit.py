"""``--memory-limit`` with ``--engine spark`` bounds the whole local run, or is refused.

In local mode the limit covers the ``mcviz`` process, the JVM it starts and the Python workers
Spark starts (:func:`mcviz.engines.memory.spark_heap` gives the JVM's heap what the rest
leaves). Each command runs in a child process: a shared session's JVM is already started, so
no memory setting could apply to it. A limit too small is refused in one line naming
``--memory-limit`` and a limit that works, before any JVM starts (the child's peak stays below
what a JVM alone holds); given that limit, the run's peak, the sum of the resident memory of
every process of its tree polled every 20 ms from ``/proc``, stays under it. With a cluster
master the limit bounds the driver only, and a note on stderr says so.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from spark_available import skip_module_without_spark

skip_module_without_spark()

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
ROWS = 20_000
# run the command; write its largest descendant's peak RSS (KiB: Linux's ru_maxrss) to argv[1]
WRAPPER = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[2:]).returncode; "
           "open(sys.argv[1], 'w').write(str(resource.getrusage("
           "resource.RUSAGE_CHILDREN).ru_maxrss)); sys.exit(code)")


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> Path:
    """20,000 rows: a score, a label, a weight and two covariates."""
    rng = np.random.default_rng(3)
    group = rng.integers(0, 4, ROWS)
    p = rng.uniform(0.05, 0.9, ROWS)
    frame = pd.DataFrame({"score": np.clip(p + 0.1 * (group == 1), 0, 1),
                          "label": (rng.random(ROWS) < p).astype(int),
                          "region": np.array(["a", "b", "c", "d"])[group],
                          "age": rng.uniform(18, 90, ROWS).round(1),
                          "w": rng.uniform(0.5, 2.0, ROWS)})
    path = tmp_path_factory.mktemp("spark_memory") / "rows.parquet"
    frame.to_parquet(path, index=False)
    return path


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable}


def _screen(rows: Path, out: Path, limit: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "mcviz", "screen", str(rows), "--out", str(out), "--score",
            "score", "--label", "label", "--weight", "w", "--covariates", "region,age",
            "--subpopulations", "40", "--json", "--engine", "spark", "--memory-limit", limit,
            *extra]


def _tree_peak(argv: list[str]) -> tuple[subprocess.CompletedProcess, int]:
    """Run ``argv``; return it and the peak of its process tree's summed RSS (bytes)."""
    page = os.sysconf("SC_PAGE_SIZE")

    def every_child() -> dict[int, list[int]]:
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                    parent = int(stat[stat.rindex(")") + 2:].split()[1])
                except (OSError, ValueError):
                    continue
                children.setdefault(parent, []).append(int(entry.name))
        return children

    def children_of(pid: int) -> list[int]:
        found: list[int] = []
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{pid}/task").iterdir():  # a child is its forking thread's
                with contextlib.suppress(OSError, ValueError):
                    found += [int(c) for c in (task / "children").read_text().split()]
        return found

    # the tree from each process's /proc/<pid>/task/*/children where the kernel has them, else
    # from every process's parent in /proc. Polled 50 times a second beside the JVM it measures:
    # 3.6 ms of CPU a poll against 12 ms among ~130 processes, the same peak (h20t: 1,454 MB)
    per_task = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists()

    def tree_rss(root: int) -> int:
        children = None if per_task else every_child()
        total, todo = 0, [root]
        while todo:
            pid = todo.pop()
            todo += children_of(pid) if children is None else children.get(pid, [])
            with contextlib.suppress(OSError, ValueError, IndexError):
                total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page
        return total

    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=_env())
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss(process.pid))
        time.sleep(0.02)
    out, err = process.communicate()
    return subprocess.CompletedProcess(argv, process.returncode, out, err), peak


def _smallest(err: str, limit: str) -> int:
    """The smallest limit (MB) a one-line refusal of ``limit`` names."""
    last = err.strip().splitlines()[-1]
    assert "Traceback" not in err
    assert last.startswith(f"mcviz: error: --memory-limit {limit} cannot hold this screen on "
                           "Spark"), err
    return int(re.search(r"Give --memory-limit (\d+)MB or more\.$", last).group(1))


@pytest.mark.parametrize("master", [None, "spark://127.0.0.1:7"])
def test_a_limit_too_small_is_refused_before_the_jvm_starts(rows, tmp_path, master):
    from mcviz.engines.memory import JVM_NON_HEAP

    out = tmp_path / "table.parquet"
    argv = _screen(rows, out, "300MB", *(["--spark-master", master] if master else []))
    done = subprocess.run([sys.executable, "-c", WRAPPER, str(tmp_path / "peak"), *argv],
                          capture_output=True, text=True, env=_env(), timeout=300, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert not out.exists()
    smallest = _smallest(done.stderr, "300MB")
    lines = done.stderr.strip().splitlines()
    if master is None:  # local: this process, the JVM (heap and beyond) and the workers
        assert len(lines) == 1
        assert smallest > 1000
    else:  # a cluster: the driver only, and said so
        assert len(lines) == 2
        assert lines[0].startswith(f"mcviz: note: with --spark-master {master} --memory-limit "
                                   "bounds the driver only")
        assert 700 < smallest < 2000
    # no JVM started: every process of the run held less than a JVM alone does
    assert int((tmp_path / "peak").read_text()) * 1024 < JVM_NON_HEAP


def test_the_limit_named_holds_the_whole_local_run(rows, tmp_path):
    out = tmp_path / "table.parquet"
    refused = subprocess.run(_screen(rows, out, "300MB"), capture_output=True, text=True,
                             env=_env(), timeout=300, check=False)
    limit = _smallest(refused.stderr, "300MB") + 50
    done, peak = _tree_peak(_screen(rows, out, f"{limit}MB"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["n"] == ROWS
    assert peak < limit * 10**6, f"peak {peak / 1e6:,.0f} MB over {limit} MB"

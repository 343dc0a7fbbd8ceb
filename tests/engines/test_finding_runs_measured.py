"""A finding's exact runs in the deck against the bytes the budget reserves for them.

``benchmarks/bench_finding_runs.py`` draws one unread finding's charts as ``mcviz report``'s
deck does (its runs per distinct score, every row summed between them by DuckDB, the
deviation, its own LCS, reliability and path) in a fresh subprocess under a 4 GB address-space
cap, with Python's allocations traced (``tracemalloc``: numpy's arrays; DuckDB's own memory is
:data:`~mcviz.engines.memory.FINDING_ENGINE_RUN_BYTES`, left in its share). The peak per run
must not exceed :func:`~mcviz.engines.memory.finding_run_bytes` of the rows' kind (the
reserve holds it) nor fall below two thirds of it (a reserve far above the peak turns exact
findings to fine bins unasked). About 10^6 runs each (2*10^6 rows, half of them the finding):
a minute or two each.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("duckdb")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_finding_runs import measure

from mcviz.engines.memory import finding_run_bytes


@pytest.mark.parametrize("shape", ["runs_1m", "weighted_1m"])
def test_a_finding_s_runs_peak_within_the_bytes_reserved_for_them(shape, record_property):
    result = measure(shape, trace=True)
    runs = result["distinct"]
    assert runs > 900_000, result  # large enough that fixed costs do not count
    assert result["full_bins"] is not None  # the full population in fine bins: the deck's case
    per_run = result["traced_bytes"] / runs
    reserved = finding_run_bytes(shape.startswith("weighted"))
    record_property("traced_bytes_per_run", round(per_run, 1))
    assert reserved * 2 / 3 <= per_run <= reserved, result

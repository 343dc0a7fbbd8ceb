"""``mcviz report --engine spark``: a finding's exact runs fit beside the JVM at its least heap.

Issue #44: at 10^7 rows under the ``--memory-limit 2450MB`` it named, a finding of about
4*10^6 distinct scores went exact (a quarter of the limit over 144 bytes a run: 4.25*10^6
allowed) and the process tree peaked at 2,982 MB. The limit's arithmetic by hand: what this
process holds (fixed here), the 80 MiB it adds beside Spark, the JVM's 544 MiB beyond a heap
of at least 512 MiB and a 64 MiB margin (SQL only: no Python workers) leave the room the runs
may take at 144 bytes each; runs that fill it leave the JVM its least heap, one more run's
worth of thousands is refused.
"""

from __future__ import annotations

import argparse

import pytest

from mcviz.cli.report import exact_runs_limit
from mcviz.engines import memory
from mcviz.errors import ValidationError

MIB = 1 << 20


def test_spark_exact_runs_leave_the_jvm_its_least_heap(monkeypatch):
    monkeypatch.setattr(memory, "resident_bytes", lambda: 700_000_000)
    args = argparse.Namespace(engine="spark", memory_limit="2450MB", spark_master="local[2]")
    room = 2_450_000_000 - 700_000_000 - (80 + 544 + 64 + 512) * MIB
    assert exact_runs_limit(args) == room // 144 == 3_414_644
    assert exact_runs_limit(args, reserve=144_000_000) == (room - 144_000_000) // 144
    assert exact_runs_limit(args) < 4_000_000  # the 10^7 report's "channel == web": fine bins
    heap = memory.spark_heap("2450MB", master="local[2]", reserve=144 * exact_runs_limit(args))
    assert int(heap[:-1]) == 512  # the JVM's floor (MiB)
    with pytest.raises(ValidationError, match="--memory-limit 2450MB cannot hold"):
        memory.spark_heap("2450MB", master="local[2]",
                          reserve=144 * (exact_runs_limit(args) + 10_000))

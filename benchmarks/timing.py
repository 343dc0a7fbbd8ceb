"""How the benchmarks time a call: the best of a few repeats (wall clock by default)."""

from __future__ import annotations

import time
from collections.abc import Callable


def best(function: Callable[[], object], repeats: int,
         clock: Callable[[], float] = time.perf_counter) -> float:
    """Return the shortest of ``repeats`` timings of ``function()`` (seconds of ``clock``)."""
    times = []
    for _ in range(repeats):
        start = clock()
        function()
        times.append(clock() - start)
    return min(times)

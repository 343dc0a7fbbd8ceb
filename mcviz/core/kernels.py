"""When the compiled loops (numba) run in place of the numpy passes, and the flat members.

The evaluator (:class:`~mcviz.core.evaluator.Evaluator`) and the membership plan
(:class:`~mcviz.core.membership.MembershipPlan`) each have a numpy pass and a compiled loop
(:mod:`mcviz.core._compiled`) computing the same summaries (see there for to what precision).
The compiled loop runs when numba is installed (``numba`` is a dependency; without it every
pass is numpy's and nothing else changes) and the work is worth loading it: numba's import and
the first call of the cached loops take ~1 s in a process (the first run after an install
compiles the loops, ~6 s, cached on disk beside the module after that), while numpy's evaluator
spends ~22 ns per member. So a call with fewer than :data:`WORTH_LOADING` members keeps numpy unless
the loops are loaded already, and engines, whose work is large by construction, ask for them
at the start (:func:`loops` with ``force=True``).

Why: the members of ℓ = 1,000 Algorithm-1 subpopulations add up to ~70 × the rows, and numpy's
passes over them (a gather, a segmented cumulative sum, reductions, one call per segment) cost
~22 ns per member at 10^6 rows; the compiled loop reads each member once (~2-4 ns per member,
``benchmarks/bench_scale.py`` and ``benchmarks/bench_kernels.py``).
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

import numpy as np

__all__ = ["WORTH_LOADING", "FlatMembers", "enabled", "loaded", "loops", "will_load"]

WORTH_LOADING = 100_000_000
"""Members in one call from which loading the loops pays for itself: numba's import and the
cached loops' first call took 1.0-1.4 s (``mcviz metrics --subpopulations 1000`` at 10^6 rows,
4.2·10^7 members: the eq. (4) pass 0.8-1.2 s with numpy, 2.3 s with the loads), numpy ~23 ns
a member (2.3 s for these)."""

enabled = True
"""False: numpy's passes everywhere (the tests compare the two)."""

_loaded: ModuleType | None = None
_failed = False  # the loops could not be loaded (numpy's passes from then on)


def loops(members: int = 0, *, force: bool = False) -> ModuleType | None:
    """Return the compiled loops when they should run for ``members`` members; None: numpy.

    They run when :data:`enabled`, numba is installed, and they are loaded already, or
    ``members >= WORTH_LOADING``, or ``force`` (an engine's pass over many rows).
    """
    global _loaded, _failed
    if not enabled:
        return None
    if _loaded is not None:
        return _loaded
    if _failed or not (force or members >= WORTH_LOADING) or not _installed():
        return None
    try:
        _loaded = importlib.import_module("mcviz.core._compiled")
    except Exception:  # e.g. no cache directory numba can write: numpy's passes, same numbers
        _failed = True
        return None
    return _loaded


def loaded() -> bool:
    """Whether this process loaded the compiled loops already (their memory is resident)."""
    return _loaded is not None


def will_load() -> bool:
    """Whether an engine's pass (``loops(force=True)``) would load the loops now.

    True when they are enabled, numba is installed, and they are neither loaded yet nor failed
    to load.
    """
    return enabled and _loaded is None and not _failed and _installed()


def _installed() -> bool:
    return importlib.util.find_spec("numba") is not None


class FlatMembers:
    """The members of many subpopulations in one array: ``index[start[k]:start[k] + length[k]]``.

    A sequence of sorted position arrays (views), as a list of them would be; the compiled
    evaluator reads the three arrays directly.
    """

    __slots__ = ("index", "length", "start")

    def __init__(self, index: np.ndarray, start: np.ndarray, length: np.ndarray) -> None:
        self.index = index
        self.start = start
        self.length = length

    def __len__(self) -> int:
        return int(self.start.size)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        first = int(self.start[k])
        return self.index[first:first + int(self.length[k])]

    def __iter__(self):
        for k in range(len(self)):
            yield self[k]

    @property
    def total(self) -> int:
        """Members in all."""
        return int(self.length.sum())

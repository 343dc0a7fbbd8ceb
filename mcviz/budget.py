r"""The resource model: what a computation will cost, and refusing it before it starts.

Every computation a user can start from the dashboard or the CLI states its cost before it
runs - an :class:`Estimate` of bytes and seconds from rows, columns, centres, levels - and
:func:`check` refuses it, with a message that says what to change, when the estimate exceeds
the :class:`Budget`. Refusing happens *before* anything large is allocated.

The budget
----------
Memory: the ``memory`` argument, else the environment variable ``MCVIZ_MEMORY_BUDGET``
(``"4GB"``, ``"512MiB"``, ``"2e9"``), else :data:`DEFAULT_SHARE` of the machine's physical
memory. Time: the ``seconds`` argument, else ``MCVIZ_TIME_BUDGET`` (seconds, or ``none`` for no
limit), else :data:`DEFAULT_TIME_BUDGET` (one hour): a computation estimated to take longer -
k-NN groups with every row of a million a centre, say - is refused with what to change (fewer
centres, a sample, another grouping) instead of running for hours.

Adding an estimate
------------------
One plain function per computation kind returning an :class:`Estimate`; no registry. For
example, subpopulations would add ``subpopulations_estimate(rows, subpopulations)`` with
``bytes`` about ``rows * 8 * ...`` and the advice "fewer subpopulations (l) or a sample of
rows". The constants below are measured on the 2-core reference machine
(``benchmarks/bench_groupings.py``); an estimate errs on the high side.

Progress and cancel
-------------------
Long computations accept ``progress: Callable[[float, str], None] | None`` and call it with
the fraction done (0 to 1) and what is being done. To stop a computation, the callback raises
(the dashboard raises :class:`Cancelled`); the exception propagates out of the computation,
which holds no state outside its own frame, so nothing is left half-done.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcviz.errors import ValidationError

__all__ = [
    "DEFAULT_SHARE",
    "DEFAULT_TIME_BUDGET",
    "Budget",
    "Cancelled",
    "Estimate",
    "Progress",
    "as_budget",
    "bootstrap_estimate",
    "check",
    "classical_estimate",
    "default_budget",
    "format_bytes",
    "format_seconds",
    "kernel_estimate",
    "knn_estimate",
    "knn_width",
    "memory_budget",
    "monitor_estimate",
    "parquet_read_estimate",
    "parse_bytes",
    "partition_estimate",
    "report_progress",
    "subpopulations_estimate",
    "table_read_estimate",
    "time_budget",
    "usable_cores",
]

DEFAULT_SHARE = 0.25
"""Share of the machine's physical memory one computation may use by default."""

DEFAULT_TIME_BUDGET = 3600.0
"""Seconds one computation may be estimated to take by default (``MCVIZ_TIME_BUDGET``)."""

_NO_LIMIT = ("none", "off", "unlimited", "inf")

Progress = Callable[[float, str], None]
"""A progress callback: ``progress(fraction_done, what_is_being_done)``; it may raise."""


class Cancelled(Exception):
    """Raised by a progress callback to stop a computation (the dashboard's stop button)."""


@dataclass(frozen=True, slots=True)
class Estimate:
    """The cost of one computation, stated before it runs.

    Attributes
    ----------
    what : str
        The computation and its size in words ("k-NN local calibration: 1,000,000 rows, ...").
    bytes : int
        Peak memory it will allocate beyond its inputs (an upper estimate).
    seconds : float
        Time on the 2-core reference machine when it is not loaded (an estimate, not a
        promise): fitted a little above the CPU time of measured runs, so wall time exceeds it
        on a busy machine.
    advice : str
        What to change to make it cheaper ("sample rows", "fewer centres (max_centres)", ...).
    """

    what: str
    bytes: int
    seconds: float
    advice: str

    def __str__(self) -> str:
        """Word the estimate: "<what>: about 1.2 GB and 14 s"."""
        return f"{self.what}: about {format_bytes(self.bytes)} and {format_seconds(self.seconds)}"


@dataclass(frozen=True, slots=True)
class Budget:
    """What one computation may use.

    Attributes
    ----------
    bytes : int
        Memory budget.
    seconds : float or None
        Time budget (None: no limit).
    """

    bytes: int
    seconds: float | None = None


_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
    "t": 10**12, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}


_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*")


def parse_bytes(text: str | int | float) -> int:
    """Read a memory size such as ``"4GB"``, ``"512 MiB"``, ``"2e9"`` or ``2_000_000_000``.

    Examples
    --------
    >>> parse_bytes("4GB"), parse_bytes("512 MiB"), parse_bytes("2e9")
    (4000000000, 536870912, 2000000000)
    """
    if isinstance(text, int | float) and not isinstance(text, bool):
        value, unit = float(text), ""
    else:
        match = _SIZE.fullmatch(str(text))
        if match is None or match.group(2).lower() not in _UNITS:
            raise ValidationError(
                f"memory budget {text!r} is not a size such as '4GB', '512MiB' or '2e9'."
            )
        value, unit = float(match.group(1)), match.group(2).lower()
    result = value * _UNITS[unit]
    if not math.isfinite(result) or result <= 0:
        raise ValidationError(f"memory budget {text!r} must be a positive size.")
    return int(result)


def _physical_memory() -> int:
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # not POSIX: assume 8 GB
        return 8 * 10**9


def memory_budget(value: int | str | None = None) -> int:
    """Memory budget in bytes: ``value``, else ``MCVIZ_MEMORY_BUDGET``, else a share of RAM.

    Examples
    --------
    >>> memory_budget("2GB")
    2000000000
    """
    if value is not None:
        return parse_bytes(value)
    env = os.environ.get("MCVIZ_MEMORY_BUDGET", "").strip()
    if env:
        return parse_bytes(env)
    return int(min(DEFAULT_SHARE * _physical_memory(), LIMIT_SHARE * _process_limit()))


LIMIT_SHARE = 0.5
"""Share of the process's own memory limit (RLIMIT_AS, the cgroup's) one computation may use: the
interpreter, the libraries and the data already loaded need the rest."""


def _process_limit() -> float:
    """The process's memory limit: the smaller of RLIMIT_AS and the cgroup's (inf if none)."""
    limit = float("inf")
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            limit = float(soft)
    except (ImportError, ValueError, OSError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text(encoding="ascii").strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:  # cgroup v1 writes a huge number for none
            limit = min(limit, float(text))
    return limit


def time_budget(value: float | None = None) -> float | None:
    """Time budget in seconds: ``value``, else ``MCVIZ_TIME_BUDGET``, else the default (1 h).

    ``MCVIZ_TIME_BUDGET=none`` lifts the limit (None).

    Examples
    --------
    >>> time_budget(30.0), time_budget() == DEFAULT_TIME_BUDGET or "MCVIZ_TIME_BUDGET set"
    (30.0, True)
    """
    if value is None:
        env = os.environ.get("MCVIZ_TIME_BUDGET", "").strip()
        if not env:
            return DEFAULT_TIME_BUDGET
        if env.lower() in _NO_LIMIT:
            return None
        try:
            value = float(env)
        except ValueError:
            raise ValidationError(
                f"MCVIZ_TIME_BUDGET={env!r} is not a number of seconds (or 'none')."
            ) from None
    if not math.isfinite(value) or value <= 0:
        raise ValidationError(f"time budget {value!r} must be a positive number of seconds.")
    return float(value)


def default_budget(memory: int | str | None = None, seconds: float | None = None) -> Budget:
    """Return the budget from the arguments, else the environment, else the defaults."""
    return Budget(bytes=memory_budget(memory), seconds=time_budget(seconds))


def format_bytes(n: float) -> str:
    """Word a size: ``1.2 GB``, ``340 MB``, ``12 kB``.

    Examples
    --------
    >>> format_bytes(1_234_000_000), format_bytes(340e6), format_bytes(999)
    ('1.2 GB', '340 MB', '999 B')
    """
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}" if n / size < 10 else f"{n / size:,.0f} {unit}"
    return f"{n:.0f} B"


def format_seconds(seconds: float) -> str:
    """Word a duration: ``0.4 s``, ``14 s``, ``3.5 min``, ``2.1 h``."""
    if seconds < 10:
        return f"{seconds:.2g} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def as_budget(budget: Budget | int | str | None = None) -> Budget:
    """Return ``budget`` as a :class:`Budget` (a size, or None for :func:`default_budget`)."""
    if isinstance(budget, Budget):
        return budget
    return Budget(bytes=memory_budget(budget), seconds=time_budget())


def check(estimate: Estimate, budget: Budget | int | str | None = None) -> Estimate:
    """Refuse a computation whose estimate exceeds the budget; return the estimate otherwise.

    Parameters
    ----------
    estimate : Estimate
    budget : Budget, int, str or None
        A :class:`Budget`, a memory size (bytes or text such as ``"4GB"``), or None for
        :func:`default_budget`.

    Raises
    ------
    ValidationError
        Stating the computation, its estimated cost, the budget and what to change.

    Examples
    --------
    >>> cheap = Estimate("sorting", 10**6, 0.1, "sample rows")
    >>> check(cheap, "1GB").bytes
    1000000
    """
    budget = as_budget(budget)
    over = []
    if estimate.bytes > budget.bytes:
        over.append(f"memory {format_bytes(estimate.bytes)} > budget {format_bytes(budget.bytes)}")
    if budget.seconds is not None and estimate.seconds > budget.seconds:
        over.append(
            f"time {format_seconds(estimate.seconds)} > budget {format_seconds(budget.seconds)}"
        )
    if over:
        raise ValidationError(
            f"refused before starting: {estimate.what} would need about "
            f"{format_bytes(estimate.bytes)} and {format_seconds(estimate.seconds)} "
            f"({'; '.join(over)}). To run it: {estimate.advice}. The memory budget is set by "
            "MCVIZ_MEMORY_BUDGET (e.g. '8GB')"
            + ("; the time budget (default 1 h) by MCVIZ_TIME_BUDGET (seconds, or 'none')."
               if len(over) > 1 or over[0].startswith("time") else ".")
        )
    return estimate


def report_progress(progress: Progress | None, fraction: float, what: str) -> None:
    """Call ``progress(fraction, what)`` when a callback is given (it may raise to cancel)."""
    if progress is not None:
        progress(min(max(float(fraction), 0.0), 1.0), what)


# --------------------------------------------------------------------------------------------
# Estimates of the computations of mcviz.stats.groupings. Every constant is measured: peak RSS above
# the process's RSS before the call, on the shapes of benchmarks/bench_budget.py (2-core
# reference machine), rounded up; tests/test_budget_measured.py holds them within 1.5x. Times
# are CPU seconds of the run (user + sys: the machine's load does not change them as it changes
# wall time), measured 2026-11-26 at load 3-8 (benchmarks/bench_budget.py partition knn knn_all
# kernel), set about 1.2-1.4x above them: an estimate errs high on an idle machine and is about
# the wall time on a busy one.

_PARTITION_BYTES_PER_ROW = 88  # per-point terms (6 float64), group ids, masks
_PARTITION_SECONDS_PER_ROW = 2e-7  # CPU 1.0-2.0e-7 (2M rows, score bins or 2,000 index groups)
_PARTITION_SECONDS_PER_GROUP = 3e-6  # CPU < 2e-6 (20,000 groups over 500,000 rows)
_KNN_BYTES_PER_ROW = 100  # distinct inputs (hash keys, inverse), per-input sums, trees
_KNN_BYTES_PER_COLUMN_ROW = 24  # numeric columns and nominal codes, with one joined copy
_KNN_BYTES_PER_CELL = 96  # one (centre, candidate) cell of a search reaching other cells
_KNN_BYTES_PER_OWN_CELL = 40  # one cell of a search that stays in its own cell
_KNN_BYTES_PER_SCAN_CELL = 24  # one cell of a search reaching every input (a distance scan)
_KNN_BYTES_PER_CENTRE = 480  # per-centre sums, sizes, radii, their gathers and labels
_KNN_BYTES_PER_TREE = 3_000  # a k-d tree kept per combination of levels searched
_KNN_SECONDS_PER_ROW = 1e-6  # standardising, sorting distinct inputs, building trees (CPU
# 4-8.5e-7 x (1 + columns / 4) at 3-5 columns of distinct inputs; far less on tied inputs)
_KNN_SECONDS_PER_CELL = 4e-7  # tree search, merging, sums of one candidate (other cells;
# CPU 3.0-3.3e-7 with every row a centre and 500 centres of 300,000 rows)
_KNN_SECONDS_PER_OWN_CELL = 2.8e-7  # the same within a centre's own combination of levels
# (CPU 1.9-2.1e-7)
_KERNEL_BYTES_PER_PAIR = 64  # rows, columns, distances, weights and a gather buffer
_KERNEL_SECONDS_PER_PAIR = 3e-7  # CPU 2.8e-7 (11.7 million pairs)


def partition_estimate(rows: int, groups: int) -> Estimate:
    """Cost of the group errors of a partition (score bins, covariate bins, index groups).

    Examples
    --------
    >>> partition_estimate(1_000_000, 10).bytes > 0
    True
    """
    return Estimate(
        what=f"group errors of {groups:,} groups over {rows:,} rows",
        bytes=int(rows * _PARTITION_BYTES_PER_ROW + groups * 200),
        seconds=rows * _PARTITION_SECONDS_PER_ROW + groups * _PARTITION_SECONDS_PER_GROUP,
        advice="analyse a sample of rows, or fewer groups (fewer bins or levels)",
    )


def knn_width(rows: int, k: int, level_counts: Sequence[int] = ()) -> float:
    r"""Candidates a k-NN search examines per centre (distinct inputs gathered and merged).

    With nominal covariates of :math:`L_1, \dots, L_q` levels an input's own combination of
    levels holds about :math:`c = n / \prod_j L_j` inputs. When :math:`c \ge 2k` the search
    stays in the own cell (about :math:`2k` candidates: k + 1, doubled when ties continue).
    Otherwise it reaches the inputs one level away, about :math:`c (1 + \sum_j (L_j - 1))`
    of the :math:`n`, and must scan the numeric nearest of all inputs until k of those are
    among them: :math:`2k\,n / (c (1 + \sum_j (L_j - 1)))` candidates (the doubling's
    overshoot included), at most :math:`n`.

    Examples
    --------
    >>> knn_width(10**6, 100, (12,))
    200.0
    >>> round(knn_width(300_000, 100, (300, 300)))
    30050
    """
    if not level_counts:
        return float(min(2 * k, rows))
    combinations = min(math.prod(max(int(c), 1) for c in level_counts), rows)
    per_cell = rows / combinations
    if per_cell >= 2 * k:
        return float(min(2 * k, rows))
    near = per_cell * (1 + sum(max(int(c), 1) - 1 for c in level_counts))
    return float(min(rows, 2 * k * rows / max(near, 1.0)))


def knn_estimate(
    rows: int,
    *,
    numeric: int,
    nominal: int,
    levels: int,
    centres: int,
    k: int,
    chunk: int = 2_000_000,
    level_counts: Sequence[int] | None = None,
) -> Estimate:
    """Cost of k-NN (or kernel) local calibration in an input space.

    Parameters
    ----------
    rows : int
        Observations (every one is a candidate neighbour).
    numeric : int
        Numeric columns of the input space (missing flags included).
    nominal : int
        Nominal covariates (each held as one integer code per row, whatever its levels).
    levels : int
        Total number of levels of the nominal covariates.
    centres : int
        Groups formed (``max_centres``, or ``rows``).
    k : int
        Neighbours per group (or the pairs per centre for kernel groups).
    chunk : int
        (centre, candidate) cells searched at once: the run-time guard of
        :mod:`mcviz.stats.groupings` never holds more, whatever the search needs.
    level_counts : sequence of int, optional
        Levels of each nominal covariate (default: ``levels`` shared evenly); few rows per
        combination of levels widen each search (:func:`knn_width`).

    Examples
    --------
    >>> e = knn_estimate(10**6, numeric=4, nominal=1, levels=500, centres=2000, k=100)
    >>> e.bytes < 2 * 10**9
    True
    """
    if level_counts is None:
        level_counts = [max(levels // max(nominal, 1), 1)] * nominal
    columns = numeric + nominal
    width = knn_width(rows, k, tuple(level_counts))
    held = min(centres * width, chunk)
    wide = width > 2 * k  # the search reaches other cells (the run-time guard's chunk)
    memory = rows * (_KNN_BYTES_PER_ROW + _KNN_BYTES_PER_COLUMN_ROW * columns)
    per_cell = (_KNN_BYTES_PER_SCAN_CELL if width >= rows else
                _KNN_BYTES_PER_CELL if wide else _KNN_BYTES_PER_OWN_CELL)
    memory += held * per_cell + centres * _KNN_BYTES_PER_CENTRE
    memory += 100 * min(levels, rows)
    if level_counts:  # one tree per combination of levels holding a centre, kept for reuse
        combinations = math.prod(max(int(c), 1) for c in level_counts)
        occupied = combinations * -math.expm1(-rows / combinations)
        memory += min(centres, occupied) * _KNN_BYTES_PER_TREE
    seconds = rows * _KNN_SECONDS_PER_ROW * (1 + columns / 4)
    seconds += centres * width * (_KNN_SECONDS_PER_CELL if wide else _KNN_SECONDS_PER_OWN_CELL)
    return Estimate(
        what=(
            f"k-NN local calibration: {rows:,} rows × {columns} covariate columns "
            f"({numeric} numeric, {nominal} nominal with {levels:,} levels), "
            f"{centres:,} centres, k = {k:,}"
        ),
        bytes=int(memory),
        seconds=float(seconds),
        advice=(
            "analyse a sample of rows, choose fewer centres (max_centres) or a smaller k, "
            "or fewer covariates in the input space (nominal ones with many levels make "
            "each search wider), or another grouping (bins of a covariate or of the score)"
        ),
    )


def kernel_estimate(rows: int, *, columns: int, centres: int, pairs: int) -> Estimate:
    """Cost of kernel groups once their (centre, input) pairs within reach are counted.

    Examples
    --------
    >>> kernel_estimate(10**6, columns=3, centres=10_000, pairs=3 * 10**7).bytes > 10**9
    True
    """
    return Estimate(
        what=(f"kernel local calibration: {rows:,} rows × {columns} covariate columns, "
              f"{centres:,} centres, {pairs:,} (centre, input) pairs within reach"),
        bytes=int(rows * (_KNN_BYTES_PER_ROW + _KNN_BYTES_PER_COLUMN_ROW * columns)
                  + pairs * _KERNEL_BYTES_PER_PAIR),
        seconds=rows * _KNN_SECONDS_PER_ROW * (1 + columns / 4)
        + pairs * _KERNEL_SECONDS_PER_PAIR,
        advice="choose a smaller bandwidth or fewer centres (max_centres), or a sample of rows",
    )


# --------------------------------------------------------------------------------------------
# Algorithm 1 (multi-calibration over random subpopulations): the dashboard and `mcviz metrics`

# Measured peak RSS (benchmarks/bench_budget.py, issue #25) on random subpopulations of
# 10^5-2x10^5 rows with 4 numeric and 2 nominal covariates (l = 500-1,000): the subpopulations
# keep one index per member, 0.25-0.3 bytes per subpopulation and row on average with every
# repeat kept; 1.5-2.2e-9 s (CPU and wall at load average 7) per subpopulation and row since
# #28 sped up the evaluation. Both are rounded up.
SUBPOP_BYTES_PER_MEMBER = 0.33  # per subpopulation and row
SUBPOP_BYTES_PER_ROW = 64  # the full population's per-row work arrays (one pass)
SUBPOP_SECONDS_PER_MEMBER = 3e-9  # per subpopulation and row (CPU 1.5-1.9e-9 since #28)


def subpopulations_estimate(rows: int, subpopulations: int, repeats: int = 1) -> Estimate:
    """Return the cost of generating and measuring ``subpopulations`` × ``repeats`` (Algorithm 1).

    The results of every repeat are kept (every page shows them), so memory adds up over
    repeats: about 0.33 bytes per subpopulation and row, plus 64 bytes per row.
    """
    members = rows * subpopulations * repeats
    return Estimate(
        what=(f"multi-calibration over {subpopulations:,} random subpopulations × {repeats:,} "
              f"repeat{'s' if repeats != 1 else ''} of {rows:,} rows"),
        bytes=int(members * SUBPOP_BYTES_PER_MEMBER + rows * SUBPOP_BYTES_PER_ROW),
        seconds=members * SUBPOP_SECONDS_PER_MEMBER,
        advice="choose fewer subpopulations (ℓ) or fewer repeats, or screen the data out of "
               "core with `mcviz screen --engine duckdb`",
    )


# The classical measures of one population (mcviz.stats.measures.classical_measures): measured
# peak RSS above the input 159-166 bytes per row with distinct scores (10^6 and 3x10^6 rows,
# weighted or not) and 85 with 101 distinct scores (10^6 rows): about 90 per row and 80 per
# run of tied scores; CPU 0.24-0.6 s per 10^6 rows at load 11 (benchmarks/bench_budget.py
# "classical", 30 Nov 2026).
CLASSICAL_BYTES_PER_ROW = 90
CLASSICAL_BYTES_PER_RUN = 80
CLASSICAL_SECONDS_PER_ROW = 1.0e-6


def classical_estimate(rows: int, runs: int | None = None) -> Estimate:
    """Return the cost of the classical measures of ``rows`` rows in ``runs`` tied-score runs.

    ``runs``: the distinct scores (default ``rows``: none tied, the most).
    """
    runs = rows if runs is None else runs
    return Estimate(
        what=f"the classical measures of {rows:,} rows",
        bytes=int(rows * CLASSICAL_BYTES_PER_ROW + runs * CLASSICAL_BYTES_PER_RUN),
        seconds=rows * CLASSICAL_SECONDS_PER_ROW,
        advice="sample rows, or compute them out of core with `mcviz metrics --engine duckdb`",
    )


# --------------------------------------------------------------------------------------------
# Estimates of reading a table (mcviz.io.readers). Measured peak RSS above the process's
# baseline (benchmarks/bench_budget.py, tests/test_budget_measured.py).

_TABLE_BYTES_PER_BYTE = 3.0  # the parsed batches, the DataFrame converted from them, pool slack
_TABLE_SECONDS_PER_VALUE = 1e-7  # parsing, converting (CPU 4-6e-8 per value; 1.9e-7 re-read)
_BUFFER_COPIES = 3  # text blocks held by the streaming reader (read ahead, being parsed)
_PARQUET_BYTES_PER_DECODED_BYTE = 2.4  # the decoded table and the frame's copy
_PARQUET_SECONDS_PER_DECODED_BYTE = 1.8e-9  # CPU per decoded byte 0.6-1.2e-9 on a quiet machine
# (load 1, final code: 1.5-2.9x above it), 1.2-1.7e-9 at load 7, up to 4.3e-9 at load 14: Arrow
# decodes in threads, whose CPU time grows with the load, so no constant is within 1.5x at every
# load; this one is within 3x from a quiet machine to load 14 (bench_budget.py parquet_read).


def table_read_estimate(table: int, *, held: int = 0, buffer: int = 0, values: int = 0,
                        what: str = "reading a table") -> Estimate:
    """Peak memory of a read in chunks (:mod:`mcviz.io.chunked`) whose table has ``table`` bytes.

    Parameters
    ----------
    table : int
        Bytes of the parsed table so far (Arrow's ``nbytes`` of the batches read).
    held : int
        Bytes held beside it meanwhile (the file's bytes, when it does not stream from disk).
    buffer : int
        The reader's block of text (a few are held at once).
    values : int
        Rows times columns read so far (the time).
    what : str
        The read, in words.

    Examples
    --------
    >>> table_read_estimate(10**9).bytes > 2 * 10**9
    True
    """
    return Estimate(
        what=f"{what}: a table of {format_bytes(table)}",
        bytes=int(held + buffer * _BUFFER_COPIES + table * _TABLE_BYTES_PER_BYTE),
        seconds=values * _TABLE_SECONDS_PER_VALUE,
        advice=("read a sample of the rows, or fewer columns, or screen the file out of core "
                "with `mcviz screen --engine duckdb`"),
    )


def parquet_read_estimate(file: int, decoded: int, *, what: str = "reading a Parquet file"
                          ) -> Estimate:
    """Peak memory of reading a Parquet file (``file`` bytes, ``decoded`` from its footer)."""
    return Estimate(
        what=f"{what}: {format_bytes(file)} decoding to about {format_bytes(decoded)}",
        bytes=int(file + decoded * _PARQUET_BYTES_PER_DECODED_BYTE),
        seconds=decoded * _PARQUET_SECONDS_PER_DECODED_BYTE,
        advice=("read a sample of the rows, or fewer columns, or screen the file out of core "
                "with `mcviz screen --engine duckdb`"),
    )


# --------------------------------------------------------------------------------------------
# The monitor (mcviz.monitor.monitor_calibration): `mcviz monitor` and the Monitor page.
# Measured peak RSS above the process's RSS before the call (benchmarks/bench_budget.py,
# tests/test_budget_measured.py): the per-row work arrays (period codes, cell codes, per-cell
# sums), the segments' member lists (8 B per member) and the membership patterns, and a fixed
# part (the null draws in batches of at most 4e6 values).

_MONITOR_BYTES_PER_ROW = 60
_MONITOR_BYTES_PER_MEMBER = 12
_MONITOR_BATCH_VALUES = 4_000_000  # mcviz.monitor.alarm: values of one batch of null draws
_MONITOR_BYTES_PER_CELL_DRAW = 40  # a batch's (atom, period) draws: 5 float64 arrays
_MONITOR_BYTES_PER_PATH_DRAW = 16  # a batch's series paths along the monitored periods
_MONITOR_SECONDS_PER_ROW = 3e-7  # CPU 0.43 s for 10^6 rows x 52 weeks x 51 series (issue 41)
_MONITOR_SECONDS_PER_MEMBER = 4e-9
_MONITOR_SECONDS_PER_WINDOW_DRAW = 3.5e-9  # a (series, window) of one draw: the scan (CPU
# 4.4-4.8 s for 10^6 rows x 730 days x 101 series x 999 draws, where 5e-9 said 8.6 s, and
# 1.3-1.6 s for 52 weeks x 201 series: a compromise within 1.5x of both; issue 41)
_MONITOR_SECONDS_PER_CELL_DRAW = 2.4e-8  # an (atom, period) of one draw: normal draws, sums


def monitor_estimate(rows: int, *, segment_rows: int, series: int, periods: int,
                     n_draws: int = 999, atoms: int | None = None, windows: int | None = None,
                     all_periods: int | None = None) -> Estimate:
    """Cost of :func:`mcviz.monitor.monitor_calibration`: memory O(rows + segment members).

    Parameters
    ----------
    rows : int
        Rows monitored.
    segment_rows : int
        Members of all segments together (a covariate's levels hold each row once; a filter or
        a search finding up to every row).
    series : int
        The full population and the segments.
    periods : int
        Monitored periods (after the reference): the alarm scans their windows.
    n_draws : int
        Null draws of the alarm threshold.
    atoms, windows, all_periods : int, optional
        Once known: the segments' membership patterns, the windows the alarm scans and every
        period (reference included); they size a batch of null draws. Default: one pattern per
        series, every window up to 64 monitored periods (30 per period beyond), and
        ``periods``.

    Examples
    --------
    >>> e = monitor_estimate(10**6, segment_rows=10**6, series=51, periods=52)
    >>> e.bytes < 10**9, e.seconds < 10
    (True, True)
    """
    if windows is None:
        windows = periods * (periods + 1) // 2 if periods <= 64 else periods * 30
    atoms = series if atoms is None else atoms
    all_periods = periods if all_periods is None else all_periods
    per_draw = max(atoms * all_periods, windows * series, 1)
    batch = max(1, min(n_draws, _MONITOR_BATCH_VALUES // per_draw))
    memory = (rows * _MONITOR_BYTES_PER_ROW + segment_rows * _MONITOR_BYTES_PER_MEMBER
              + batch * (atoms * all_periods * _MONITOR_BYTES_PER_CELL_DRAW
                         + series * (periods + 1) * _MONITOR_BYTES_PER_PATH_DRAW))
    seconds = (rows * _MONITOR_SECONDS_PER_ROW + segment_rows * _MONITOR_SECONDS_PER_MEMBER
               + n_draws * series * windows * _MONITOR_SECONDS_PER_WINDOW_DRAW
               + n_draws * atoms * all_periods * _MONITOR_SECONDS_PER_CELL_DRAW)
    return Estimate(what=(f"monitor: {rows:,} rows × {periods} periods × {series} series, "
                          f"{n_draws} null draws"), bytes=int(memory), seconds=float(seconds),
                    advice="fewer filters or segment columns, longer periods (--period month), "
                           "fewer null draws (--draws), or a sample of the rows")


_BOOTSTRAP_BYTES_PER_CELL_DRAW = (34, 67)  # (0/1 unweighted, otherwise): multinomial counts,
# their float copy, two sums, a gathered column block; weighted adds sqrt and two normal draws
# (measured peak 33.4 and 66.7 bytes per cell and replicate, 200,000 rows, 99 thresholds)
_BOOTSTRAP_BYTES_PER_THRESHOLD_DRAW = 80  # per-threshold sums and net benefits of a replicate
_BOOTSTRAP_SECONDS_PER_CELL_DRAW = (1.9e-7, 3.1e-7)  # CPU 1.8-1.9e-7 and 3.0-3.1e-7


def bootstrap_estimate(cells: int, *, thresholds: int, n_bootstrap: int,
                       exact: bool = True) -> Estimate:
    """Cost of the decision impact's bootstrap (:func:`mcviz.decision.decision_impact`).

    Each replicate draws a count for every cell (rows with the same treated-at bins under the
    model and the fix, and the same label), so memory and time grow as
    ``n_bootstrap × cells``; a weighted or real-valued response also draws two normals per cell.

    Parameters
    ----------
    cells : int
        Occupied cells (at most rows; at most ``2 (thresholds + 1)²``).
    thresholds : int
        Thresholds of the curve and the ones asked for.
    n_bootstrap : int
        Bootstrap replicates (``--bootstrap``).
    exact : bool
        0/1 responses without weights (multinomial counts only).

    Examples
    --------
    >>> e = bootstrap_estimate(19_000, thresholds=99, n_bootstrap=100_000)
    >>> round(e.bytes / 1e9)  # what --bootstrap 100000 would have allocated on 200,000 rows
    65
    """
    kind = 0 if exact else 1
    values = int(n_bootstrap) * max(int(cells), 1)
    memory = (values * _BOOTSTRAP_BYTES_PER_CELL_DRAW[kind]
              + int(n_bootstrap) * int(thresholds) * _BOOTSTRAP_BYTES_PER_THRESHOLD_DRAW)
    return Estimate(what=(f"the decision impact's bootstrap: {int(n_bootstrap):,} replicates × "
                          f"{int(cells):,} cells"), bytes=int(memory),
                    seconds=float(values * _BOOTSTRAP_SECONDS_PER_CELL_DRAW[kind]),
                    advice="fewer bootstrap replicates (--bootstrap, default 1,000) or fewer "
                           "thresholds")


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask; at least 1)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - platforms without affinity masks
        return max(os.cpu_count() or 1, 1)

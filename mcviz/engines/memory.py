r"""How ``--memory-limit`` bounds the whole process: DuckDB's share of it.

DuckDB runs inside this process, so a limit given to a command covers DuckDB *and* what Python
holds beside it (the interpreter, numpy, pyarrow, a sample, the evaluator's buffers). DuckDB
gets what is left, shrunk by what DuckDB allocates beyond its own ``memory_limit``:

.. math::

    \text{DuckDB's limit} = \frac{L - R - B - m_0 - e_0}{1 + e_1}

with :math:`L` the limit, :math:`R` this process's resident memory now
(:func:`resident_bytes`), :math:`B` the buffers the command itself will add while DuckDB works
(:func:`screen_reserve` for the exact screen), :math:`m_0` = :data:`MARGIN`, and DuckDB's own
overshoot :math:`e_0 + e_1 \cdot` its limit (:data:`DUCKDB_OVER_FIXED`,
:data:`DUCKDB_OVER_SHARE`: allocations outside its buffer manager, such as Arrow export
buffers and sort keys).

Measured (DuckDB 2.0, 2 cores, ``benchmarks/bench_scale.py`` data, score-sorted stream): the
process's resident memory while DuckDB sorts minus the memory before it, against the limit
given: 36 MiB over at 122 MiB, 29 at 191 MiB, 23 at 477 MiB, 24 at 954 MiB (10^7 rows) and
69 MiB over at 1,907 MiB (10^8 rows, 4 GiB spilled); opening the connection adds about 35 MiB
before that. A limit of 57 MiB fails to sort 10^7 rows
("failed to pin block"), 122 MiB works: :data:`DUCKDB_FLOOR`.
"""

from __future__ import annotations

import os

from mcviz.errors import ValidationError

__all__ = ["BYTES_PER_MEMBER", "DUCKDB_FLOOR", "DUCKDB_OVER_FIXED", "DUCKDB_OVER_SHARE", "MARGIN",
           "ROW_BYTES", "duckdb_share", "members_per_row", "release_memory", "resident_bytes",
           "screen_reserve"]

MARGIN = 96 << 20
"""Bytes kept free beside DuckDB and the command's buffers (Python's own small allocations, and
what varies between runs: with 64 MiB the 10^8-row screen under 2GB peaked at 1,965 MB)."""

DUCKDB_OVER_FIXED = 80 << 20
DUCKDB_OVER_SHARE = 0.02
"""DuckDB's resident memory beyond its ``memory_limit``: 80 MiB plus 2% of the limit. Measured:
the connection itself takes about 35 MiB before any query, and a sort 23-36 MiB more than its
limit at limits of 122-954 MiB, 69 MiB at 1,907 MiB (see the module docstring)."""

DUCKDB_FLOOR = 128 << 20
"""The smallest ``memory_limit`` given to DuckDB: it sorts 10^7 rows in 122 MiB, not in 57."""

BYTES_PER_MEMBER = 12
"""Bytes the exact screen holds per member of a block: its position (8 bytes, int64) and the
work of testing it (the parent's codes gathered, the test's mask, the concatenated indices of
a group of the evaluator). Measured: one thread adds 92 MiB to the stream's peak with 67.7
members per row on blocks of 122,880 rows (8.3 million members: 11.6 bytes each, the block's
own arrays included)."""

ROW_BYTES = 64
"""Bytes per row of a block beside its members: score, label, weight and the variance terms
(8 each), the (residual, variance) pairs (16), run ids and codes (about 12), and the Arrow batch
it came from."""


def resident_bytes() -> int:
    """Return this process's resident memory now (``/proc/self/statm``; 0 where unreadable)."""
    try:
        with open("/proc/self/statm") as stream:  # noqa: PTH123
            return int(stream.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def release_memory() -> None:
    """Collect garbage; return freed pages to the system (glibc ``malloc_trim``, Arrow's pool).

    What a finished step freed otherwise stays resident in the allocators, and counts against
    ``--memory-limit`` (:func:`duckdb_share` measures it): ``mcviz screen`` held 539 MB after
    Algorithm 1 on a 10^6-row sample, 172 MB once handed back.
    """
    import contextlib
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    with contextlib.suppress(ImportError, AttributeError, NotImplementedError):
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    name = ctypes.util.find_library("c")
    if name:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(name).malloc_trim(0)


def members_per_row(sizes, rows: int) -> float:
    """Members per row of a set of subpopulations: their sizes' sum over the rows.

    ``sizes``: each subpopulation's rows in a sample of ``rows`` rows (Algorithm 1's output on
    the sample: an unbiased estimate of the members per row of the full data). The full
    population counts one member per row.

    Examples
    --------
    >>> members_per_row([100, 40, 10], 100)
    1.5
    """
    return float(sum(int(s) for s in sizes)) / max(int(rows), 1)


def screen_reserve(per_row: float, *, threads: int, batch_rows: int,
                   rows: int | None = None) -> int:
    r"""Bytes the exact screen holds beside DuckDB: :math:`t (b (12 m + 64) + 48 g)`.

    :math:`t` blocks (``threads``: :class:`~mcviz.core.batches.InOrder` holds at most one
    block per thread) of :math:`b` rows (``batch_rows``, or all ``rows`` of a smaller table)
    with :math:`m` members per row (``per_row``, :func:`members_per_row`):
    :data:`BYTES_PER_MEMBER` per member and :data:`ROW_BYTES` per row, plus the evaluator's
    group work arrays (:math:`g` = :data:`~mcviz.core.evaluator.GROUP_ELEMENTS` members,
    about 48 bytes each) per thread.

    Examples
    --------
    >>> screen_reserve(67.7, threads=2, batch_rows=122_880) // 2**20
    229
    """
    from mcviz.core.evaluator import GROUP_ELEMENTS

    threads = max(int(threads), 1)
    block = batch_rows
    if rows is not None:  # a table of fewer rows: fewer and smaller blocks
        block = min(batch_rows, max(int(rows), 1))
        threads = min(threads, -(-max(int(rows), 1) // block))
    per_block = block * (BYTES_PER_MEMBER * max(float(per_row), 1.0) + ROW_BYTES)
    return int(threads * (per_block + 48 * GROUP_ELEMENTS))


def duckdb_share(limit: str, *, reserve: int = 0, refuse: bool = False,
                 what: str = "this command") -> str:
    r"""DuckDB's ``memory_limit`` when ``limit`` (``--memory-limit``) bounds the whole process.

    The limit minus this process's resident memory, ``reserve`` (what the command adds beside
    DuckDB) and :data:`MARGIN`, less DuckDB's own overshoot (module docstring). When that is
    below :data:`DUCKDB_FLOOR` the limit cannot be held: ``refuse`` raises
    :class:`~mcviz.errors.ValidationError` naming ``--memory-limit`` and the smallest limit
    that works; otherwise DuckDB gets the larger of the floor and a quarter of the limit (the
    search and comparison keep working under a tight limit, as before).

    Examples
    --------
    >>> int(duckdb_share("100GB")[:-3]) > 90_000
    True
    """
    from mcviz.budget import parse_bytes

    try:
        total = parse_bytes(limit)
    except ValidationError:
        raise ValidationError(f"--memory-limit {limit!r} is not a size such as '2GB' or "
                              "'500MB'.") from None
    held = resident_bytes() + int(reserve) + MARGIN + DUCKDB_OVER_FIXED
    share = int((total - held) / (1.0 + DUCKDB_OVER_SHARE))
    if share < DUCKDB_FLOOR:
        if refuse:
            over = MARGIN + DUCKDB_OVER_FIXED + DUCKDB_FLOOR * DUCKDB_OVER_SHARE
            raise ValidationError(
                f"--memory-limit {limit} cannot hold {what}: this process already holds "
                f"{(held - reserve - MARGIN - DUCKDB_OVER_FIXED) / 1e6:,.0f} MB, {what} adds "
                f"{reserve / 1e6:,.0f} MB beside DuckDB, DuckDB needs at least "
                f"{DUCKDB_FLOOR / 1e6:,.0f} MB and {over / 1e6:,.0f} MB more are kept for its "
                f"own allocations and a margin. Give --memory-limit "
                f"{_round_up_mb(held + DUCKDB_FLOOR * (1.0 + DUCKDB_OVER_SHARE))}MB or more.")
        share = max(DUCKDB_FLOOR, total // 4)
    return f"{share // 2**20}MiB"


def _round_up_mb(size: float) -> int:
    """``size`` in MB, rounded up to a multiple of 50 (a limit a person would type)."""
    return int(-(-size // 50e6) * 50)

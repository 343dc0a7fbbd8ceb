r"""How ``--memory-limit`` bounds the whole process: DuckDB's share of it.

DuckDB runs inside this process, so a limit given to a command covers DuckDB *and* what Python
holds beside it (the interpreter, numpy, pyarrow, a sample, the evaluator's buffers). DuckDB
gets what is left, shrunk by what DuckDB allocates beyond its own ``memory_limit``:

.. math::

    \text{DuckDB's limit} = \frac{L - R - B - m_0 - e_0}{1 + e_1}

with :math:`L` the limit, :math:`R` this process's resident memory now
(:func:`resident_bytes`), :math:`B` the buffers the command itself will add while DuckDB works
(:func:`screen_reserve` for the exact screen, :func:`stream_reserve` for the other sorted
passes of ``mcviz metrics``, ``compare``, ``search`` and ``report``,
:data:`AGGREGATE_RESERVE` for ``decide`` and ``apply``, :data:`MONITOR_RESERVE`),
:math:`m_0` = :data:`MARGIN`, and DuckDB's own
overshoot :math:`e_0 + e_1 \cdot` its limit (:data:`DUCKDB_OVER_FIXED`,
:data:`DUCKDB_OVER_SHARE`: allocations outside its buffer manager, such as Arrow export
buffers and sort keys).

Measured (DuckDB 2.0, 2 cores, ``benchmarks/bench_scale.py`` data, score-sorted stream): the
process's resident memory while DuckDB sorts minus the memory before it, against the limit
given: 36 MiB over at 122 MiB, 29 at 191 MiB, 23 at 477 MiB, 24 at 954 MiB (10^7 rows) and
69 MiB over at 1,907 MiB (10^8 rows, 4 GiB spilled); opening the connection adds about 35 MiB
before that. A limit of 57 MiB fails to sort 10^7 rows
("failed to pin block"), 122 MiB works: :data:`DUCKDB_FLOOR`.

Every command with ``--memory-limit`` refuses a limit that leaves DuckDB less than its floor,
naming the smallest that works: first before any row is read (:func:`refuse_before_reading`:
what the process holds at start-up, the command's fixed reserve, :data:`DRAW_RESIDUE`), then
once the sample shows what the command will hold. Refused before reading, a child holds 0-20
MiB over its start-up (2*10^5 rows); refused after its draw it held 51-129 MiB over it, and
``mcviz screen --memory-limit 50MB`` of 2*10^6 rows reached 598 MiB. Each reserve was measured
on 2*10^5, 2*10^6 and 2*10^7 rows (score, challenger, label, weight, two nominal covariates, a
number, a day; ``--sample-rows 20000`` for compare, search and report) at the smallest limit
each command named: the peak RSS of every run stayed under the limit it was given (MB, at
2*10^7 rows: decide 340 of 600, apply 536 of 700 (458 at 10^8), monitor 330 of 650, metrics 504
of 700, compare 458 of 700, search and report 608 of 750 with :data:`COMPILED_LOOPS` reserved
(the 477 and 473 of 600 measured before the loops came were 599 and 604 MB with them), screen
787 of 950 (ℓ = 1000, a sample of 10^6 rows)). A sample's draw runs between the two checks,
DuckDB given the limit less what the process holds (at least 128 MiB); the check after it
names a limit that holds the sample too.
"""

from __future__ import annotations

import os

from mcviz.errors import ValidationError

__all__ = [
    "AGGREGATE_RESERVE",
    "BYTES_PER_MEMBER",
    "COMPARE_WORKER",
    "COMPARISON_PASSES",
    "COMPILED_LOOPS",
    "DRAW_RESIDUE",
    "DUCKDB_FLOOR",
    "DUCKDB_OVER_FIXED",
    "DUCKDB_OVER_SHARE",
    "FINDING_ENGINE_ROW_BYTES",
    "FINDING_ENGINE_RUN_BYTES",
    "FINDING_RUN_BYTES",
    "FINDING_WEIGHTED_RUN_BYTES",
    "JVM_NON_HEAP",
    "MARGIN",
    "MONITOR_RESERVE",
    "PLAIN_WORKER",
    "PYTHON_WORKER",
    "REPEAT_SLACK",
    "ROW_BYTES",
    "RUN_BYTES",
    "SPARK_DRIVER_RESERVE",
    "SPARK_HEAP_FLOOR",
    "SPARK_MARGIN",
    "WORKER_DAEMON",
    "WRITE_FLOOR",
    "compiled_loops_reserve",
    "duckdb_room",
    "duckdb_share",
    "finding_run_bytes",
    "finding_runs_bytes",
    "local_threads",
    "members_per_row",
    "refuse_before_reading",
    "release_memory",
    "resident_bytes",
    "score_runs",
    "screen_reserve",
    "spark_heap",
    "spark_room",
    "stream_reserve",
]

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

WRITE_FLOOR = 256 << 20
"""The smallest ``memory_limit`` given to DuckDB for ``mcviz apply``'s Parquet write (``COPY
... TO ... (FORMAT PARQUET)``, the rows' order kept). Measured (DuckDB 2.0, 2 cores, the map's
column added to 9 columns): 2*10^7 rows in row groups of 1,048,576 (pyarrow's default) fail
at 150 MiB ("failed to allocate"), are written at 200 MiB (peak RSS 371 MiB) and 250 MiB
(420 MiB); 10^8 rows in row groups of 122,880 (DuckDB's) at 256 MiB (356 MiB, 49 s), and
``mcviz apply --memory-limit 700MB`` (DuckDB 290 MiB) at a peak of 437 MiB in 63 s. The
need follows the row groups read and written, not the row count (2*10^6 rows fit in 150 MiB);
a file of larger row groups may need more, and DuckDB's error then says to raise the limit."""

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

AGGREGATE_RESERVE = 32 << 20
"""Bytes a command holds beside DuckDB while DuckDB only aggregates or writes (``mcviz decide``'s
net benefit sums, ``mcviz apply``'s checks and its Parquet write, ``mcviz monitor``'s cells):
the result frames and pyarrow's conversion buffers (one row, or a few per threshold).
Measured with :func:`resident_bytes` at the check and the peak RSS after it (a thread polling
``/proc/self/status``), ``mcviz decide --no-fix`` on 2*10^5, 2*10^6 and 2*10^7 rows at the
smallest limit it names (650, 600, 600MB; DuckDB 197, 155, 155 MiB): 6, 33 and 77 MiB over
the 205-210 MiB held, DuckDB's own use included."""

MONITOR_RESERVE = 96 << 20
"""Bytes ``mcviz monitor`` holds beside DuckDB: the cells, and the null draws' batches
(:func:`mcviz.monitor.alarm.null_maxima` draws at most 4 million values at a time, a few
float64 arrays of that size: the normal draws, their Cornish-Fisher term, the cells' and the
series' sums), at most three arrays of that batch: 96 MiB. Measured (as
:data:`AGGREGATE_RESERVE`): 52 weeks x 51 series, 999 draws, 21, 27 and 45 MiB over the
184-187 MiB held at 2*10^5, 2*10^6 and 2*10^7 rows (the smallest limit named, 650MB); 19,999
draws 34 MiB and 364 days x 51 series 47 MiB at 2*10^6 rows, DuckDB's grouped pass
included."""

COMPILED_LOOPS = 128 << 20
"""Bytes the compiled loops (numba, :mod:`mcviz.core.kernels`) add the first time a process
runs them: an engine's sorted pass loads them (``kernels.loops(force=True)``) after DuckDB got
its share. Measured: ``mcviz search --engine duckdb`` of 2*10^5 rows (``--sample-rows
20000``) ended holding 309 MiB with them and 189 MiB without (``kernels.enabled = False``),
peaks 348 and 235 MiB; numba's import alone is 57 MiB, the rest comes when the cached loops
first run. Without this reserve ``mcviz report`` of 2*10^7 rows at the 600MB it named peaked
at 604 MB."""

RUN_BYTES = 96
"""Bytes per score run the classical measures hold (``mcviz metrics``, ``mcviz compare``):
five float64 sums per run (count, weight, positive, squared weight, the score), held twice
while DuckDB's result frame becomes the arrays, and the run's share of the frame's index.
Measured: 2^20 runs (2*10^6 distinct scores) left 96 MiB more resident after the pass (267
MiB against 171 at the check), and the pass peaked 211 MiB over the check with DuckDB's
GROUP BY (137 MiB) beside them, against 448 MiB allowed (``mcviz metrics --memory-limit
650MB``)."""


FINDING_RUN_BYTES = 144
"""Bytes per distinct score a finding's exact runs take in this process at their peak in
``mcviz report --engine``'s deck (reserved beside the engine), unweighted rows
(:data:`FINDING_WEIGHTED_RUN_BYTES` with a weight column): its runs of only the sums its
deviation reads (:func:`~mcviz.engines.calibration.finding_runs_table`: the score, rows and
:math:`\\sum WR`, 32 bytes a run unweighted), every row's sums between its scores
(:func:`~mcviz.engines.calibration.comparison_sums_table`, 24, handed over: its row counts
kept as the deviation's, the rest let go once read), the deviation of
:func:`~mcviz.stats.deviation.deviation_from_runs` (72 held, made with one working array a
run), then the finding's own LCS (its density binned
:data:`~mcviz.stats.smoothing.lcs_runs.DENSITY_PIECE` runs at a time), reliability and path (on
the deviation's axes: 8 held). Measured (``benchmarks/bench_finding_runs.py``: the deck's charts
of one finding whose rows are not read, the full population in 1,048,500 fine bins): Python's
allocations (``tracemalloc``) peaked at 126 bytes a run (988,494 continuous scores) and 133
(974,888 tied), against 196 and 188 before (240 reserved); 144 holds them with 8% to spare."""

FINDING_WEIGHTED_RUN_BYTES = 156
""":data:`FINDING_RUN_BYTES` with a weight column: :math:`\\sum W` and :math:`\\sum W^2` a run
more, and the deviation's own abscissa (eq. (28)). Measured as there: 142 bytes a run (988,494
weighted scores; before, 220 at 1,898,053), 10% to spare."""

FINDING_ENGINE_RUN_BYTES = 16
"""Bytes per distinct score of a finding DuckDB needs, beyond its floor, to sum every row between
the finding's scores (:func:`~mcviz.engines.calibration.comparison_sums_table`'s ASOF join of
every row to the edges of eq. (7)), left in its share. Measured on 8*10^6 rows and a finding of
4,001,288 distinct scores: under a ``memory_limit`` of 128 MiB (its floor) DuckDB ran out of
memory; 136 MiB (2 bytes an edge beyond the floor), 144, 160, 192, 224, 256, 384 and 512 MiB ran
(the ``GROUP BY`` too). 16 keeps eight times the least that ran. Measured again on other
shapes with :data:`FINDING_ENGINE_ROW_BYTES` (there): at 10^7 rows and fewer the need beyond
the floor stays under 3 bytes an edge; at 10^8 rows it grows with the edges (4*10^6 evenly
spaced edges out of memory at 300 MiB, where 10^3 ran at 230)."""

FINDING_ENGINE_ROW_BYTES = 3
"""Bytes per row of the table DuckDB needs, beside :data:`FINDING_ENGINE_RUN_BYTES` per edge and
its floor, for the same ASOF join (every row joins, so its need grows with the rows, not only
with the edges). Measured (``/work/tmp22/h22d/asof.py``: the join and its ``GROUP BY`` alone,
2 threads, the 10^7- and 10^8-row ``bench_engines`` files, a finding of 5,232,651 edges): 10^7
rows ran out of memory at 128 MiB and ran at 160 and 200 MiB; 10^8 rows ran out of memory at
304 MiB ("failed to pin block of size 256.0 KiB", after 84 s: ``mcviz report --engine duckdb
--memory-limit 2GB``'s failure at 10^8) and ran at 450 MiB. The floor and 16 bytes an edge
give 208 MiB there; 3 bytes a row more give 494 MiB at 10^8 rows (237 MiB at 10^7). The
join is cut into passes of score ranges that each fit DuckDB's share
(:func:`~mcviz.engines.calibration.comparison_passes`), so a pass needs this for its own rows
only.

Measured on several shapes (``benchmarks/bench_finding_join.py``, 2 threads, the least
``memory_limit`` that ran bisected in separate processes, each run's sums equal numpy's;
"need" beyond the 128 MiB floor, "model" 16 an edge + 3 a row beyond it, MiB):

=================================  =========  =========  ============  =====
shape (rows, finding's edges)      ran at     failed at  need          model
=================================  =========  =========  ============  =====
continuous 2*10^6, 1.0*10^6        128        --         0             21
weighted 4*10^6, 2.0*10^6          128        --         0             42
continuous 10^7, 5.0*10^6          141        --         <= 13         105
continuous 10^7, 2.0*10^5 (2%)     136        --         <= 8          32
weighted 10^7, 5.0*10^6            154        141        13-26         105
ties (6 decimals) 10^7, 9.9*10^5   139        133        5-11          44
ties (3 decimals) 10^7, 10^3       135        --         <= 7          29
10^8 (10 ties a score), 10^3       230        195        67-102        286
10^8, 4.0*10^6 spaced              350        300        172-222       347
10^8, 5.2*10^6 (h22d's finding)    450        304        176-322       365
=================================  =========  =========  ============  =====

So the model holds everywhere measured: it gives at least 1.1x the least limit that ran
beyond the floor (10^8 rows, 5.2*10^6 edges), 1.6x (10^8, 4*10^6), 2.8x (10^8, 10^3) and 4x
or more at 10^7 rows and fewer. The need a row grows with the rows (up to 10^7 rows the join
fits in the floor or nearly; at 10^8 about 1 byte a row with few edges, 2 with millions), so
the constants are set by the 10^8 runs, and a pass, with fewer rows than the table, needs
less than its share of them. (Tables of at most 2^20 distinct scores, as the tied ones here,
take no join in the report: their findings' runs are exact.) Through the passes at 10^8
(``channel == 'web'``, 3,999,346 edges, the 10^8 ``bench_engines`` file): 3 passes under
300 MB (the 2GB report's share; 78 s, 40 CPU s) and 6 under 200 MB (95 s, 40 CPU s) ran,
exact; ``region == 'r1'`` (1,248,584 edges): 2 passes under 300 MB (47 s, 37 CPU s), exact. Not measured: a pass of more than 10^8 rows (a share above about 414 MiB on a larger
table), where the need a row may grow further."""

COMPARISON_PASSES = 8
"""The passes a finding's exact deviation may take in DuckDB when the report decides it exact:
its edges (:data:`FINDING_ENGINE_RUN_BYTES` each) and an eighth of the table's rows
(:data:`FINDING_ENGINE_ROW_BYTES` each) must fit the room beside what this process holds. Each
pass scans the score and label of every row (the rows outside its score range filtered out
before the join), so this bounds the time, not the memory: every pass is planned to fit
DuckDB's share whatever the rows."""


def finding_run_bytes(weighted: bool = False) -> int:
    """Return the bytes a finding's exact run takes (with a weight column or not).

    :data:`FINDING_RUN_BYTES`, or :data:`FINDING_WEIGHTED_RUN_BYTES` when ``weighted``.
    """
    return FINDING_WEIGHTED_RUN_BYTES if weighted else FINDING_RUN_BYTES


def finding_runs_bytes(runs: int, *, weighted: bool = False) -> int:
    """Bytes a finding's exact runs take (:func:`finding_run_bytes` each)."""
    return finding_run_bytes(weighted) * max(int(runs), 0)


def duckdb_room(limit: str, *, reserve: int = 0, floor: int = DUCKDB_FLOOR) -> int:
    """Bytes ``limit`` (``--memory-limit``) leaves beyond what :func:`duckdb_share` counts.

    The limit less this process's resident memory, ``reserve``, :data:`MARGIN`, DuckDB's
    overshoot and its ``floor``: what a command may add beside DuckDB (0 when nothing).
    """
    from mcviz.budget import parse_bytes

    held = resident_bytes() + int(reserve) + MARGIN + DUCKDB_OVER_FIXED
    return max(int(parse_bytes(limit) - held - floor * (1.0 + DUCKDB_OVER_SHARE)), 0)


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


def stream_reserve(*, threads: int, batch_rows: int, rows: int | None = None,
                   per_row: float = 1.0, runs: int = 0) -> int:
    r"""Bytes a command holds beside DuckDB while score-sorted rows stream into Python.

    The blocks of :func:`screen_reserve` (``per_row`` members per row: 1, the full population,
    for ``mcviz metrics``' calibration block and ``mcviz compare``'s paths; the findings and
    their held-out rows for ``mcviz search`` and ``mcviz report``), plus :data:`RUN_BYTES`
    per score run (``runs``) the classical measures gather as the rows pass. Callers add
    :func:`compiled_loops_reserve` when the pass runs the compiled loops (``mcviz search`` and
    ``report``, whose findings are screened; not ``metrics`` or ``compare``: measured, their
    passes leave the loops unloaded).

    Measured (resident at the check, peak RSS after it; DuckDB at the share the smallest named
    limit leaves): ``mcviz metrics`` 2*10^7 rows, 41 MiB reserved, DuckDB 269 MiB: 306 MiB over
    the 174 MiB held (its sort included) against 491 MiB allowed (reserve, DuckDB and its
    overshoot, :data:`MARGIN`); ``mcviz compare`` 2*10^6 / 2*10^7 rows, 143 MiB reserved,
    DuckDB 160 MiB: 223 / 252 MiB over the 184 MiB held against 482; ``mcviz search``
    2*10^6 / 2*10^7 rows, 45 MiB, DuckDB 173-174 MiB: 196 / 283 MiB over the 172 MiB held
    against 398; ``mcviz report`` 2*10^7 rows: 280 MiB over against 399.

    Examples
    --------
    >>> stream_reserve(threads=2, batch_rows=122_880) // 2**20
    41
    """
    return screen_reserve(per_row, threads=threads, batch_rows=batch_rows,
                          rows=rows) + RUN_BYTES * max(int(runs), 0)


def score_runs(rows: int | None) -> int:
    """Score runs the classical measures may hold: a few per cent over
    :data:`~mcviz.settings.ENGINE_SCORE_RUNS`, and at most one per row (``rows``; None:
    unknown)."""
    from mcviz.settings import ENGINE_SCORE_RUNS

    runs = int(ENGINE_SCORE_RUNS * 1.05)
    return runs if rows is None else min(runs, int(rows))


def compiled_loops_reserve() -> int:
    """Return :data:`COMPILED_LOOPS` when the sorted pass will load the compiled loops, else 0.

    0 when they are disabled, numba is missing, or this process loaded them already (then
    what they hold is resident, counted by :func:`resident_bytes`).
    """
    from mcviz.core import kernels

    return COMPILED_LOOPS if kernels.will_load() else 0


DRAW_RESIDUE = 48 << 20
"""Bytes a process holds more once a sample is drawn with DuckDB (the connection closed, the
rows' frame gone, :func:`release_memory` called) than before: DuckDB's and Arrow's arenas,
the first query's caches. Measured (2*10^5 rows, the check before the read against the check
after it): 37-47 MiB for screen, decide, monitor, metrics, compare, search and report
(10,000-row roles samples, 20,000-row search samples); the limit
:func:`refuse_before_reading` names then holds the later check too, where the sample is small."""


def refuse_before_reading(limit: str | None, *, reserve=0, what: str = "this command",
                          floor: int = DUCKDB_FLOOR) -> None:
    """Refuse, before any row is read, a ``limit`` (``--memory-limit``) that can never be held.

    What is known before the first read: what this process holds once DuckDB is imported
    (the interpreter, numpy, pandas, pyarrow, DuckDB's library: resident for the whole run),
    :data:`DRAW_RESIDUE` (what drawing the sample leaves), the command's fixed ``reserve``
    beside DuckDB (the same as its later check's: the score runs, the stream's blocks at their
    fewest members, the compiled loops; or a function returning it, called only when a limit
    is given), DuckDB's ``floor`` and the margins of :func:`duckdb_share`. A limit below
    their sum raises
    :class:`~mcviz.errors.ValidationError` naming ``--memory-limit`` and the smallest limit
    that can work, before a sample is drawn: drawn first, the sample of ``mcviz screen
    --memory-limit 50MB`` held 598 MiB before the refusal (2*10^6 rows). None: no limit.

    Examples
    --------
    >>> refuse_before_reading(None)
    >>> refuse_before_reading("100GB", reserve=lambda: 1 << 30)
    """
    if limit is None:
        return
    import duckdb  # noqa: F401 - its library stays resident for the whole run: count it now

    reserve = reserve() if callable(reserve) else reserve
    duckdb_share(limit, reserve=int(reserve) + DRAW_RESIDUE, refuse=True, what=what,
                 floor=floor)


def duckdb_share(limit: str, *, reserve: int = 0, refuse: bool = False,
                 what: str = "this command", floor: int = DUCKDB_FLOOR) -> str:
    r"""DuckDB's ``memory_limit`` when ``limit`` (``--memory-limit``) bounds the whole process.

    The limit minus this process's resident memory, ``reserve`` (what the command adds beside
    DuckDB) and :data:`MARGIN`, less DuckDB's own overshoot (module docstring). When that is
    below ``floor`` (:data:`DUCKDB_FLOOR`; :data:`WRITE_FLOOR` for ``mcviz apply``'s write)
    the limit cannot be held: ``refuse`` raises :class:`~mcviz.errors.ValidationError`
    naming ``--memory-limit`` and the smallest limit that works; otherwise DuckDB gets the
    larger of the floor and a quarter of the limit (a sample's draw, refused later by its
    command if the limit cannot hold the rest).

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
    if share < floor:
        if refuse:
            over = MARGIN + DUCKDB_OVER_FIXED + floor * DUCKDB_OVER_SHARE
            raise ValidationError(
                f"--memory-limit {limit} cannot hold {what}: this process already holds "
                f"{(held - reserve - MARGIN - DUCKDB_OVER_FIXED) / 1e6:,.0f} MB, {what} adds "
                f"{reserve / 1e6:,.0f} MB beside DuckDB, DuckDB needs at least "
                f"{floor / 1e6:,.0f} MB and {over / 1e6:,.0f} MB more are kept for its "
                f"own allocations and a margin. Give --memory-limit "
                f"{_round_up_mb(held + floor * (1.0 + DUCKDB_OVER_SHARE))}MB or more.")
        share = max(floor, total // 4)
    return f"{share // 2**20}MiB"


REPEAT_SLACK = 25_000_000
"""Bytes the limit a refusal names keeps to spare: a second run of the same command holds a few
MB more or less (``mcviz search`` of 2*10^7 rows held 180 MB at its check once, 181 MB the
next time: without the slack the 550MB the first run named was refused by the second)."""


def _round_up_mb(size: float) -> int:
    """Return ``size`` plus :data:`REPEAT_SLACK` in MB, rounded up to a multiple of 50.

    A limit a person would type, with room for a second run's few MB more.
    """
    return int(-(-(size + REPEAT_SLACK) // 50e6) * 50)


# --- Spark: --memory-limit bounds this process, the JVM it starts and Spark's Python workers ---

SPARK_HEAP_FLOOR = 512 << 20
"""The smallest JVM heap (``spark.driver.memory``) given to Spark: Spark refuses to start with
less than 450 MiB of heap (1.5 x its 300 MiB reserved memory); 512 MiB runs every command."""

JVM_NON_HEAP = 544 << 20
"""The Spark JVM's resident memory beyond its heap: metaspace and class space (about 150 MiB
after a simple query, more as the SQL's generated classes load), symbols (36), the garbage
collector's tables (about 50), netty's and Arrow's direct buffers (43), the code cache (26),
threads (12) and the shared libraries. Measured (OpenJDK 17, Spark 4.0, ``local[2]``, Native
Memory Tracking after a grouped count and a ``mapInPandas``): 344 MiB committed beyond a 512
MiB heap and 353 beyond a 1 GiB heap, the process's RSS 20-30 MiB above what it committed.
Whole commands on 2*10^6 rows reached more: ``mcviz metrics`` 987 MiB with a heap of at most
566 MiB (421 beyond it), ``mcviz compare`` 1,101 MiB with at most 566 (535 beyond it)."""

SPARK_DRIVER_RESERVE = 80 << 20
"""Bytes this Python process adds once Spark runs beside it: pyspark and py4j, the Arrow
batches and rows the driver collects, the results. Measured: ``mcviz screen --engine spark``
of 2*10^5 rows peaked 116 MiB over the 125 MiB it held at start, :data:`DRAW_RESIDUE`
included."""

PYTHON_WORKER = 384 << 20
"""Resident bytes of one Python worker Spark starts for a command that screens in its workers
(``mcviz screen``, ``search``, ``report``: pandas, pyarrow, mcviz's evaluator and
its compiled loops, one partition's blocks). ``local[n]`` runs ``n`` at once beside the daemon
they fork from (:data:`WORKER_DAEMON`). Measured (``mcviz screen --engine spark``, 2*10^5
rows, ``local[2]``): 271 and 320 MiB in one run, 317 and 327 in the next; the daemon 45. At
10^7 rows (``mcviz search --engine spark --memory-limit 3GB``, ``benchmarks/bench_engines.py``'s
file, the peak of each worker's resident memory polled every 0.2 s, 1 Dec 2026) the workers
that flag the searched rows and screen the sorted partitions reached 384 MiB each with every
column of the file in the flagging, 379 with only the columns read (336 counted then)."""

PLAIN_WORKER = 144 << 20
"""Resident bytes of one Python worker that only sums Arrow batches (``mcviz metrics``'
calibration block): 135-141 MiB each, beside a daemon of 45 (2*10^5 and 2*10^6 rows,
``local[2]``)."""

COMPARE_WORKER = 224 << 20
"""Resident bytes of one Python worker of ``mcviz compare --engine spark``: it sums the paths'
Arrow batches, and, when the sample finds a group, drops the searched rows
(:func:`mcviz.engines.holdout.exclude_rows`) and writes the sorted held-out rows to files
(:func:`~mcviz.engines.holdout.local_sorted_batches`); pyspark's own worker loads pandas for
a ``mapInArrow`` either way. Measured at 10^7 rows (the ``bench_engines`` file with B worse in
one group, ``--memory-limit 2GB``, ``local[2]``, each worker's peak polled every 0.2 s, 1 Dec
2026): 227 and 214 MiB with every column of the file in the held-out pass, 214 and 209 with
only the columns read (144 counted then; the tree peaked at 1,940 MB). Counted so, 2GB is
refused at 10^7 rows, naming 2150MB (the sample's floor,
:data:`mcviz.cli.engine_compare.SPARK_SAMPLE_FLOOR`), where the tree peaked at 1,861 MB."""

WORKER_DAEMON = 96 << 20
"""Resident bytes of the daemons Spark's Python workers fork from (45 MiB each), and the small
workers of a second kind of Python function: ``mcviz search --engine spark`` of 2*10^5 rows
ran two daemons and two workers of 56 MiB beside its two of 267 MiB (746 MiB in all)."""

SPARK_MARGIN = 64 << 20
"""Bytes kept free beside the Spark run's parts (what varies between runs)."""


def local_threads(master: str) -> int | None:
    """Return the task threads of a ``local`` master (``local[*]``: the CPUs), None otherwise.

    Examples
    --------
    >>> local_threads("local"), local_threads("local[2]"), local_threads("local[3, 2]")
    (1, 2, 3)
    >>> local_threads("spark://host:7077") is None
    True
    """
    text = str(master).strip()
    if not text.startswith("local"):
        return None
    inside = text[text.find("[") + 1:text.rfind("]")].split(",")[0].strip() if "[" in text else "1"
    if inside == "*":
        return os.cpu_count() or 1
    try:
        return max(int(inside), 1)
    except ValueError:
        return 1


def spark_heap(limit: str | None, *, master: str, worker: int = 0, reserve: int = 0,
               what: str = "this command", note: bool = False) -> str | None:
    r"""Return the Spark JVM's heap (``spark.driver.memory``) under ``--memory-limit``.

    In ``local`` mode the limit bounds the whole run: this Python process (what it holds now
    and ``reserve`` more, :data:`SPARK_DRIVER_RESERVE`), the JVM it starts (its heap and
    :data:`JVM_NON_HEAP`) and the Python workers Spark starts (``worker`` bytes each,
    :data:`PYTHON_WORKER`, :data:`COMPARE_WORKER` or :data:`PLAIN_WORKER`; 0 for a command
    whose queries are SQL only; one per task thread of the master, and :data:`WORKER_DAEMON`):

    .. math::

        \text{heap} = L - R - B - (w t + d) - J - m_0

    A limit that leaves the heap less than :data:`SPARK_HEAP_FLOOR` raises
    :class:`~mcviz.errors.ValidationError` naming ``--memory-limit`` and the smallest limit
    that works. With a cluster master (``spark://...``, ``yarn``...) the executors' memory is
    the cluster's: the limit bounds the driver only (this process and its JVM, no local
    workers), and a one-line note on stderr says so (``note``: the first call of a run). None:
    no limit (Spark's default heap).

    Measured (``local[2]``, 2 cores shared with other jobs; the peak of the sum of the resident
    memory of the command's process tree, polled every 20 ms from ``/proc``; the data of
    ``tests/cli/test_cli_memory_limit.py``, ``--sample-rows 20000`` for search and compare; MiB
    at the smallest limit each named, then at 2GB): at 2*10^5 rows decide 668 at 1350MB (674 at
    2GB), apply 657 at 1300MB (1,025 at 2GB: a fork of the JVM counted twice while Hadoop ran a
    shell command), monitor 763 at 1350MB (717), metrics 1,137 at 1700MB (1,094), screen 1,372
    at 2050MB, search 1,774 at 2050MB, compare 1,529 at 2100MB (2GB refused for these three);
    at 2*10^6 rows decide 712 at 1550MB, apply 791 at 1450MB, monitor 868 at 1400MB, metrics
    1,489 at 1750MB (1,418 at 2GB), screen 1,845 at 2150MB, search 1,874 at 2150MB, compare
    1,725 at 2150MB and, with today's constants, 1,717 at 1900MB (its JVM 1,090 MiB beside a
    heap of at most 568). Every peak stayed under its limit (the smallest limits were named by
    the constants of the time: :data:`JVM_NON_HEAP` was raised from 400 to 544 MiB and
    compare's workers counted as :data:`PLAIN_WORKER` after these runs; today's names are
    100-250 MB larger, compare's 200 MB smaller: decide and monitor 1500MB, apply 1450MB,
    metrics and compare 1900MB, screen, search and report 2300MB at 2*10^6 rows). Since the
    10^7-row runs of 1 Dec 2026 a screening worker counts 384 MiB (:data:`PYTHON_WORKER`)
    and compare's :data:`COMPARE_WORKER` 224: those names are about 100 MB (screen, search,
    report) and 170 MB (compare) larger.

    Examples
    --------
    >>> spark_heap(None, master="local[2]") is None
    True
    >>> int(spark_heap("100GB", master="local[2]")[:-1]) > 90_000
    True
    """
    if limit is None:
        return None
    total, workers = _spark_parts(limit, master=master, worker=worker, note=note)
    resident, adds = resident_bytes(), int(reserve) + SPARK_DRIVER_RESERVE
    held = resident + adds + workers + JVM_NON_HEAP
    heap = total - held - SPARK_MARGIN
    if heap < SPARK_HEAP_FLOOR:
        raise ValidationError(
            f"--memory-limit {limit} cannot hold {what} on Spark: this process holds "
            f"{resident / 1e6:,.0f} MB and adds {adds / 1e6:,.0f} MB, Spark's Python workers "
            f"{workers / 1e6:,.0f} MB, its JVM "
            f"{JVM_NON_HEAP / 1e6:,.0f} MB beside a heap of at least "
            f"{SPARK_HEAP_FLOOR / 1e6:,.0f} MB. Give --memory-limit "
            f"{_round_up_mb(held + SPARK_MARGIN + SPARK_HEAP_FLOOR)}MB or more.")
    return f"{heap >> 20}m"


def spark_room(limit: str, *, master: str, worker: int = 0) -> int:
    r"""Bytes this process may still add while Spark runs beside it at its least, under ``limit``.

    What :func:`spark_heap` leaves above :data:`SPARK_HEAP_FLOOR` with no ``reserve``:
    :math:`L - R - B - (w t + d) - J - m_0 - \text{floor}` (0 when negative). A command that
    works in this process while the JVM runs (``mcviz compare --engine spark`` searches its
    sample with the JVM started) sizes that work from it, then passes the work's bytes to
    :func:`spark_heap` as ``reserve``: the heap is then at least the floor and the whole run
    within the limit. Without the limit's room a ``compare --engine spark --memory-limit 2GB``
    of 10^7 rows, its sample sized from the machine's budget (1,428,572 rows), peaked at
    2.95 GiB (``benchmarks/bench_engines.py``, 30 Nov 2026).

    Examples
    --------
    >>> spark_room("100GB", master="local[2]") > 90 * 2**30
    True
    >>> spark_room("1GB", master="local[2]", worker=PLAIN_WORKER)
    0
    """
    total, workers = _spark_parts(limit, master=master, worker=worker, note=False)
    held = resident_bytes() + SPARK_DRIVER_RESERVE + workers + JVM_NON_HEAP
    return max(total - held - SPARK_MARGIN - SPARK_HEAP_FLOOR, 0)


def _spark_parts(limit: str, *, master: str, worker: int, note: bool) -> tuple[int, int]:
    """Return the limit in bytes and the bytes of Spark's Python workers in ``master``'s mode."""
    from mcviz.budget import parse_bytes

    try:
        total = parse_bytes(limit)
    except ValidationError:
        raise ValidationError(f"--memory-limit {limit!r} is not a size such as '2GB' or "
                              "'500MB'.") from None
    threads = local_threads(master)
    if threads is None:
        import sys

        if note:
            sys.stderr.write(f"mcviz: note: with --spark-master {master} --memory-limit bounds "
                             "the driver only (this process and its JVM); the executors' memory "
                             "is the cluster's.\n")
        return total, 0
    return total, int(worker) * threads + (WORKER_DAEMON if worker else 0)

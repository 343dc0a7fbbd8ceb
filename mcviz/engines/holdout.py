r"""Every row but the searched ones: a search's held-out rows at scale, measured by the engine.

``mcviz search --engine duckdb|spark`` searches a random sample of the rows in memory. The rows
the search looked at are the sample's search rows; every other valid row of the data (the
sample's held-out rows and every row never sampled) was chosen without looking at any label the
search used, so all of them are held out. This module names each row by its file and its
position in the file (DuckDB's ``file_row_number``, Spark's ``_metadata.row_index``: both the
0-based row number within the Parquet file), narrows an engine to the rows NOT searched
(:func:`exclude_rows`: on DuckDB an anti-join with the searched rows' keys, on Spark a
binary search of each row's key in the sorted searched keys, in the Python workers), and
computes on those rows the sums a finding's held-out effect needs (:func:`held_out_sums`, one
aggregate pass for every finding) and, for the few small groups whose p-value is simulated,
their rows (:func:`held_out_rows`). :math:`D/\sigma` comes from the engine's own exact
screen over the narrowed rows.

Memory: the searched keys (two 8-byte integers per searched row, at most
``RULES.max_search_rows``) go to the engine; everything else stays in it. The narrowed rows
carry only the columns read after (:func:`kept_columns`: the roles and the columns the caller
names), not every column of the files: on Spark each row passes through a Python worker, and
with every column (and pandas imported for the function) those workers held 190 MiB each in
``mcviz compare`` and 384 MiB in ``mcviz search`` at 10^7 rows, where 144 and 336 were counted
(1 Dec 2026). The workers' functions live in :mod:`mcviz.engines.spark_tasks` (light to import).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from mcviz.core.membership import MembershipPlan
from mcviz.engines import sql
from mcviz.engines.duckdb_engine import keyed_source, quote_literal
from mcviz.engines.spark_tasks import (
    FILE_KEY,
    HELD,
    ROW_BITS,
    ROW_KEY,
    file_path,
    searched_partition,
    write_partition,
)
from mcviz.engines.sql import _valid_sql
from mcviz.errors import ValidationError
from mcviz.subpopulations import Condition

__all__ = ["FILE_KEY", "HELD", "HELD_OUT", "ROW_BITS", "ROW_KEY", "SUMS", "condition_columns",
           "dialect_of", "exclude_rows", "flag_searched", "held_out_rows", "held_out_sums",
           "kept_columns", "keyed_source", "local_master", "local_sorted_batches",
           "mean_interval_from_sums", "query_frame", "role_rows_sql", "sample_keys",
           "screen_groups", "searched_codes", "sorted_batches", "spill_root"]

SUMS = ("rows", "w", "wd", "wdd", "ww", "wws", "wwss", "ws", "wr", "third")
r"""Per finding: rows, :math:`\sum W`, :math:`\sum W d`, :math:`\sum W^2 d^2`, :math:`\sum W^2`,
:math:`\sum W^2 d` (``wws``), :math:`\sum W^2 S(1-S)` (``wwss``), :math:`\sum W S`,
:math:`\sum W R`, :math:`\sum |W|^3 S(1-S)(S^2+(1-S)^2)` (``third``), with :math:`d = R - S`."""


def sample_keys(sample: pd.DataFrame, files: Sequence[str]) -> np.ndarray:
    """Return the (file index, row number) of each row of a keyed sample, shape (n, 2)."""
    file_index = sample[FILE_KEY].to_numpy()
    if file_index.dtype.kind not in "iu" or (file_index.size and not (
            file_index.min() >= 0 and file_index.max() < len(files))):
        raise ValidationError("the sample's rows could not be matched to their files.")
    return np.column_stack((file_index.astype(np.int64),
                            sample[ROW_KEY].to_numpy(dtype=np.int64)))


def kept_columns(engine, columns: Iterable[str]) -> list[str]:
    """Return the columns the narrowed rows keep: the roles (score, label, weight), ``columns``.

    ``columns``: every other column read from the narrowed engine (the conditions' columns,
    B's score...), in order, each once; :data:`HELD` is left out (the flag is made, not read).
    A column the data lacks is refused.
    """
    roles = (engine.columns.score, engine.columns.label, engine.columns.weight)
    names = [c for c in dict.fromkeys((*roles, *columns)) if c is not None and c != HELD]
    for name in names:
        if name not in engine.kinds:
            raise ValidationError(f"no column {name!r} in the data.")
    return names


def condition_columns(condition_sets: Iterable[Sequence[Condition]]) -> list[str]:
    """Return the columns conditions read (each once, in order), for :func:`kept_columns`."""
    return list(dict.fromkeys(c.column for conditions in condition_sets for c in conditions))


def exclude_rows(engine, keys: np.ndarray, *, columns: Iterable[str]) -> None:
    """Narrow ``engine`` (DuckDB or Spark) to the rows whose (file index, row) is NOT in ``keys``.

    ``keys`` index ``engine.files``. The engine's ``source`` becomes the anti-join, with the
    columns of :func:`kept_columns` (the roles and ``columns``) only; its later screens, sums
    and row reads see only those rows (and its overview counts them).
    """
    keys = np.asarray(keys, dtype=np.int64).reshape(-1, 2)
    kept = kept_columns(engine, columns)
    if engine.name == "duckdb":
        _exclude_duckdb(engine, keys, kept)
    elif engine.name == "spark":
        _exclude_spark(engine, keys, kept)
    else:
        raise ValidationError(f"held-out rows at scale need DuckDB or Spark, not {engine.name}.")


def _chosen_duckdb(kept: Sequence[str]) -> str:
    return ", ".join(f"t.{sql.DUCKDB.ident(name)}" for name in kept)


def _searched_duckdb(engine, keys: np.ndarray) -> str:
    """Register the searched keys as ``__mcviz_searched``; return the join condition.

    The condition matches a keyed row ``t`` (:func:`keyed_source`) to its key ``k``.
    """
    import pyarrow as pa

    engine.con.register("__mcviz_searched", pa.table({"f": keys[:, 0], "r": keys[:, 1]}))
    cases = " ".join(f"WHEN {quote_literal(name)} THEN {k}" for k, name in enumerate(engine.files))
    return f"k.f = (CASE t.{FILE_KEY} {cases} END) AND k.r = t.{ROW_KEY}"


def _exclude_duckdb(engine, keys: np.ndarray, kept: Sequence[str]) -> None:
    on = _searched_duckdb(engine, keys)
    engine.source = (f"(SELECT {_chosen_duckdb(kept)} FROM {keyed_source(engine.files)} AS t "
                     f"ANTI JOIN __mcviz_searched AS k ON {on})")

HELD_OUT = Condition(HELD, "==", True)
"""The condition of the held-out rows (after :func:`flag_searched`)."""


def flag_searched(engine, keys: np.ndarray, *, columns: Iterable[str]) -> None:
    """Give ``engine``'s rows the column :data:`HELD`: true where (file, row) is NOT in ``keys``.

    One left join of the rows with the searched rows' keys (``keys`` index ``engine.files``),
    so that one score-sorted pass measures every row and the held-out rows together
    (:func:`screen_groups`: the held-out sets are the findings' conditions with
    :data:`HELD_OUT`), where :func:`exclude_rows` needed a pass of its own. The rows keep the
    columns of :func:`kept_columns` (the roles and ``columns``) and the flag only.
    """
    keys = np.asarray(keys, dtype=np.int64).reshape(-1, 2)
    kept = kept_columns(engine, columns)
    if engine.name == "duckdb":
        on = _searched_duckdb(engine, keys)
        engine.source = (
            f"(SELECT {_chosen_duckdb(kept)}, k.f IS NULL AS {HELD} FROM "
            f"{keyed_source(engine.files)} AS t LEFT JOIN __mcviz_searched AS k ON {on})")
    elif engine.name == "spark":
        engine.source = "__mcviz_flagged"
        _spark_searched(engine, keys, kept, flag=True).createOrReplaceTempView(engine.source)
        engine.n = 0  # counted again by the next overview
    else:
        raise ValidationError(f"held-out rows at scale need DuckDB or Spark, not {engine.name}.")
    engine.kinds = {**engine.kinds, HELD: "bool"}


class _Sums:
    """The :data:`SUMS` of the specs at some positions, added up chunk by chunk."""

    def __init__(self, positions: Sequence[int]) -> None:
        self.positions = list(positions)
        self.sums = np.zeros((len(self.positions), len(SUMS)))

    def __call__(self, score, label, weight, members) -> None:
        # products summed, not ``@``: a BLAS dot of a long vector costs 20-40x more CPU here
        # (its threads spin on a busy machine)
        for k, position in enumerate(self.positions):
            rows = members[position]
            s, r = np.take(score, rows), np.take(label, rows)
            w = np.ones(rows.size) if weight is None else np.take(weight, rows)
            d, ww, v = r - s, w * w, s * (1.0 - s)
            wd, wwd = w * d, ww * d
            self.sums[k] += (rows.size, w.sum(), wd.sum(), (wwd * d).sum(), ww.sum(), wwd.sum(),
                             (ww * v).sum(), (w * s).sum(), (w * r).sum(),
                             (np.abs(ww * w) * v * (s * s + (1.0 - s) ** 2)).sum())


def screen_groups(engine, groups: Sequence[Sequence], *, sums: Sequence[int] = (),
                  overview: tuple | None = None):
    """Screen several lists of specs in ONE score-sorted pass (exact mode).

    Returns one :class:`~mcviz.engines.base.ScreenResult` per group (its ``n``: the rows of
    the group's first spec, e.g. the full population or :data:`HELD_OUT`; eq. (4)'s M over
    the group) and the :data:`SUMS` of the specs at positions ``sums`` of the groups' specs
    one after another, one row each (None without):
    on DuckDB added up from the same sorted batches, on Spark one aggregate query
    (:func:`held_out_sums`). Spec ids must be distinct across groups. ``overview``: the
    engine's :meth:`overview` when already taken (e.g. before :func:`flag_searched`'s join).
    """
    from mcviz.core.batches import BatchAccumulator
    from mcviz.engines.base import exact_result

    flat = [spec for group in groups for spec in group]
    starts = np.cumsum([0, *(len(group) for group in groups)])
    dropped = engine.overview()[1] if overview is None else overview[1]
    totals = None
    positions = [int(p) for p in sums]
    if engine.name == "duckdb":
        summed = _Sums(positions) if positions else None
        accumulator = BatchAccumulator(MembershipPlan(flat), observe=summed)
        for batch in engine._batches(accumulator.plan, ordered=True):  # same package
            accumulator.add(*batch)
        summaries = accumulator.finish()
        totals = None if summed is None else summed.sums
    else:
        summaries = engine.exact_summaries(flat)
        if positions:
            totals = held_out_sums(engine, [flat[p].conditions for p in positions])
    results = []
    for k, group in enumerate(groups):
        part = summaries.take(np.arange(starts[k], starts[k + 1]))
        results.append(exact_result(engine.name, group, part, n=int(part.count[0]),
                                    n_dropped=dropped))
    return results, totals


def _same_file(uri: str, name: str) -> bool:
    """Whether Spark's ``uri`` and the path ``name`` are one file (symbolic links followed)."""
    return Path(file_path(uri)).resolve() == Path(name).resolve()


def _exclude_spark(engine, keys: np.ndarray, kept: Sequence[str]) -> None:
    engine.source = "__mcviz_held_out"
    _spark_searched(engine, keys, kept, flag=False).createOrReplaceTempView(engine.source)
    engine.n = 0  # counted again by the next overview


def searched_codes(keys: np.ndarray) -> np.ndarray:
    """Return the sorted, distinct codes (:data:`ROW_BITS`) of (file index, row number) keys."""
    keys = np.asarray(keys, dtype=np.int64).reshape(-1, 2)
    if keys.size and not (keys.min() >= 0 and keys[:, 1].max() < (1 << ROW_BITS)):
        raise ValidationError("the searched rows' keys are out of range.")
    return np.unique((keys[:, 0] << ROW_BITS) | keys[:, 1])


def _spark_searched(engine, keys: np.ndarray, kept: Sequence[str], *, flag: bool):
    """Return the engine's rows but the searched ones (``flag``: all, with :data:`HELD`), Spark.

    No join: each Python worker tests its rows' (file, row) codes against the sorted searched
    codes (one broadcast array, 8 bytes a searched row) by binary search, batch by batch
    (:func:`~mcviz.engines.spark_tasks.searched_partition`). The sort-merge anti-join this
    replaces sorted partitions of 2.5*10^6 rows and ran a 550 MiB heap out at 10^7 rows; a
    broadcast hash join dispatched 20 MB tasks and hung (30 Nov 2026). Only the columns
    ``kept`` (:func:`kept_columns`) and the two keys go to the workers: Spark cannot prune the
    columns a Python function is given.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, StructField, StructType

    frame = engine.spark.read.parquet(*engine.files)
    targets: dict[str, int] = {}  # each file as Spark names it -> its index in engine.files
    for uri in frame.inputFiles():  # the files Spark reads, listed without reading them
        same = [k for k, name in enumerate(engine.files) if _same_file(uri, name)]
        if len(same) != 1:
            raise ValidationError(f"Spark read a file {uri!r} that is not one of the files "
                                  "given once; give each file once, as a local path.")
        targets[file_path(uri)] = same[0]
    keyed = frame.select(*(F.col(sql.SPARK.ident(name)) for name in kept),
                         F.col("_metadata.file_path").alias(FILE_KEY),
                         F.col("_metadata.row_index").alias(ROW_KEY))
    previous = getattr(engine, "searched_broadcast", None)
    if previous is not None:
        previous.unpersist()
    engine.searched_broadcast = engine.spark.sparkContext.broadcast(searched_codes(keys))
    schema = keyed.schema
    fields = [schema[name] for name in kept] + (
        [StructField(HELD, BooleanType())] if flag else [])
    task = partial(searched_partition, engine.searched_broadcast, targets, flag)
    return keyed.mapInArrow(task, StructType(fields))


def role_rows_sql(engine, q: sql.Query) -> str:
    """Select the engine's (narrowed) valid rows with S, R, W and every column."""
    columns, kinds, ident = engine.columns, engine.kinds, q.dialect.ident
    weight = "CAST(1.0 AS DOUBLE)" if columns.weight is None else (
        f"CAST({ident(columns.weight)} AS DOUBLE)")
    text = (f"SELECT *, CAST({ident(columns.score)} AS DOUBLE) + 0.0 AS {sql.S}, "
            f"{sql.response_sql(columns, kinds, q)} AS {sql.R}, {weight} AS {sql.W} "
            f"FROM {engine.source}")
    if engine.drop_invalid:
        text += f" WHERE {_valid_sql(columns, kinds, q)}"
    return text


def dialect_of(engine) -> sql.Dialect:
    """Return the SQL dialect of a DuckDB or Spark engine."""
    return sql.DUCKDB if engine.name == "duckdb" else sql.SPARK


def query_frame(engine, q: sql.Query, text: str) -> pd.DataFrame:
    """Run a query on a DuckDB or Spark engine; return its result as a DataFrame."""
    if engine.name == "duckdb":
        return engine._execute(text, q.params).df()  # same package
    return engine.spark.sql(text, args=q.params).toPandas()


def held_out_sums(engine, conditions: Sequence[Sequence[Condition]]) -> np.ndarray:
    """Return the :data:`SUMS` of each condition set over the engine's rows, shape (k, 10).

    One aggregate pass with a ``FILTER`` per set; every value a bound parameter. Run
    ``engine.overview()`` first: it refuses invalid rows (or counts them with ``drop_invalid``).
    """
    if not conditions:
        return np.zeros((0, len(SUMS)))
    q = sql.Query(dialect_of(engine))
    s, r, w = sql.S, sql.R, sql.W
    d = f"({r} - {s})"
    terms = {"rows": "1.0", "w": w, "wd": f"{w} * {d}", "wdd": f"{w} * {w} * {d} * {d}",
             "ww": f"{w} * {w}", "wws": f"{w} * {w} * {d}",
             "wwss": f"{w} * {w} * {s} * (1.0 - {s})", "ws": f"{w} * {s}", "wr": f"{w} * {r}",
             "third": f"ABS({w} * {w} * {w}) * {s} * (1.0 - {s}) * ({s} * {s} + (1.0 - {s}) * "
                      f"(1.0 - {s}))"}
    parts = []
    for k, conds in enumerate(conditions):
        where = sql.predicate_sql(tuple(conds), engine.kinds, q) if conds else "TRUE"
        parts += [f"COALESCE(SUM({terms[name]}) FILTER (WHERE {where}), 0.0) AS c{k}_{name}"
                  for name in SUMS]
    text = f"SELECT {', '.join(parts)} FROM ({role_rows_sql(engine, q)}) AS h"
    row = query_frame(engine, q, text).iloc[0]
    return np.array([[float(row[f"c{k}_{name}"]) for name in SUMS]
                     for k in range(len(conditions))])


def held_out_rows(engine, conditions: Sequence[Condition]) -> tuple[np.ndarray, ...]:
    """Return (score, response, weight) of the rows meeting ``conditions``, in score order."""
    q = sql.Query(dialect_of(engine))
    where = sql.predicate_sql(tuple(conditions), engine.kinds, q) if conditions else "TRUE"
    frame = query_frame(engine, q, f"SELECT {sql.S}, {sql.R}, {sql.W} FROM "
                                   f"({role_rows_sql(engine, q)}) AS h WHERE {where} "
                                   f"ORDER BY {sql.S}, {sql.W}, {sql.R}")
    return tuple(frame[c].to_numpy(dtype=float) for c in (sql.S, sql.R, sql.W))


Z_95 = 1.959963984540054


def mean_interval_from_sums(rows: float, total: float, wv: float, wvv: float, wwv: float,
                            ww: float) -> tuple[float, float, float]:
    r"""Weighted mean of :math:`v` and its 95% interval from sums over the rows.

    ``rows`` rows, ``total`` :math:`= \sum W`, ``wv`` :math:`= \sum W v`, ``wvv``
    :math:`= \sum W^2 v^2`, ``wwv`` :math:`= \sum W^2 v`, ``ww`` :math:`= \sum W^2`. The
    interval of :func:`mcviz.compare.paired.mean_interval` (and of the search's effects):
    :math:`\bar v \pm 1.96\,\widehat{se}` with :math:`\widehat{se}^2 = \frac{k}{k-1}
    \sum W^2 (v - \bar v)^2 / (\sum W)^2`, where :math:`\sum W^2 (v - \bar v)^2 =
    \sum W^2 v^2 - 2 \bar v \sum W^2 v + \bar v^2 \sum W^2`. NaN with no weight; an
    infinite interval for one row.

    Examples
    --------
    >>> mean_interval_from_sums(2, 2.0, 4.0, 10.0, 4.0, 2.0)  # v = 1, 3: se^2 = 2/1 * 2/4
    (2.0, 0.04003601545994595, 3.959963984540054)
    """
    if not total > 0:
        return (float("nan"),) * 3
    mean = wv / total
    spread = max(wvv - 2.0 * mean * wwv + mean**2 * ww, 0.0) / total**2
    se = float(np.sqrt(spread * rows / (rows - 1))) if rows > 1 else float("inf")
    return mean, mean - Z_95 * se, mean + Z_95 * se


SORTED_PARTITION_ROWS = 1 << 19
"""Rows of a range partition of :func:`sorted_batches` on Spark. On a cluster the JVM holds a
whole partition as it serves it: with ``ORDER BY``'s four partitions of 2.5*10^6 rows and the
next one prefetched, ``mcviz compare --engine spark --memory-limit 2GB`` of 10^7 rows stopped
its JVM (a heap of 512 MiB) in ``toLocalIteratorAndServe`` (30 Nov 2026). On a local master
the partitions go through files (:func:`local_sorted_batches`), and this only sets the tasks'
size (each Python worker streams its partition batch by batch)."""


def sorted_batches(engine, q: sql.Query, text: str, order: str, *, rows: int = 1 << 17,
                   n: int | None = None):
    """Yield the rows of ``text`` sorted by the SQL expression ``order``, as column dicts.

    DuckDB streams an Arrow reader (it sorts out of core, under its memory limit). Spark sorts
    into range partitions of at most :data:`SORTED_PARTITION_ROWS` of ``n`` rows (the rows of
    ``text``; by default ``engine.n``, which :func:`exclude_rows` sets to 0 until the next
    overview), each sorted within itself; a local master (``spark.master`` ``local...``) hands
    them over through files (:func:`local_sorted_batches`), a cluster master through
    ``toLocalIterator`` (no prefetch; a cluster's workers write to their own disks, not the
    driver's), ``rows`` rows at a time. Tied rows come in any order: callers never depend on it.
    """
    sorted_text = f"SELECT * FROM ({text}) AS z ORDER BY {order}"
    if engine.name == "duckdb":
        import duckdb
        import pyarrow as pa

        try:
            reader = engine.con.sql(sorted_text, params=q.params).to_arrow_reader(rows)
            for batch in reader:
                yield {name: batch.column(name).to_numpy(zero_copy_only=False)
                       for name in batch.schema.names}
        except (duckdb.Error, pa.ArrowException) as error:
            raise ValidationError(f"DuckDB could not sort the held-out rows: "
                                  f"{str(error).splitlines()[0]} Raise --memory-limit or free "
                                  "disk space for spilling.") from None
        return
    from pyspark.sql import functions

    key = functions.expr(order)  # range partitions of at most SORTED_PARTITION_ROWS rows
    n = int(getattr(engine, "n", 0) or 0) if n is None else int(n)
    parts = max(int(np.ceil(max(n, 1) / SORTED_PARTITION_ROWS)), 4)
    frame = (engine.spark.sql(text, args=q.params).repartitionByRange(parts, key)
             .sortWithinPartitions(key))
    if local_master(engine.spark):
        yield from local_sorted_batches(frame, rows=rows, root=spill_root(engine.spark))
        return
    names, buffer = frame.columns, []
    for row in frame.toLocalIterator(prefetchPartitions=False):  # one partition in the heap
        buffer.append(tuple(row))
        if len(buffer) == rows:
            yield dict(zip(names, (np.array(c) for c in zip(*buffer, strict=True)), strict=True))
            buffer = []
    if buffer:
        yield dict(zip(names, (np.array(c) for c in zip(*buffer, strict=True)), strict=True))


def local_master(spark) -> bool:
    """Whether ``spark`` runs on a local master (its workers write to this machine's disk)."""
    return str(spark.sparkContext.master).startswith("local")


def spill_root(spark) -> str:
    """Return the directory a local Spark spills into.

    The JVM's ``SPARK_LOCAL_DIRS`` (the first of them; ``--temp-directory`` sets it when mcviz
    starts the JVM), else ``spark.local.dir``, else Python's temporary directory (``TMPDIR``).
    """
    import tempfile

    try:
        jvm = spark.sparkContext._jvm
        configured = (jvm.java.lang.System.getenv("SPARK_LOCAL_DIRS")
                      or spark.sparkContext.getConf().get("spark.local.dir"))
    except Exception:  # no JVM to ask (e.g. a Spark Connect session)
        configured = None
    for directory in str(configured or "").split(","):
        if directory and Path(directory).is_dir():
            return directory
    return tempfile.gettempdir()


def local_sorted_batches(frame, *, rows: int, root: str):
    """Yield a range-partitioned, sorted Spark ``frame``'s rows in order, through local files.

    A local master only (its workers and the driver share this machine's disk). In
    ``mapInArrow`` each Python worker writes its partition's Arrow record batches, as they come,
    to an Arrow IPC stream file named by the partition id in a directory made here under
    ``root`` (:func:`spill_root`, where Spark spills), written under a temporary name and then
    renamed (a retried task replaces the same file), and returns only (partition, rows). The
    driver then reads the files in partition order, batch by batch, deleting each once read,
    and yields ``rows`` rows at a time; the directory goes in a ``finally`` (on an error, when
    the consumer stops early, on KeyboardInterrupt). Range partitions hold disjoint, ordered key
    ranges (equal keys in one partition), so files in partition order, each sorted, are the
    rows in key order; a tie run is never split across files, and a consumer that carries the
    last tie run of a batch over (:func:`mcviz.compare.groups_at_scale._stream`) sees it whole.

    No sorted partition passes through the JVM's heap: ``toLocalIterator`` fetched each one as
    one task result (26.5 MB at 2^19 rows) and a 544 MiB heap died on the 11th at 10^7 rows
    (30 Nov 2026). Memory here: one Arrow batch plus the ``rows``-row buffer; the files are
    disk, counted in no memory budget. Disk: the rows once more, uncompressed (8 bytes a float
    column, a bit a boolean one: 32 + k/8 bytes a row for ``compare``'s four floats and k groups,
    about 290 MB for the 9.09*10^6 held-out rows of ``compare`` at 10^7, as measured beside the
    shuffle's files, 1 Dec 2026), at most once all are written; each file goes as soon as it is
    read.
    """
    import tempfile

    import pyarrow as pa

    names = frame.columns
    directory = Path(tempfile.mkdtemp(prefix="mcviz-sorted-", dir=root))
    try:
        written = frame.mapInArrow(partial(write_partition, str(directory)),
                                   "part LONG, rows LONG").collect()
        counts: dict[int, int] = {}
        for part, count in written:
            counts[int(part)] = counts.get(int(part), 0) + int(count)
        pending, held, total = [], 0, 0
        for part in sorted(p for p, count in counts.items() if count):  # the key ranges' order
            path = directory / f"{part}.arrow"
            with pa.OSFile(str(path), "rb") as source, pa.ipc.open_stream(source) as reader:
                for batch in reader:
                    total += batch.num_rows
                    pending.append(batch)
                    held += batch.num_rows
                    while held >= rows:
                        table = pa.Table.from_batches(pending, schema=batch.schema)
                        yield _columns(table.slice(0, rows), names)
                        pending = table.slice(rows).to_batches()
                        held -= rows
            path.unlink()
        if held:
            yield _columns(pa.Table.from_batches(pending), names)
        if total != sum(counts.values()):
            raise RuntimeError(f"Spark wrote {sum(counts.values())} sorted rows, {total} read")
    finally:
        _remove_directory(directory)


def _remove_directory(directory: Path, tries: int = 20) -> None:
    """Delete ``directory``; retried while a worker of a failed job still writes in it."""
    import shutil
    import time

    for _ in range(tries):
        shutil.rmtree(directory, ignore_errors=True)
        if not directory.exists():
            return
        time.sleep(0.5)


def _columns(table, names) -> dict:
    return {name: table.column(name).to_numpy() for name in names}

"""``mcviz compare --engine duckdb|spark``: the paired statistics on every row, in the engine.

The score, label and weight are recognised on a 10,000-row sample as in memory; the engine checks
every row (and B's scores), then sums the paired losses and net benefits and walks each ordered
path on every row (:mod:`mcviz.compare.at_scale`). The groups where B is worse or better are
searched on a random sample (``--sample-rows``; by default as many rows as the memory budget
allows, as ``mcviz search --engine``) and confirmed by the engine on every row the search did
not look at (:mod:`mcviz.compare.groups_at_scale`), the notice says so.

When the sample would hold every row (the Parquet footers count no more rows than the sample's
size), the comparison of the sample IS the comparison of the table: the rows are read as
``mcviz compare`` without ``--engine`` reads them and compared there, with its checks and
messages, and the JSON is that comparison's plus ``engine`` (the notice says so). The engine's
passes over the rows would only recompute every number (to 1e-9,
``tests/engines/test_compare_engines.py``), and its sample's hashed draw, roles sample and
scans would cost more CPU than the comparison itself saves (:data:`IN_MEMORY_WHEN_SAMPLED_WHOLE`).
"""

from __future__ import annotations

import argparse
import tempfile

from mcviz.cli import _common
from mcviz.cli.engine_options import (
    engine_files,
    engine_share,
    read_whole,
    refuse_before_reading,
    refuse_unsupported,
    require_engine,
    sample_roles,
    sample_share,
    spark_limit,
    spark_room,
)
from mcviz.engines.base import rows_in_files
from mcviz.engines.memory import COMPARE_WORKER, release_memory
from mcviz.errors import ValidationError

__all__ = ["IN_MEMORY_WHEN_SAMPLED_WHOLE", "SPARK_SAMPLE_FLOOR", "compare_in_engine"]

IN_MEMORY_WHEN_SAMPLED_WHOLE = True
"""Compare in memory when the sample would hold every row (the tests set False to check the
engine's passes on such a table)."""


def _refuse(args: argparse.Namespace) -> None:
    for flag, value in (("--challenger", args.challenger), ("--deck", args.deck)):
        if value:
            raise ValidationError(f"{flag} is not supported with --engine {args.engine}; use "
                                  "--engine numpy (or join the files first).")
    if args.sample_rows is not None and args.sample_rows < 1:
        raise ValidationError(f"--sample-rows must be positive, not {args.sample_rows}.")


SAMPLE_VALUE_BYTES = 80
"""Bytes per value of the groups' sample (its rows times the file's columns and the two keys)
that drawing and searching it add to this process at their peak. Measured (``mcviz compare
--engine spark``'s draw and groups' search in one process, 9 columns and 4 covariates, 30 Nov
2026): 552,370 rows peaked 411 MiB over the 174 MiB held before the draw (71 bytes per value),
1,428,572 rows 808 MiB (54); the draw alone (DuckDB's hashed sample) 370 and 808 MiB, not
bounded by DuckDB's ``memory_limit``. The search's own estimate
(:func:`~mcviz.search.search_estimate`) said 142 and 368 MiB."""

ROOM_SLACK = 32 << 20
"""Bytes of Spark's room (:func:`~mcviz.cli.engine_options.spark_room`) left unused by the
sample: what this process adds between sizing the sample and sizing the JVM's heap (the roles'
10,000-row sample is read between them; the size is taken again just before the heap)."""

SPARK_SAMPLE_FLOOR = 100_000
"""The fewest rows ``mcviz compare --engine spark --memory-limit`` sizes the groups' sample down
to (as ``mcviz search --engine spark``): a limit whose room holds fewer is refused before any
row is read, naming one that holds them. Without it the limit named at 10^7 rows (2050MB, once
the workers were counted at :data:`~mcviz.engines.memory.COMPARE_WORKER`) left room for a
sample of 1,146 rows, whose search found a group of ages by chance (1 Dec 2026)."""

SAMPLE_ROW_FLOOR = 800
"""The least bytes per sample row :func:`_sample_reserve` counts (a narrow file's keys, codes
and the search's per-row arrays)."""


def _sample_size(args, settings, names, row_bytes: int) -> int:
    """The rows of the groups' sample: ``--sample-rows``, or what the memory budget allows.

    The budget is the default one without ``--memory-limit``. With it, half the limit, as
    ``mcviz search --engine`` gives its sample (the engine's passes need the rest), in rows
    of ``row_bytes`` each (:func:`_row_bytes`); on Spark in local mode also no more than what the JVM and its
    Python workers leave at their least (:func:`~mcviz.cli.engine_options.spark_room`): the
    JVM runs while the sample is drawn and searched (it checked every row first), and its heap
    is sized with the sample's bytes reserved (:func:`_sample_reserve`). A limit whose room holds
    fewer than :data:`SPARK_SAMPLE_FLOOR` rows is refused there, naming one that holds them.
    """
    from mcviz.search.at_scale import sample_rows

    if args.sample_rows:
        return args.sample_rows
    covariates = max(len(names or ()) or 8, 1)
    rows = sample_rows(covariates, holdout=settings.holdout, max_conditions=3)
    if args.memory_limit is None or args.engine == "numpy":
        return rows
    from mcviz.budget import memory_budget

    budget = min(memory_budget(None), memory_budget(args.memory_limit) // 2)
    room = spark_room(args, worker=COMPARE_WORKER)
    if room is not None:  # (less what this process may add before the JVM's heap is sized)
        budget = min(budget, room - ROOM_SLACK)
        least = min(SPARK_SAMPLE_FLOOR, rows)
        if max(budget, 0) // row_bytes < least:  # raises, naming the limit that holds them
            spark_limit(args, worker=COMPARE_WORKER, what="this comparison",
                        reserve=ROOM_SLACK + least * row_bytes)
    return max(min(rows, budget // row_bytes), 1_000)


def _row_bytes(files) -> int:
    """Bytes a sample row costs at the peak of its draw and search (:data:`SAMPLE_VALUE_BYTES`)."""
    import pyarrow.parquet as pq

    try:
        columns = len(pq.read_schema(files[0]).names)
    except (OSError, ValueError, TypeError, IndexError):
        columns = 8  # the draw says what is wrong with the file
    return max(SAMPLE_VALUE_BYTES * (columns + 2), SAMPLE_ROW_FLOOR)


def _sample_reserve(args, rows: int, row_bytes: int) -> int:
    """Bytes the groups' sample of ``rows`` rows adds while Spark's JVM runs (0 on DuckDB)."""
    return rows * row_bytes if args.engine == "spark" else 0


def _groups(args, settings, rows, files, spill, names, default_covariates):
    """Search a random sample of ``rows`` rows in memory for the groups (confirmed later by the
    engine).

    Returns the search (:func:`~mcviz.compare.models.search_groups`), the sample's
    predictions, the covariates, the search's rows and the keys (file, row) of every row the
    search looked at.
    """
    from mcviz.cli.screen import read_sample_interruptible
    from mcviz.compare.groups_at_scale import searched_rows
    from mcviz.compare.models import search_groups
    from mcviz.engines.holdout import FILE_KEY, ROW_KEY, sample_keys
    from mcviz.io import load_predictions

    sample = read_sample_interruptible(files, rows, settings.seed, spill, keys=True,
                                       memory_limit=sample_share(args.memory_limit)
                                       if args.engine == "duckdb" else None)
    keys = sample_keys(sample, files)
    sample = sample.drop(columns=[FILE_KEY, ROW_KEY])
    names = default_covariates(args, sample, args.score_b) if names is None else names
    pred = load_predictions(sample, score=args.score, label=args.label, positive=args.positive,
                            weight=args.weight, covariates=[args.score_b, *names],
                            drop_invalid=True, **_common.kind_options(args))
    del sample
    found = search_groups(pred, args.score_b, covariates=names, n_findings=settings.n_findings,
                          holdout=settings.holdout, seed=settings.seed)
    searched, looked = searched_rows(found, pred, args.score_b, names)
    return found, pred, names, searched, keys[pred.row[looked]]


def _classical(engine, columns, args) -> tuple[dict, dict]:
    """A's and B's classical measures from one ``GROUP BY`` by score each (as metrics).

    What each score's runs held is handed back (:func:`~mcviz.engines.memory.release_memory`)
    before the next, and before the paths' passes. ``mcviz compare --engine spark
    --memory-limit 2GB`` of 10^7 rows without it: the runs (2^20 fine bins of 11 sums, read as
    Arrow, then pandas) left this process at 513 MiB (174 at its start) through the paths'
    passes, beside a JVM of up to 1,144 MiB and two Python workers of 140 and their daemon: the
    tree's peak 2,082 MB, over the limit; with it 235 MiB (30 Nov 2026).

    On Spark they are measured before the groups' held-out pass: that pass's Python workers
    stay resident for about a minute after it (440 MiB at 10^7 rows), and these runs' Arrow
    results peak in this process (644 MiB); at 2GB the two together took the tree to 2,330 MB
    with a group found (1 Dec 2026).
    """
    from dataclasses import replace

    from mcviz.cli.metrics import _classical_from_engine
    from mcviz.engines.calibration import score_runs_table
    from mcviz.settings import ENGINE_SCORE_RUNS

    if engine.name == "duckdb":
        from mcviz.engines.tables import DuckDBTable

        table = DuckDBTable(engine.files, memory_limit=_passes_share(args, None),
                            temp_directory=engine.temp_directory)
    else:
        from mcviz.engines.tables import SparkTable

        table = SparkTable(engine.files, spark=engine.spark)
    try:
        blocks = []
        for name in (columns.score, args.score_b):
            blocks.append(_classical_from_engine(score_runs_table(
                table, replace(columns, score=name), limit=ENGINE_SCORE_RUNS))["classical"])
            release_memory()  # the runs' frames
        return tuple(blocks)
    finally:
        if engine.name == "duckdb":
            table.close()


def _passes_share(args: argparse.Namespace, rows: int | None) -> str | None:
    """DuckDB's share of ``--memory-limit`` (of the whole process) during the engine's passes.

    Beside DuckDB the comparison holds what this process holds now (the groups' sample and
    search, once drawn) and the sorted stream's blocks with the score runs of the classical
    measures (:func:`~mcviz.engines.memory.stream_reserve`: at most one run per row, about
    :data:`~mcviz.settings.ENGINE_SCORE_RUNS`). Refused when DuckDB would get less than its
    floor (:func:`mcviz.cli.engine_options.engine_share`): before the groups' sample is drawn,
    and again after it.
    """
    return engine_share(args.memory_limit, what="this comparison", reserve=_passes_reserve(rows))


def _passes_reserve(rows: int | None) -> int:
    """Bytes the engine's passes add beside DuckDB: the stream's blocks and the score runs."""
    from mcviz.budget import usable_cores
    from mcviz.compare.groups_at_scale import BATCH_ROWS
    from mcviz.engines.memory import score_runs, stream_reserve

    return stream_reserve(threads=usable_cores(), batch_rows=BATCH_ROWS, rows=rows,
                          runs=score_runs(rows))


def _in_memory(args, settings, thresholds, frame, rows: int, compare_rows) -> dict:
    """The comparison of a table the sample would hold whole, in memory (module notes)."""
    output = compare_rows(args, frame, settings, thresholds)
    said = (f"All {output['n']:,} rows fit in the sample (up to {rows:,} rows), so they were "
            "read into memory and every number was computed there, as without --engine.")
    output["notice"] = " ".join(filter(None, (output.get("notice"), said)))
    output["engine"] = args.engine
    return output


def compare_in_engine(args: argparse.Namespace, settings, thresholds, *,
                      default_covariates, in_memory) -> dict:
    """Run ``mcviz compare`` on the engine; return its JSON object.

    ``default_covariates(args, frame, score_b)`` names the covariates when none are asked for
    (``mcviz compare``'s own rule, applied to the sample); ``in_memory(args, frame, settings,
    thresholds)`` is ``mcviz compare``'s JSON of rows read into memory (a table the sample
    would hold whole).
    """
    from mcviz.cli.screen import cancel_engine, make_engine
    from mcviz.compare.at_scale import ORDERED_KINDS, check_score_b, compare_on_engine
    from mcviz.compare.groups_at_scale import confirm_groups

    require_engine(args.engine)
    _refuse(args)
    refuse_unsupported(args)
    files = engine_files(args)
    asked = _common.split(args.covariates)
    asked = None if asked is None else [c for c in asked if c != args.score_b]
    rows = _sample_size(args, settings, asked, row_bytes := _row_bytes(files))
    with tempfile.TemporaryDirectory(prefix="mcviz-compare-", ignore_cleanup_errors=True) as spill:
        total = rows_in_files(files)
        whole = IN_MEMORY_WHEN_SAMPLED_WHOLE and total is not None and total <= rows
        if not (whole and args.engine == "spark"):  # read whole: no Spark, DuckDB reads
            refuse_before_reading(args, what="this comparison",  # before any row is read
                                  reserve=0 if whole else lambda: _passes_reserve(total),
                                  worker=COMPARE_WORKER)
        if whole:
            frame = read_whole(files, spill, seed=settings.seed,
                               memory_limit=sample_share(args.memory_limit)
                               if args.engine == "duckdb" else None)
            return _in_memory(args, settings, thresholds, frame, rows, in_memory)
        columns, _ = sample_roles(args, files, spill)
        if args.engine == "spark":
            rows = min(rows, _sample_size(args, settings, asked, row_bytes))  # held now
        engine = make_engine(args.engine, files, columns,  # the sample's rows stay in Python
                             memory_limit=_passes_share(args, total) if args.engine == "duckdb"
                             else spark_limit(args, worker=COMPARE_WORKER, what="this comparison",
                                              reserve=_sample_reserve(args, rows, row_bytes)),
                             temp_directory=spill, spark_master=args.spark_master)
        try:
            def work() -> dict:
                n_all = int(engine.overview()[0])
                check_score_b(engine, args.score_b)  # B's rows checked on every row first
                found, pred, names, searched, keys = _groups(
                    args, settings, rows, files, spill, asked, default_covariates)
                release_memory()  # what the groups' search freed, before the passes (module)
                if args.engine == "duckdb" and args.memory_limit is not None:
                    # --memory-limit bounds the process: the sample stays in Python
                    engine.con.execute(f"SET memory_limit = '{_passes_share(args, total)}'")
                orders = [c for c in names if pred.covariate_kinds.get(c) != "nominal"
                          and engine.kinds.get(c) in ORDERED_KINDS]
                skipped = [c for c in names if pred.covariate_kinds.get(c) != "nominal"
                           and c not in orders]
                notes = []
                if skipped:
                    notes.append(f"Not ordered by {', '.join(map(repr, skipped))} on the "
                                 "engine (dates and times: use --engine numpy).")
                if args.engine == "spark":  # before the held-out pass (see _classical)
                    classical = _classical(engine, columns, args)
                source, count = engine.source, getattr(engine, "n", None)
                try:
                    regressions, improvements, n_held, said = confirm_groups(
                        engine, found, score_b=args.score_b, searched=searched, keys=keys,
                        n=n_all)
                finally:  # every other number is measured on all rows
                    engine.source = source
                    if count is not None:
                        engine.n = count
                notice = found.notice or ""
                if found.search is not None and found.search.notice:  # the search's, at scale
                    notice = notice.replace(f"Search: {found.search.notice}",
                                            f"Search: {said}" if said else "").strip()
                if notice:
                    notes.insert(0, notice)
                if found.search is not None:
                    notes.append(
                        f"Regressions and improvements were searched on {int(keys.shape[0]):,} "
                        f"rows of a random sample of {pred.n:,} and confirmed by "
                        f"{args.engine} on the {n_held:,} rows not searched; every other "
                        f"number is measured on all rows.")
                if args.engine == "duckdb":  # the runs' sums from the passes sorted by score
                    from mcviz.cli.metrics import _classical_from_engine
                    from mcviz.settings import ENGINE_SCORE_RUNS

                    measured = {"measures": lambda runs: _classical_from_engine(runs)[
                        "classical"], "runs_limit": ENGINE_SCORE_RUNS}
                else:
                    measured = {"classical": classical}
                return compare_on_engine(
                    engine, score_b=args.score_b, orders=orders, thresholds=thresholds,
                    regressions=regressions, improvements=improvements,
                    notes=notes, validated=True, **measured)

            return _common.interruptible(work, lambda: cancel_engine(engine))
        finally:
            if not _common.work_abandoned():
                engine.close()

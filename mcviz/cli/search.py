"""``mcviz search``: the subpopulations where the model is most miscalibrated, held-out checked.

Prints ``{"n", "search": {"max_conditions", "holdout", "seed", "candidates_scored", "seconds"},
"mde": {"0.01", "0.05", "0.2"}, "findings": [{"rank", "confirmed", "holdout_kuiper_z",
"p_adjusted", "p_value", "mean_residual", "ci_low", "ci_high", "holdout_size", "description",
"size", "share", "kuiper_z", "sentence"}], "unions": [{"parts", ...}], "notice"}`` with findings
in rank order, the held-out numbers first. ``unions``: confirmed findings of one direction
offered together as one problem (``parts``: their ranks; the other keys as a finding's, the
description ``(A) or (B)``), when the union deviates more than each part on the search and the
held-out rows (:mod:`mcviz.search._union`); empty when none is, and at scale. ``holdout_kuiper_z`` is D/sigma over the held-out rows (where ``p_value`` and the
Holm-adjusted ``p_adjusted`` come from; ``confirmed`` is ``p_adjusted < 0.05``); the effect is
the held-out weighted mean of observed - predicted with its 95% interval; ``kuiper_z`` is D/sigma
over all rows, the searched ones included (not a test); ``sentence`` is the finding in words as
the dashboard shows it; ``notice`` says why fewer findings than asked were reported and which
are not confirmed (null when there is nothing to say). ``mde`` is the mean shift a
subpopulation of 1%, 5% and 20% of the rows needs to be confirmed with 80% power.

At scale (``--engine duckdb`` or ``spark``, or ``--sample-rows`` given) the search runs on a
simple random sample of the Parquet data (drawn by DuckDB, as ``mcviz screen`` draws it) of
``--sample-rows`` rows, by default as many as the memory budget allows
(:func:`mcviz.search.at_scale.sample_rows`), and the engine then measures the findings'
conditions on EVERY row: a finding's ``size`` and ``share`` (and its sentence, the report's
and the deck's) count its rows among every row (``n``, the object's ``size_counts``:
``"all_rows"``), its ``sample_size`` and ``sample_share`` the sample's rows (``sample.rows``),
where ``kuiper_z`` and ``search_kuiper_z`` are measured; each finding gains ``sample_size``,
``sample_share``, ``all_rows_size`` and ``all_rows_share`` (equal to ``size`` and ``share``),
``all_rows_kuiper_z`` (D/sigma, eqs. (2) and (5) of paper 000), ``all_rows_p_value`` (its
Brownian-range tail, which includes the rows searched and is not adjusted for the search) and
``measured_on`` (``"all rows (duckdb)"``); the object gains ``size_counts``, ``sample``,
``all_rows``, ``held_out`` and ``notice``. On DuckDB and Spark the held-out numbers
(``holdout_size``, ``holdout_kuiper_z``, ``p_value``, Holm's ``p_adjusted``, ``confirmed``, the
effect and its interval, the sentence) are measured by the engine on every row the search did not look at
(the sample's held-out rows and every row outside the sample: ``held_out.rows``), and the
findings are listed by that evidence; with ``--engine numpy --sample-rows N`` they are the
sample's held-out rows' (``held_out`` null).
Without those options (the default) the whole file is loaded and searched in memory.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcviz.cli import _common
from mcviz.errors import ValidationError

if TYPE_CHECKING:  # the search and the engines are imported only when they run (--help: at once)
    import numpy as np

    from mcviz.engines.base import Columns, ScreenResult
    from mcviz.io import Predictions
    from mcviz.search import SearchResult

__all__ = ["AtScale", "register", "result_json", "run", "search_at_scale"]

HELP = "find the subpopulations where the model is most miscalibrated (held-out confirmed)"

FINDING_KEYS = ("rank", "confirmed", "holdout_kuiper_z", "p_adjusted", "p_value",
                "mean_residual", "ci_low", "ci_high", "holdout_size", "description", "size",
                "share", "kuiper_z", "sentence")
"""Held-out numbers first (the text output prints them in this order)."""
UNION_KEYS = ("parts", *FINDING_KEYS[1:])
"""A union's keys: the ranks of its parts, then a finding's."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz search``."""
    parser = subparsers.add_parser("search", help=HELP, description=HELP)
    _common.add_input_arguments(parser)
    _common.add_search_arguments(parser)
    parser.add_argument("--engine", choices=("numpy", "duckdb", "spark"), default="numpy",
                        help="duckdb or spark: search a sample of the Parquet data, then "
                        "measure the findings on every row and confirm them on every row not "
                        "searched (default numpy: all in memory)")
    parser.add_argument("--sample-rows", type=int, metavar="N",
                        help="rows sampled for the search at scale (default with --engine "
                        "duckdb or spark: as many as the memory budget allows, at most "
                        "1,428,572, i.e. 10^6 searched rows at --holdout 0.3)")
    parser.add_argument("--out", metavar="FILE.parquet",
                        help="with --engine duckdb or spark (or --sample-rows): write the "
                        "findings with their held-out numbers and the run's context, for the "
                        "dashboard's Screening page (it drills into a finding's rows)")
    parser.add_argument("--memory-limit", help="DuckDB memory limit, e.g. 2GB (spills beyond)")
    parser.add_argument("--spark-master", metavar="URL",
                        help="Spark master, e.g. spark://host:7077 (default: local mode)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> dict:
    """Load the file, search, and return the JSON object."""
    if args.engine != "numpy" or args.sample_rows is not None:
        return run_sampled(args)
    if getattr(args, "out", None) is not None:
        raise ValidationError("--out is written by the search at scale (--engine duckdb or "
                              "spark, or --sample-rows): its findings' rows are read back from "
                              "the Parquet files.")
    from mcviz.search import search_subpopulations

    covariates = _common.split(args.covariates)
    pred = _common.load_parquet_first(args, covariates=covariates, hold_covariates=True)
    result = search_subpopulations(
        pred, covariates=covariates, max_conditions=args.max_conditions,
        n_findings=args.findings, min_share=args.min_share, holdout=args.holdout,
        seed=args.seed,
    )
    return result_json(result)


def result_json(result: SearchResult) -> dict:
    """Return the JSON object of a search (the contract of ``mcviz search --json``)."""
    return {
        "n": result.n,
        "search": {
            "max_conditions": result.max_conditions,
            "holdout": result.holdout,
            "seed": result.seed,
            "candidates_scored": result.candidates_scored,
            "seconds": result.seconds,
        },
        "mde": {_share_key(s): float(v) for s, v in zip(result.mde.shares, result.mde.shift,
                                                         strict=True)},
        "findings": [
            {key: (finding.description if key == "description" else
                   _plain(getattr(finding, key))) for key in FINDING_KEYS}
            for finding in result.findings
        ],
        "unions": [
            {key: ([int(r) for r in union.parts] if key == "parts" else
                   union.description if key == "description" else
                   _plain(getattr(union, key))) for key in UNION_KEYS}
            for union in result.unions
        ],
        "notice": result.notice,
    }


def run_sampled(args: argparse.Namespace) -> dict:
    """Search a random sample of the rows, then measure the findings on every row.

    On DuckDB and Spark the findings' held-out numbers are then measured on every row the
    search did not look at (:func:`mcviz.search.at_scale.measure_at_scale`).
    """
    out = getattr(args, "out", None)
    if out is not None:
        _common.check_output(out, flag="--out", suffixes=(".parquet",))
    at_scale = search_at_scale(args)
    output = sampled_json(at_scale.result, at_scale.measured,
                          sample_dropped=at_scale.pred.report.n_dropped, held=at_scale.held,
                          sized=at_scale.sized)
    if at_scale.sample_note:
        output["notice"] = f"{output['notice']} {at_scale.sample_note}"
    if out is not None:
        _write_findings(out, output, files=at_scale.files, columns=at_scale.columns,
                        kinds=dict(at_scale.pred.covariate_kinds), engine=args.engine)
    return output


@dataclass(frozen=True, slots=True, eq=False)
class AtScale:
    """What a search at scale measured (:func:`search_at_scale`)."""

    result: SearchResult
    """The sample's search (its held-out numbers the sample's)."""
    measured: ScreenResult
    """The full population (row 0) and the findings measured on every row."""
    held: tuple[SearchResult, int] | None
    """The findings confirmed on every held-out row and that row count (None on numpy)."""
    population: np.ndarray | None
    """The :data:`mcviz.engines.holdout.SUMS` of all rows (None on numpy)."""
    sized: SearchResult
    """The findings as every surface shows them: ``held``'s on DuckDB and Spark, else the
    sample's with every row's ``size``, ``share`` and sentence
    (:func:`mcviz.search.at_scale.at_all_rows`)."""
    pred: Predictions
    files: tuple[str, ...]
    columns: Columns
    sample_note: str = ""
    """Why the sample is smaller than without ``--memory-limit`` (:func:`_spark_sample_rows`)."""


def search_at_scale(args: argparse.Namespace) -> AtScale:
    """Draw the sample, search it, and measure the findings on every row (one sorted pass)."""
    from mcviz.cli.engine_options import (
        engine_files,
        refuse_before_reading,
        sample_share,
        spark_limit,
    )
    from mcviz.cli.screen import cancel_engine, make_engine, read_sample_interruptible
    from mcviz.engines.memory import PYTHON_WORKER

    covariates = _common.split(args.covariates)
    rows, sample_note = args.sample_rows, ""
    if rows is None:
        rows, sample_note = _spark_sample_rows(args, _budget_rows(args, covariates))
    if rows < 1:
        raise ValidationError(f"--sample-rows must be positive, not {rows}.")
    for option in ("probabilities", "weighting", "rho"):
        if getattr(args, option, None) is not None:
            raise ValidationError(f"--{option} is not supported when the search runs on a "
                                  f"sample (--engine {args.engine}); use one score column.")
    files = engine_files(args)  # a CSV or a text score: one line (the limit refused first)
    keyed = args.engine != "numpy"
    # before the sample is drawn: the stream's blocks at their fewest members (the population
    # and its held-out rows) and the compiled loops
    refuse_before_reading(args, what="this search", reserve=lambda: _measure_reserve(files, 2.0),
                          worker=PYTHON_WORKER)
    with tempfile.TemporaryDirectory(prefix="mcviz-search-", ignore_cleanup_errors=True) as spill:
        share = sample_share(args.memory_limit) if args.engine == "duckdb" else None
        sample = read_sample_interruptible(files, rows, args.seed, spill, keys=keyed,
                                           memory_limit=share, columns=_read_columns(args))
        pred, result, columns, keys = _search_sample(args, sample, files, covariates, keyed)
        del sample
        if args.engine == "spark":  # what the search freed goes back before the JVM's heap
            from mcviz.engines.memory import release_memory  # is sized from what is left

            release_memory()
        engine = make_engine(args.engine, files, columns,  # the limit bounds the process
                             memory_limit=_measure_share(args, files, result, pred)
                             if args.engine == "duckdb"
                             else spark_limit(args, worker=PYTHON_WORKER, what="this search"),
                             drop_invalid=args.drop_invalid, temp_directory=spill,
                             spark_master=getattr(args, "spark_master", None))
        try:
            if args.engine == "numpy":
                measured, held, population = engine.screen(result.subpopulations), None, None
            else:  # queries in native code: cancelled from the main thread on a signal
                measured, held, population = _common.interruptible(
                    lambda: _measure(engine, result, pred, keys), lambda: cancel_engine(engine))
        finally:
            if not _common.work_abandoned():
                engine.close()
    return AtScale(result=result, measured=measured, held=held, population=population,
                   sized=held[0] if held is not None else _sized(result, pred, measured),
                   pred=pred, files=files, columns=columns, sample_note=sample_note)


def _sized(result: SearchResult, pred: Predictions, measured: ScreenResult) -> SearchResult:
    """Give the sample's findings their rows among all rows (:func:`at_all_rows`).

    ``measured``: the full population and the findings, each named by its description.
    """
    from mcviz.search.at_scale import at_all_rows

    size = measured.table.drop_duplicates("description").set_index("description")["size"]
    return at_all_rows(result, pred, sizes=[int(size[f.description]) for f in result.findings],
                       n=measured.n)


def _measure_share(args: argparse.Namespace, files, result: SearchResult,
                   pred: Predictions) -> str | None:
    """DuckDB's share of ``--memory-limit`` while the findings are measured on every row.

    The sample and its search stay in Python; the sorted stream adds the blocks of
    :func:`~mcviz.engines.memory.stream_reserve` with, per row, the full population, each
    finding and their held-out rows (the members on the sample, twice: the held-out sets are
    subsets of them). A limit that cannot hold them is refused
    (:func:`mcviz.cli.engine_options.engine_share`), after the search's freed memory is
    handed back (:func:`~mcviz.engines.memory.release_memory`).
    """
    from mcviz.cli.engine_options import engine_share
    from mcviz.engines.memory import members_per_row, release_memory

    if args.memory_limit is None:
        return None
    release_memory()
    # the population and each finding, and as many again: the held-out rows of each (fewer)
    sizes = [2 * s.index.size for s in result.subpopulations.subpopulations]
    per_row = max(members_per_row(sizes, pred.n), 2.0)
    return engine_share(args.memory_limit, what="this search",
                        reserve=_measure_reserve(files, per_row))


def _measure_reserve(files, per_row: float) -> int:
    """Bytes the findings' sorted pass adds beside DuckDB, ``per_row`` members per row."""
    from mcviz.budget import usable_cores
    from mcviz.engines.base import rows_in_files
    from mcviz.engines.duckdb_engine import BATCH_ROWS
    from mcviz.engines.memory import compiled_loops_reserve, stream_reserve

    return stream_reserve(threads=usable_cores(), batch_rows=BATCH_ROWS,
                          rows=rows_in_files(files), per_row=per_row) + compiled_loops_reserve()


def _read_columns(args: argparse.Namespace) -> list[str] | None:
    """The sample's columns when the command line names every one (None: all columns).

    The score, the label, the weight (or ``--no-weight``) and the covariates given: the draw
    reads only those (the same rows), not every column of a wide file.
    """
    covariates = _common.split(args.covariates)
    if not (args.score and args.label and covariates) or args.weight is None:
        return None
    names = [args.score, args.label, *([args.weight] if args.weight else []), *covariates]
    return list(dict.fromkeys(names))


def _write_findings(out, output: dict, **where) -> None:
    """Write the findings (row 0: the full population) for the dashboard's Screening page."""
    import pandas as pd

    from mcviz.engines.results import KIND_COLUMNS, write_results

    rows = [{"id": 0, "description": "full population", "size": output["n"]}]
    # size, share: the finding's rows among all rows of the files (sample_size: the sample's)
    rows += [{"id": f["rank"], **{k: v for k, v in f.items() if k != "rank"}}
             for f in output["findings"]]
    frame = pd.DataFrame(rows, columns=list(dict.fromkeys([*KIND_COLUMNS["search"], *rows[-1]])))
    with _common.atomic_output(out) as temporary:
        write_results(frame, temporary, kind="search", n=output["n"], **where)


def _budget_rows(args: argparse.Namespace, covariates: list[str] | None) -> int:
    """Return the sample's rows from the budget (:func:`mcviz.search.at_scale.sample_rows`)."""
    from mcviz.engines.base import expand_paths
    from mcviz.search.at_scale import sample_rows

    if covariates is None:  # every column but the score, label and weight may be searched
        import pyarrow.parquet as pq

        try:
            count = len(pq.read_schema(expand_paths(args.file)[0]).names) - 1
        except (OSError, ValueError, TypeError):
            count = 1  # the sample's read says what is wrong with the file
    else:
        count = len(covariates)
    budget = None  # --memory-limit bounds the process: the sample's search gets half of it
    if getattr(args, "memory_limit", None) is not None and args.engine != "numpy":
        from mcviz.budget import memory_budget

        budget = min(memory_budget(None), memory_budget(args.memory_limit) // 2)
    return sample_rows(max(count, 1), holdout=args.holdout, max_conditions=args.max_conditions,
                       budget=budget)


SPARK_SAMPLE_HELD = 64 << 20
"""Bytes this process holds after a sample's search beyond what it held before the draw,
whatever the sample's rows (with :data:`SPARK_SAMPLE_ROW_HELD` a row), once what the search
freed is handed back (:func:`~mcviz.engines.memory.release_memory`): what it keeps while Spark's
JVM and workers run beside it. Measured (the draw with keys and the search of
:func:`search_at_scale` in one process, then the release, on the 10^7-row file of
``benchmarks/bench_engines.py`` with 4 covariates; 30 Nov 2026), MiB over the 117 held before:
100,000 rows 65, 1,428,572 rows 160 (before the release 102 and 505; with ``--min-share 0.05``
200,000 rows 73 and 600,000 rows 115)."""

SPARK_SAMPLE_ROW_HELD = 160
"""Bytes a sample row keeps in this process after its search (the loaded columns, the keys of
the searched rows, the search's indices), beside :data:`SPARK_SAMPLE_HELD`: 71-105 measured
(above), counted at 160 (the model says 282 MiB at 1,428,572 rows where 160 were held)."""

SPARK_SAMPLE_FLOOR = 100_000
"""The fewest rows ``mcviz search --engine spark`` sizes its sample down to under
``--memory-limit``: below them the limit is refused, naming one that holds them."""

ROOM_SLACK = 32 << 20
"""Bytes of Spark's room left unused by the sample (what varies between runs)."""


def _spark_sample_rows(args: argparse.Namespace, rows: int) -> tuple[int, str]:
    """The sample's rows under ``--memory-limit`` with local Spark, and the note saying so.

    The sample is searched before the JVM starts, but what the search keeps stays in this
    process while the JVM (its heap at least :data:`~mcviz.engines.memory.SPARK_HEAP_FLOOR`)
    and Spark's Python workers (:data:`~mcviz.engines.memory.PYTHON_WORKER` each) run: the
    sample gets the room they leave (:func:`~mcviz.cli.engine_options.spark_room`) at
    :data:`SPARK_SAMPLE_ROW_HELD` a row beside :data:`SPARK_SAMPLE_HELD`. A limit whose room
    holds fewer than :data:`SPARK_SAMPLE_FLOOR` rows is refused before any row is read, naming
    the least limit that holds them. Other engines, a cluster master or no limit: ``rows``.
    """
    from mcviz.cli.engine_options import spark_limit, spark_room
    from mcviz.engines.memory import PYTHON_WORKER

    room, master = spark_room(args, worker=PYTHON_WORKER), getattr(args, "spark_master", None)
    if room is None or (master and not str(master).startswith("local")):  # a cluster's driver
        return rows, ""
    fits = max(room - SPARK_SAMPLE_HELD - ROOM_SLACK, 0) // SPARK_SAMPLE_ROW_HELD
    if fits < min(SPARK_SAMPLE_FLOOR, rows):  # raises, naming the limit that holds them
        spark_limit(args, worker=PYTHON_WORKER, what="this search", reserve=ROOM_SLACK
                    + SPARK_SAMPLE_HELD + SPARK_SAMPLE_ROW_HELD * min(SPARK_SAMPLE_FLOOR, rows))
    if fits >= rows:
        return rows, ""
    return fits, (f"The sample was sized from --memory-limit {args.memory_limit} (what Spark's "
                  f"JVM and Python workers leave this process): {fits:,} rows, not "
                  f"{rows:,}; a larger limit or --sample-rows gives a larger one.")


def _search_sample(args, sample, files, covariates, keyed: bool):
    """Load the sample, search it; return (pred, result, engine columns, searched keys)."""
    import numpy as np

    from mcviz.cli.screen import sample_columns
    from mcviz.engines.holdout import FILE_KEY, ROW_KEY, sample_keys
    from mcviz.io import load_predictions
    from mcviz.search import search_subpopulations

    keys = None
    if keyed:
        keys = sample_keys(sample, files)
        sample = sample.drop(columns=[FILE_KEY, ROW_KEY])
    # Invalid rows of the sample are skipped (and counted); the engine validates every row.
    pred = load_predictions(sample, score=args.score, label=args.label,
                            positive=args.positive, weight=args.weight,
                            covariates=covariates, drop_invalid=True,
                            response=args.response, **_common.kind_options(args))
    columns = sample_columns(pred, sample)
    result = search_subpopulations(
        pred, covariates=covariates, max_conditions=args.max_conditions,
        n_findings=args.findings, min_share=args.min_share, holdout=args.holdout,
        seed=args.seed,
    )
    if keys is not None:  # the rows the search looked at: every sampled row not held out
        searched = np.ones(pred.n, dtype=bool)
        searched[result.holdout_index] = False
        keys = keys[pred.row[searched]]
    return pred, result, columns, keys


def _measure(engine, result, pred, keys):
    """All rows' D/sigma of each finding and its held-out numbers on every held-out row.

    One sorted pass: the rows carry a flag "not searched" (a left join with the searched
    keys), and each finding's held-out rows are one more subpopulation of the same screen.
    """
    from mcviz.engines.holdout import condition_columns, flag_searched
    from mcviz.search.at_scale import measure_at_scale

    overview = engine.overview()  # every row validated once, without the join
    # the rows keep the roles and the columns of the subpopulations screened, nothing else
    flag_searched(engine, keys, columns=condition_columns(
        s.conditions for s in result.subpopulations.subpopulations))
    measured, confirmed, n_held, population = measure_at_scale(result, pred, engine,
                                                               overview=overview)
    return measured, (confirmed, n_held), population


def sampled_json(result: SearchResult, measured: ScreenResult, *, sample_dropped: int,
                 sized: SearchResult, held: tuple[SearchResult, int] | None = None) -> dict:
    """Return the JSON object of a search on a sample, the findings measured on every row.

    The keys of :func:`result_json`, each finding with ``sample_size``, ``sample_share``,
    ``all_rows_size``, ``all_rows_share``, ``all_rows_kuiper_z``, ``all_rows_p_value`` and
    ``measured_on``, then ``size_counts``, ``sample``, ``all_rows``, ``held_out`` and
    ``notice``. ``size`` and ``share`` count a finding's rows among every row (``size_counts``:
    ``"all_rows"``; ``n`` is ``all_rows.n``; equal to ``all_rows_size`` and ``all_rows_share``), as
    its sentence, the report and the deck state them; ``sample_size`` and ``sample_share``
    count them in the sample the search looked at (``result``: its rows ``sample.rows``), where
    ``kuiper_z`` and ``search_kuiper_z`` were measured. ``sized``: the findings as shown
    (:attr:`AtScale.sized`). ``held``: the findings confirmed on every held-out row and their
    number (DuckDB, Spark); None: confirmed on the sample's held-out rows (``held_out`` null).
    """
    import numpy as np

    from mcviz.core import brownian_range_sf

    sample_held = result.n_holdout
    own = {f.description: f for f in result.findings}  # the sample's counts
    result = sized
    if held is not None:
        n_held = held[1]
    output = result_json(result)
    # ids are the sample's ranks; a description names one set of rows (the full population
    # may be a finding too: its row and row 0 are the same numbers)
    table = measured.table.drop_duplicates("description").set_index("description")
    where = f"all rows ({measured.engine})"
    for item in output["findings"]:
        row = table.loc[item["description"]]
        z = float(row["kuiper_z"])
        size = int(row["size"])
        share = size / measured.n if measured.n else float("nan")
        sample = own[item["description"]]
        item.update({
            "sample_size": int(sample.size), "sample_share": float(sample.share),
            "all_rows_size": size, "all_rows_share": share,
            "all_rows_kuiper_z": z,
            "all_rows_p_value": float(brownian_range_sf(np.float64(z))),
            "measured_on": where,
        })
    notice = f"searched a random sample of {result.n:,} of the {measured.n:,} rows; the "
    if held is None:
        notice += (f"held-out confirmation (p_value, p_adjusted) is on the sample's "
                   f"{sample_held:,} held-out rows. ")
    else:
        notice += (f"held-out numbers (holdout_kuiper_z, p_value, p_adjusted, the effect and its "
                   f"interval) are measured by {measured.engine} on all {n_held:,} rows the "
                   "search did not look at. ")
    notice += (f"all_rows_kuiper_z is measured on every row by {measured.engine}; its p-value "
               "includes the rows searched and is not adjusted for the search.")
    if sample_dropped:
        notice += f" {sample_dropped:,} invalid rows of the sample were skipped."
    if result.notice:
        notice += f" {result.notice}"
    del output["notice"]  # re-added last, with the sample's part
    output["n"] = measured.n  # the rows size and share count (the sample's: sample.rows)
    output["size_counts"] = "all_rows"
    output["sample"] = {"rows": result.n, "n_dropped": int(sample_dropped),
                        "searched": result.n_search, "held_out": sample_held}
    output["all_rows"] = {"engine": measured.engine, "n": measured.n,
                          "n_dropped": measured.n_dropped}
    output["held_out"] = None if held is None else {"engine": measured.engine, "rows": n_held}
    output["notice"] = notice
    return output


def _share_key(share: float) -> str:
    return f"{share:g}"


def _plain(value: object) -> object:
    return value if isinstance(value, bool | int | str) else float(value)

"""``mcviz search``: the subpopulations where the model is most miscalibrated, held-out checked.

Prints ``{"n", "search": {"max_conditions", "holdout", "seed", "candidates_scored", "seconds"},
"mde": {"0.01", "0.05", "0.2"}, "findings": [{"rank", "confirmed", "holdout_kuiper_z",
"p_adjusted", "p_value", "mean_residual", "ci_low", "ci_high", "holdout_size", "description",
"size", "share", "kuiper_z", "sentence"}], "notice"}`` with findings in rank order, the held-out
numbers first. ``holdout_kuiper_z`` is D/sigma over the held-out rows (where ``p_value`` and the
Holm-adjusted ``p_adjusted`` come from; ``confirmed`` is ``p_adjusted < 0.05``); the effect is
the held-out weighted mean of observed - predicted with its 95% interval; ``kuiper_z`` is D/sigma
over all rows, the searched ones included (not a test); ``sentence`` is the finding in words as
the dashboard shows it; ``notice`` says why fewer findings than asked were reported and which
are not confirmed (null when there is nothing to say). ``mde`` is the mean shift a
subpopulation of 1%, 5% and 20% of the rows needs to be confirmed with 80% power.

At scale (``--engine duckdb`` or ``spark``, or ``--sample-rows`` given) the search runs on a
random sample of at most ``--sample-rows`` rows of the Parquet data (DuckDB's reservoir sample,
as ``mcviz screen`` draws it) and the engine then measures the findings' conditions on EVERY
row: each finding gains ``all_rows_size``, ``all_rows_share``, ``all_rows_kuiper_z`` (D/sigma,
eqs. (2) and (5) of paper 000), ``all_rows_p_value`` (its Brownian-range tail) and
``measured_on`` (``"all rows (duckdb)"``); the object gains ``sample``, ``all_rows`` and
``notice``. The held-out confirmation (``p_value``, ``p_adjusted``) is on the sample's held-out
rows; the all-rows p-value includes the rows searched and is not adjusted for the search.
Without those options (the default) the whole file is loaded and searched in memory.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import TYPE_CHECKING

from mcviz.cli import _common
from mcviz.errors import ValidationError

if TYPE_CHECKING:  # the search and the engines are imported only when they run (--help: at once)
    from mcviz.engines.base import ScreenResult
    from mcviz.search import SearchResult

__all__ = ["register", "result_json", "run"]

HELP = "find the subpopulations where the model is most miscalibrated (held-out confirmed)"

FINDING_KEYS = ("rank", "confirmed", "holdout_kuiper_z", "p_adjusted", "p_value",
                "mean_residual", "ci_low", "ci_high", "holdout_size", "description", "size",
                "share", "kuiper_z", "sentence")
"""Held-out numbers first (the text output prints them in this order)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz search``."""
    parser = subparsers.add_parser("search", help=HELP, description=HELP)
    _common.add_input_arguments(parser)
    _common.add_search_arguments(parser)
    parser.add_argument("--engine", choices=("numpy", "duckdb", "spark"), default="numpy",
                        help="duckdb or spark: search a sample of the Parquet data, then "
                        "measure the findings on every row (default numpy: all in memory)")
    parser.add_argument("--sample-rows", type=int, metavar="N",
                        help=f"rows sampled for the search at scale (default "
                        f"{DEFAULT_SAMPLE_ROWS:,} with --engine duckdb or spark)")
    parser.add_argument("--memory-limit", help="DuckDB memory limit, e.g. 2GB (spills beyond)")
    parser.set_defaults(run=run)


DEFAULT_SAMPLE_ROWS = 1_000_000


def run(args: argparse.Namespace) -> dict:
    """Load the file, search, and return the JSON object."""
    if args.engine != "numpy" or args.sample_rows is not None:
        return run_sampled(args)
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
        "notice": result.notice,
    }


def run_sampled(args: argparse.Namespace) -> dict:
    """Search a random sample of the rows, then measure the findings on every row."""
    from mcviz.cli.screen import (
        cancel_engine,
        make_engine,
        read_sample_interruptible,
        sample_columns,
    )
    from mcviz.engines.base import expand_paths
    from mcviz.io import load_predictions
    from mcviz.search import search_subpopulations

    rows = DEFAULT_SAMPLE_ROWS if args.sample_rows is None else args.sample_rows
    if rows < 1:
        raise ValidationError(f"--sample-rows must be positive, not {rows}.")
    for option in ("probabilities", "weighting", "rho"):
        if getattr(args, option, None) is not None:
            raise ValidationError(f"--{option} is not supported when the search runs on a "
                                  f"sample (--engine {args.engine}); use one score column.")
    files = expand_paths(args.file)
    covariates = _common.split(args.covariates)
    with tempfile.TemporaryDirectory(prefix="mcviz-search-", ignore_cleanup_errors=True) as spill:
        sample = read_sample_interruptible(files, rows, args.seed, spill)
        # Invalid rows of the sample are skipped (and counted); the engine validates every row.
        pred = load_predictions(sample, score=args.score, label=args.label,
                                positive=args.positive, weight=args.weight,
                                covariates=covariates, drop_invalid=True,
                                response=args.response, **_common.kind_options(args))
        columns = sample_columns(pred, sample)
        del sample
        result = search_subpopulations(
            pred, covariates=covariates, max_conditions=args.max_conditions,
            n_findings=args.findings, min_share=args.min_share, holdout=args.holdout,
            seed=args.seed,
        )
        if args.engine == "spark":  # the JVM's shuffle and spill files go there too
            os.environ["SPARK_LOCAL_DIRS"] = spill
        engine = make_engine(args.engine, files, columns, memory_limit=args.memory_limit,
                             drop_invalid=args.drop_invalid, temp_directory=spill)
        try:
            if args.engine == "numpy":
                measured = engine.screen(result.subpopulations)
            else:  # a query in native code: cancelled from the main thread on a signal
                measured = _common.interruptible(
                    lambda: engine.screen(result.subpopulations), lambda: cancel_engine(engine))
        finally:
            if not _common.work_abandoned():
                engine.close()
    return sampled_json(result, measured, sample_dropped=pred.report.n_dropped)


def sampled_json(result: SearchResult, measured: ScreenResult, *, sample_dropped: int) -> dict:
    """Return the JSON object of a search on a sample, the findings measured on every row.

    The keys of :func:`result_json`, each finding with ``all_rows_size``, ``all_rows_share``,
    ``all_rows_kuiper_z``, ``all_rows_p_value`` and ``measured_on``, then ``sample``,
    ``all_rows`` and ``notice``.
    """
    import numpy as np

    from mcviz.core import brownian_range_sf

    output = result_json(result)
    table = measured.table.set_index("id")
    where = f"all rows ({measured.engine})"
    for item in output["findings"]:
        row = table.loc[item["rank"]]  # subpopulation id = rank; id 0 is the full population
        z = float(row["kuiper_z"])
        item.update({
            "all_rows_size": int(row["size"]),
            "all_rows_share": float(row["size"]) / measured.n if measured.n else float("nan"),
            "all_rows_kuiper_z": z,
            "all_rows_p_value": float(brownian_range_sf(np.float64(z))),
            "measured_on": where,
        })
    notice = (f"searched a random sample of {result.n:,} of the {measured.n:,} rows; the "
              f"held-out confirmation (p_value, p_adjusted) is on the sample's "
              f"{result.n_holdout:,} held-out rows. all_rows_kuiper_z is measured on every row "
              f"by {measured.engine}; its p-value includes the rows searched and is not "
              "adjusted for the search.")
    if sample_dropped:
        notice += f" {sample_dropped:,} invalid rows of the sample were skipped."
    if result.notice:
        notice += f" {result.notice}"
    del output["notice"]  # re-added last, with the sample's part
    output["sample"] = {"rows": result.n, "n_dropped": int(sample_dropped),
                        "searched": result.n_search, "held_out": result.n_holdout}
    output["all_rows"] = {"engine": measured.engine, "n": measured.n,
                          "n_dropped": measured.n_dropped}
    output["notice"] = notice
    return output


def _share_key(share: float) -> str:
    return f"{share:g}"


def _plain(value: object) -> object:
    return value if isinstance(value, bool | int | str) else float(value)

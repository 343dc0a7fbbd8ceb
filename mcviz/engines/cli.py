"""``mcviz screen``: generate subpopulations on a sample, evaluate them on the full data.

The subpopulations come from Algorithm 1 run on an in-memory random sample of the rows (read
with DuckDB's reservoir sampling, ``--sample-rows``, ``--seed``); the chosen engine then
evaluates their predicates on every row. The per-subpopulation table is written to ``--out``
(Parquet, with the run's context in its metadata: :mod:`mcviz.engines.results`, which the
dashboard's Screening page opens) and M with its argmax is printed (``--json``: the keys of
``mcviz metrics``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from mcviz.engines.base import Columns, Engine, expand_paths
from mcviz.engines.results import write_screen
from mcviz.errors import ValidationError
from mcviz.io import Predictions, load_predictions
from mcviz.subpopulations import generate_subpopulations

__all__ = ["configure_screen", "make_engine", "run_screen", "sample_columns"]

DEFAULT_SAMPLE_ROWS = 1_000_000


def configure_screen(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``mcviz screen``."""
    parser.add_argument("file", help="Parquet file, directory or glob (quote it)")
    parser.add_argument("--score", help="score column (probability of the positive class)")
    parser.add_argument("--label", help="label column")
    parser.add_argument("--positive", help="the label value of the positive class")
    parser.add_argument("--weight", help="weight column")
    parser.add_argument("--drop-invalid", action="store_true",
                        help="drop invalid rows (and say how many)")
    parser.add_argument("--engine", choices=("numpy", "duckdb", "spark"), default="numpy")
    parser.add_argument("--memory-limit", help="DuckDB memory limit, e.g. 2GB (spills beyond)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--exact", action="store_true", help="exact Kuiper statistics (default)")
    mode.add_argument("--histogram", type=int, metavar="BINS",
                      help="histogram mode with BINS score bins (reports the bound)")
    parser.add_argument("--covariates", help="comma-separated covariates to split on")
    parser.add_argument("--subpopulations", type=int, default=1000, metavar="L",
                        help="number of random subpopulations (default 1000)")
    parser.add_argument("--min-size", type=int, default=10, help="smallest subpopulation")
    parser.add_argument("--sample-rows", type=int, default=DEFAULT_SAMPLE_ROWS, metavar="N",
                        help="rows sampled to generate the subpopulations (default 1,000,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="Parquet file for the per-subpopulation table")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def sample_columns(pred: Predictions, sample: pd.DataFrame) -> Columns:
    """Return the score/label/weight mapping a sample was loaded with, for the engines."""
    if pred.multiclass:
        raise ValidationError("mcviz screen needs one score column; multi-class files are not "
                              "supported out of core.")
    if pred.response_kind != "binary":
        raise ValidationError("mcviz screen needs binary labels.")
    label = sample[pred.label_column]
    numeric = pd.api.types.is_bool_dtype(label) or pd.api.types.is_numeric_dtype(label)
    if numeric and str(pred.positive) in ("1", "True", "1.0"):
        return Columns(pred.score_column, pred.label_column, pred.weight_column)
    return Columns(pred.score_column, pred.label_column, pred.weight_column,
                   positive=str(pred.positive).strip(), negative=pred.classes[0])


def make_engine(name: str, files, columns: Columns, *, memory_limit: str | None = None,
                drop_invalid: bool = False) -> Engine:
    """Build the named engine over the files."""
    if name == "numpy":
        from mcviz.engines.numpy_engine import NumpyEngine

        return NumpyEngine(files, columns, drop_invalid=drop_invalid)
    if name == "duckdb":
        try:
            from mcviz.engines.duckdb_engine import DuckDBEngine
        except ImportError:  # pragma: no cover
            raise ValidationError("the duckdb engine needs `pip install mcviz[duckdb]`.") from None
        return DuckDBEngine(files, columns, memory_limit=memory_limit, drop_invalid=drop_invalid)
    if name == "spark":
        try:
            from mcviz.engines.spark_engine import SparkEngine
        except ImportError:  # pragma: no cover
            raise ValidationError("the spark engine needs `pip install mcviz[spark]` and Java "
                                  "17.") from None
        return SparkEngine(files, columns, drop_invalid=drop_invalid)
    raise ValidationError(f"unknown engine {name!r}; use numpy, duckdb or spark.")


def run_screen(args: argparse.Namespace) -> dict:
    """Run ``mcviz screen``; returns the JSON object."""
    from mcviz.engines.duckdb_engine import read_sample

    files = expand_paths(args.file)
    if args.sample_rows < 1:
        raise ValidationError(f"--sample-rows must be positive, not {args.sample_rows}.")
    out = Path(args.out)
    if not out.parent.exists():  # say so before the work, not after it
        raise ValidationError(f"directory {str(out.parent)!r} does not exist.")
    sample = read_sample(files, args.sample_rows, args.seed)
    covariates = None if args.covariates is None else [
        c.strip() for c in args.covariates.split(",") if c.strip()]
    # Invalid rows of the sample are skipped here: the engine validates every row of the full
    # data and reports counts of the file, not row numbers of a random sample.
    pred = load_predictions(
        sample, score=args.score, label=args.label, positive=args.positive,
        weight=args.weight, covariates=covariates, drop_invalid=True,
    )
    columns = sample_columns(pred, sample)
    subpopulations = generate_subpopulations(
        pred, covariates=covariates, n_subpopulations=args.subpopulations,
        min_size=args.min_size, seed=args.seed,
    )
    engine = make_engine(args.engine, files, columns, memory_limit=args.memory_limit,
                         drop_invalid=args.drop_invalid)
    with engine:
        if args.histogram is not None:
            result = engine.screen(subpopulations, exact=False, bins=args.histogram)
        else:
            result = engine.screen(subpopulations, exact=True)
    write_screen(result, out, files=files, columns=columns, kinds=pred.covariate_kinds)
    return result.summary()

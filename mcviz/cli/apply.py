"""``mcviz apply MAP FILE --out scored.parquet``: apply a saved recalibration map to new rows.

The map (written by ``mcviz fix --map``) names the score column, the covariates and their kinds,
the mcviz version and its held-out verdict; a map from another version, a map its judgement did
not recommend (unless ``--force``: the reason is printed), a file without those columns, or a
covariate holding text where the map expects numbers is refused (status 2, nothing written).
Labels are not needed. Writes the file's columns plus ``score_recalibrated`` and prints
``{"method", "map", "recommended", "n", "score_column", "out", "mean_score",
"mean_recalibrated"}`` (``recommended``: the map's verdict, null for a map never judged).

``--engine duckdb|spark`` scores Parquet files that never come into memory: the map is compiled
to one SQL ``SELECT`` (:mod:`mcviz.recalibration.compiled`) that keeps every column and adds
``score_recalibrated``, run by DuckDB (out of core under ``--memory-limit``, written as one
Parquet file) or Spark (``--spark-master``; written as Spark's directory of Parquet part files
at ``--out``). The rows are checked first (a missing, NaN or out-of-range score is refused with
its count, as in memory), and the written scores are read back and checked to be probabilities
(otherwise nothing is left at ``--out``). The JSON is the same; ``engine`` names the engine.
"""

from __future__ import annotations

import argparse
import json

from mcviz.cli import _common
from mcviz.cli.engine_options import add_engine_arguments
from mcviz.errors import ValidationError

__all__ = ["checked_scores", "register", "run"]

HELP = "apply a saved recalibration map (mcviz fix --map) to new rows"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz apply``."""
    parser = subparsers.add_parser("apply", help=HELP, description=HELP)
    parser.add_argument("map", help="the map written by mcviz fix --map (JSON)")
    parser.add_argument("file", help="CSV/TSV (optionally .gz/.zip) or Parquet file to score")
    parser.add_argument("--score", help="score column (default: the one the map was fitted on)")
    parser.add_argument("--out", required=True, help="output file (.parquet or .csv)")
    parser.add_argument("--force", action="store_true",
                        help="apply a map whose held-out judgement did not recommend it")
    add_engine_arguments(parser, "duckdb or spark: score Parquet files inside the engine (the "
                         "map compiled to SQL; default numpy: in memory)")
    _common.add_json_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> dict:
    """Read the map and the file, score, write; return the JSON object."""
    import numpy as np

    from mcviz.cli.fix import write_scored
    from mcviz.io import read_map, read_table
    from mcviz.recalibration import Recalibrator, frame_for_scoring

    engine = getattr(args, "engine", "numpy")
    if engine == "numpy":
        _common.check_output(args.out, flag="--out", suffixes=(".parquet", ".csv"))
    else:
        from mcviz.cli.engine_apply import check_engine_output

        check_engine_output(args, engine)
    data = read_map(args.map)  # bounded, nesting- and schema-checked (mcviz.io.maps)
    fix = Recalibrator.from_json(json.dumps(data))
    if fix.recommended is False and not args.force:
        raise ValidationError(f"map {args.map!r}: its fix was judged on held-out rows and is "
                              f"{fix.verdict['reason'].rstrip('.')}. Pass --force to apply it "
                              "anyway.")
    if engine != "numpy":
        from mcviz.cli.engine_apply import apply_in_engine

        return apply_in_engine(args, data, fix)
    frame = read_table(args.file)
    pred = frame_for_scoring(frame, fix, score=args.score)
    scores = np.empty(len(frame))
    scores[pred.row] = checked_scores(fix.transform(pred), pred.row, args.map)
    write_scored(frame, scores, args.out)
    return {"method": fix.method, "map": fix.describe(), "recommended": fix.recommended,
            "n": len(frame),
            "score_column": args.score or fix.score_column, "out": args.out,
            "mean_score": float(np.mean(pred.score)), "mean_recalibrated": float(scores.mean())}


def checked_scores(values, rows, map_name: str):
    """Return ``values`` when every one is a probability; else refuse, naming rows and the map.

    A map that passed its checks can still overflow on extreme inputs; nothing outside
    [0, 1] (or NaN) is ever written as a score.
    """
    import numpy as np

    values = np.asarray(values, dtype=float)
    bad = ~((values >= 0.0) & (values <= 1.0))  # NaN compares False: counted as bad
    if bad.any():
        where = np.sort(np.asarray(rows)[bad])
        listed = ", ".join(f"{r:,}" for r in where[:5]) + (", ..." if len(where) > 5 else "")
        raise ValidationError(f"map {map_name!r} gives {int(bad.sum()):,} of {len(values):,} "
                              f"rows a score that is not a probability in [0, 1] (rows "
                              f"{listed}); nothing was written. Fit the map again with mcviz "
                              "fix --map.")
    return values

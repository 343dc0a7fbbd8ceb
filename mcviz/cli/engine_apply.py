"""``mcviz apply --engine duckdb|spark``: the map compiled to SQL, run and written by the engine.

See :mod:`mcviz.cli.apply` (the command) and :mod:`mcviz.recalibration.compiled` (the SQL).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from mcviz.cli import _common
from mcviz.cli.engine_options import require_engine
from mcviz.errors import ValidationError

__all__ = ["apply_in_engine", "check_engine_output", "score_table"]


def check_engine_output(args: argparse.Namespace, engine: str) -> None:
    """Refuse an output the engine cannot write, before the work (and a missing engine)."""
    if engine == "duckdb":
        _common.check_output(args.out, flag="--out", suffixes=(".parquet",))
    else:
        out = Path(args.out)
        if out.suffix.lower() != ".parquet":
            raise ValidationError(f"--out {args.out!r}: the name must end in .parquet (Spark "
                                  "writes a directory of Parquet part files there).")
        if out.exists() and not (out.is_dir() and (out / "_SUCCESS").exists()):
            raise ValidationError(f"--out {args.out!r} exists and is not a Parquet directory "
                                  "Spark wrote; remove it or name another.")
        if not out.parent.is_dir():
            raise ValidationError(f"--out {args.out!r}: directory {str(out.parent)!r} does not "
                                  "exist.")
    require_engine(engine)


def apply_in_engine(args: argparse.Namespace, data: dict, fix) -> dict:
    """Check the rows, compile the map, write, read the scores back; return the JSON object."""
    from mcviz.cli.engine_options import engine_share, spark_limit
    from mcviz.engines.memory import AGGREGATE_RESERVE, WRITE_FLOOR
    from mcviz.engines.tables import open_table

    score = args.score or fix.score_column
    # the whole process (DuckDB), or this process, the JVM and Spark's workers (local Spark)
    limit = spark_limit(args, what="this apply", note=True)
    if args.engine == "duckdb":
        limit = engine_share(args.memory_limit, reserve=AGGREGATE_RESERVE, what="this apply",
                             floor=WRITE_FLOOR)
    with tempfile.TemporaryDirectory(prefix="mcviz-apply-", ignore_cleanup_errors=True) as spill:
        table = open_table(args.engine, args.file, memory_limit=limit,
                           temp_directory=spill, spark_master=args.spark_master)
        try:
            n, mean_score, mean_recalibrated = score_table(table, data, score, Path(args.out),
                                                           map_name=args.map)
        finally:
            if not _common.work_abandoned():
                table.close()
    return {"method": fix.method, "map": fix.describe(), "recommended": fix.recommended,
            "n": n, "score_column": score, "out": args.out, "mean_score": mean_score,
            "mean_recalibrated": mean_recalibrated, "engine": args.engine}


def score_table(table, data: dict, score: str, out: Path, *, map_name: str
                ) -> tuple[int, float, float]:
    """Score ``table`` (:class:`~mcviz.engines.tables.Table`) with the map; write ``out``.

    Returns the rows, their mean score and their mean recalibrated score.
    """
    from mcviz.recalibration.compiled import check_columns, compile_map

    check_columns(data, table.kinds, score)
    n, mean_score = _check_scores(table, score)
    q = table.query()
    text = compile_map(data, score=score, kinds=table.kinds, q=q, source=table.source)
    return n, mean_score, _write(table, q, text, Path(out), map_name)


def _check_scores(table, score: str) -> tuple[int, float]:
    """Count the rows and refuse missing or out-of-range scores (one aggregate pass)."""
    from mcviz.recalibration.compiled import score_checks_sql

    q = table.query()
    text = score_checks_sql(score, table.kinds, q, table.source)
    row = _common.interruptible(lambda: table.frame(q, text), table.cancel).iloc[0]
    n, missing, outside = (int(row[k] or 0) for k in ("n", "missing", "outside"))
    if n == 0:
        raise ValidationError(f"{str(table.files[0])!r}: no rows to score.")
    for count, problem in ((missing, "are missing or NaN"), (outside, "lie outside [0, 1]")):
        if count:
            raise ValidationError(f"column {score!r}: {count:,} of {n:,} rows {problem}; "
                                  "nothing was written.", column=score)
    return n, float(row["mean"])


def _write(table, q, text: str, out: Path, map_name: str) -> float:
    """Write to a temporary path beside ``out``, check the scores, move it into place."""
    from mcviz.recalibration.compiled import OUT_COLUMN

    if table.name == "duckdb":
        with _common.atomic_output(out) as temporary:
            _common.interruptible(lambda: table.write_parquet(q, text, temporary), table.cancel)
            return _read_back(table, temporary, OUT_COLUMN, map_name)
    from mcviz.engines.tables import replace_directory

    temporary = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent)) / "parquet"
    try:
        _common.interruptible(lambda: table.write_parquet(q, text, temporary), table.cancel)
        mean = _read_back(table, temporary, OUT_COLUMN, map_name)
        replace_directory(temporary, out)
        return mean
    finally:
        shutil.rmtree(temporary.parent, ignore_errors=True)


def _read_back(table, path: Path, column: str, map_name: str) -> float:
    """Refuse written scores that are not probabilities (nothing is kept); return their mean."""
    q = table.query()
    ident = q.dialect.ident(column)
    row = table.frame(q, f"SELECT COUNT(*) AS n, AVG({ident}) AS m, SUM(CASE WHEN {ident} >= "
                      f"0.0 AND {ident} <= 1.0 THEN 0 ELSE 1 END) AS bad FROM "
                      f"{table.relation(path)}").iloc[0]
    if int(row["bad"] or 0):
        raise ValidationError(f"map {map_name!r} gives {int(row['bad']):,} of {int(row['n']):,} "
                              "rows a score that is not a probability in [0, 1]; nothing was "
                              "written. Fit the map again with mcviz fix --map.")
    return float(row["m"])

"""``mcviz metrics``: the calibration metrics of the full population, and multi-calibration.

The ``"calibration"`` block is the cumulative statistics of paper 000 (eqs. 2-5) and the
``"classical"`` block the measures of :func:`mcviz.stats.measures.classical_measures`; with any
multi-calibration option (``--covariates``, ``--subpopulations``, ``--groups``, ...) the
``"multicalibration"`` block adds the metric of eq. (4) over Algorithm 1's subpopulations, and
with ``--null-draws N`` its null distribution and every subpopulation's family-wise adjusted
p-value (:func:`mcviz.stats.significance.null_distribution`). ``--table FILE`` writes one row per
subpopulation (CSV, formulas neutralised, or Parquet, by the file's extension).

With ``--engine duckdb|spark`` (Parquet) the calibration block comes from the rows sorted by
score out of core, and the classical measures and the review's reliability diagrams
(``"reliability"``) from the engine's sums per distinct score; ``"classical_runs"`` says whether
those were exact (at most 2^20 distinct scores) or fine score bins (:mod:`mcviz.stats.measures.runs`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mcviz.budget import check, subpopulations_estimate
from mcviz.cli import _common
from mcviz.cli.engine_options import add_engine_arguments
from mcviz.errors import ValidationError
from mcviz.io import VOID_P_VALUES, Predictions, roles_sentence
from mcviz.settings import SubpopulationSettings
from mcviz.stats.cumulative import cumulative_differences
from mcviz.stats.measures import classical_measures

if TYPE_CHECKING:  # the multi-calibration block imports its modules when asked for
    from mcviz.stats.multical import MulticalResult
    from mcviz.stats.significance import NullDistribution

__all__ = ["metrics_block", "register", "run"]

HELP = "calibration metrics of the full population"
# The options of the multi-calibration block (any of them, or --covariates, asks for it).
OPTIONS = ("subpopulations", "min_size", "seed", "repeats", "groups", "null_draws", "table")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz metrics``."""
    parser = subparsers.add_parser("metrics", help=HELP, description=HELP)
    _common.add_input_arguments(parser)
    add_multicalibration_arguments(parser)
    add_engine_arguments(parser, "duckdb or spark: the calibration block from rows sorted by "
                         "score out of core and the classical measures from sums per score "
                         "(Parquet; default numpy: in memory)")
    parser.set_defaults(run=run)


def add_multicalibration_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the multi-calibration options of ``mcviz metrics`` (defaults: None = not asked)."""
    group = parser.add_argument_group("multi-calibration (paper 000)")
    group.add_argument(
        "--covariates", help="comma-separated covariates (also those Algorithm 1 splits on)"
    )
    _common.add_settings_arguments(group, SubpopulationSettings, required_default=False)
    group.add_argument(
        "--groups", help="comma-separated boolean or categorical columns used as groups"
    )
    group.add_argument(
        "--null-draws", type=int, metavar="N",
        help="simulate M under perfect calibration N times (responses redrawn from the scores, "
        "seeded by --seed) for its Monte-Carlo p-value and every subpopulation's family-wise "
        "adjusted p-value",
    )
    group.add_argument(
        "--table", metavar="FILE",
        help="write one row per subpopulation to FILE (.csv or .parquet)",
    )


def run(args: argparse.Namespace) -> dict:
    """Return the metrics of the file (and the multi-calibration block when asked)."""
    if getattr(args, "engine", "numpy") != "numpy":
        return _in_engine(args)
    _settings(args)  # out-of-bounds settings are refused before the file is read
    _common.check_output(args.table, flag="--table", suffixes=(".csv", ".parquet"))
    covariates = _common.split(args.covariates)
    groups = _common.split(args.groups)
    if covariates is not None and groups:  # group columns must be loaded too
        covariates = list(dict.fromkeys([*covariates, *groups]))
    # a Parquet file without pandas when it can (pandas loads only if the covariates are
    # read, by the multi-calibration block); before --weighting (the null redraws it)
    loaded = _common.load_parquet_first(args, covariates=covariates, weighted=False)
    print(f"mcviz: columns: {roles_sentence(loaded)}", file=sys.stderr)
    pred = _common.apply_weighting(args, loaded)
    _check_subpopulations(args, pred)  # refused before the other measures, not after them
    result = cumulative_differences(pred)
    classical = _classical_started(args, pred)  # beside the multi-calibration block
    output: dict = {
        "n": pred.n,
        "weight_total": pred.weight_total,
        "columns": _columns(loaded),
        "calibration": {
            "kuiper": result.kuiper,
            "ks": result.ks,
            "sigma": result.sigma,
            "kuiper_z": result.kuiper_z,
            "p_value": result.p_value,  # NaN (null) with label-dependent weights
            "p_value_kind": "brownian",
            "unweighted_kuiper_z": None,  # beside D/sigma when the weights depend on the labels
            "warnings": [],
        },
        "classical": None,
    }
    block = metrics_block(args, pred, unweighted=loaded)
    output["classical"] = classical()
    if block is not None:
        output["multicalibration"] = block
    if pred.weights_depend_on_label:
        calibration = output["calibration"]
        _say_reweighted(calibration, result.kuiper_z, loaded)
        calibration["warnings"].append(
            f"p-values {VOID_P_VALUES}: --weighting {args.weighting} (paper 000 Appendix B) makes "
            "the weights depend on the labels, so calibration.p_value, the classical p-values "
            "(Spiegelhalter, Hosmer-Lemeshow) and every subpopulation's Brownian p-value are "
            "null; --null-draws N recomputes the weights for every draw and gives valid ones.")
        print(f"mcviz: warning: {calibration['warnings'][-1]}", file=sys.stderr)
        null = (block or {}).get("null")
        if null is not None:  # the null's own p of the full population takes the void one's place
            calibration["p_value"] = null["full_population_p_value"]
            calibration["p_value_kind"] = "monte-carlo"
        else:
            calibration["p_value_kind"] = None
    return output


def _in_engine(args: argparse.Namespace) -> dict:
    """Return the calibration block and the classical measures computed by the engine.

    The calibration block streams the rows sorted by score (:mod:`mcviz.engines.calibration`);
    the classical measures come from one ``GROUP BY`` of the rows by score
    (:func:`~mcviz.engines.calibration.score_runs_table`, then
    :func:`~mcviz.stats.measures.runs.classical_from_runs`).
    """
    from mcviz.cli.engine_options import on_table, require_engine
    from mcviz.engines.calibration import (
        calibration_block,
        score_runs_table,
        spark_calibration_block,
    )
    from mcviz.settings import ENGINE_SCORE_RUNS

    require_engine(args.engine)
    if _asked(args) or args.table:
        raise ValidationError(f"--engine {args.engine} gives the calibration block and the "
                              "classical measures; for multi-calibration on every row use "
                              f"mcviz screen --engine {args.engine}.")

    def work(table, columns):
        runs = score_runs_table(table, columns, limit=ENGINE_SCORE_RUNS)
        if table.name == "duckdb":
            from mcviz.engines.duckdb_engine import DuckDBEngine

            table.close()  # the screening engine streams the sorted rows itself
            engine, block = (DuckDBEngine(table.files, columns,  # the runs stay in Python
                                          memory_limit=_stream_share(args, table.files)),
                             calibration_block)
        else:
            from mcviz.engines.spark_engine import SparkEngine

            engine, block = (SparkEngine(table.files, columns, spark=table.spark),
                             spark_calibration_block)
        try:
            return columns, runs, block(engine)
        finally:
            engine.close()

    from mcviz.engines.memory import PLAIN_WORKER

    columns, runs, (n, total, statistics) = on_table(args, work, reserve=_runs_reserve(args),
                                                     what="this metrics run", worker=PLAIN_WORKER)
    return {"n": n, "weight_total": total,
            "columns": {"score": columns.score, "probabilities": [], "label": columns.label,
                        "weight": columns.weight, "response": "binary", "covariates": []},
            "calibration": {**statistics, "p_value_kind": "brownian",
                            "unweighted_kuiper_z": None, "warnings": []},
            **_classical_from_engine(runs), "engine": args.engine}


def _runs_reserve(args: argparse.Namespace) -> int:
    """Return the bytes the score runs take beside DuckDB (--memory-limit bounds the process).

    At most one run per row, and about :data:`~mcviz.settings.ENGINE_SCORE_RUNS` (a few per
    cent more), :data:`~mcviz.engines.memory.RUN_BYTES` each.
    """
    from mcviz.engines.base import expand_paths, rows_in_files
    from mcviz.engines.memory import AGGREGATE_RESERVE, RUN_BYTES, score_runs

    if args.engine != "duckdb" or args.memory_limit is None:
        return 0
    return AGGREGATE_RESERVE + RUN_BYTES * score_runs(rows_in_files(expand_paths(args.file)))


def _stream_share(args: argparse.Namespace, files) -> str | None:
    """Return DuckDB's share while the sorted rows stream (the runs already held).

    Refused below its floor (:func:`mcviz.cli.engine_options.engine_share`).
    """
    from mcviz.budget import usable_cores
    from mcviz.cli.engine_options import engine_share
    from mcviz.engines.base import rows_in_files
    from mcviz.engines.duckdb_engine import BATCH_ROWS
    from mcviz.engines.memory import stream_reserve

    if args.memory_limit is None:
        return None
    return engine_share(args.memory_limit, what="this metrics run", reserve=stream_reserve(
        threads=usable_cores(), batch_rows=BATCH_ROWS, rows=rows_in_files(files)))


def _classical_from_engine(parts: dict) -> dict:
    """The ``"classical"`` block from the engine's runs, and ``"classical_runs"``: how exact."""
    from mcviz.stats.measures.runs import ScoreRuns, binned_bound, classical_from_runs

    runs = ScoreRuns(**parts)
    bound = binned_bound(runs)
    about = {"runs": int(runs.score.size), "exact": bound is None}
    if bound is not None:
        about |= {"bins": runs.bins, "max_score_move": bound.bin_width,
                  "ece_equal_count_bound": bound.ece_equal_count}
        print(f"mcviz: note: {runs.bins:,} fine score bins (more distinct scores than that): "
              "Brier, log loss, Spiegelhalter, calibration-in-the-large, O/E and the "
              "equal-width ECE/MCE/ACE are exact; the equal-count ECE within "
              f"{bound.ece_equal_count:.2g}; the other classical measures are those of the rows "
              f"with each score moved by less than {bound.bin_width:.2g}.", file=sys.stderr)
    return {"classical": classical_from_runs(runs).as_json(), "classical_runs": about,
            "reliability": _reliability(runs)}


def _reliability(runs) -> dict:
    """The review's reliability diagrams (10, 20, 50 equal-width bins) from the runs' sums."""
    from mcviz.stats.binning import reliability_from_runs

    result = reliability_from_runs(runs.score, runs.count, runs.weight, runs.positive,
                                   runs.square_weight, weighted=runs.weighted)
    fields = ("lower_edge", "upper_edge", "count", "weight", "mean_score", "mean_response",
              "interval_low", "interval_high")
    return {"kind": result.kind, "confidence": result.confidence,
            "diagrams": [{"n_bins": d.n_bins, **{f: getattr(d, f).tolist() for f in fields}}
                         for d in result.full]}


def _say_reweighted(calibration: dict, weighted_z: float, unweighted: Predictions) -> None:
    """Put the unweighted D/sigma beside the reweighted one; say where the magnitudes come from.

    The sentence is :func:`~mcviz.stats.weighting.reweighted_magnitudes` (on stderr too).
    """
    from mcviz.stats.weighting import prevalence, reweighted_magnitudes

    unweighted_z = cumulative_differences(unweighted).kuiper_z
    calibration["unweighted_kuiper_z"] = unweighted_z
    calibration["warnings"].append(reweighted_magnitudes(weighted_z, unweighted_z,
                                                         prevalence(unweighted)))
    print(f"mcviz: warning: {calibration['warnings'][-1]}", file=sys.stderr)


def _asked(args: argparse.Namespace) -> bool:
    """Tell whether any multi-calibration option was given (the block is then computed)."""
    return args.covariates is not None or any(getattr(args, n) is not None for n in OPTIONS)


def _columns(pred: Predictions) -> dict:
    """Return the ``"columns"`` block: which column played which role (before --weighting)."""
    return {
        "score": None if pred.probability_columns else pred.score_column,
        "probabilities": list(pred.probability_columns),
        "label": pred.label_column,
        "weight": pred.weight_column,
        "response": pred.response_kind,
        "covariates": list(pred.covariate_names),  # not put in score order: never used here
    }


def _classical(pred: Predictions) -> tuple[dict | None, str | None]:
    """Return the ``"classical"`` block and a note (None and why for responses outside [0, 1])."""
    if pred.response_kind != "binary":
        try:
            return classical_measures(pred).as_json(), None
        except ValidationError as error:  # the measures need responses in [0, 1]
            return None, f"mcviz: note: classical measures not computed: {error}"
    return classical_measures(pred).as_json(), None


def _classical_started(args: argparse.Namespace, pred: Predictions) -> Callable[[], dict | None]:
    """Start the ``"classical"`` block; return what waits for it (and prints its note).

    In a thread of its own, beside the multi-calibration block, when that block is asked, the
    process may run on two cores or more, and the memory budget holds both at once (Algorithm
    1's :func:`~mcviz.budget.subpopulations_estimate` plus
    :func:`~mcviz.budget.classical_estimate`: they run at the same time); else now, before the
    block. The same numbers either way: the measures read the score-sorted arrays, which
    nothing writes, and the note is printed when they are joined (stderr keeps its order).
    """
    from concurrent.futures import ThreadPoolExecutor

    from mcviz.budget import classical_estimate, memory_budget, usable_cores

    beside = _asked(args) and usable_cores() >= 2
    if beside:
        need = classical_estimate(pred.n, int(pred.run_end.sum())).bytes
        if _generates(args):
            n_subpopulations, _, _, repeats = _settings(args)
            need += subpopulations_estimate(pred.n, n_subpopulations, repeats).bytes
        beside = need <= memory_budget()
    if not beside:
        done = _classical(pred)
        future = None
    else:
        done = None
        pool = ThreadPoolExecutor(1, thread_name_prefix="mcviz-classical")
        future = pool.submit(_classical, pred)
        pool.shutdown(wait=False)  # its thread ends with the measures

    def joined() -> dict | None:
        block, note = done if future is None else future.result()
        if note:
            print(note, file=sys.stderr)
        return block

    return joined


def _settings(args: argparse.Namespace) -> tuple[int, int, int, int]:
    """Return n_subpopulations, min_size, seed, repeats (defaults and bounds: the settings)."""
    settings = _common.settings_from_arguments(SubpopulationSettings, args)
    return settings.n_subpopulations, settings.min_size, settings.seed, settings.repeats


def _generates(args: argparse.Namespace) -> bool:
    """Tell whether the block runs Algorithm 1: not with ``--groups`` and no ``--covariates``."""
    return not _common.split(args.groups) or bool(_common.split(args.covariates))


def _check_subpopulations(args: argparse.Namespace, pred: Predictions) -> None:
    """Refuse Algorithm 1's subpopulations (and repeats) over the budget, before any work."""
    if _asked(args) and _generates(args):
        n_subpopulations, _, _, repeats = _settings(args)
        check(subpopulations_estimate(pred.n, n_subpopulations, repeats))


def metrics_block(
    args: argparse.Namespace, pred: Predictions, *, unweighted: Predictions | None = None
) -> dict | None:
    """Compute the ``"multicalibration"`` block of ``mcviz metrics`` (None when not asked).

    ``unweighted`` is ``pred`` before ``--weighting``: the null draws recompute the
    low-prevalence weights from each draw's responses (Appendix B weights depend on them).
    """
    if not _asked(args):
        return None
    from mcviz.stats.multical import multicalibration, multicalibration_repeats
    from mcviz.subpopulations import group_subpopulations

    n_subpopulations, min_size, seed, repeats = _settings(args)
    group_columns = _common.split(args.groups) or []
    covariate_names = _common.split(args.covariates) or []
    groups = group_subpopulations(pred, group_columns) if group_columns else ()
    generate = _generates(args)  # Algorithm 1 (else the full population and the groups alone)
    notes: list[str] = []
    ignored = ("subpopulations", "min_size", "seed", "repeats")
    if not generate and any(getattr(args, name) is not None for name in ignored):
        notes.append("--groups without --covariates: the subpopulations are the full population "
                     "and the groups alone (no Algorithm 1, so --subpopulations, --min-size, "
                     "--seed and --repeats change nothing).")
    # a covariate the loader dropped (constant or all missing) cannot split anything
    known = set(pred.covariate_names)  # (names only: the covariates stay unread)
    dropped = [c for c in covariate_names if c not in known]
    if dropped:
        notes.append(f"not split on: {', '.join(map(repr, dropped))} (dropped when loading: "
                     "constant or every value missing).")
    split_on = [c for c in covariate_names if c not in dropped] if covariate_names else [
        c for c in pred.covariates.columns if c not in group_columns]
    if generate:
        _check_subpopulations(args, pred)  # (run() has checked; other callers too)
        repeated = multicalibration_repeats(
            pred, seeds=range(seed, seed + repeats), covariates=split_on,
            n_subpopulations=n_subpopulations, min_size=min_size, groups=groups,
        )
        result = repeated.results[0]
    else:
        repeated = None
        result = multicalibration(pred, groups)
    names = ("metric", "metric_z", "ablate", "expectation")
    block: dict = {
        name: getattr(result, name) if repeated is None else repeated.mean(name) for name in names
    }
    argmax = result.argmax
    position = next(i for i, s in enumerate(result.subpopulations) if s is argmax)
    block["n_subpopulations"] = result.n_subpopulations
    block["argmax"] = {
        "description": argmax.description,
        "size": argmax.size,
        "kuiper": float(result.kuiper[position]),
        "sigma": float(result.sigma[position]),
    }
    if args.repeats is not None:  # standard errors of the means (Bessel); "±" is 2 se
        block["repeats"] = repeats
        block["seeds"] = list(repeated.seeds) if repeated is not None else []
        for name in names:
            # one seed: no spread to estimate (null); groups only: nothing random (0)
            block[f"{name}_se"] = repeated.se(name) if repeated is not None else 0.0
    null = _null(args, pred, unweighted, result, seed)
    if null is not None:
        block["null"] = null.as_json()
        block["argmax"]["p_adjusted"] = float(null.p_adjusted[position])
    if args.table is not None:
        _write_table(args.table, result, null)
        if null is None:
            notes.append("--table: the p_adjusted column is empty without --null-draws (the "
                         "p_value column is not adjusted for the number of subpopulations).")
    if result.notice:
        notes.append(result.notice)
    if notes:
        block["notice"] = " ".join(notes)
    return block


def _null(args, pred: Predictions, unweighted: Predictions | None, result: MulticalResult,
          seed: int) -> NullDistribution | None:
    """Simulate M under perfect calibration when ``--null-draws`` is given."""
    if args.null_draws is None:
        return None
    low_prevalence = getattr(args, "weighting", None) == "low-prevalence"
    if low_prevalence and unweighted is None:
        raise ValidationError("--null-draws with low-prevalence weights needs the unweighted "
                              "predictions.")
    from mcviz.stats.significance import null_distribution

    return null_distribution(
        unweighted if low_prevalence else pred, result.subpopulations,
        draws=args.null_draws, seed=seed, low_prevalence=low_prevalence,
    )


def _write_table(path: str, result: MulticalResult, null: NullDistribution | None) -> None:
    """Write one row per subpopulation to ``path`` (.csv or .parquet), atomically."""
    from mcviz.present.report import safe_csv

    suffix = Path(path).suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ValidationError(f"--table {path!r}: the file name must end in .csv or .parquet.")
    table = result.table
    table["p_adjusted"] = null.p_adjusted if null is not None else float("nan")
    with _common.atomic_output(path) as temporary:
        if suffix == ".csv":
            temporary.write_bytes(safe_csv(table))
        else:
            table.to_parquet(temporary, index=False)

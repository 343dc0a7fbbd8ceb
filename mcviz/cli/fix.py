"""``mcviz fix``: fit a fix on one score-stratified split, judge it on the other.

Prints ``{"method", "accepted", "meaningful", "reason", "verdict", "n_fit", "n_eval", "map",
"notes", "thresholds", "before": {"metric", "metric_z", "metric_p", "ece", "smece",
"log_loss", "brier", "findings": [{"description", "holdout_kuiper_z"}], "net_benefit"},
"after": {same keys}, "decision": {...}}``: every number is measured on the held-out rows,
which neither the search nor the fit saw. ``metric_p`` is the Monte-Carlo p-value of M with
``--null-draws`` (else null). ``net_benefit`` lists NB at ``--thresholds`` of the model
(before) and of the fixed scores (after); ``decision`` adds the loss per 1,000 decisions with
its bootstrap interval and a sentence per threshold. ``--map`` saves the fitted map (JSON, for
``mcviz apply``); ``--out`` writes the input's columns plus ``score_recalibrated`` (Parquet or
CSV by the extension; the fit rows are scored too, in sample).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mcviz.cli import _common
from mcviz.errors import ValidationError

__all__ = ["OUT_COLUMN", "parse_thresholds", "register", "run", "write_scored"]

HELP = "fit a recalibration on one split and judge it on held-out rows"
METHODS = ("platt", "isotonic", "beta", "findings", "boost")
OUT_COLUMN = "score_recalibrated"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz fix``."""
    parser = subparsers.add_parser("fix", help=HELP, description=HELP)
    _common.add_input_arguments(parser)
    add_fix_arguments(parser, method="findings")
    parser.add_argument("--null-draws", type=int, default=0, metavar="B",
                        help="Monte-Carlo p-value of M before and after with B draws")
    parser.add_argument("--map", help="write the fitted map here (JSON, for mcviz apply)")
    parser.add_argument("--out", help="write the input's columns plus score_recalibrated "
                        "(.parquet or .csv)")
    parser.set_defaults(run=run)


def add_fix_arguments(parser: argparse.ArgumentParser, *, method: str | None) -> None:
    """Add the options ``mcviz fix`` and ``mcviz decide`` share."""
    parser.add_argument("--covariates", help="comma-separated covariates to search and fix by "
                        "(default: every column that is not the score, label or weight)")
    parser.add_argument("--method", choices=METHODS, default=method,
                        help="the fix (default %(default)s" + (
                            "" if method else ": findings with covariates, else platt") + ")")
    parser.add_argument("--holdout", type=float, default=0.5,
                        help="share of rows held out to judge the fix (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split and the search")
    from mcviz.settings import DecisionSettings

    _common.add_settings_arguments(parser, DecisionSettings, required_default=False)
    parser.add_argument("--costs", metavar="FP:TP",
                        help="a threshold from costs: t = c_FP / (c_FP + c_TP)")
    parser.add_argument("--scope", action="append", default=[], metavar="FILTER",
                        help="also judge this subpopulation (filter language; repeatable)")


def parse_thresholds(args: argparse.Namespace) -> list[float]:
    """Return the thresholds of ``--thresholds`` and ``--costs`` (raises ValidationError).

    Without either, :data:`mcviz.settings.DEFAULT_THRESHOLDS`; read by the one parser,
    :func:`mcviz.settings.parse_thresholds`.
    """
    from mcviz.decision import check_thresholds, threshold_from_costs
    from mcviz.settings import DEFAULT_THRESHOLDS
    from mcviz.settings import parse_thresholds as read_thresholds

    values: list[float] = []
    if args.thresholds is not None:
        values += read_thresholds(args.thresholds)
    elif not args.costs:
        values += DEFAULT_THRESHOLDS
    if args.costs:
        parts = args.costs.split(":")
        try:
            c_fp, c_tp = (float(p) for p in parts)
        except ValueError:
            raise ValidationError(f"--costs must be FP:TP (two positive numbers, e.g. 1:4), "
                                  f"not {args.costs!r}.") from None
        values.append(threshold_from_costs(c_fp, c_tp))
    return check_thresholds(values).tolist()


def write_scored(frame, scores, path: str) -> None:
    """Write ``frame`` plus ``score_recalibrated`` (Parquet or CSV by extension), atomically."""
    import pandas as pd

    if OUT_COLUMN in frame.columns:
        raise ValidationError(f"column {OUT_COLUMN!r} is already in the file; rename it first.",
                              column=OUT_COLUMN)
    out = frame.copy()
    out[OUT_COLUMN] = pd.Series(scores, index=frame.index)
    with _common.atomic_output(path) as temporary:
        if Path(path).suffix.lower() == ".parquet":
            out.to_parquet(temporary, index=False)
        else:
            from mcviz.present.report import safe_csv

            temporary.write_bytes(safe_csv(out))


def prepare(args: argparse.Namespace):
    """Load the file, check the options; return (pred, covariates, thresholds, method)."""
    covariates = _common.split(args.covariates)
    from mcviz.settings import DecisionSettings

    thresholds = parse_thresholds(args)
    args.bootstrap = _common.settings_from_arguments(DecisionSettings, args).bootstrap
    pred = _common.load_from_arguments(args, covariates=covariates)
    method = args.method or ("findings" if len(pred.covariates.columns) else "platt")
    return pred, covariates, thresholds, method


def held_out_decisions(result, thresholds, *, bootstrap: int, seed: int,
                       scopes: list[str] | None = None) -> tuple[dict, list[dict]]:
    """Decision impact on the held-out rows: the full population, then each scope."""
    from mcviz.decision import decision_impact
    from mcviz.subpopulations import filter_subpopulation

    fixed = result.eval_after.score[result.eval_position]
    full = decision_impact(result.eval_before, fixed, thresholds=thresholds,
                           n_bootstrap=bootstrap, seed=seed).at(thresholds)
    per_scope = []
    for description in scopes or []:
        sub = filter_subpopulation(result.eval_before, description)
        per_scope.append(decision_impact(result.eval_before, fixed, thresholds=thresholds,
                                         index=sub.index, scope=description,
                                         n_bootstrap=bootstrap, seed=seed).at(thresholds))
    return full, per_scope


def run(args: argparse.Namespace) -> dict:
    """Fit, judge, optionally save the map and the scored file; return the JSON object."""
    import numpy as np

    from mcviz.recalibration import verify_fix

    _common.check_output(args.out, flag="--out", suffixes=(".parquet", ".csv"))
    _common.check_output(args.map, flag="--map", suffixes=(".json",))
    if args.null_draws and args.null_draws < 19:
        raise ValidationError(f"--null-draws must be 0 or at least 19, not {args.null_draws}.")
    pred, covariates, thresholds, method = prepare(args)
    result = verify_fix(pred, method=method, covariates=covariates, holdout=args.holdout,
                        seed=args.seed, scopes=args.scope, null_draws=args.null_draws)
    decision, _ = held_out_decisions(result, thresholds, bootstrap=args.bootstrap,
                                     seed=args.seed)
    output = result.as_json()
    output["thresholds"] = thresholds
    output["before"]["net_benefit"] = decision["net_benefit"]["model"]
    output["after"]["net_benefit"] = decision["net_benefit"]["recalibrated"]
    output["decision"] = decision
    if args.map:
        with _common.atomic_output(args.map) as temporary:
            temporary.write_text(result.recalibrator.to_json(), encoding="utf-8")
        output["map_file"] = args.map
    if args.out:
        from mcviz.io import read_table

        frame = read_table(args.file)
        scores = np.full(len(frame), np.nan)
        scores[pred.row] = result.recalibrator.transform(pred)
        if pred.report.n_dropped:
            print(f"mcviz: note: {pred.report.n_dropped:,} invalid rows were dropped; their "
                  f"{OUT_COLUMN} is empty.", file=sys.stderr)
        write_scored(frame, scores, args.out)
        output["out"] = args.out
    return output

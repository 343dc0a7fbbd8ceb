"""``mcviz fix``: fit a fix on one score-stratified split, judge it on the other.

Prints ``{"method", "recommended", "reason", "verdict", "n_fit", "n_eval", "map",
"log_loss_change": {"mean", "low", "high", "direction"}, "notes", "thresholds",
"before": {"metric", "metric_z", "metric_p", "ece", "smece", "log_loss", "brier",
"findings": [{"description", "holdout_kuiper_z"}], "terms": [...], "net_benefit"},
"after": {same keys}, "finding_changes": [...], "bands_moved": [...], "decision": {...}}``
(:func:`mcviz.recalibration.fix_summary`, the Fix page's too): every number is measured on the
held-out rows, which neither the search nor the fit saw, against one family for every method.
``metric_p`` is the Monte-Carlo p-value of M with ``--null-draws`` (else null). ``net_benefit``
lists NB at ``--thresholds`` of the model (before) and of the fixed scores (after);
``decision`` adds the loss per 1,000 decisions with its bootstrap interval and a sentence per
threshold. ``--map`` saves the fitted map with its verdict (JSON, for ``mcviz apply``, which
refuses a map not recommended unless ``--force``); ``--out`` writes the input's columns plus
``score_recalibrated`` (Parquet or CSV by the extension; the fit rows are scored too, in
sample). The options' defaults and bounds are :class:`mcviz.settings.FixSettings`'.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mcviz.cli import _common
from mcviz.errors import ValidationError

__all__ = ["OUT_COLUMN", "parse_thresholds", "register", "run", "write_scored"]

HELP = "fit a recalibration on one split and judge it on held-out rows"
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
    """Add the options ``mcviz fix`` and ``mcviz decide`` share (from the registry, settings)."""
    from mcviz.recalibration import method_names
    from mcviz.settings import DecisionSettings, FixSettings

    parser.add_argument("--covariates", help="comma-separated covariates to search and fix by "
                        "(default: every column that is not the score, label or weight)")
    parser.add_argument("--method", choices=method_names(), default=method,
                        help="the fix (default %(default)s" + (
                            "" if method else ": findings with covariates, else platt") + ")")
    _common.add_settings_arguments(parser, FixSettings)
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
    from mcviz.settings import DecisionSettings, FixSettings

    covariates = _common.split(args.covariates)
    thresholds = parse_thresholds(args)
    _common.settings_from_arguments(FixSettings, args)  # bounds, before the file is read
    args.bootstrap = _common.settings_from_arguments(DecisionSettings, args).bootstrap
    if args.method == "boost":  # an optional extra: refused before the file is read
        from mcviz.lazy import require_module

        require_module("lightgbm", needed_for="--method boost",
                       install="pip install 'mcviz[boost]' (or pip install lightgbm)")
    pred = _common.load_from_arguments(args, covariates=covariates)
    method = args.method or ("findings" if len(pred.covariates.columns) else "platt")
    return pred, covariates, thresholds, method


def held_out_decisions(result, thresholds, *, bootstrap: int, seed: int,
                       scopes: list[str] | None = None) -> tuple[dict, list[dict]]:
    """Decision impact on the held-out rows: the full population, then each scope."""
    from mcviz.recalibration import held_out_decisions as decisions

    return decisions(result, thresholds, bootstrap=bootstrap, seed=seed, scopes=scopes)


def judged_fix(args: argparse.Namespace, pred, covariates, method: str):
    """Fit and judge the fix as ``mcviz fix`` and ``mcviz decide`` both do (one family, one split).

    The options come from :class:`mcviz.settings.FixSettings` (hold-out share, seed, the
    Algorithm-1 subpopulations judged), so the same file and seed give the same "before" in
    both commands.
    """
    from mcviz.recalibration import verify_fix
    from mcviz.settings import FixSettings

    settings = _common.settings_from_arguments(FixSettings, args)
    return settings, verify_fix(pred, method=method, covariates=covariates, scopes=args.scope,
                                null_draws=getattr(args, "null_draws", 0),
                                **settings.verify_options())


def run(args: argparse.Namespace) -> dict:
    """Fit, judge, optionally save the map and the scored file; return the JSON object."""
    import numpy as np

    from mcviz.recalibration import fix_summary

    _common.check_output(args.out, flag="--out", suffixes=(".parquet", ".csv"))
    _common.check_output(args.map, flag="--map", suffixes=(".json",))
    if args.null_draws and args.null_draws < 19:
        raise ValidationError(f"--null-draws must be 0 or at least 19, not {args.null_draws}.")
    pred, covariates, thresholds, method = prepare(args)
    settings, result = judged_fix(args, pred, covariates, method)
    output = fix_summary(result, thresholds, bootstrap=args.bootstrap, seed=settings.seed)
    if args.map:
        with _common.atomic_output(args.map) as temporary:
            temporary.write_text(result.recalibrator.to_json(), encoding="utf-8")
        output["map_file"] = args.map
        if not result.recommended:
            output["notes"].append(f"the map in {args.map} says it is not recommended; mcviz "
                                   "apply refuses it unless --force.")
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

"""The ``mcviz`` command line: calibration screens of prediction files, as tables or JSON.

Every subcommand takes ``--json`` and prints one JSON object; the keys are a contract that other
tools script against. Bad input exits with status 2 and the validation message on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence

from mcviz.cumulative import cumulative_differences
from mcviz.errors import ValidationError
from mcviz.io import LoadReport, Predictions, load_predictions
from mcviz.weighting import SCHEMES, reweight

__all__ = ["build_parser", "main"]

Command = Callable[[argparse.Namespace], dict]


def _split(text: str | None) -> list[str] | None:
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments that say how to read the prediction file (shared by every subcommand)."""
    parser.add_argument("file", help="CSV/TSV (optionally .gz/.zip) or Parquet prediction file")
    parser.add_argument("--score", help="score column (probability of the positive class)")
    parser.add_argument(
        "--probabilities", help="comma-separated per-class probability columns (multi-class)"
    )
    parser.add_argument("--label", help="label column")
    parser.add_argument("--positive", help="the label value of the positive class")
    parser.add_argument("--weight", help="weight column")
    parser.add_argument(
        "--weighting",
        choices=SCHEMES,
        help="multiply the weights by 1/S (proportional; 1/max(S, rho) with --rho), "
        "1/(S + rho) (proportional-shifted) or 1/prevalence for positives (low-prevalence); "
        "paper 000 Appendices A and B",
    )
    parser.add_argument("--rho", type=float, help="regularisation rho of the proportional weights")
    parser.add_argument(
        "--response",
        choices=("binary", "continuous"),
        default="binary",
        help="continuous: real-valued labels; sigma then comes from the variance estimate of "
        "paper 000 Appendix C eq. (6)",
    )
    parser.add_argument(
        "--drop-invalid", action="store_true", help="drop invalid rows (and say how many)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def load_from_arguments(args: argparse.Namespace, **options: object) -> Predictions:
    """Load the file named on the command line with the mapping given there."""
    pred = load_predictions(
        args.file,
        score=args.score,
        probabilities=_split(args.probabilities),
        label=args.label,
        positive=args.positive,
        weight=args.weight,
        drop_invalid=args.drop_invalid,
        response=args.response,
        **options,
    )
    _say_what_loading_did(pred.report)
    weighting, rho = getattr(args, "weighting", None), getattr(args, "rho", None)
    if weighting is not None:
        return reweight(pred, weighting, rho=rho)
    if rho is not None:
        raise ValidationError("--rho applies only with --weighting proportional[-shifted].")
    return pred


def _say_what_loading_did(report: LoadReport) -> None:
    # On stderr, so that --json output stays one parseable object on stdout.
    if report.dropped:
        reasons = "; ".join(f"{reason}: {count:,}" for reason, count in report.dropped)
        print(f"mcviz: dropped {report.n_dropped:,} of {report.n_read:,} rows ({reasons})",
              file=sys.stderr)
    for warning in report.warnings:
        print(f"mcviz: warning: {warning}", file=sys.stderr)
    for notice in report.notices:
        print(f"mcviz: note: {notice}", file=sys.stderr)


def _metrics(args: argparse.Namespace) -> dict:
    covariates = _split(getattr(args, "covariates", None))
    groups = _split(getattr(args, "groups", None))
    if covariates is not None and groups:  # group columns must be loaded too
        covariates = list(dict.fromkeys([*covariates, *groups]))
    pred = load_from_arguments(args, covariates=covariates)
    result = cumulative_differences(pred)
    output: dict = {
        "n": pred.n,
        "weight_total": pred.weight_total,
        "calibration": {
            "kuiper": result.kuiper,
            "ks": result.ks,
            "sigma": result.sigma,
            "kuiper_z": result.kuiper_z,
            "p_value": result.p_value,
        },
    }
    extension = _METRICS_EXTENSIONS.get("multicalibration")
    if extension is not None:
        block = extension(args, pred)
        if block is not None:
            output["multicalibration"] = block
    return output


def _configure_metrics(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    from mcviz.multical import add_cli_arguments

    add_cli_arguments(parser)  # --covariates --subpopulations --min-size --seed --repeats --groups


# Each subcommand: name -> (help, configure its parser, run it and return the JSON object).
# Other modules' subcommands are added below as `_COMMANDS[name] = ...` (one block each).
_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Command]] = {
    "metrics": ("calibration metrics of the full population", _configure_metrics, _metrics),
}
# Extra blocks of `mcviz metrics` (name -> function(args, pred) returning a dict or None).
_METRICS_EXTENSIONS: dict[str, Callable[[argparse.Namespace, Predictions], dict | None]] = {}


def _multicalibration_block(args: argparse.Namespace, pred: Predictions) -> dict | None:
    from mcviz.multical import metrics_block

    return metrics_block(args, pred)


_METRICS_EXTENSIONS["multicalibration"] = _multicalibration_block
# `mcviz screen`: multi-calibration screening beyond memory (mcviz/engines/cli.py).
_COMMANDS["screen"] = (
    "multi-calibration screening of Parquet data in memory, with DuckDB or with Spark",
    lambda parser: __import__("mcviz.engines.cli", fromlist=["_"]).configure_screen(parser),
    lambda args: __import__("mcviz.engines.cli", fromlist=["_"]).run_screen(args),
)


# `mcviz deviation`: a subpopulation against the full population (mcviz/deviation.py).
def _configure_deviation(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    parser.add_argument(
        "--subpopulation", required=True, metavar="EXPR",
        help='filter expression, e.g. \'age >= 40 and sex == "Female"\'',
    )


def _deviation(args: argparse.Namespace) -> dict:
    from mcviz.deviation import subpopulation_deviation
    from mcviz.subpopulations import parse_filter, select_rows

    pred = load_from_arguments(args)
    index = select_rows(pred, parse_filter(args.subpopulation, pred))
    if index.size == 0:
        raise ValidationError(f"--subpopulation {args.subpopulation!r} selects no rows.")
    result = subpopulation_deviation(pred, index, description=args.subpopulation)
    return {
        "n": pred.n, "n_subpopulation": result.n, "kuiper": result.kuiper, "ks": result.ks,
        "sigma": result.sigma, "kuiper_z": result.kuiper_z, "ks_z": result.ks_z,
        "p_value": result.p_value,
    }


_COMMANDS["deviation"] = (
    "cumulative deviation of a subpopulation from the full population",
    _configure_deviation,
    _deviation,
)


# `mcviz variables` and `mcviz lcs`: variable-based calibration (mcviz/variables.py) and the
# Local Calibration Score (mcviz/smoothing.py). Values are probabilities (0 to 1).
def _configure_variables(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    parser.add_argument("--span", type=float, default=0.9, help="LOESS span, 0.3 to 1")


def _variables(args: argparse.Namespace) -> dict:
    from mcviz.variables import rank_variables

    table = rank_variables(load_from_arguments(args), span=args.span)
    return {"variables": [
        {"name": str(row.name), "kind": row.kind, "vece": float(row.vece),
         "vce": float(row.vce), "vce_at": row.vce_at}
        for row in table.itertuples(index=False)
    ]}


def _lcs(args: argparse.Namespace) -> dict:
    from mcviz.smoothing import local_calibration_score

    pred = load_from_arguments(args)
    result = local_calibration_score(
        pred.score, pred.label, pred.weight if pred.weighted else None
    )
    return {"lcs": result.lcs, "k": result.k, "grid_points": int(result.grid.size)}


_COMMANDS["variables"] = (
    "rank covariates by variable-based calibration error (VECE, VCE(v*))",
    _configure_variables,
    _variables,
)
_COMMANDS["lcs"] = ("the Local Calibration Score", add_input_arguments, _lcs)


# `mcviz groupings`: one grouping, several agglomerations (mcviz/groupings.py and
# mcviz/agglomeration.py; Höltgen & Williamson). Errors are mean(score - label), eq. (6).
def _configure_groupings(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    parser.add_argument(
        "--grouping", choices=("score-bins", "covariate-bins", "knn", "kernel"),
        default="score-bins", help="the grouping (default score-bins)",
    )
    parser.add_argument("--bins", type=int, default=10, help="bins (score-bins, covariate-bins)")
    parser.add_argument(
        "--strategy", choices=("width", "count"),
        help="equal-width or equal-count bins (default: width for scores, count for covariates)",
    )
    parser.add_argument("--columns", help="one or two covariates to bin (covariate-bins)")
    parser.add_argument("--covariates", help="comma-separated covariates of the input space")
    parser.add_argument("--k", type=int, default=100, help="neighbours per group (knn)")
    parser.add_argument("--bandwidth", type=float, default=0.5, help="kernel bandwidth")
    parser.add_argument("--max-centres", type=int, help="seeded sample of centres (knn, kernel)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the centre sample")
    parser.add_argument(
        "--agglomeration", default="mean,max,cvar:0.9,range,std,superquantile:0.5",
        help="comma-separated: mean, max, cvar:ALPHA, range, std, superquantile:ALPHA",
    )
    parser.add_argument(
        "--uniform", action="store_true", help="give every group the same mass (as the ACE)"
    )


def _groupings(args: argparse.Namespace) -> dict:
    from mcviz.agglomeration import calibration_score, parse_agglomeration
    from mcviz.groupings import (
        covariate_bins,
        kernel_calibration,
        local_calibration,
        score_bins,
    )

    agglomerations = [parse_agglomeration(text) for text in _split(args.agglomeration) or []]
    if not agglomerations:
        raise ValidationError("--agglomeration names no agglomeration.")
    pred = load_from_arguments(args)
    covariates = _split(args.covariates)
    if args.grouping == "score-bins":
        groups = score_bins(pred, n_bins=args.bins, strategy=args.strategy or "width")
    elif args.grouping == "covariate-bins":
        if not args.columns:
            raise ValidationError("--grouping covariate-bins needs --columns (one or two).")
        groups = covariate_bins(
            pred, _split(args.columns), n_bins=args.bins, strategy=args.strategy or "count"
        )
    elif args.grouping == "knn":
        groups = local_calibration(
            pred, covariates, k=args.k, max_centres=args.max_centres, seed=args.seed
        ).groups
    else:
        groups = kernel_calibration(
            pred, covariates, bandwidth=args.bandwidth,
            max_centres=10_000 if args.max_centres is None else args.max_centres, seed=args.seed,
        ).groups
    scores = [calibration_score(groups, a, uniform=args.uniform) for a in agglomerations]
    worst = sorted(range(groups.n_groups), key=lambda j: -abs(groups.error[j]))[:20]
    return {
        "n": pred.n,
        "weight_total": pred.weight_total,
        "weight": pred.weight_column,
        "grouping": {
            "kind": groups.kind, "description": groups.description,
            "n_groups": groups.n_groups, "overlapping": groups.overlapping,
        },
        "scores": [
            {"agglomeration": s.agglomeration.description, "kind": s.kind, "value": s.value,
             "worst_group": s.worst_group, "worst_error": s.worst_error}
            for s in scores
        ],
        "groups": [
            {"group": groups.labels[j], "size": int(groups.size[j]),
             "error": float(groups.error[j]),
             "standard_error": float(groups.standard_error[j])}
            for j in worst
        ],
    }


_COMMANDS["groupings"] = (
    "calibration scores as a grouping and an agglomeration (Höltgen & Williamson)",
    _configure_groupings,
    _groupings,
)


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="mcviz", description="Where is a probabilistic classifier miscalibrated?"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, configure, _) in _COMMANDS.items():
        configure(commands.add_parser(name, help=help_text, description=help_text))
    return parser


def _json_safe(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item"):
        return _json_safe(value.item())
    return value


def _print_table(output: dict, indent: str = "") -> None:
    for key, value in output.items():
        if isinstance(value, dict):
            print(f"{indent}{key}:")
            _print_table(value, indent + "  ")
        elif isinstance(value, list):
            print(f"{indent}{key}:")
            for item in value:
                if isinstance(item, dict):
                    print(indent + "  - " + ", ".join(f"{k}={_format(v)}" for k, v in item.items()))
                else:
                    print(f"{indent}  - {_format(item)}")
        else:
            print(f"{indent}{key:<16} {_format(value)}")


def _format(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (2 for bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _, _, run = _COMMANDS[args.command]
    try:
        output = run(args)
    except ValidationError as error:
        print(f"mcviz: error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(_json_safe(output)))
    else:
        _print_table(output)
    return 0

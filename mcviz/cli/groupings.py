"""``mcviz groupings``: one grouping, several agglomerations (Höltgen & Williamson).

Errors are mean(score - label) per group, eq. (6); :mod:`mcviz.stats.groupings` builds the groups
and :mod:`mcviz.stats.agglomeration` the scores. Options left out take the library's defaults for
the chosen grouping.
"""

from __future__ import annotations

import argparse

from mcviz.stats.agglomeration import calibration_score, parse_agglomeration
from mcviz.cli import _common
from mcviz.errors import ValidationError
from mcviz.stats.groupings import covariate_bins, kernel_calibration, local_calibration, score_bins

__all__ = ["register", "run"]

HELP = "calibration scores as a grouping and an agglomeration (Höltgen & Williamson)"
GROUPINGS = {  # --grouping -> the library function that builds it
    "score-bins": score_bins,
    "covariate-bins": covariate_bins,
    "knn": local_calibration,
    "kernel": kernel_calibration,
}
AGGLOMERATIONS = "mean,max,cvar:0.9,range,std,superquantile:0.5"
WORST_SHOWN = 20  # groups listed, largest |error| first


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz groupings``."""
    d = _common.default
    parser = subparsers.add_parser("groupings", help=HELP, description=HELP)
    _common.add_input_arguments(parser)
    parser.add_argument("--grouping", choices=tuple(GROUPINGS), default="score-bins",
                        help="the grouping (default score-bins)")
    parser.add_argument(
        "--bins", type=int, help=f"bins (default {d(score_bins, 'n_bins')} for score-bins, "
        f"{d(covariate_bins, 'n_bins')} per covariate for covariate-bins)")
    parser.add_argument(
        "--strategy", choices=("width", "count"),
        help=f"equal-width or equal-count bins (default {d(score_bins, 'strategy')} for "
        f"scores, {d(covariate_bins, 'strategy')} for covariates)",
    )
    parser.add_argument("--columns", help="one or two covariates to bin (covariate-bins)")
    parser.add_argument("--covariates", help="comma-separated covariates of the input space")
    parser.add_argument("--k", type=int, default=d(local_calibration, "k"),
                        help=f"neighbours per group (knn; default {d(local_calibration, 'k')})")
    parser.add_argument("--bandwidth", type=float, default=d(kernel_calibration, "bandwidth"),
                        help="kernel bandwidth (default "
                        f"{d(kernel_calibration, 'bandwidth')})")
    parser.add_argument(
        "--max-centres", type=int, help="seeded sample of centres (knn: default all rows; "
        f"kernel: default {d(kernel_calibration, 'max_centres'):,})")
    parser.add_argument("--seed", type=int, default=d(local_calibration, "seed"),
                        help="seed of the centre sample")
    parser.add_argument(
        "--agglomeration", default=AGGLOMERATIONS,
        help="comma-separated: mean, max, cvar:ALPHA, range, std, superquantile:ALPHA",
    )
    parser.add_argument(
        "--uniform", action="store_true", help="give every group the same mass (as the ACE)"
    )
    parser.set_defaults(run=run)


def _given(**options: object) -> dict[str, object]:
    """Keep the options given on the command line (the rest take the library's defaults)."""
    return {name: value for name, value in options.items() if value is not None}


def _groups(args: argparse.Namespace, pred):
    covariates = _common.split(args.covariates)
    if args.grouping == "score-bins":
        return score_bins(pred, **_given(n_bins=args.bins, strategy=args.strategy))
    if args.grouping == "covariate-bins":
        if not args.columns:
            raise ValidationError("--grouping covariate-bins needs --columns (one or two).")
        return covariate_bins(pred, _common.split(args.columns),
                              **_given(n_bins=args.bins, strategy=args.strategy))
    if args.grouping == "knn":
        return local_calibration(pred, covariates, k=args.k, seed=args.seed,
                                 **_given(max_centres=args.max_centres)).groups
    return kernel_calibration(pred, covariates, bandwidth=args.bandwidth, seed=args.seed,
                              **_given(max_centres=args.max_centres)).groups


def run(args: argparse.Namespace) -> dict:
    """Return the grouping, its scores under each agglomeration and the worst groups."""
    agglomerations = [parse_agglomeration(t) for t in _common.split(args.agglomeration) or []]
    if not agglomerations:
        raise ValidationError("--agglomeration names no agglomeration.")
    pred = _common.load_from_arguments(args)
    groups = _groups(args, pred)
    scores = [calibration_score(groups, a, uniform=args.uniform) for a in agglomerations]
    worst = sorted(range(groups.n_groups), key=lambda j: -abs(groups.error[j]))[:WORST_SHOWN]
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

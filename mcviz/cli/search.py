"""``mcviz search``: the subpopulations where the model is most miscalibrated, held-out checked.

Prints ``{"n", "search": {"max_conditions", "holdout", "seed", "candidates_scored", "seconds"},
"mde": {"0.01", "0.05", "0.2"}, "findings": [{"rank", "description", "size", "share",
"kuiper_z", "holdout_kuiper_z", "p_value", "p_adjusted", "mean_residual", "ci_low",
"ci_high"}]}`` with findings in rank order. ``kuiper_z`` is D/sigma over all rows,
``holdout_kuiper_z`` over the held-out rows (where ``p_value`` and the Holm-adjusted
``p_adjusted`` come from); the effect is the held-out weighted mean of observed - predicted
with its 95% interval; ``mde`` is the mean shift a subpopulation of 1%, 5% and 20% of the rows
needs to be confirmed with 80% power.
"""

from __future__ import annotations

import argparse

from mcviz.cli import _common
from mcviz.search import SearchResult, search_subpopulations

__all__ = ["register", "result_json", "run"]

HELP = "find the subpopulations where the model is most miscalibrated (held-out confirmed)"

FINDING_KEYS = ("rank", "description", "size", "share", "kuiper_z", "holdout_kuiper_z",
                "p_value", "p_adjusted", "mean_residual", "ci_low", "ci_high")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz search``."""
    parser = subparsers.add_parser("search", help=HELP, description=HELP)
    _common.add_input_arguments(parser)
    parser.add_argument("--covariates", help="comma-separated covariates to search (default: "
                        "every column that is not the score, label or weight)")
    default = _common.default
    parser.add_argument("--max-conditions", type=int, metavar="K",
                        default=default(search_subpopulations, "max_conditions"),
                        help="conditions per finding at most (default %(default)s)")
    parser.add_argument("--findings", type=int, metavar="F",
                        default=default(search_subpopulations, "n_findings"),
                        help="findings to report (default %(default)s)")
    parser.add_argument("--min-share", type=float, metavar="S",
                        default=default(search_subpopulations, "min_share"),
                        help="smallest share of the rows a finding may hold "
                        "(default %(default)s)")
    parser.add_argument("--holdout", type=float, metavar="H",
                        default=default(search_subpopulations, "holdout"),
                        help="share of rows held out to confirm the findings "
                        "(default %(default)s)")
    parser.add_argument("--seed", type=int, default=default(search_subpopulations, "seed"),
                        help="seed of the split (default %(default)s)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> dict:
    """Load the file, search, and return the JSON object."""
    covariates = _common.split(args.covariates)
    pred = _common.load_from_arguments(args, covariates=covariates)
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
    }


def _share_key(share: float) -> str:
    return f"{share:g}"


def _plain(value: object) -> object:
    return value if isinstance(value, int | str) else float(value)

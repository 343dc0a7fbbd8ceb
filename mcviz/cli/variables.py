"""``mcviz variables``: covariates ranked by variable-based calibration error (Kelly & Smyth)."""

from __future__ import annotations

import argparse

from mcviz.cli import _common
from mcviz.stats.variables import rank_variables, variable_records

__all__ = ["register", "run"]

HELP = "rank covariates by variable-based calibration error (VECE, VCE(v*))"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz variables``."""
    parser = subparsers.add_parser("variables", help=HELP, description=HELP)
    _common.add_input_arguments(parser)
    parser.add_argument("--span", type=_span, default=_common.default(rank_variables, "span"),
                        metavar="SPAN",
                        help="LOESS span, 0.3 to 1, or 'auto' (default: chosen per variable by "
                             "cross-validation over 0.3-0.9; the paper's is 0.9)")
    parser.set_defaults(run=run)


def _span(text: str) -> float | None:
    """Read ``--span``: ``auto`` (None: cross-validated) or a number (checked by the library)."""
    if text.strip().lower() == "auto":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--span {text!r}: give a number from 0.3 to 1, or 'auto'.") from None


def run(args: argparse.Namespace) -> dict:
    """Return the ranking (values are probabilities, 0 to 1).

    Each row: ``name``, ``kind``, ``vece``, ``vce``, ``vce_at`` (v*), ``vce_support`` (weight
    within the window at v*), ``vce_ci`` ([low, high] of the signed gap at v*, valid for the
    chosen v*), ``vce_significant`` (the band excludes 0), ``kuiper_z`` and ``p_value`` (the
    cumulative residuals about their mean along the variable: no bandwidth; None for nominal
    covariates), ``p_adjusted`` (Bonferroni's over the covariates), ``span`` and
    ``span_chosen``, ``n``, ``spikes`` and ``warnings``
    (a list of sentences: thin
    support, degenerate fits, levels too small to say anything).
    """
    return {"variables": variable_records(_common.load_from_arguments(args), span=args.span)}

"""``mcviz variables``: covariates ranked by variable-based calibration error (Kelly & Smyth)."""

from __future__ import annotations

import argparse

from mcviz.cli import _common
from mcviz.variables import rank_variables

__all__ = ["register", "run"]

HELP = "rank covariates by variable-based calibration error (VECE, VCE(v*))"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz variables``."""
    parser = subparsers.add_parser("variables", help=HELP, description=HELP)
    _common.add_input_arguments(parser)
    span = _common.default(rank_variables, "span")
    parser.add_argument("--span", type=float, default=span,
                        help=f"LOESS span, 0.3 to 1 (default {span})")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> dict:
    """Return the ranking (values are probabilities, 0 to 1)."""
    table = rank_variables(_common.load_from_arguments(args), span=args.span)
    return {"variables": [
        {"name": str(row.name), "kind": row.kind, "vece": float(row.vece),
         "vce": float(row.vce), "vce_at": row.vce_at}
        for row in table.itertuples(index=False)
    ]}

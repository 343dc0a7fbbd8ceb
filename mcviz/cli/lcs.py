"""``mcviz lcs``: the Local Calibration Score (Machado, Charpentier et al., paper 004).

Binary responses only (:func:`mcviz.rules.check_lcs_response`, the rule the dashboard follows).
"""

from __future__ import annotations

import argparse

from mcviz.cli import _common
from mcviz.rules import check_lcs_response
from mcviz.stats.smoothing import local_calibration_score

__all__ = ["register", "run"]

HELP = "the Local Calibration Score (0/1 responses)"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz lcs``."""
    parser = subparsers.add_parser("lcs", help=HELP, description=HELP)
    _common.add_input_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> dict:
    """Return the LCS, its neighbourhood size k and the number of grid points."""
    check_lcs_response(args.response)  # before reading the file
    pred = _common.load_from_arguments(args)
    check_lcs_response(pred.response_kind)
    result = local_calibration_score(
        pred.score, pred.label, pred.weight if pred.weighted else None
    )
    return {"lcs": result.lcs, "k": result.k, "grid_points": int(result.grid.size)}

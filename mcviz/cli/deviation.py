"""``mcviz deviation``: the cumulative deviation of a subpopulation from the full population."""

from __future__ import annotations

import argparse

from mcviz.cli import _common
from mcviz.stats.deviation import subpopulation_deviation
from mcviz.errors import ValidationError
from mcviz.subpopulations import parse_filter, select_rows

__all__ = ["register", "run"]

HELP = "cumulative deviation of a subpopulation from the full population"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz deviation``."""
    parser = subparsers.add_parser("deviation", help=HELP, description=HELP)
    _common.add_input_arguments(parser)
    parser.add_argument(
        "--subpopulation", required=True, metavar="EXPR",
        help='filter expression, e.g. \'age >= 40 and sex == "Female"\'',
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> dict:
    """Return the deviation statistics of the subpopulation ``--subpopulation`` selects."""
    pred = _common.load_from_arguments(args)
    index = select_rows(pred, parse_filter(args.subpopulation, pred))
    if index.size == 0:
        raise ValidationError(f"--subpopulation {args.subpopulation!r} selects no rows.")
    result = subpopulation_deviation(pred, index, description=args.subpopulation)
    return {
        "n": pred.n, "n_subpopulation": result.n, "kuiper": result.kuiper, "ks": result.ks,
        "sigma": result.sigma, "kuiper_z": result.kuiper_z, "ks_z": result.ks_z,
        "p_value": result.p_value,
    }

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
from mcviz.io import Predictions, load_predictions

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
        "--drop-invalid", action="store_true", help="drop invalid rows (and say how many)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def load_from_arguments(args: argparse.Namespace, **options: object) -> Predictions:
    """Load the file named on the command line with the mapping given there."""
    return load_predictions(
        args.file,
        score=args.score,
        probabilities=_split(args.probabilities),
        label=args.label,
        positive=args.positive,
        weight=args.weight,
        drop_invalid=args.drop_invalid,
        **options,
    )


def _metrics(args: argparse.Namespace) -> dict:
    covariates = _split(getattr(args, "covariates", None))
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


# Each subcommand: name -> (help, configure its parser, run it and return the JSON object).
# Other modules' subcommands are added below as `_COMMANDS[name] = ...` (one block each).
_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Command]] = {
    "metrics": ("calibration metrics of the full population", _configure_metrics, _metrics),
}
# Extra blocks of `mcviz metrics` (name -> function(args, pred) returning a dict or None).
_METRICS_EXTENSIONS: dict[str, Callable[[argparse.Namespace, Predictions], dict | None]] = {}


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

"""The ``mcviz`` command line: calibration screens of prediction files, as tables or JSON.

Every subcommand takes ``--json`` and prints one JSON object; the keys are a contract that other
tools script against.

Exit statuses
-------------
0 success; 2 bad input (the validation message on stderr, one line); 130 after Ctrl-C (SIGINT)
and 143 after SIGTERM (one line on stderr, no traceback; engines' queries are cancelled and
their spill directories removed); 141 when the reader of stdout closed the pipe (``| head``).

Adding a subcommand
-------------------
Each subcommand is a module ``mcviz/cli/<name>.py`` listed in :data:`SUBCOMMANDS` with:

``register(subparsers) -> None``
    Add the parser (``subparsers.add_parser(name, help=..., description=...)``), its arguments
    (``_common.add_input_arguments`` for a prediction file and ``--json``; defaults read from
    the library with ``_common.default(function, "parameter")``) and ``set_defaults(run=run)``.
``run(args) -> dict``
    Do the work and RETURN the JSON-able result (a dict; never an exit code, never printed by
    the subcommand): :func:`main` prints it as JSON with ``--json``, else as a table. Bad input
    raises :class:`~mcviz.errors.ValidationError`. Outputs are written through
    ``_common.atomic_output(path)``; blocking native work through ``_common.interruptible``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence

from mcviz.cli import _common
from mcviz.errors import ValidationError

__all__ = ["SUBCOMMANDS", "build_parser", "main"]

#: Subcommand modules of :mod:`mcviz.cli`, in the order ``mcviz --help`` lists them.
SUBCOMMANDS: tuple[str, ...] = (
    "metrics", "search", "screen", "deviation", "variables", "lcs", "groupings", "decide", "fix",
    "apply", "monitor", "report",
)


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser with every subcommand of :data:`SUBCOMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="mcviz", description="Where is a probabilistic classifier miscalibrated?"
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        importlib.import_module(f"mcviz.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (see the module docstring)."""
    status = _main(argv)
    signalled = status in (_common.EXIT_SIGINT, _common.EXIT_SIGTERM)
    if signalled or _common.work_abandoned():
        # A cancelled query may still run, and native thread pools (pyarrow, DuckDB) torn down
        # mid-task by the interpreter's exit can abort the process ("terminate called without
        # an active exception", status -6): leave at once with the status already decided.
        # Clean-up has run (every resource is released in try/finally blocks inside _main).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


def _main(argv: Sequence[str] | None) -> int:
    with _common.signals_as_exceptions():
        try:
            args = build_parser().parse_args(argv)
            output = args.run(args)
            if args.json:
                print(json.dumps(_common.json_safe(output)))
            else:
                _common.print_table(output)
            sys.stdout.flush()  # a closed pipe shows here, inside the try
        except ValidationError as error:
            print(f"mcviz: error: {error}", file=sys.stderr)
            return _common.EXIT_BAD_INPUT
        except KeyboardInterrupt:
            print("mcviz: interrupted", file=sys.stderr)
            return _common.EXIT_SIGINT
        except _common.Terminated:
            print("mcviz: terminated", file=sys.stderr)
            return _common.EXIT_SIGTERM
        except BrokenPipeError:
            # Python's documented recipe: point stdout at devnull so that the interpreter's
            # final flush does not raise again at exit.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
            return _common.EXIT_SIGPIPE
    return 0

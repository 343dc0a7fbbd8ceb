"""Run many ``mcviz`` command lines in ONE process, as the input catalogue's CLI check needs.

``python tests/io/cli_cases.py CASES.json`` reads a list of ``{"kind", "argv", "env"}`` and prints
one JSON object ``{kind: {"returncode", "stdout", "stderr"}}``. Each case runs through the command
line's entry point :func:`mcviz.cli.main` with its arguments and its environment variables set
(then restored), its stdout and stderr captured; ``SystemExit`` (argparse) gives the status, and
any other exception is written to the case's stderr as a traceback with status 1, as a real
process would show it. Each ``python -m mcviz`` process costs ~1.2 s of CPU just to start
(importing pandas); the catalogue's ~75 cases in one process pay that once. A few cases still
run as real processes (tests/io/test_input_catalogue.py): the command's own exit path.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """Set the variables ``env`` for a block; restore the previous values after."""
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_case(argv: list[str], env: dict[str, str]) -> dict[str, object]:
    """Run one command line with ``env`` set; return its status, stdout and stderr."""
    from mcviz.cli import main

    out, err = io.StringIO(), io.StringIO()
    with environment(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as done:  # argparse: the status, or a message (status 1)
            status = done.code if isinstance(done.code, int) else int(done.code is not None)
            if done.code is not None and not isinstance(done.code, int):
                print(done.code, file=sys.stderr)
        except BaseException:  # shown as a real process would show it
            traceback.print_exc()
            status = 1
    return {"returncode": status, "stdout": out.getvalue(), "stderr": err.getvalue()}


if __name__ == "__main__":
    cases = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    results = {case["kind"]: run_case(case["argv"], case["env"]) for case in cases}
    sys.stdout.write(json.dumps(results))

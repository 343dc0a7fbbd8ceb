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

``HELP = "..."``
    One line (a plain string literal): ``mcviz --help`` lists it without importing the module,
    so the command line starts at once; only the subcommand that runs is imported.

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
import ast
import importlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from mcviz.cli import _common
from mcviz.errors import ValidationError
from mcviz.text import display_text

__all__ = ["SUBCOMMANDS", "build_parser", "flags_named", "main", "parse_arguments"]

#: Subcommand modules of :mod:`mcviz.cli`, in the order ``mcviz --help`` lists them.
SUBCOMMANDS: tuple[str, ...] = (
    "metrics", "search", "screen", "deviation", "variables", "lcs", "groupings", "decide", "fix",
    "apply", "monitor", "compare", "report",
)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """Build the argument parser; with ``argv``, import only the subcommand it names.

    Without ``argv`` every subcommand of :data:`SUBCOMMANDS` is imported and registered. With
    ``argv`` only the subcommand named by its first positional argument is; the others are
    listed by their ``HELP`` line, read from their source without importing them (so
    ``mcviz --help`` loads neither numpy nor pandas nor any statistic).
    """
    parser = argparse.ArgumentParser(
        prog="mcviz", description="Where is a probabilistic classifier miscalibrated?"
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    chosen = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    for name in SUBCOMMANDS:
        if chosen is None or name == chosen:
            importlib.import_module(f"mcviz.cli.{name}").register(subparsers)
        else:
            subparsers.add_parser(name, help=subcommand_help(name))
    parser.set_defaults(subcommands=subparsers.choices)
    return parser


def parse_arguments(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse ``argv``; an unknown option is reported with the subcommand's own usage.

    argparse hands a subcommand's unknown options back to the top-level parser, which would
    print ``mcviz``'s usage; here the subcommand's parser says it (exit status 2).
    """
    args, extra = parser.parse_known_args(argv)
    if extra:
        args.subcommands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def flags_named(message: str, parser: argparse.ArgumentParser) -> str:
    """Return ``message`` with the library's parameter names replaced by the command's flags.

    The library says ``n_draws must be ...`` or ``(time=...)``; the command line's user typed
    ``--draws`` and ``--time``. A parameter is matched to an option by its destination, with
    or without the library's ``n_`` prefix, or by the setting behind the option.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> _ = p.add_argument("--draws", type=int)
    >>> _ = p.add_argument("--time")
    >>> flags_named("n_draws must be an integer; name one (time=...)", p)
    'the --draws value must be an integer; name one (--time ...)'
    """
    import re

    from mcviz.settings import Settings

    names: dict[str, str] = {}
    for action in parser._actions:  # argparse has no public list of a parser's options
        flag = next((o for o in action.option_strings if o.startswith("--")), None)
        if flag is not None and action.dest not in ("help", "json"):
            names.setdefault(action.dest, flag)
            names.setdefault(f"n_{action.dest}", flag)
    flags = set(names.values())
    for kind in _subclasses(Settings):
        for spec in kind.settings():
            if spec.flag in flags:
                names.setdefault(spec.name, spec.flag)
    for name in sorted(names, key=len, reverse=True):
        message = re.sub(rf"(?<![\w-]){re.escape(name)} must be",
                         f"the {names[name]} value must be", message)
        message = re.sub(rf"(?<=\(){re.escape(name)}=", f"{names[name]} ", message)
    return message


def _subclasses(kind: type) -> list[type]:
    found = []
    for sub in kind.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def subcommand_help(name: str) -> str:
    """Return the ``HELP`` line of subcommand ``name`` from its source, without importing it.

    Falls back to the first line of the module docstring.

    Examples
    --------
    >>> subcommand_help("metrics")
    'calibration metrics of the full population'
    """
    tree = ast.parse(Path(__file__).with_name(f"{name}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", None) == "HELP"
                and isinstance(node.value, ast.Constant)):
            return str(node.value.value)
    return (ast.get_docstring(tree) or name).splitlines()[0]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (see the module docstring)."""
    if argv is None:  # the command itself (console script, python -m), not a Python caller
        _system_allocator_for_arrow()
        _small_pages_for_numpy()
        _one_blas_thread()
        _keep_freed_memory()
    status = _main(argv)
    signalled = status in (_common.EXIT_SIGINT, _common.EXIT_SIGTERM)
    refused = argv is None and status == _common.EXIT_BAD_INPUT
    if signalled or refused or _common.work_abandoned():
        # A cancelled query may still run, and native thread pools (pyarrow, DuckDB) torn down
        # mid-task by the interpreter's exit can abort the process ("terminate called without
        # an active exception", status -6; seen twice in ~10 full test runs on a refused CSV,
        # after the message was printed): leave at once with the status already decided.
        # Clean-up has run (every resource is released in try/finally blocks inside _main).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    if argv is None and status == 0 and sys.argv[1:2] == ["metrics"]:
        _finish_metrics_at_once()
    return status


def _finish_metrics_at_once() -> None:
    """End the ``mcviz metrics`` command's process without the interpreter's teardown.

    After a successful run everything is done: the output is printed and flushed, a
    ``--table`` file is written and closed (atomically, inside the run), no temporary file or
    directory is left to finalise. What remains is freeing the objects one by one (the members
    of 10^3 subpopulations, the columns) and tearing down the imported modules and Arrow's
    threads: ~30 ms CPU at 10^6 rows with ``--subpopulations 1000`` (5 alternating runs, 1.63
    -> 1.59 s), which the kernel does at once when the process exits. Only the command itself
    (``main()`` with no argv) and only ``metrics``; Python callers of ``main(argv)`` return.
    """
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe or stream: let the interpreter report it
        return
    os._exit(0)


def _system_allocator_for_arrow() -> None:
    """Let Arrow allocate through malloc in the command's own process.

    Arrow reads ``ARROW_DEFAULT_MEMORY_POOL`` once, when pyarrow is first imported; the
    command's process has not imported it yet, and a pool the user chose is kept. With malloc,
    the pages of the Parquet batches Arrow decodes and frees are reused by the numpy arrays built
    next, instead of the kernel faulting in fresh ones: ``mcviz metrics FILE --json`` at 10^6 rows
    x 12 columns, 6 alternating runs on a loaded machine, median system CPU 0.53 -> 0.19 s, user
    time unchanged (``benchmarks/bench_cli.py``). The library and the dashboard keep Arrow's
    default pool (its ``release_unused`` hands memory back when a session ends).
    """
    if "pyarrow" not in sys.modules:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


def _small_pages_for_numpy() -> None:
    """Let numpy's large arrays take ordinary pages in the command's own process.

    numpy asks the kernel for transparent huge pages (``madvise``) on every array of 4 MiB or
    more, unless ``NUMPY_MADVISE_HUGEPAGE=0`` when it is imported; each first touch of such an
    array then zeroes (and may compact memory for) a 2 MiB page. The command's short-lived
    temporaries pay that in system time: ``mcviz metrics FILE --json`` at 10^6 rows, two sets
    of 8 alternating runs at load ~8, median system CPU 0.33 -> 0.20 s and 0.24 -> 0.19 s
    (total 1.06 -> 0.95 s and 0.99 -> 0.96 s), user time unchanged. Only before numpy is
    imported, and a value the user set is kept; the library and the dashboard keep numpy's
    default.
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")


def _one_blas_thread() -> None:
    """Let OpenBLAS (numpy's dot products) run on the calling thread in the command's process.

    The command's BLAS work is dot products of 10^6-row vectors (the classical measures'
    Newton steps), bound by memory: a second OpenBLAS thread adds CPU time it spends waiting,
    and no speed. ``mcviz metrics FILE --json`` at 10^6 rows, 5 alternating runs at load ~6:
    median CPU 0.95 -> 0.84 s (wall 1.51 -> 1.33 s); with ``--covariates x0..x9
    --subpopulations 1000`` 2.35 -> 2.23 s (wall 4.76 -> 4.41 s); the same output. One thread
    also makes those sums independent of the machine's core count. OpenBLAS reads
    ``OPENBLAS_NUM_THREADS`` when numpy is first imported: only before that, and a value the
    user set is kept; the library and the dashboard keep the default.
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


#: glibc's mallopt parameters (malloc.h) and the values the command sets: freed memory up to
#: 256 MiB stays with the process, blocks below 32 MiB come from the heap, one heap (arena)
#: for every thread.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
_TRIM_BYTES, _MMAP_BYTES, _ARENAS = 256 << 20, 32 << 20, 1


def _keep_freed_memory() -> bool:
    """Let glibc keep up to 256 MiB of freed heap memory in the command's own process.

    The command's temporaries are arrays of 10^6 values (8 MB): glibc hands a freed one back to
    the kernel when the free memory at the top of its heap passes twice its (dynamic) mmap
    threshold, and the next array of that size is then faulted in afresh, page by page (system
    time). With the trim threshold at 256 MiB and the mmap threshold fixed at 32 MiB (glibc's
    largest dynamic value) the pages are reused: ``mcviz metrics FILE --covariates x0..x9
    --subpopulations 1000 --json`` at 10^6 rows, page faults 190k -> 153k, peak resident
    memory unchanged (502 MB), median CPU 2.20 -> 2.09 s (5 alternating runs, load ~4).
    Blocks of 32 MiB and more are still mapped and unmapped directly, and at most 256 MiB of
    freed heap is kept. Every thread allocates from that one heap (``M_ARENA_MAX`` 1): Arrow
    decodes Parquet pages on its pool's threads, and in arenas of their own those threads
    faulted in fresh pages for every column read while the main heap held freed ones (the
    same command: page faults 153k -> 114k, median system CPU 0.30 -> 0.22 s, 5 alternating
    runs). The library and the dashboard keep glibc's defaults. Returns whether glibc took
    the three values (silently False where the C library has no ``mallopt``).
    """
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return (mallopt(_M_MMAP_THRESHOLD, _MMAP_BYTES) == 1
            and mallopt(_M_TRIM_THRESHOLD, _TRIM_BYTES) == 1
            and mallopt(_M_ARENA_MAX, _ARENAS) == 1)


def _engine_failure(error: BaseException) -> str | None:
    """One line for a Spark job that failed (an executor's error, a lost cluster), else None.

    Spark reports an executor's Python error as the worker's whole traceback; its last line
    names the cause (``ModuleNotFoundError: No module named 'mcviz'``: the workers' Python
    lacks mcviz).
    """
    module = type(error).__module__ or ""
    if isinstance(error, ConnectionError) and _from_py4j(error):
        return ("Spark's JVM stopped during the run (it may have run out of memory: give a "
                "larger --memory-limit; see the Spark logs for the rest).")
    if not module.startswith(("pyspark", "py4j")):
        return None
    text = str(error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    causes = [line for line in lines if "Error" in line.split(":")[0]]
    lost = [line.rsplit("): ", 1)[-1] for line in lines if "most recent failure" in line]
    cause = (causes[-1] if causes else lost[-1] if lost else lines[0] if lines
             else type(error).__name__)[:300]
    if any(word in text for word in ("ModuleNotFoundError", "ImportError")):
        hint = "an executor's Python needs mcviz and its dependencies"
    elif any(word in text for word in _OUT_OF_MEMORY):
        hint = ("Spark ran short of memory: give a larger --memory-limit (or Spark's executors "
                "more memory)")
    else:
        hint = "the cause is Spark's"
    return f"the Spark job failed: {cause} ({hint}; see the Spark logs for the rest)."


def _from_py4j(error: BaseException) -> bool:
    """Whether ``error`` was raised inside py4j (the bridge to Spark's JVM): a refused
    connection there means the JVM is gone (``mcviz compare --engine spark --memory-limit
    2GB`` of 10^7 rows once ended so, with a traceback, on a heap at its 512 MiB floor)."""
    trace = error.__traceback__
    while trace is not None:
        if "py4j" in trace.tb_frame.f_code.co_filename:
            return True
        trace = trace.tb_next
    return False


_OUT_OF_MEMORY = ("OutOfMemoryError", "SparkOutOfMemoryError", "TaskResultLost",
                  "Java heap space", "GC overhead limit exceeded")
"""Words of a Spark failure that memory caused (a task's result evicted from the block manager
before the driver fetched it, ``TaskResultLost``, was seen with ``mcviz compare --engine spark
--memory-limit 2GB`` of 3*10^6 rows, its sample sized from the machine's budget)."""


def _main(argv: Sequence[str] | None) -> int:
    args = None
    with _common.signals_as_exceptions():
        try:
            argv = sys.argv[1:] if argv is None else list(argv)
            args = parse_arguments(build_parser(argv), argv)
            output = args.run(args)
            if args.json:
                print(json.dumps(_common.json_safe(output)))
            else:  # a subcommand's own text (set_defaults(text=...)), else the table
                getattr(args, "text", _common.print_table)(output)
            sys.stdout.flush()  # a closed pipe shows here, inside the try
        except ValidationError as error:
            text = str(error)
            if args is not None:
                text = flags_named(text, args.subcommands[args.command])
            print(f"mcviz: error: {display_text(text)}", file=sys.stderr)
            return _common.EXIT_BAD_INPUT
        except MemoryError:
            print("mcviz: error: out of memory: the input or the computation is larger than "
                  "this machine holds; lower MCVIZ_MEMORY_BUDGET so that it is refused before "
                  "it starts, analyse a sample of rows, or screen the file out of core with "
                  "`mcviz screen --engine duckdb`.", file=sys.stderr)
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
        except Exception as error:  # noqa: BLE001 - only an engine's failure is said here
            reason = _engine_failure(error)
            if reason is None:
                raise
            print(f"mcviz: error: {display_text(reason)}", file=sys.stderr)
            return 1
    return 0

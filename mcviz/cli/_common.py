"""What every subcommand shares: input arguments, loading, output, signals and atomic writes.

Nothing here computes a statistic; the subcommand modules call the library.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import math
import os
import signal
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from mcviz.errors import ValidationError
from mcviz.text import display_text

if TYPE_CHECKING:  # the library loads when a subcommand runs, not for `mcviz --help`
    from mcviz.io import LoadReport, Predictions
    from mcviz.settings import Settings

__all__ = [
    "Terminated",
    "add_input_arguments",
    "add_json_argument",
    "add_settings_arguments",
    "apply_weighting",
    "atomic_output",
    "check_decks",
    "check_output",
    "default",
    "interruptible",
    "json_safe",
    "load_file",
    "load_from_arguments",
    "print_table",
    "settings_from_arguments",
    "split",
    "text_table",
    "user_umask",
    "work_abandoned",
    "write_decks",
]

T = TypeVar("T")

# Exit statuses: 2 for bad input (argparse's own), 128 + signal number for a signal.
EXIT_BAD_INPUT = 2
EXIT_SIGINT = 128 + signal.SIGINT  # 130
EXIT_SIGTERM = 128 + signal.SIGTERM  # 143
EXIT_SIGPIPE = 128 + 13  # 141, a closed output pipe (SIGPIPE is 13 on every POSIX system)


class Terminated(BaseException):
    """SIGTERM arrived (a BaseException like KeyboardInterrupt: ``except Exception`` passes it)."""


def default(function: Callable[..., Any], parameter: str) -> Any:
    """Return the default value of ``parameter`` in ``function``'s signature.

    Subcommands take their defaults from the library this way instead of repeating literals.

    Examples
    --------
    >>> def f(x, *, span=0.9): ...
    >>> default(f, "span")
    0.9
    """
    value = inspect.signature(function).parameters[parameter].default
    if value is inspect.Parameter.empty:
        raise TypeError(f"{function.__name__}() has no default for {parameter!r}")
    return value


def split(text: str | None) -> list[str] | None:
    """Split a comma-separated option into names (None when the option was not given).

    Examples
    --------
    >>> split(" a, b ,,c")
    ['a', 'b', 'c']
    >>> split(None) is None
    True
    """
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--json`` (print one JSON object instead of a table)."""
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def add_search_arguments(parser: Any) -> None:
    """Add the search's flags: ``--covariates`` and the search settings' (mcviz.settings)."""
    from mcviz.settings import SearchSettings

    parser.add_argument("--covariates", help="comma-separated covariates to search (default: "
                        "every column that is not the score, label or weight)")
    add_settings_arguments(parser, SearchSettings)  # defaults, bounds: mcviz.settings


def add_settings_arguments(parser: Any, settings: type[Settings], *,
                           required_default: bool = True) -> None:
    """Add one option per setting of a :mod:`mcviz.settings` class (flag, type, bounds).

    With ``required_default=False`` an absent option stays None (the subcommand can tell
    whether it was asked for); :func:`settings_from_arguments` then takes the default. The
    help states the default and the bounds; values are checked when the settings are built,
    with the bounds in the message (exit status 2).
    """
    for spec in settings.settings():
        bounds = (f"each in ({spec.low:g}, {spec.high:g})" if spec.kind is str
                  else f"{spec.low:,}..{spec.high:,}")
        parser.add_argument(
            spec.flag, type=spec.kind, default=spec.default if required_default else None,
            metavar=spec.metavar,
            help=f"{spec.help} (default {spec.text(spec.default)}; {bounds})".replace("%", "%%"))


def settings_from_arguments(settings: type[Settings], args: argparse.Namespace) -> Settings:
    """Build the settings from parsed options (an option left None takes its default).

    Each option is read under argparse's name for its flag (``--min-size`` -> ``min_size``).
    """
    values = {}
    for spec in settings.settings():
        value = getattr(args, spec.flag.lstrip("-").replace("-", "_"), None)
        values[spec.name] = spec.default if value is None else value
    return settings(**values)


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments that say how to read the prediction file, and ``--json``."""
    from mcviz.io import Predictions  # its loaders' default response, without pandas
    from mcviz.stats.weighting import SCHEMES

    parser.add_argument("file", help="CSV/TSV (optionally .gz/.zip) or Parquet prediction file")
    parser.add_argument("--score", help="score column (probability of the positive class)")
    parser.add_argument(
        "--probabilities", help="comma-separated per-class probability columns (multi-class)"
    )
    parser.add_argument("--label", help="label column")
    parser.add_argument("--positive", help="the label value of the positive class")
    parser.add_argument("--weight", help="weight column (default: a column named weight or w; "
                        "--weight '' is the same as --no-weight)")
    parser.add_argument("--no-weight", dest="weight", action="store_const", const="",
                        help="unweighted, even when a column is named weight (it is then "
                        "neither the weight nor a covariate)")
    parser.add_argument(
        "--weighting",
        choices=SCHEMES,
        help="multiply the weights by 1/S (proportional; 1/max(S, rho) with --rho), "
        "1/(S + rho) (proportional-shifted) or 1/prevalence for positives (low-prevalence); "
        "paper 000 Appendices A and B",
    )
    parser.add_argument("--rho", type=float, help="regularisation rho of the proportional weights")
    parser.add_argument(
        "--response",
        choices=("binary", "continuous"),
        default=default(Predictions.from_arrays, "response"),
        help="continuous: real-valued labels; sigma then comes from the variance estimate of "
        "paper 000 Appendix C eq. (6)",
    )
    parser.add_argument(
        "--drop-invalid", action="store_true", help="drop invalid rows (and say how many)"
    )
    add_kind_arguments(parser)
    add_json_argument(parser)


def add_kind_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--nominal``: covariates read as levels (integer codes, zip codes, ids forced in)."""
    parser.add_argument(
        "--nominal", metavar="COL[,COL]",
        help="comma-separated covariates to read as levels (a set of values) even when they "
        "hold numbers, such as integer codes; default: text columns are nominal, numbers and "
        "dates ordinal")


def kind_options(args: argparse.Namespace) -> dict:
    """Return the loader's ``nominal=`` from ``--nominal`` (nothing when the command has none)."""
    nominal = split(getattr(args, "nominal", None))
    return {"nominal": nominal} if nominal else {}


def load_from_arguments(args: argparse.Namespace, **options: object) -> Predictions:
    """Load the file named on the command line with the mapping and weighting given there."""
    return apply_weighting(args, load_file(args, **options))


def load_parquet_first(args: argparse.Namespace, *, covariates: Sequence[str] | None,
                       hold_covariates: bool = False, weighted: bool = True) -> Predictions:
    """:func:`load_from_arguments`, a Parquet file through Arrow without pandas when it can.

    :func:`mcviz.io.arrow_path.parquet_predictions` answers for a Parquet file with the score
    and label named and clean values (the same :class:`Predictions`; its covariates become
    arrays when first used: :meth:`~mcviz.io.Predictions.covariate_columns`, read with the
    roles when ``hold_covariates``); anything else, and every message about bad input, is the
    loader's. ``weighted=False``: before ``--weighting`` (:func:`load_file`).
    """
    pred = None
    if (args.probabilities is None and args.positive is None and args.score and args.label
            and not kind_options(args)):  # declared kinds: the loader's
        from mcviz.io.arrow_path import parquet_predictions

        pred = parquet_predictions(args.file, score=args.score, label=args.label,
                                   weight=args.weight, response=args.response,
                                   covariates=covariates, hold_covariates=hold_covariates)
        if pred is not None:
            say_what_loading_did(pred.report)
    if pred is None:
        pred = load_file(args, covariates=covariates)
    return apply_weighting(args, pred) if weighted else pred


def load_file(args: argparse.Namespace, *, source: object = None,
              **options: object) -> Predictions:
    """Load the file with the mapping given on the command line, before any ``--weighting``.

    ``source``: the rows already read (a DataFrame) in place of ``args.file``.
    """
    from mcviz.io import load_predictions

    pred = load_predictions(
        args.file if source is None else source,
        score=args.score,
        probabilities=split(args.probabilities),
        label=args.label,
        positive=args.positive,
        weight=args.weight,
        drop_invalid=args.drop_invalid,
        response=args.response,
        **kind_options(args),
        **options,
    )
    say_what_loading_did(pred.report)
    return pred


def apply_weighting(args: argparse.Namespace, pred: Predictions) -> Predictions:
    """Apply ``--weighting``/``--rho`` (paper 000 Appendices A and B) to loaded predictions."""
    weighting, rho = getattr(args, "weighting", None), getattr(args, "rho", None)
    if weighting is not None:
        from mcviz.stats.weighting import reweight

        return reweight(pred, weighting, rho=rho)
    if rho is not None:
        raise ValidationError("--rho applies only with --weighting proportional[-shifted].")
    return pred


def say_what_loading_did(report: LoadReport) -> None:
    """Print the loader's counts, warnings and notes on stderr (stdout keeps the result)."""
    if report.dropped:
        reasons = "; ".join(f"{reason}: {count:,}" for reason, count in report.dropped)
        print(f"mcviz: dropped {report.n_dropped:,} of {report.n_read:,} rows ({reasons})",
              file=sys.stderr)
    for warning in report.warnings:
        print(f"mcviz: warning: {display_text(warning)}", file=sys.stderr)
    for notice in report.notices:
        print(f"mcviz: note: {display_text(notice)}", file=sys.stderr)


# ------------------------------------------------------------------------------------------
# Output


def json_safe(value: object) -> object:
    """Return ``value`` with NaN as None, infinities as "inf"/"-inf" and numpy scalars as Python.

    Examples
    --------
    >>> json_safe({"a": float("nan"), "b": [float("-inf"), 1.5]})
    {'a': None, 'b': ['-inf', 1.5]}
    """
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if hasattr(value, "item"):
        return json_safe(value.item())
    return value


def print_table(output: dict, indent: str = "") -> None:
    """Print a result as an indented table (nested blocks indented, lists as bullets)."""
    for key, value in output.items():
        if isinstance(value, dict):
            print(f"{indent}{display_text(key)}:")
            print_table(value, indent + "  ")
        elif isinstance(value, list):
            print(f"{indent}{display_text(key)}:")
            for item in value:
                if isinstance(item, dict):
                    print(indent + "  - " + ", ".join(f"{display_text(k)}={_format(v)}"
                                                      for k, v in item.items()))
                else:
                    print(f"{indent}  - {_format(item)}")
        else:
            print(f"{indent}{display_text(key):<16} {_format(value)}")


def text_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Return a compact table: one line per row, columns padded, numbers right-aligned.

    Cells are shown as :func:`_format` shows values (user text made safe by
    :func:`~mcviz.text.display_text`); None is "-".

    Examples
    --------
    >>> print(text_table(["series", "shift"], [["a", 0.25], ["bb", -1.5]]))
    series  shift
    a        0.25
    bb       -1.5
    """
    cells = [[display_text(h) for h in header]]
    cells += [["-" if v is None else _format(v) for v in row] for row in rows]
    numeric = [all(isinstance(row[k], int | float) or row[k] is None for row in rows)
               for k in range(len(header))]
    widths = [max(len(line[k]) for line in cells) for k in range(len(header))]
    return "\n".join("  ".join(cell.rjust(w) if right else cell.ljust(w)
                               for cell, w, right in zip(line, widths, numeric, strict=True))
                     .rstrip() for line in cells)


def _format(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return display_text(value)


def user_umask() -> int:
    """Return the process's umask (read from ``/proc/self/status``, else set and restored).

    Examples
    --------
    >>> 0 <= user_umask() <= 0o777
    True
    """
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no other way to read it: set it and put it back at once
    os.umask(mask)
    return mask


def check_output(path: str | Path | None, *, flag: str,
                 suffixes: tuple[str, ...] | None = None) -> None:
    """Refuse an output path that cannot be written, before any work is done.

    Checked: the extension (one of ``suffixes``), an existing directory or special file (FIFO,
    device, socket) at ``path``, a missing parent directory, and a directory where no file can
    be created (probed by creating and removing an empty temporary file there: this also
    refuses read-only mounts and ``/proc``). The message names ``flag`` and the path.

    Raises
    ------
    ValidationError
        With what is wrong and what to give instead.
    """
    if path is None:
        return
    target = Path(path)
    where = f"{flag} {str(path)!r}"
    if suffixes and target.suffix.lower() not in suffixes:
        raise ValidationError(f"{where}: the file name must end in {' or '.join(suffixes)}.")
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise ValidationError(f"{where}: cannot be checked ({error.strerror}).") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise ValidationError(f"{where} is a directory: name a file (e.g. "
                              f"{str(target / ('out' + (suffixes or ('',))[0]))!r}).")
    if mode is not None and not stat.S_ISREG(mode):
        raise ValidationError(f"{where} is not a regular file (a FIFO, device or socket): "
                              "name a regular file.")
    directory = target.parent
    if not directory.is_dir():
        raise ValidationError(f"{where}: directory {str(directory)!r} does not exist.")
    try:
        descriptor, name = tempfile.mkstemp(prefix=".mcviz-probe.", dir=directory)
        os.close(descriptor)
        Path(name).unlink()
    except OSError as error:
        raise ValidationError(f"{where}: no file can be written in {str(directory)!r} "
                              f"({error.strerror}).") from None
    if mode is not None and not os.access(target, os.W_OK):
        raise ValidationError(f"{where}: the existing file is not writable.")


@contextlib.contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path in ``path``'s directory; rename it over ``path`` on success.

    A failure, Ctrl-C or SIGTERM during the write removes the temporary file and leaves any
    previous ``path`` untouched (``os.replace`` is atomic within one file system). The file
    gets the mode an ordinary ``open`` would give it: 0666 less the umask (``mkstemp``
    creates 0600), so 0644 under umask 022. A write that fails (a full disk, a path that
    became a directory) is a :class:`ValidationError` naming the path.

    Raises
    ------
    ValidationError
        When the destination directory does not exist, or the file cannot be written.
    """
    path = Path(path)
    directory = path.parent
    if not directory.is_dir():
        raise ValidationError(f"directory {str(directory)!r} does not exist.")
    try:
        descriptor, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                            dir=directory)
        os.fchmod(descriptor, 0o666 & ~user_umask())
        os.close(descriptor)
    except OSError as error:
        raise ValidationError(f"{str(path)!r}: cannot be written ({error.strerror}).") from None
    temporary = Path(name)
    try:
        try:
            yield temporary
            temporary.replace(path)
        except OSError as error:  # ENOSPC, EISDIR, EROFS...: after the work, still one line
            raise ValidationError(f"{str(path)!r}: cannot be written ({error.strerror}).") from None
    finally:
        temporary.unlink(missing_ok=True)


# ------------------------------------------------------------------------------------------
# Signals


def check_decks(paths: Sequence[str]) -> None:
    """Refuse ``--deck`` outputs before any work is done.

    Checked: their names and folders, python-pptx, and a PDF-only request where no PDF can be
    made (LibreOffice or kaleido).
    """
    for path in paths:
        check_output(path, flag="--deck", suffixes=(".pptx", ".pdf"))
    if not paths:
        return
    from mcviz.lazy import require_module
    from mcviz.present.deck import pdf_unavailable

    require_module("pptx", needed_for="--deck", install="pip install 'mcviz[export]' (or "
                   "pip install python-pptx)")
    missing = pdf_unavailable() if all(p.lower().endswith(".pdf") for p in paths) else None
    if missing:
        raise ValidationError(f"--deck: {missing} Write the .pptx instead.")


def write_decks(paths: Sequence[str], slides: Sequence[Any]) -> list[str]:
    """Write the slides to every ``--deck`` path (atomically); return the paths written.

    A PDF that cannot be made here (no LibreOffice, no kaleido, or their failure) is said in
    one line on stderr and left out; when nothing could be written the command fails (exit 2).
    """
    from mcviz.present.deck import write_deck
    from mcviz.present.report import ExportUnavailableError

    written, refused = [], []
    for path in paths:
        try:
            with atomic_output(path) as temporary:
                write_deck(slides, temporary, kind=Path(path).suffix.lower()[1:])
        except ExportUnavailableError as error:
            refused.append(f"--deck {path}: not written: {error}")
            continue
        written.append(str(Path(path)))
    if not written:
        raise ValidationError(" ".join(refused))
    for line in refused:
        print(f"mcviz: note: {display_text(line)}", file=sys.stderr)
    return written


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


@contextlib.contextmanager
def signals_as_exceptions() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt and SIGTERM :class:`Terminated` inside the block."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return
    previous = {
        signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
        signal.SIGTERM: signal.signal(signal.SIGTERM, _raise_terminated),
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


_abandoned = threading.Event()


def work_abandoned() -> bool:
    """Return whether :func:`interruptible` gave up waiting for a cancelled worker."""
    return _abandoned.is_set()


def interruptible(work: Callable[[], T], cancel: Callable[[], object], *,
                  grace: float = 10.0) -> T:
    """Run ``work()`` in a worker thread so that a signal can cancel it.

    A query engine blocked in native code (DuckDB, Spark's JVM) does not return to Python while
    it runs, so the main thread's signal handlers would wait for it. Here the main thread waits
    in short, interruptible slices; on KeyboardInterrupt or :class:`Terminated` it calls
    ``cancel()`` (for example ``connection.interrupt()``) repeatedly until the worker returns
    (at most ``grace`` seconds), and re-raises, so that ``finally`` blocks close the engine and
    remove its spill directory. A worker still running after ``grace`` is abandoned
    (:func:`work_abandoned`): its engine must not be closed, and :func:`mcviz.cli.main` ends
    the process with ``os._exit`` instead of waiting for it.
    """
    outcome: dict[str, Any] = {}
    done = threading.Event()  # not Thread.is_alive: a join interrupted by a signal corrupts it

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as error:  # handed to the main thread below
            outcome["error"] = error
        finally:
            done.set()

    threading.Thread(target=target, name="mcviz-work", daemon=True).start()
    try:
        while not done.wait(0.1):
            pass
    except (KeyboardInterrupt, Terminated):
        # cancel() stops the query running now; the worker may start another before it sees
        # the error, so cancel again until it returns.
        deadline = time.monotonic() + grace
        while not done.is_set() and time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                cancel()
            done.wait(0.05)
        if not done.is_set():
            _abandoned.set()
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]

"""Mutation check: each mutation below must make the tests listed with it fail.

For each mutation the script copies the project (``mcviz/``, ``tests/``, the dashboard) into a
temporary directory, rewrites ONE line of the copy by a regular expression, and runs the listed
tests against the copy. A mutation whose tests still pass has *survived*: the suite cannot see
that bug. The script exits 1 if any mutation survives, and 2 — loudly — if a pattern no longer
matches exactly once (the code moved: update the pattern in MUTATIONS, right below).

Usage::

    python scripts/mutate.py              # all mutations
    python scripts/mutate.py --list       # names, files and whether each pattern still matches
    python scripts/mutate.py tie-rule     # only the named mutations

Run by tests/test_mutations.py (about two minutes on a quiet two-core machine).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str  # relative to the project root
    pattern: str  # a regular expression (re.MULTILINE) that must match exactly once
    replacement: str  # re.sub replacement
    tests: tuple[str, ...]  # pytest arguments: files or node ids, relative to the root
    within: str | None = None  # the pattern is looked for only inside this top-level def/class


# ---------------------------------------------------------------------------------------------
# THE MUTATIONS. When a module is rewritten, update `file` and `pattern` here (keep the
# pattern to one code line, anchored on what the line computes, not on its whitespace).
MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "flip-sign-cumulative",
        "mcviz/stats/cumulative.py",
        r"^([ \t]*)residual = label - score$",
        r"\1residual = score - label",
        ("tests/stats/test_cumulative.py",),
    ),
    Mutation(
        "tie-rule",  # evaluate the path after every row instead of at the ends of tie runs
        "mcviz/core/path.py",
        r"^([ \t]*)ends = np\.flatnonzero\(run_end\)$",
        r"\1ends = np.arange(run_end.size)",
        ("tests/stats/test_cumulative.py",),
    ),
    Mutation(
        "lcs-ignores-weights",
        "mcviz/stats/smoothing/lcs.py",
        r"^([ \t]*)w = None if weight is None else np\.asarray\(weight, dtype=float\)$",
        r"\1w = None",
        ("tests/stats/smoothing/test_smoothing.py", "-k", "lcs"),
        within=r"^def _validated\(",
    ),
    Mutation(
        "one-bin-count",  # the dashboard's reliability diagrams at one bin count, not three
        "dashboard/state.py",
        r"^([ \t]*)return tuple\(counts\[:3\]\) or DEFAULT_BINS$",
        r"\1return tuple(counts[:1]) or DEFAULT_BINS[:1]",
        ("tests/app/test_reliability_bins.py",),
    ),
    Mutation(
        "no-loess-bands",  # the pointwise 95% band collapses onto the fit
        "mcviz/stats/smoothing/loess.py",
        r"^([ \t]*)se = sigma \* np\.sqrt\(np\.maximum\(self\.l2, 0\.0\)\)$",
        r"\1se = 0.0 * sigma * np.sqrt(np.maximum(self.l2, 0.0))",
        ("tests/stats/smoothing/test_smoothing.py", "-k", "band"),
    ),
)
# ---------------------------------------------------------------------------------------------

COPIED = ("mcviz", "tests", "views", "pages", "dashboard", "app.py", "pyproject.toml",
          ".streamlit", "README.md", ".ci", "requirements.txt", "requirements-dev.txt")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", ".pytest_cache")


class PatternError(RuntimeError):
    """A mutation's pattern does not match its file exactly once."""


def apply(mutation: Mutation, root: Path) -> str:
    """Rewrite the mutation's line in ``root``; return the mutated line."""
    path = root / mutation.file
    if not path.is_file():
        raise PatternError(f"{mutation.name}: {mutation.file} does not exist")
    text = path.read_text()
    low, high = _scope(mutation, text)
    matches = list(re.finditer(mutation.pattern, text[low:high], flags=re.MULTILINE))
    if len(matches) != 1:
        where = f"{mutation.file} (within {mutation.within!r})" if mutation.within else (
            mutation.file)
        raise PatternError(
            f"{mutation.name}: pattern {mutation.pattern!r} matches {len(matches)} times in "
            f"{where} (must be exactly once): update MUTATIONS in scripts/mutate.py")
    match = matches[0]
    line = re.sub(mutation.pattern, mutation.replacement, match.group(0), flags=re.MULTILINE)
    if line == match.group(0):
        raise PatternError(f"{mutation.name}: the replacement changes nothing")
    path.write_text(text[:low + match.start()] + line + text[low + match.end():])
    return line.strip()


def _scope(mutation: Mutation, text: str) -> tuple[int, int]:
    """Return the span of text the pattern is looked for in (all, or one top-level block)."""
    if mutation.within is None:
        return 0, len(text)
    blocks = list(re.finditer(mutation.within, text, flags=re.MULTILINE))
    if len(blocks) != 1:
        raise PatternError(
            f"{mutation.name}: {mutation.within!r} matches {len(blocks)} times in "
            f"{mutation.file} (must be exactly once): update MUTATIONS in scripts/mutate.py")
    start = blocks[0].start()
    following = re.search(r"^(?:def|class|async def) |^@", text[blocks[0].end():], re.MULTILINE)
    return start, len(text) if following is None else blocks[0].end() + following.start()


def copy_project(destination: Path) -> None:
    """Copy the files the tests need (not .git, not caches) into ``destination``."""
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=IGNORED)
        elif source.is_file():
            shutil.copy2(source, destination / name)


def run_tests(mutation: Mutation, root: Path, timeout: float) -> tuple[bool, float]:
    """Run the mutation's tests in ``root``; return (the tests failed, seconds)."""
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
               "-p", "no:randomly", "--no-header", "-m", "not browser and not spark",
               "--override-ini", "addopts=", *mutation.tests]
    start = time.monotonic()
    try:
        done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, time.monotonic() - start  # a hang is not a catch
    if done.returncode == 5:  # no tests collected: the selection is wrong, not a catch
        raise PatternError(f"{mutation.name}: no tests selected by {' '.join(mutation.tests)}")
    return done.returncode == 1, time.monotonic() - start


def check_patterns(mutations: tuple[Mutation, ...]) -> list[str]:
    """Return one problem per mutation whose pattern no longer matches the real code."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="mcviz-mutate-") as tmp:
        copy_project(Path(tmp))
        for mutation in mutations:
            try:
                apply(mutation, Path(tmp))
            except PatternError as error:
                problems.append(str(error))
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="run only these mutations")
    parser.add_argument("--list", action="store_true", help="list mutations, check patterns")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per mutation")
    args = parser.parse_args(argv)
    unknown = set(args.names) - {m.name for m in MUTATIONS}
    if unknown:
        parser.error(f"unknown mutations: {', '.join(sorted(unknown))}")
    chosen = tuple(m for m in MUTATIONS if not args.names or m.name in args.names)
    problems = check_patterns(chosen)
    if args.list:
        for m in chosen:
            print(f"{m.name:<24} {m.file:<22} {' '.join(m.tests)}")
    if problems:
        print("PATTERNS NO LONGER MATCH THE CODE:", *problems, sep="\n  ", file=sys.stderr)
        return 2
    if args.list:
        return 0
    survivors = []
    print(f"{'mutation':<24} {'result':<9} {'seconds':>7}  mutated line")
    for mutation in chosen:
        with tempfile.TemporaryDirectory(prefix="mcviz-mutate-") as tmp:
            root = Path(tmp)
            copy_project(root)
            line = apply(mutation, root)
            caught, seconds = run_tests(mutation, root, args.timeout)
        print(f"{mutation.name:<24} {'caught' if caught else 'SURVIVED':<9} {seconds:7.1f}  "
              f"{line}", flush=True)
        if not caught:
            survivors.append(mutation.name)
    if survivors:
        print(f"{len(survivors)} of {len(chosen)} mutations survived: {', '.join(survivors)}",
              file=sys.stderr)
        return 1
    print(f"all {len(chosen)} mutations caught")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

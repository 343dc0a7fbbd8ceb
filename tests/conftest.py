"""Fixtures shared by the test modules: small predictions, file writers, the CLI, demo data."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import settings

from mcviz.io import Predictions, demo_path

ROOT = Path(__file__).resolve().parent.parent

# The suite draws the same hypothesis examples on every run (CI answers for the code, not for
# the luck of the draw); MCVIZ_FUZZ=explore draws fresh ones, as a fuzzing session does:
#   MCVIZ_FUZZ=explore python -m pytest -q tests/stats/test_fuzz_statistics.py
# A failure found that way is pinned as a plain test (the end of test_fuzz_statistics.py).
settings.register_profile("suite", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile("explore" if os.environ.get("MCVIZ_FUZZ") == "explore" else "suite")


@pytest.fixture
def small_predictions() -> Predictions:
    """Four rows whose cumulative path is known by hand.

    C_k = (-0.1, -0.5, -0.1, 0) / 4 with C_0 = 0, so Kuiper D = 0.125 and KS G = 0.125.
    """
    return Predictions.from_arrays([0.1, 0.4, 0.6, 0.9], [0, 0, 1, 1])


def _random_frame(n: int, seed: int, *, power: float = 1.0) -> pd.DataFrame:
    """Scores ~ U(0, 1), labels ~ Bernoulli(score**power) (calibrated when power = 1), covariates.

    Columns ``prob``, ``y``, ``age`` (integers 20-69), ``hours`` (normal), ``sex`` (f/m).
    """
    rng = np.random.default_rng(seed)
    score = rng.random(n)
    return pd.DataFrame({
        "prob": score,
        "y": (rng.random(n) < score**power).astype(int),
        "age": rng.integers(20, 70, n),
        "hours": rng.normal(40, 10, n),
        "sex": rng.choice(["f", "m"], n),
    })


@pytest.fixture
def random_frame() -> Callable[..., pd.DataFrame]:
    """Return ``make(n, seed, *, power=1.0)``: a seeded random prediction frame.

    Scores ~ U(0, 1), labels ~ Bernoulli(score**power) (calibrated when power = 1); columns
    ``prob``, ``y``, ``age`` (integers 20-69), ``hours`` (normal), ``sex`` (f/m).
    """
    return _random_frame


def _writer(directory: Path, default_name: str, method: str) -> Callable[..., Path]:
    def write(frame: pd.DataFrame, name: str = default_name) -> Path:
        path = directory / name
        getattr(frame, method)(path, index=False)
        return path

    return write


@pytest.fixture
def write_csv(tmp_path: Path) -> Callable[..., Path]:
    """Return ``write(frame, name="pred.csv") -> path`` writing a CSV under ``tmp_path``."""
    return _writer(tmp_path, "pred.csv", "to_csv")


@pytest.fixture
def write_parquet(tmp_path: Path) -> Callable[..., Path]:
    """Return ``write(frame, name="pred.parquet") -> path`` writing Parquet under ``tmp_path``."""
    return _writer(tmp_path, "pred.parquet", "to_parquet")


class CliRun:
    """The outcome of one in-process ``mcviz`` call: status, stdout, stderr."""

    def __init__(self, status: int, out: str, err: str) -> None:
        self.status, self.out, self.err = status, out, err

    @property
    def json(self) -> dict:
        """Stdout parsed as the one JSON object of ``--json``."""
        return json.loads(self.out)


@pytest.fixture
def cli(capsys) -> Callable[..., CliRun]:
    """Return ``run(*argv) -> CliRun`` calling :func:`mcviz.cli.main` in process."""
    from mcviz.cli import main

    def run(*argv: object) -> CliRun:
        status = main([str(a) for a in argv])
        captured = capsys.readouterr()
        return CliRun(status, captured.out, captured.err)

    return run


@pytest.fixture(scope="session")
def adult_demo_path() -> Path:
    """The embedded Adult demo (Parquet)."""
    return demo_path("adult")


@pytest.fixture(scope="session")
def drifting() -> Callable[..., Predictions]:
    """A factory of weekly-monitorable predictions whose group ``bad`` drifts from ``start``.

    ``make(n, seed, days=, start=, groups=("a", "b"), bad=groups[-1], scores=(low, high))``:
    a day in 0..days-1 per row (column ``when``, from 2026-01-05), a group (column ``g``),
    uniform scores, and labels Bernoulli(score), raised by 0.3 in group ``bad`` from day
    ``start`` on (clipped to [0, 1]).
    """

    def make(n: int, seed: int, *, days: int, start: int, groups=("a", "b"), bad=None,
             scores=(0.2, 0.8)) -> Predictions:
        rng = np.random.default_rng(seed)
        day = rng.integers(0, days, n)
        group = rng.choice(list(groups), n)
        score = rng.uniform(*scores, n)
        shifted = (group == (groups[-1] if bad is None else bad)) & (day >= start)
        label = rng.random(n) < np.clip(score + 0.3 * shifted, 0, 1)
        return Predictions.from_arrays(score, label, covariates={
            "when": pd.Timestamp("2026-01-05") + pd.to_timedelta(day, unit="D"), "g": group})

    return make


def text_in_the_score(n: int) -> pd.DataFrame:
    """Issue 31's file: a text ``score`` column with one non-number ("oops", row 7) beside a
    numeric column in [0, 1] (``x0``) that must never be analysed in its place."""
    rng = np.random.default_rng(0)
    score = rng.uniform(0.05, 0.95, n)
    frame = pd.DataFrame({"x0": rng.uniform(0, 1, n), "score": score.round(4).astype(str),
                          "label": (rng.random(n) < score).astype(int), "x1": rng.normal(size=n)})
    frame.loc[7, "score"] = "oops"
    return frame


@pytest.fixture(scope="session")
def bad_score_frame() -> Callable[[int], pd.DataFrame]:
    """:func:`text_in_the_score`, as a fixture."""
    return text_in_the_score


@pytest.fixture
def spy(monkeypatch) -> Callable[[type, str], list]:
    """``spy(owner, name)``: a list of the first argument of each call of ``owner.name``.

    The method still runs (the spy records and calls it); undone after the test.
    """

    def install(owner: type, name: str) -> list:
        calls: list = []
        original = getattr(owner, name)

        def recorded(self, first, *args, **kwargs):
            calls.append(first)
            return original(self, first, *args, **kwargs)

        monkeypatch.setattr(owner, name, recorded)
        return calls

    return install


# -- the command-line tests' planted files (one conftest: --doctest-modules imports every
# conftest.py as the module "conftest", so a second one in a subfolder is an import mismatch)
@pytest.fixture(scope="session")
def planted_directory(tmp_path_factory):
    """A factory: ``make(name, rows, fresh_rows)`` writes planted data to a new directory.

    ``pred.parquet``: ``rows`` labelled rows of :func:`planted_fix_data` (seed 1) without the
    truth; ``new.csv``: ``fresh_rows`` rows (seed 2) without truth or label, to apply a fix to.
    """
    from mcviz.recalibration.simulate import planted_fix_data

    def make(name: str, rows: int, fresh_rows: int):
        directory = tmp_path_factory.mktemp(name)
        frame = planted_fix_data(rows, seed=1).drop(columns="truth")
        frame.to_parquet(directory / "pred.parquet", index=False)
        fresh = planted_fix_data(fresh_rows, seed=2).drop(columns=["truth", "label"])
        fresh.to_csv(directory / "new.csv", index=False)
        return directory

    return make


# -- the browser tests' fixtures: one served app and one chromium per test module
# (tests/app/browser_kit.py is importable when a test of tests/app runs)
@pytest.fixture(scope="module")
def app_url():
    """The base address of a fresh ``streamlit run app.py`` (stopped after the module)."""
    from browser_kit import served

    with served() as (_, base):
        yield base


@pytest.fixture(scope="module")
def browser(app_url):
    """Debian's chromium (never ``playwright install``), after the app is up."""
    from browser_kit import launched

    with launched() as chromium:
        yield chromium


# -- the order the files run in. pytest-xdist's --dist loadfile hands each worker whole files;
# by default it starts with the files that have the MOST tests, so the few-test heavy files (a
# served app and chromium, the mutation run, the measured budgets) came last and one worker ran
# them alone while the other idled. Longest first (the list below, measured with --durations=0
# over the whole suite: tests/slowest_files.txt) lets the small files fill the end of the run.
def _slowest_files() -> dict[str, int]:
    listed = Path(__file__).with_name("slowest_files.txt").read_text().split("\n")
    names = [line.split("#")[0].strip() for line in listed]
    return {name: rank for rank, name in enumerate(n for n in names if n)}


def pytest_configure(config) -> None:
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: keep the order set below
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items) -> None:
    """Run the listed files first, the longest first; the others by their number of tests."""
    rank = _slowest_files()
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    order = sorted(files, key=lambda name: (rank.get(name, len(rank)), -len(files[name])))
    items[:] = [item for name in order for item in files[name]]

"""The k-NN search's run-time guard (issue #25 item 2): a search that widens far beyond its
estimate (few rows per combination of nominal levels) runs in pieces sized from the memory
budget, so it slows down instead of taking the machine's memory."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcviz import ValidationError
from mcviz.budget import Budget, Cancelled, knn_width
from mcviz.stats.groupings import local as local_module
from mcviz.stats.groupings import local_calibration
from mcviz.io import Predictions

ROOT = Path(__file__).resolve().parents[3]


def flights_like(n: int, levels: int = 300, seed: int = 0) -> Predictions:
    """Two nominal covariates of ``levels`` levels (origin, destination), day, hour, distance."""
    rng = np.random.default_rng(seed)
    score = rng.random(n)
    return Predictions.from_arrays(score, (rng.random(n) < score).astype(int), covariates={
        "origin": pd.Categorical(rng.integers(0, levels, n).astype(str)),
        "dest": pd.Categorical(rng.integers(0, levels, n).astype(str)),
        "day": rng.integers(1, 32, n), "hour": rng.integers(0, 24, n),
        "distance": rng.gamma(2, 400, n).round(),
    })


def test_pieces_give_the_same_groups_as_one_search(monkeypatch):
    pred = flights_like(3_000, levels=30, seed=1)
    whole = local_calibration(pred, k=20, max_centres=300)
    assert knn_width(3_000, 20, (30, 30)) > 40  # the search reaches other cells
    monkeypatch.setattr(local_module, "CHUNK_NEIGHBOURS", 1_000)  # pieces of a few centres
    monkeypatch.setattr(local_module, "_search_cells", lambda budget, fixed: 1_000)
    pieces = local_calibration(pred, k=20, max_centres=300)
    np.testing.assert_allclose(pieces.groups.error, whole.groups.error)
    np.testing.assert_allclose(pieces.radius, whole.radius)
    np.testing.assert_array_equal(pieces.groups.size, whole.groups.size)
    np.testing.assert_array_equal(pieces.membership, whole.membership)


def test_the_estimate_foresees_the_wide_search_and_refuses_it():
    # the issue's case in small: all centres, two 300-level covariates, few rows per cell
    pred = flights_like(50_000)
    with pytest.raises(ValidationError, match=(
            r"refused before starting: k-NN local calibration: 50,000 rows.*"
            r"time .* > budget 10 s.*choose fewer centres \(max_centres\)")):
        local_calibration(pred, k=100, budget=Budget(bytes=10**9, seconds=10.0))


def test_every_row_a_centre_on_the_issues_shape_is_refused_by_the_default_time_budget(
        monkeypatch):
    # issue #25: 10^6 flights-like rows, k = 100, every row a centre: about 12 h. No time budget
    # is set, so the default (one hour) refuses it before anything large is allocated.
    monkeypatch.delenv("MCVIZ_TIME_BUDGET", raising=False)
    monkeypatch.setenv("MCVIZ_MEMORY_BUDGET", "4GB")
    pred = flights_like(1_000_000)
    with pytest.raises(ValidationError, match=(
            r"refused before starting: k-NN local calibration: 1,000,000 rows.*"
            r"centres.*about .* and [0-9.]+ h \(time [0-9.]+ h > budget 60.0 min\).*"
            r"choose fewer centres \(max_centres\).*MCVIZ_TIME_BUDGET \(seconds, or 'none'\)")):
        local_calibration(pred, k=100)
    # a sample of centres is what the message suggests, and it runs under the same defaults
    assert knn_estimate_of(pred, centres=2_000).seconds < 3600


def knn_estimate_of(pred: Predictions, centres: int):
    from mcviz.budget import knn_estimate
    from mcviz.stats.groupings.input_space import space_shape

    shape = space_shape(pred, None)
    return knn_estimate(pred.n, numeric=shape.numeric, nominal=shape.nominal,
                        levels=shape.levels, centres=centres, k=100,
                        level_counts=shape.level_counts)


def test_a_long_search_reports_progress_and_stops_when_asked():
    pred = flights_like(20_000, levels=100)
    seen = []

    def progress(fraction, what):
        seen.append(fraction)
        if len(seen) == 4:  # the stop button, a few chunks in
            raise Cancelled

    with pytest.raises(Cancelled):
        local_calibration(pred, k=50, progress=progress)
    assert seen == sorted(seen)
    assert 0 < seen[-1] < 0.5


def test_an_underestimated_search_is_refused_after_its_pilot(monkeypatch):
    # an estimate that is far too low (as before issue #25): the first 64 centres measure it
    pred = flights_like(20_000, levels=100)
    cheap = local_module.knn_estimate(100, numeric=1, nominal=0, levels=0, centres=1, k=1)
    monkeypatch.setattr(local_module, "knn_estimate", lambda *a, **k: cheap)
    with pytest.raises(ValidationError, match=(
            r"refused after measuring: the k-NN search took .* for its first 64 of .* centres"
            r".*choose fewer centres \(max_centres\)")):
        local_calibration(pred, k=100, budget=Budget(bytes=10**9, seconds=0.05))


CHILD = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
from test_knn_guard import flights_like
from mcviz.stats.groupings import local_calibration
pred = flights_like(200_000)
_ = pred.covariates
Path("/proc/self/clear_refs").write_text("5")
def status(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
before = status("VmRSS")
local = local_calibration(pred, k=100, max_centres=300)
print(json.dumps({{"peak": status("VmHWM") - before, "groups": int(local.groups.size.size)}}))
"""


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="Linux /proc")
def test_a_widening_search_stays_within_its_memory_budget():
    # 200,000 rows in 90,000 combinations of two 300-level covariates: each search scans about
    # 30,000 candidates (knn_width); 300 centres in one chunk would be 9 million cells (about
    # 0.9 GB). Under a 150 MB budget the pieces hold the peak near the budget.
    budget = 150_000_000

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3_000_000_000, 3_000_000_000))

    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(tests=str(Path(__file__).parent))],
        capture_output=True, text=True, preexec_fn=cap, timeout=600, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "MCVIZ_MEMORY_BUDGET": str(budget)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["groups"] == 300
    assert result["peak"] <= 1.5 * budget, result

"""Links inside the resource model (dashboard.limits): clamped to the budget, slow work waits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard.limits import AUTO_START_SECONDS, link_start, subpopulations_estimate
from mcviz.budget import Budget
from mcviz.io import load_predictions
from mcviz.subpopulations import generate_subpopulations

ADULT_ROWS = 48_842


def test_the_issue_link_is_clamped_and_waits_for_a_click():
    # /subpopulations?demo=adult&l=20000&reps=20&m=10&sp=1 grew a server by ~7 GB; under a
    # 2.5 GB budget it must be reduced to fit and must not start on its own.
    budget = Budget(bytes=int(2.5e9))
    start = link_start(ADULT_ROWS, 20_000, 20, budget)
    assert not start.auto
    assert start.estimate.bytes <= budget.bytes
    assert subpopulations_estimate(ADULT_ROWS, start.subpopulations + 1, 20).bytes > budget.bytes
    assert "20,000 random subpopulations × 20 repeats" in start.message
    assert f"reduced to {start.subpopulations:,}" in start.message
    assert "Press Compute" in start.message


def test_small_links_start_at_once_and_slow_ones_wait():
    budget = Budget(bytes=10**10)
    assert link_start(ADULT_ROWS, 1000, 1, budget).auto  # ~0.15 s
    slow = link_start(ADULT_ROWS, 100_000, 1, budget)  # fits in memory (1.6 GB), ~15 s
    assert slow.subpopulations == 100_000
    assert slow.estimate.seconds > AUTO_START_SECONDS
    assert not slow.auto
    assert "reduced" not in slow.message
    assert not link_start(ADULT_ROWS, 1000, 1, Budget(bytes=10**10, seconds=0.05)).auto


def test_the_estimate_bounds_the_memory_the_subpopulations_keep():
    # An independent measure: the index arrays the generated subpopulations hold.
    rng = np.random.default_rng(4)
    n = 20_000
    frame = pd.DataFrame({"score": rng.random(n), "label": rng.integers(0, 2, n),
                          "a": rng.normal(size=n), "b": rng.integers(0, 7, n).astype(str),
                          "c": rng.integers(0, 50, n)})
    pred = load_predictions(frame, score="score", label="label")
    for ell in (50, 400):
        subsets = generate_subpopulations(pred, covariates=["a", "b", "c"], n_subpopulations=ell,
                                          min_size=10, seed=1)
        held = sum(s.index.nbytes for s in subsets.subpopulations)
        assert held <= subpopulations_estimate(n, ell).bytes


@pytest.mark.parametrize("rows", [1_000, 1_000_000])
def test_estimates_grow_linearly_in_rows_subpopulations_and_repeats(rows):
    one = subpopulations_estimate(rows, 100, 1)
    assert subpopulations_estimate(rows, 200, 1).seconds == pytest.approx(2 * one.seconds)
    assert subpopulations_estimate(rows, 100, 3).seconds == pytest.approx(3 * one.seconds)
    assert "ℓ" in one.advice

"""mcviz.core.isotonic against SciPy's PAV (the reference) on many shapes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import isotonic_regression

from mcviz.core import isotonic
from mcviz.core.isotonic import isotonic_fit


def _shapes(rng, n):
    s = np.sort(rng.random(n))
    return {
        "calibrated": (rng.random(n) < s) * 1.0,
        "overconfident": (rng.random(n) < 0.5 + 0.3 * (s - 0.5)) * 1.0,
        "reversed": (rng.random(n) < 1 - s) * 1.0,
        "rare": (rng.random(n) < s**8) * 1.0,
        "all zero": np.zeros(n),
        "all one": np.ones(n),
        "sawtooth": np.tile(np.arange(50.0), n // 50 + 1)[:n],
        "stairs and a dip": np.append(np.arange(n - 1.0), -1.0),
        "counts": rng.integers(0, 5, n) * 1.0,
        "negative counts": rng.integers(-3, 3, n) * 1.0,
    }


@pytest.mark.parametrize("n", [2, 3, 7, 100, 5_000, 200_000])
def test_equals_scipy_pav(n):
    rng = np.random.default_rng(n)
    for name, y in _shapes(rng, n).items():
        expected = isotonic_regression(y).x
        np.testing.assert_allclose(isotonic_fit(y), expected, rtol=1e-13, atol=1e-15,
                                   err_msg=name)
        weight = rng.integers(1, 4, n) * 1.0  # counts as weights: still exact
        np.testing.assert_allclose(isotonic_fit(y, weight),
                                   isotonic_regression(y, weights=weight).x,
                                   rtol=1e-13, atol=1e-15, err_msg=name)


def test_exact_path_is_taken_for_counts_and_scipy_otherwise(monkeypatch):
    rng = np.random.default_rng(0)
    y = (rng.random(10_000) < np.sort(rng.random(10_000))) * 1.0
    calls = []
    real = isotonic._gcm_vertices
    monkeypatch.setattr(isotonic, "_gcm_vertices", lambda *a: calls.append(1) or real(*a))
    isotonic_fit(y)
    assert calls  # 0/1 responses, unit weights: the exact hull
    calls.clear()
    weight = rng.random(10_000) + 0.5
    np.testing.assert_allclose(isotonic_fit(y, weight),
                               isotonic_regression(y, weights=weight).x, rtol=1e-13)
    assert not calls  # real weights: SciPy's PAV


def test_many_rounds_hand_over_to_scipy(monkeypatch):
    monkeypatch.setattr(isotonic, "MAX_ROUNDS", 1)
    rng = np.random.default_rng(1)
    y = (rng.random(50_000) < np.sort(rng.random(50_000))) * 1.0
    np.testing.assert_allclose(isotonic_fit(y), isotonic_regression(y).x, rtol=1e-13)


def test_the_fit_is_the_pav_solution_by_its_definition():
    """Independent of SciPy: non-decreasing, block means, and no better monotone fit nearby."""
    rng = np.random.default_rng(2)
    y = (rng.random(2_000) < np.sort(rng.random(2_000))) * 1.0
    fit = isotonic_fit(y)
    assert np.all(np.diff(fit) >= 0)
    starts = np.flatnonzero(np.concatenate(([True], np.diff(fit) != 0)))
    means = np.add.reduceat(y, starts) / np.diff(np.append(starts, y.size))
    np.testing.assert_allclose(fit[starts], means, rtol=1e-15)
    loss = np.sum((y - fit) ** 2)
    for _ in range(200):  # a monotone perturbation never does better
        other = np.maximum.accumulate(np.clip(fit + rng.normal(0, 0.01, fit.size), 0, 1))
        assert np.sum((y - other) ** 2) >= loss - 1e-9

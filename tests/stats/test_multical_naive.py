"""The naive reference of benchmarks/bench_multical.py (boolean masks) gives mcviz's M (issue 28).

The reference is written from the paper (Algorithm 1, eqs. (1), (2), (4), (5)) with full-length
boolean masks and no mcviz import; it is what ``mcviz metrics --subpopulations`` is timed
against, so it must compute the same thing.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from mcviz.io import Predictions
from mcviz.stats.multical import multicalibration
from mcviz.subpopulations import generate_subpopulations

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_multical.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_multical", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("case", ["discrete", "continuous", "tied scores"])
def test_naive_reference_equals_mcviz(bench, case):
    n, ell = 4_000, 150
    rng = np.random.default_rng(7)
    score = rng.random(n)
    if case == "tied scores":  # runs of tied scores: both pool them (C at each run's end)
        score = np.round(score, 2)
    label = (rng.random(n) < np.clip(score + 0.1 * (score > 0.5), 0, 1)).astype(np.int8)
    if case == "continuous":
        covariates = [rng.normal(size=n) for _ in range(4)]
    else:
        covariates = [rng.integers(0, 30, n).astype(float) for _ in range(4)]
    pred = Predictions.from_arrays(score, label, covariates={f"x{j}": x
                                                             for j, x in enumerate(covariates)})
    for seed in (0, 3):
        naive, found = bench.naive_multicalibration(score, label, covariates, ell, 10, seed)
        subpopulations = generate_subpopulations(pred, n_subpopulations=ell, min_size=10,
                                                 seed=seed)
        assert found == len(subpopulations.subpopulations) - 1
        assert naive == pytest.approx(multicalibration(pred, subpopulations).metric, rel=1e-9)

"""Shuffling rows (inside tie runs too) changes no statistic by more than 1e-12 (issue 14 item 4).

Covers the full population (cumulative differences), the deviation of a subpopulation from the
full population and multi-calibration, for binary and real-valued responses, weighted.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcviz.stats.cumulative import cumulative_differences
from mcviz.stats.deviation import subpopulation_deviation
from mcviz.io import Predictions
from mcviz.stats.multical import multicalibration
from mcviz.subpopulations import generate_subpopulations, select_rows


def frame(seed: int, real: bool):
    rng = np.random.default_rng(seed)
    n = 1500
    score = rng.integers(1, 30, n) / 31.0  # heavy ties
    label = np.clip(score + rng.normal(0, 0.2, n), 0, 1) if real else (
        rng.random(n) < score).astype(float)
    weight = rng.random(n) + 0.2
    covariates = {"x": rng.integers(0, 12, n).astype(float), "z": rng.normal(size=n).round(1)}
    return score, label, weight, covariates


def build(score, label, weight, covariates, order, real):
    return Predictions.from_arrays(
        score[order], label[order], weight[order],
        covariates={k: v[order] for k, v in covariates.items()},
        response="continuous" if real else "binary")


@pytest.mark.parametrize("real", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_shuffled_rows_give_the_same_statistics(real, seed):
    score, label, weight, covariates = frame(seed, real)
    n = score.size
    rng = np.random.default_rng(100 + seed)
    a = build(score, label, weight, covariates, np.arange(n), real)
    b = build(score, label, weight, covariates, rng.permutation(n), real)
    assert not np.array_equal(a.label, b.label)  # tied rows really sit in another order

    ca, cb = cumulative_differences(a), cumulative_differences(b)
    for name in ("kuiper", "ks", "sigma", "kuiper_z", "p_value"):
        assert getattr(ca, name) == pytest.approx(getattr(cb, name), abs=1e-12), name
    np.testing.assert_allclose(ca.path, cb.path, rtol=0, atol=1e-12)

    subs_a = generate_subpopulations(a, n_subpopulations=40, seed=seed)
    subs_b = generate_subpopulations(b, n_subpopulations=40, seed=seed)
    ma, mb = multicalibration(a, subs_a), multicalibration(b, subs_b)
    # the same conditions select the same rows whatever the order: compare by description
    by_description = {s.description: k for k, s in enumerate(mb.subpopulations)}
    common = [(k, by_description[s.description]) for k, s in enumerate(ma.subpopulations)
              if s.description in by_description]
    assert len(common) > 20
    ka, kb = map(list, zip(*common, strict=True))
    for name in ("kuiper", "sigma", "kuiper_z", "normalized"):
        np.testing.assert_allclose(getattr(ma, name)[ka], getattr(mb, name)[kb], rtol=0,
                                   atol=1e-12, err_msg=name)
    if len(common) == len(ma.subpopulations) == len(mb.subpopulations):
        assert ma.metric == pytest.approx(mb.metric, abs=1e-12)

    for sub in list(subs_a)[1:6]:
        da = subpopulation_deviation(a, select_rows(a, sub.conditions))
        db = subpopulation_deviation(b, select_rows(b, sub.conditions))
        for name in ("kuiper", "ks", "sigma", "kuiper_z"):
            assert getattr(da, name) == pytest.approx(getattr(db, name), abs=1e-12), name

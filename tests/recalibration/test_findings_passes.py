"""The findings fix's passes: the top-label view and the held-out score test of a term.

Both are derived in :mod:`mcviz.recalibration._findings`; here they are checked against a loop
written from the definitions, by simulation under calibration, and on a planted group where the
model is too extreme (the shape the range of the walk detects worst).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from scipy.stats import chi2

from mcviz.io import Predictions
from mcviz.recalibration._findings import score_tests
from mcviz.recalibration._split import top_label


def _pred(n: int, seed: int, slope: float = 1.0):
    rng = np.random.default_rng(seed)
    eta = rng.normal(-0.3, 1.5, n)
    g = rng.integers(0, 4, n)
    truth = np.where(g == 1, expit(slope * eta), expit(eta))
    label = (rng.random(n) < truth).astype(float)
    return Predictions.from_arrays(expit(eta), label, covariates=pd.DataFrame({"g": g}))


def test_top_label_is_the_chance_of_an_error_row_by_row():
    pred = _pred(2_000, 0)
    error = top_label(pred)
    by_row = {}
    for s, y, row in zip(pred.score, pred.label, pred.row, strict=True):
        by_row[row] = (s, y) if s <= 0.5 else (1 - s, 1 - y)  # the definition, row by row
    got = {row: (s, y) for s, y, row in zip(error.score, error.label, error.row, strict=True)}
    assert got.keys() == by_row.keys()
    for row, (s, y) in by_row.items():
        assert got[row][0] == s
        assert got[row][1] == y
    assert np.all(np.diff(error.score) >= 0)
    assert error.score_column == f"{pred.score_column}_error"


def test_the_score_test_equals_its_definition():
    pred = _pred(4_000, 1, slope=0.6)
    eta = np.log(pred.score / (1 - pred.score))
    held = np.random.default_rng(2).random(pred.n) < 0.3
    w = np.random.default_rng(3).choice([0.5, 1.0, 2.0], pred.n)
    (tested,) = score_tests(pred, eta, w, ["g == 1"], held)
    u, v = np.zeros(2), np.zeros((2, 2))
    for k in range(pred.n):  # Rao's score statistic of b + a * eta, summed row by row
        if held[k] and pred.covariates["g"].iloc[k] == 1:
            p = 1 / (1 + np.exp(-eta[k]))
            x = np.array([1.0, eta[k]])
            u += w[k] * x * (pred.label[k] - p)
            v += w[k] ** 2 * np.outer(x, x) * p * (1 - p)
    q = u @ np.linalg.solve(v, u)
    assert tested.p_value == pytest.approx(chi2.sf(q, 2), rel=1e-9)
    assert tested.p_kind == "score test"


def test_the_score_test_holds_its_level_under_calibration():
    # 300 calibrated data sets: the p-value of one fixed group is below 0.05 in 5% of them
    # (binomial sd 1.3%); a p-value that ignored the variance would be far off
    below = []
    for seed in range(300):
        pred = _pred(1_500, 10 + seed)
        eta = np.log(pred.score / (1 - pred.score))
        held = np.ones(pred.n, dtype=bool)
        (tested,) = score_tests(pred, eta, np.ones(pred.n), ["g == 1"], held)
        below.append(tested.p_value < 0.05)
    assert 0.02 <= np.mean(below) <= 0.09, np.mean(below)


def test_a_group_too_extreme_shows_one_signed_in_the_top_label_view():
    # true logit 0.6 x the model's in g == 1: differences of both signs in the probability view
    # (they cancel in the walk's sum), one sign -- errors under-predicted -- in the top-label view
    pred = _pred(200_000, 3, slope=0.6)
    group = (pred.covariates["g"] == 1).to_numpy()
    raw = pred.label[group] - pred.score[group]
    error = top_label(pred)
    in_group = (error.covariates["g"] == 1).to_numpy()
    folded = error.label[in_group] - error.score[in_group]
    high = pred.score[group] > 0.5
    assert raw[high].mean() < -0.02 < 0.02 < raw[~high].mean()
    assert folded.mean() > 0.02
    assert abs(folded.sum()) > 3 * abs(raw.sum())

"""Paired statistics of two models (mcviz.compare.paired) against direct implementations.

The references below are written from the equations of Kloumann, Korevaar, McConnell, Tygert and
Zhao, "Cumulative differences between paired samples" (arXiv:2305.11323), with plain loops:
C_k = sum_{j<=k} W_j (L_B - L_A)_j / sum W, read at the ends of runs of tied ordering values;
the Kuiper metric as the largest |C_k - C_j| over all pairs j < k (the paper's definition, not
max - min); sigma^2 = sum W_j^2 d_j^2 / (sum W)^2.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcviz.compare.paired import (
    mean_interval,
    net_benefit_comparison,
    paired_cumulative_differences,
    paired_difference,
)
from mcviz.decision import net_benefit
from mcviz.io import Predictions


def _reference_path(score_a, score_b, label, order_values, weight):
    """C_0 = 0 and C at the end of each run of tied order values, by a loop over sorted rows."""
    rows = sorted(range(label.size), key=lambda j: order_values[j])
    total = sum(weight)
    running, path = 0.0, [0.0]
    for position, j in enumerate(rows):
        running += weight[j] * ((score_b[j] - label[j]) ** 2 - (score_a[j] - label[j]) ** 2)
        last = position == len(rows) - 1
        if last or order_values[rows[position + 1]] != order_values[j]:
            path.append(running / total)
    return np.array(path)


def _reference_kuiper(path):
    return max(abs(path[k] - path[j]) for k in range(path.size) for j in range(k))


def _data(n, seed, *, ties=False, weighted=False):
    rng = np.random.default_rng(seed)
    score_a = rng.uniform(0.05, 0.95, n)
    score_b = np.clip(score_a + rng.normal(0, 0.1, n), 0, 1)
    label = (rng.random(n) < score_a).astype(float)
    order = np.round(score_a, 1) if ties else rng.normal(size=n)
    weight = rng.uniform(0.5, 2.0, n) if weighted else np.ones(n)
    return score_a, score_b, label, order, weight


@pytest.mark.parametrize(("ties", "weighted"), [(False, False), (True, False), (True, True)])
def test_path_kuiper_and_sigma_match_the_papers_equations(ties, weighted):
    score_a, score_b, label, order, weight = _data(150, 3, ties=ties, weighted=weighted)
    result = paired_cumulative_differences(score_a, score_b, label, order_values=order,
                                           weight=weight)
    expected = _reference_path(score_a, score_b, label, order, weight)
    np.testing.assert_allclose(result.path, expected, rtol=0, atol=1e-13)
    assert result.kuiper == pytest.approx(_reference_kuiper(expected), abs=1e-13)
    d = [(score_b[j] - label[j]) ** 2 - (score_a[j] - label[j]) ** 2 for j in range(label.size)]
    sigma = math.sqrt(sum(w * w * x * x for w, x in zip(weight, d, strict=True))) / sum(weight)
    assert result.sigma == pytest.approx(sigma, rel=1e-12)
    assert result.kuiper_z == pytest.approx(result.kuiper / sigma, rel=1e-12)


def test_residual_paths_are_each_models_cumulative_residuals():
    score_a, score_b, label, order, _weight = _data(80, 5)
    result = paired_cumulative_differences(score_a, score_b, label, order_values=order)
    rows = np.argsort(order)
    for path, score in ((result.path_a, score_a), (result.path_b, score_b)):
        expected = np.concatenate(([0.0], np.cumsum(label[rows] - score[rows]) / label.size))
        np.testing.assert_allclose(path, expected, atol=1e-13)


def test_order_of_tied_rows_changes_nothing():
    score_a, score_b, label, order, weight = _data(300, 7, ties=True, weighted=True)
    first = paired_cumulative_differences(score_a, score_b, label, order_values=order,
                                          weight=weight)
    permutation = np.random.default_rng(1).permutation(label.size)
    second = paired_cumulative_differences(
        score_a[permutation], score_b[permutation], label[permutation],
        order_values=order[permutation], weight=weight[permutation])
    np.testing.assert_allclose(first.path, second.path, atol=1e-13)
    assert first.kuiper_z == pytest.approx(second.kuiper_z, rel=1e-10)


def test_identical_scores_give_a_flat_path_and_no_evidence():
    score_a, _, label, order, _ = _data(200, 2)
    result = paired_cumulative_differences(score_a, score_a.copy(), label, order_values=order)
    assert not np.any(result.path)
    assert (result.kuiper, result.sigma, result.kuiper_z, result.p_value) == (0, 0, 0, 1.0)


def test_missing_ordering_values_are_left_off_and_counted():
    score_a, score_b, label, order, _ = _data(50, 4)
    order[[3, 9, 11]] = np.nan
    result = paired_cumulative_differences(score_a, score_b, label, order_values=order)
    assert (result.n, result.n_missing) == (47, 3)


def test_p_values_under_the_null_are_not_anticonservative():
    # H0 holds: B's loss minus A's has mean zero on every row (the two scores are exchangeable
    # given the label's probability). The share of p < 0.05 over 300 draws must be near 0.05:
    # under H0 it is Binomial(300, <=0.05); 0.09 is 3 standard errors above 0.05.
    rng = np.random.default_rng(11)
    small = []
    for _ in range(300):
        p = rng.uniform(0.1, 0.9, 400)
        label = (rng.random(400) < p).astype(float)
        noise = rng.normal(0, 0.08, (2, 400))
        a, b = np.clip(p + noise[0], 0, 1), np.clip(p + noise[1], 0, 1)
        result = paired_cumulative_differences(a, b, label, order_values=(a + b) / 2)
        small.append(result.p_value < 0.05)
    assert np.mean(small) <= 0.09


def test_a_drift_is_detected():
    rng = np.random.default_rng(12)
    p = rng.uniform(0.1, 0.9, 4000)
    label = (rng.random(4000) < p).astype(float)
    b = np.clip(p + 0.2 * (p > 0.5), 0, 1)  # B over-predicts at high scores
    result = paired_cumulative_differences(p, b, label, order_values=p)
    assert result.p_value < 1e-6
    assert result.path[-1] > 0  # B worse: the path rises


def test_mean_interval_is_the_paired_t_interval_unweighted():
    rng = np.random.default_rng(0)
    d = rng.normal(0.1, 1.0, 500)
    mean, low, high = mean_interval(d, np.ones(d.size))
    se = d.std(ddof=1) / math.sqrt(d.size)
    assert mean == pytest.approx(d.mean(), rel=1e-12)
    assert (high - mean) == pytest.approx(1.959963984540054 * se, rel=1e-10)
    assert (mean - low) == pytest.approx(high - mean, rel=1e-10)


def test_paired_difference_of_losses_is_row_by_row():
    score_a, score_b, label, _, weight = _data(120, 9, weighted=True)
    brier_a, brier_b = (score_a - label) ** 2, (score_b - label) ** 2
    result = paired_difference(brier_a, brier_b, weight, loss="brier")
    assert result.difference == pytest.approx(
        sum(w * (b - a) for w, a, b in zip(weight, brier_a, brier_b, strict=True)) / weight.sum(),
        rel=1e-12)
    assert result.b - result.a == pytest.approx(result.difference, abs=1e-14)


def test_net_benefit_difference_equals_row_by_row_arithmetic():
    score_a, score_b, label, _, weight = _data(300, 13, weighted=True)
    thresholds = [0.2, 0.35, 0.5]
    result = net_benefit_comparison(score_a, score_b, label, weight, thresholds=thresholds)
    for k, t in enumerate(thresholds):
        odds = t / (1 - t)
        rows = []
        for j in range(label.size):
            treated_a, treated_b = score_a[j] >= t, score_b[j] >= t
            value = label[j] - (1 - label[j]) * odds
            rows.append((int(treated_b) - int(treated_a)) * value)
        rows = np.array(rows)
        expected = float(np.sum(weight * rows) / weight.sum())
        assert result.difference[k] == pytest.approx(expected, abs=1e-14)
        assert result.b[k] - result.a[k] == pytest.approx(expected, abs=1e-14)
        # ratio-estimator variance of a weighted mean: n/(n-1) sum W^2 (x - mean)^2 / (sum W)^2
        n = rows.size
        se = math.sqrt(n / (n - 1) * np.sum(weight**2 * (rows - expected) ** 2)) / weight.sum()
        assert result.ci_low[k] == pytest.approx(expected - 1.959963984540054 * se, abs=1e-13)
        assert result.ci_high[k] == pytest.approx(expected + 1.959963984540054 * se, abs=1e-13)
    # each model's net benefit is mcviz.decision's (an implementation over sorted scores)
    for scores, mine in ((score_a, result.a), (score_b, result.b)):
        pred = Predictions.from_arrays(scores, label, weight)
        np.testing.assert_allclose(mine, net_benefit(pred, thresholds=thresholds).model,
                                   atol=1e-14)

import numpy as np
import pytest

from mcviz.decision import check_thresholds, net_benefit, threshold_from_costs
from mcviz.errors import ValidationError
from mcviz.io import Predictions


def brute_net_benefit(score, label, weight, t):
    """NB(t) = TP/n - FP/n * t/(1-t), weighted, one row at a time (independent of the library)."""
    tp = fp = total = 0.0
    for s, y, w in zip(score, label, weight, strict=True):
        total += w
        if s >= t:
            tp += w * y
            fp += w * (1 - y)
    return tp / total - fp / total * t / (1 - t)


@pytest.mark.parametrize("weighted", [False, True])
def test_net_benefit_equals_the_formula(weighted):
    rng = np.random.default_rng(3)
    n = 500
    score = np.round(rng.random(n), 2)  # ties, and scores equal to thresholds
    label = (rng.random(n) < score).astype(int)
    weight = rng.uniform(0.2, 3.0, n) if weighted else np.ones(n)
    pred = Predictions.from_arrays(score, label, weight if weighted else None)
    thresholds = [0.05, 0.1, 0.3, 0.5, 0.77, 0.95]
    result = net_benefit(pred, thresholds=thresholds)
    for k, t in enumerate(thresholds):
        assert result.model[k] == pytest.approx(brute_net_benefit(score, label, weight, t),
                                                abs=1e-12)
        assert result.treat_all[k] == pytest.approx(brute_net_benefit(score * 0 + 1, label,
                                                                      weight, t), abs=1e-12)
    assert result.treat_none.tolist() == [0.0] * len(thresholds)


def test_net_benefit_of_a_subpopulation():
    rng = np.random.default_rng(4)
    score, label = rng.random(200), rng.integers(0, 2, 200)
    pred = Predictions.from_arrays(score, label)
    index = np.arange(0, 200, 3)
    result = net_benefit(pred, thresholds=[0.4], index=index)
    expected = brute_net_benefit(pred.score[index], pred.label[index], np.ones(index.size), 0.4)
    assert result.model[0] == pytest.approx(expected)


def test_thresholds_outside_the_open_interval_are_refused():
    for bad in ([0.0], [1.0], [0.2, 1.5], [-0.1], [np.nan], []):
        with pytest.raises(ValidationError, match="threshold"):
            check_thresholds(bad)


def test_threshold_from_costs():
    assert threshold_from_costs(1, 4) == pytest.approx(0.2)
    with pytest.raises(ValidationError, match="costs must be positive"):
        threshold_from_costs(0, 1)

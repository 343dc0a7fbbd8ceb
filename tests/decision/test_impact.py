import numpy as np
import pytest

from mcviz.decision import decision_impact, impact_sentence, net_benefit
from mcviz.errors import ValidationError
from mcviz.io import Predictions


def _data(n, seed, weighted=False):
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0.02, 0.98, n)
    score = truth**1.6  # under-predicts
    label = (rng.random(n) < truth).astype(int)
    weight = rng.choice([0.5, 1.0, 2.0], n) if weighted else None
    pred = Predictions.from_arrays(score, label, weight)
    fixed = pred.score ** (1 / 1.6)  # the right recalibration, in pred's order
    return pred, fixed


@pytest.mark.parametrize("weighted", [False, True])
def test_loss_is_the_difference_of_independent_net_benefits(weighted):
    pred, fixed = _data(3000, 1, weighted)
    t = [0.1, 0.3, 0.5]
    impact = decision_impact(pred, fixed, thresholds=t, n_bootstrap=200)
    # the recalibrated net benefit computed on its own, from re-sorted predictions
    again = Predictions.from_arrays(fixed, pred.label, pred.weight if weighted else None)
    expected = net_benefit(again, thresholds=t).model - net_benefit(pred, thresholds=t).model
    np.testing.assert_allclose(impact.loss_per_1000, 1000 * expected, atol=1e-9)
    assert np.all(impact.ci_low <= impact.loss_per_1000)
    assert np.all(impact.loss_per_1000 <= impact.ci_high)
    assert np.all(impact.loss_per_1000 > 0)  # fixing an under-prediction pays


def test_cell_bootstrap_matches_the_row_bootstrap():
    """Unweighted 0/1 rows: the cell bootstrap is the row bootstrap (same distribution)."""
    pred, fixed = _data(400, 2)
    t = np.array([0.3])
    impact = decision_impact(pred, fixed, thresholds=t, n_bootstrap=4000, seed=1)
    rng = np.random.default_rng(5)
    odds = t[0] / (1 - t[0])
    losses = []
    for _ in range(4000):
        rows = rng.integers(0, pred.n, pred.n)
        y, s, f = pred.label[rows], pred.score[rows], fixed[rows]
        u = y - (1 - y) * odds
        losses.append(1000 * np.mean(((f >= t[0]).astype(float) - (s >= t[0])) * u))
    low, high = np.quantile(losses, [0.025, 0.975])
    assert impact.ci_low[0] == pytest.approx(low, abs=0.15 * (high - low))
    assert impact.ci_high[0] == pytest.approx(high, abs=0.15 * (high - low))


def test_unchanged_decisions_cost_nothing():
    pred, _ = _data(500, 3)
    impact = decision_impact(pred, pred.score.copy(), thresholds=[0.2, 0.6], n_bootstrap=50)
    assert impact.loss_per_1000.tolist() == [0.0, 0.0]
    assert impact.ci_low.tolist() == [0.0, 0.0]
    assert impact.ci_high.tolist() == [0.0, 0.0]
    assert "does not change decisions" in impact.sentences()[0]


def test_sentences():
    assert impact_sentence(0.3, 4.1, 2.0, 6.3, 0.1) == (
        "at a threshold of 0.3, this miscalibration costs 4.1 net true positives per 1,000 "
        "decisions (CI 2.0–6.3)")
    assert "within noise" in impact_sentence(0.3, 0.5, -1.0, 2.0, 0.01)
    assert "do worse" in impact_sentence(0.3, -2.0, -3.0, -1.0, 0.01)


def test_bad_input():
    pred, fixed = _data(100, 4)
    with pytest.raises(ValidationError, match="thresholds must lie in"):
        decision_impact(pred, fixed, thresholds=[1.2])
    with pytest.raises(ValidationError, match="99 values for 100 rows"):
        decision_impact(pred, fixed[:-1])
    with pytest.raises(ValidationError, match=r"must lie in \[0, 1\]"):
        decision_impact(pred, fixed + 2)


def test_sentences_only_at_computed_thresholds():
    pred, fixed = _data(300, 6)
    impact = decision_impact(pred, fixed, thresholds=[0.2, 0.3], n_bootstrap=50)
    assert len(impact.sentences([0.3])) == 1
    with pytest.raises(ValidationError, match="were not computed"):
        impact.sentences([0.25])

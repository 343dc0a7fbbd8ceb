"""The findings fix follows the shape of each finding, and every method is judged alike.

Shapes against closed forms (data drawn from each shape exactly); one judged family for every
method on the same rows; one tie order (the split reads no label).
"""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

from mcviz.io import Predictions, load_predictions
from mcviz.recalibration import Recalibrator, holdout_split, verify_fix
from mcviz.recalibration.simulate import planted_fix_data

N = 80_000
FINDING = SimpleNamespace(description='g == "a"', p_adjusted=1e-12, p_kind="brownian",
                          confirmed=True)


def _data(shape: str, seed: int = 0) -> Predictions:
    rng = np.random.default_rng(seed)
    z = rng.normal(-0.3, 1.2, N)
    s = expit(z)  # calibrated outside the finding
    inside = rng.random(N) < 0.5
    truth = s.copy()
    if shape == "offset":
        truth[inside] = expit(z[inside] + 0.7)
    elif shape == "slope":
        truth[inside] = expit(0.5 * z[inside])
    else:  # the rate 10 points above the score (scores below 0.85 only, so no clipping)
        keep = s < 0.85
        s, truth, inside, z = s[keep], truth[keep], inside[keep], z[keep]
        truth[inside] = s[inside] + 0.10
    y = (rng.random(s.size) < truth).astype(float)
    covariates = pd.DataFrame({"g": pd.Categorical(np.where(inside, "a", "b"))})
    return Predictions.from_arrays(s, y, covariates=covariates)


@pytest.mark.parametrize(("shape", "a", "b"), [
    ("offset", 1.0, 0.7), ("slope", 0.5, 0.0), ("additive", 0.0, 0.10)])
def test_each_shape_is_recognised_and_fitted(shape, a, b):
    pred = _data(shape)
    fix = Recalibrator("findings", findings=[FINDING]).fit(pred)
    # the base: Platt on the rows outside the finding, calibrated there (0 + 1 logit s)
    assert fix.coefficients[:2] == pytest.approx([0.0, 1.0], abs=0.06)
    (term,) = fix.terms
    assert term.shape == shape
    assert term.a == pytest.approx(a, abs=0.06)
    assert term.b == pytest.approx(b, abs=0.06 if shape != "additive" else 0.01)
    words = {"offset": "the odds ×", "slope": "logit p ×", "additive": "the rate +"}[shape]
    assert words in fix.describe()
    again = Recalibrator.from_json(fix.to_json())
    np.testing.assert_array_equal(again.transform(pred), fix.transform(pred))


def test_a_term_changes_only_the_rows_of_its_finding():
    pred = _data("slope", seed=1)
    fix = Recalibrator("findings", findings=[FINDING]).fit(pred)
    inside = (pred.covariates["g"] == "a").to_numpy()
    base = expit(fix.coefficients[0] + fix.coefficients[1] * logit(pred.score))
    np.testing.assert_allclose(fix.transform(pred)[~inside], base[~inside], rtol=1e-12)
    assert np.max(np.abs(fix.transform(pred)[inside] - base[inside])) > 0.05


def _planted(n=20_000, seed=1):
    return load_predictions(planted_fix_data(n, seed=seed).drop(columns="truth"),
                            score="score", label="label")


def test_before_is_the_same_for_every_method():
    pred = _planted()
    results = {m: verify_fix(pred, method=m, n_subpopulations=100)
               for m in ("platt", "isotonic", "findings")}
    first = results["platt"]
    for result in results.values():
        assert result.findings == first.findings
        np.testing.assert_array_equal(result.eval_index, first.eval_index)
        for name in ("metric", "metric_z", "ece", "smece", "log_loss", "brier",
                     "findings_kuiper_z"):
            assert getattr(result.before, name) == getattr(first.before, name)
    assert results["findings"].terms  # its terms are judged beside the family, not in it
    assert len(results["findings"].before.terms_kuiper_z) == len(results["findings"].terms)


def test_before_is_the_same_for_every_method_when_no_finding_dominates_m():
    # calibrated rows: M is the largest D/sigma over the Algorithm-1 subpopulations themselves,
    # so a family that differed between methods (other subpopulations) would show in M
    frame = planted_fix_data(6_000, seed=4, calibrated=True).drop(columns="truth")
    pred = load_predictions(frame, score="score", label="label", weight=False)
    before = {m: verify_fix(pred, method=m, n_subpopulations=60, search=False).before
              for m in ("platt", "isotonic", "findings")}
    assert len({(side.metric, side.metric_z) for side in before.values()}) == 1, before


def test_the_split_reads_no_label():
    # the same scores, weights and covariates with other labels: the same split (the search's
    # tie order; a split hashing labels into the order of tied rows would move rows)
    frame = planted_fix_data(4_000, seed=3).drop(columns="truth")
    frame["score"] = frame["score"].round(2)  # many ties
    flipped = frame.assign(label=1 - frame["label"])
    a = load_predictions(frame, score="score", label="label")
    b = load_predictions(flipped, score="score", label="label")
    for seed in (0, 1, 2):
        fit_a, held_a = holdout_split(a, 0.5, seed)
        fit_b, held_b = holdout_split(b, 0.5, seed)
        assert sorted(a.row[held_a]) == sorted(b.row[held_b])
        assert sorted(a.row[fit_a]) == sorted(b.row[fit_b])

"""Verdicts follow their intervals: "better"/"worse" only when the 95% CI excludes 0.

The rule and its words at an interval just above 0, straddling 0 and just below 0, for the
change's direction and for the recommendation; the log-loss change and the bands against
closed forms.
"""

import numpy as np
import pytest

from mcviz.io import Predictions
from mcviz.recalibration import Change, rescored
from mcviz.recalibration.judge import band_shifts, loss_change
from mcviz.recalibration.verify import recommend

EPS = 1e-9
ABOVE = Change(mean=0.002, low=EPS, high=0.004)  # the whole interval above 0: worse
STRADDLING = Change(mean=0.0005, low=-0.001, high=0.002)  # mean above 0, interval across it
STRADDLING_BELOW = Change(mean=-0.0005, low=-0.002, high=0.001)
BELOW = Change(mean=-0.002, low=-0.004, high=-EPS)  # the whole interval below 0: better


@pytest.mark.parametrize(("change", "word"), [
    (ABOVE, "worse"), (STRADDLING, "no meaningful change"), (BELOW, "better"),
    (STRADDLING_BELOW, "no meaningful change"),
    (Change(mean=0.001, low=0.0, high=0.002), "no meaningful change"),  # touches 0
    (Change(mean=-0.001, low=-0.002, high=0.0), "no meaningful change"),
])
def test_the_direction_follows_the_interval(change, word):
    assert change.direction == word
    assert change.sentence("held-out log loss").startswith(f"held-out log loss: {word} (")
    assert change.as_json()["direction"] == word


@pytest.mark.parametrize(("change", "recommended"), [
    (ABOVE, False), (STRADDLING, True), (STRADDLING_BELOW, True), (BELOW, True)])
def test_a_fix_is_recommended_unless_its_log_loss_is_worse_beyond_noise(change, recommended):
    ok, reason = recommend(change, ())
    assert ok is recommended
    assert reason.startswith("recommended:" if recommended else "not recommended:")
    if not recommended:
        assert "held-out log loss got worse beyond noise" in reason


@pytest.mark.parametrize(("change", "recommended"), [
    (ABOVE, False), (STRADDLING, True), (BELOW, True)])
def test_no_confirmed_finding_may_get_worse_beyond_noise(change, recommended):
    ok, reason = recommend(BELOW, (("age >= 60", BELOW), ("region == r3", change)))
    assert ok is recommended
    assert ("'region == r3' got worse beyond noise" in reason) is not recommended
    assert "'age >= 60'" not in reason


def test_loss_change_against_the_closed_form():
    # 4 rows, labels 1,1,0,0; before every score 0.5 (loss ln 2 each); after 0.8 everywhere
    # (loss -ln 0.8 for a 1, -ln 0.2 for a 0): the per-row changes are -ln 0.8 - ln 2 (twice)
    # and -ln 0.2 - ln 2 (twice); se^2 = k/(k-1) * sum (d - mean)^2 / k^2 with k = 4
    before = Predictions.from_arrays(np.full(4, 0.5), np.array([1, 1, 0, 0]))
    after, position = rescored(before, np.full(4, 0.8))
    d = np.array([-np.log(0.8) - np.log(2)] * 2 + [-np.log(0.2) - np.log(2)] * 2)
    mean = d.mean()
    se = np.sqrt(4 / 3 * np.sum((d - mean) ** 2) / 16)
    change = loss_change(before, after, position)
    assert change.mean == pytest.approx(mean, rel=1e-12)
    assert change.low == pytest.approx(mean - 1.959963984540054 * se, rel=1e-12)
    assert change.high == pytest.approx(mean + 1.959963984540054 * se, rel=1e-12)


def test_a_band_the_fix_pushed_off_is_named_and_the_others_are_not():
    rng = np.random.default_rng(0)
    n = 40_000
    s = rng.uniform(0.1, 0.9, n)
    y = (rng.random(n) < s).astype(float)  # calibrated everywhere
    group = rng.integers(0, 4, n)
    import pandas as pd

    pred = Predictions.from_arrays(s, y, covariates=pd.DataFrame(
        {"g": pd.Categorical([f"g{k}" for k in group])}))
    fixed = pred.score.copy()
    in_g2 = (pred.covariates["g"] == "g2").to_numpy()
    fixed[in_g2] = np.clip(fixed[in_g2] + 0.05, 0, 1)  # 10,000 rows pushed 5 points up:
    # z about -0.05 * 10,000 / sqrt(10,000 * 0.2) = -11
    after, position = rescored(pred, fixed)
    bands = {b.band: b for b in band_shifts(pred, after, position, ["g"])}
    assert set(bands) == {"g = g0", "g = g1", "g = g2", "g = g3"}
    assert bands["g = g2"].moved
    assert bands["g = g2"].z_after < -8
    assert not any(b.moved for name, b in bands.items() if name != "g = g2")
    assert all(b.z_before == b.z_after for name, b in bands.items() if name != "g = g2")


def test_the_band_bound_holds_its_level_on_calibrated_rows():
    # 31 bands (the planted data's four covariates), labels drawn from the true probabilities and
    # the true probabilities as the fix: the largest |z| over the bands passes band_bound(31)
    # (3.15) in about alpha = 5% of draws (Bonferroni; measured 5.05% of 2,000 draws at 2 x 10^4
    # rows), where a fixed 2.5 is passed in 28% of them. 400 draws: Binomial(400, 0.05) exceeds
    # 34 with probability < 0.001; Binomial(400, 0.25) stays below 80 with probability < 1e-3.
    from dataclasses import replace

    from mcviz.io import load_predictions
    from mcviz.recalibration.judge import band_bound
    from mcviz.recalibration.simulate import planted_fix_data

    covariates = ["region", "age", "channel", "tenure"]
    frame = planted_fix_data(5_000, seed=11, calibrated=True)
    pred = load_predictions(frame.drop(columns="truth"), score="score", label="label",
                            covariates=covariates)
    truth = frame["truth"].to_numpy()[pred.row]
    rng = np.random.default_rng(0)
    position = np.arange(pred.n)
    beyond_bound = beyond_fixed = 0
    for _ in range(400):
        drawn = replace(pred, label=(rng.random(pred.n) < truth).astype(pred.label.dtype))
        bands = band_shifts(drawn, drawn, position, covariates)
        top = max(abs(b.z_after) for b in bands)
        assert len(bands) == 31
        assert bands[0].bound == pytest.approx(band_bound(31))
        beyond_bound += top > bands[0].bound
        beyond_fixed += top > 2.5
    assert band_bound(31) == pytest.approx(3.1536, abs=1e-4)  # Phi^-1(1 - 0.05 / 62)
    assert beyond_bound <= 34, beyond_bound
    assert beyond_fixed >= 80, beyond_fixed  # the bound matters: 2.5 alone fails the level

"""The next step of a fix and of monitoring (dashboard.fixing, dashboard.monitor) in the verdict."""

from __future__ import annotations

import re

from types import SimpleNamespace as R

import numpy as np
import pandas as pd
import pytest

from dashboard import fixing
from dashboard import monitor as mon
from mcviz.io import load_predictions
from mcviz.present.verdict import review_verdict


@pytest.mark.parametrize(("accepted", "meaningful", "word"), [
    (True, True, "Ship the platt fix"),
    (True, False, "Don't ship the platt fix yet"),  # within noise: not worth shipping
    (False, False, "Don't ship the platt fix:"),  # held-out log loss worse
])
def test_fix_next_step_follows_its_held_out_judgement(accepted, meaningful, word):
    result = R(method="platt", accepted=accepted, meaningful=meaningful, n_eval=1000,
               verdict="the platt fix removes 60% of held-out M; held-out log loss: better "
               "(−2.5e-05 per row, 95% CI −4e-05 to −1e-05)", metric_reduction=0.6,
               log_loss_change=R(direction="better" if meaningful else "no meaningful change"))
    step = fixing.fix_next_step(result)
    assert step.startswith(word)
    assert ("Ship" in step) == (accepted and meaningful)
    # words for the meeting (#40): no statistic's symbol, no scientific notation
    assert not re.search(r"\bM\b|e-0|e−0|σ|\bp [=<]", step), step
    if accepted and meaningful:
        assert "removes 60% of the worst subpopulation's miscalibration" in step
        assert "score better" in step


def test_a_fix_and_a_monitor_alarm_replace_the_verdicts_next_step():
    from mcviz.monitor import MonitorSettings, monitor_calibration
    from mcviz.recalibration import verify_fix

    rng = np.random.default_rng(4)
    n = 12_000
    day = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.arange(n) % 60, unit="D")
    region = rng.choice(["north", "south"], n)
    score = rng.uniform(0.2, 0.8, n)
    late = (np.arange(n) % 60 >= 40) & (region == "south")  # from day 40, south drifts up
    label = (rng.random(n) < np.clip(score + 0.25 * late, 0, 1)).astype(int)
    frame = pd.DataFrame({"score": score, "y": label, "region": region, "day": day})
    pred = load_predictions(frame, score="score", label="y", covariates=["region", "day"],
                            nominal=["region"])
    verdict = review_verdict(R(kuiper_z=1.0, p_value=0.6, n=n, path=None))
    watched = monitor_calibration(pred,
                                  settings=MonitorSettings(time="day", segments=["region"],
                                                           draws=99))
    assert watched.alarms
    section = mon.verdict_section(watched)
    step = verdict.with_sections(section).next_step
    assert step.startswith("Look at ")
    assert "south" in step and "==" not in step  # the segment in words
    first = next(s for s in watched.alarms if s.subpopulation.conditions)  # south, not all rows
    assert f"from the {watched.periods.period} of {watched.label(first.first_alarm)}" in step
    fix = verify_fix(pred, method="platt", holdout=0.5, seed=0, covariates=["region"])
    impact = fixing.scope_impact(fix, fixing.scope_view(fix, fixing.FULL), (0.5,),
                                 n_bootstrap=20)
    fixed = verdict.with_sections(section, fixing.fix_section(fix, impact, (0.5,)))
    assert fixed.next_step == fixing.fix_next_step(fix)  # the last section's step wins


def test_a_recommended_fix_that_moved_nothing_is_not_shipped():
    # seen on the Review walk (#40): "Ship the findings fix: ... adds 0.0649% to the worst
    # subpopulation's miscalibration, and its probabilities score neither better nor worse"
    within = R(direction="no meaningful change")
    result = R(method="findings", accepted=True, recommended=True, meaningful=False,
               n_eval=24_421, metric_reduction=-0.000649, log_loss_change=within,
               finding_changes=(("age >= 60", within),))
    step = fixing.fix_next_step(result)
    assert step.startswith("Don't ship the findings fix yet"), step
    repaired = R(**{**vars(result), "finding_changes": (("age >= 60", R(direction="better")),)})
    assert fixing.fix_next_step(repaired).startswith("Ship the findings fix"), repaired

"""The verdict's sentences (mcviz.present.verdict) on planted and calibrated data, and by hand."""

from __future__ import annotations

from types import SimpleNamespace as R

import numpy as np
import pandas as pd
import pytest

from mcviz import load_predictions
from mcviz.stats.cumulative import cumulative_differences
from mcviz.stats.deviation import subpopulation_deviation
from mcviz.search import search_subpopulations
from mcviz.subpopulations import filter_subpopulation
from mcviz.present.verdict import (
    Section,
    calibration_sentence,
    multicalibration_sentence,
    review_verdict,
)


def _frame(n: int, seed: int, *, planted: float) -> pd.DataFrame:
    """Calibrated scores, except region == "r7" whose responses are raised by ``planted``."""
    rng = np.random.default_rng(seed)
    score = rng.uniform(0.05, 0.8, n)
    region = rng.choice([f"r{i}" for i in range(10)], n)
    rate = np.clip(score + planted * (region == "r7"), 0, 1)
    return pd.DataFrame({"score": score, "y": (rng.random(n) < rate).astype(int),
                         "region": region, "age": rng.integers(20, 70, n)})


@pytest.fixture(scope="module")
def planted():
    pred = load_predictions(_frame(20_000, 1, planted=0.15), score="score", label="y",
                            covariates=["region", "age"], nominal=["region"])
    return pred, search_subpopulations(pred, max_conditions=2, n_findings=3, seed=0)


def test_planted_finding_is_stated_with_effect_interval_share_and_adjusted_p(planted):
    pred, search = planted
    verdict = review_verdict(cumulative_differences(pred), total=pred.n, search=search)
    # r7 holds ~10% of rows, raised by 15 points: miscalibrated overall and found
    assert verdict.calibrated is False
    assert "miscalibrated beyond chance" in verdict.sentences[0]
    assert verdict.findings, verdict.sentences
    first = verdict.findings[0]
    assert "r7" in first.expression
    assert first.p_adjusted == "< 0.0001"
    assert first.effect.startswith("+")
    assert first.effect.endswith(" points")
    low, high = (float(part.split()[0]) for part in first.interval.split(" to "))
    assert low < float(first.effect[1:].split()[0]) < high
    assert low + 5 > 10
    assert high < 25
    assert first.sentence in verdict.sentences
    assert 2 <= len(verdict.sentences) <= 2 + len(search.findings)
    assert any("Holm" in line for line in verdict.appendix)


def test_calibrated_data_says_within_chance_and_gives_the_mde():
    pred = load_predictions(_frame(6_000, 2, planted=0.0), score="score", label="y",
                            covariates=["region", "age"], nominal=["region"])
    search = search_subpopulations(pred, max_conditions=1, n_findings=3, seed=0)
    verdict = review_verdict(cumulative_differences(pred), total=pred.n, search=search)
    if all(f.p_adjusted >= 0.05 for f in search.findings):  # seed 2: nothing is confirmed
        assert verdict.findings == ()
        assert "confirmed no subpopulation" in verdict.text
        assert "would have found a gap of" in verdict.sentences[-1]
    cumulative = cumulative_differences(pred)
    assert ("within what chance" in verdict.sentences[0]) == (cumulative.p_value >= 0.05)


def test_subpopulation_scope_speaks_of_its_deviation(planted):
    pred, _ = planted
    sub = filter_subpopulation(pred, 'region == "r7"')
    deviation = subpopulation_deviation(pred, sub.index, description=sub.description)
    sentence, ok = calibration_sentence(deviation, description=sub.description, total=pred.n,
                                        deviation=True)
    assert not ok
    assert sentence.startswith(f"The subpopulation {sub.description} ({sub.size:,} rows, ")
    assert "deviates from the full population" in sentence


@pytest.mark.parametrize(("p", "words"), [
    (0.00004, "beyond chance: p < 0.0001 from 200"),
    (0.03, "beyond chance: p = 0.03 from 200"),
    (0.31, "within what chance produces: p = 0.31 from 200"),
])
def test_multicalibration_against_its_null(p, words):
    m = R(metric_z=4.2, n_subpopulations=1000, argmax=R(description="age >= 40"))
    assert words in multicalibration_sentence(m, R(p_value=p, draws=200))


def test_untested_multicalibration_names_the_cost():
    m = R(metric_z=4.2, n_subpopulations=1000, argmax=R(description="age >= 40"))
    text = multicalibration_sentence(m, None, estimate="about 3.5 s")
    assert "not yet tested against chance" in text
    assert "about 3.5 s" in text
    verdict = review_verdict(R(kuiper_z=1.0, p_value=0.9, n=10), multicalibration=m)
    assert len(verdict.sentences) == 2
    assert verdict.findings == ()


def test_sections_extend_the_verdict():
    verdict = review_verdict(R(kuiper_z=1.0, p_value=0.9, n=10))
    extended = verdict.with_sections(Section("Decision", ("At threshold 0.5 ...",)))
    assert verdict.sections == ()
    assert extended.sections[0].title == "Decision"
    assert extended.sentences == verdict.sentences

"""The verdict in words (mcviz.present.verdict): planted and calibrated data, and by hand.

Each rule is checked against what the data were built to hold (a planted group, calibrated
responses) or against the rule's threshold written out (p = 0.049, 0.05, 0.07), never against
the verdict's own output.
"""

from __future__ import annotations

import re
from types import SimpleNamespace as R

import numpy as np
import pandas as pd
import pytest

from mcviz import load_predictions
from mcviz.present.verdict import (
    Section,
    Selection,
    calibration_sentence,
    multicalibration_sentence,
    review_verdict,
    selected_sentence,
    signed_number,
    stated_direction,
)
from mcviz.search import search_subpopulations
from mcviz.stats.cumulative import cumulative_differences, mean_rates
from mcviz.stats.deviation import subpopulation_deviation
from mcviz.subpopulations import filter_subpopulation, parse_filter, select_rows
from mcviz.subpopulations.words import FILTER_OPERATORS

SYMBOLS = re.compile(r"D/σ|M/σ|σ|\bp [=<]|\bp-value|VECE|vce_at|CVaR|Fₖ|ĝ|α")
"""Statistical symbols a headline never holds (they belong to the details line)."""


def _frame(n: int, seed: int, *, planted: float) -> pd.DataFrame:
    """Calibrated scores, except region == "r7" whose responses are moved by ``planted``."""
    rng = np.random.default_rng(seed)
    score = rng.uniform(0.25, 0.75, n)
    region = rng.choice([f"r{i}" for i in range(10)], n)
    rate = np.clip(score + planted * (region == "r7"), 0, 1)
    return pd.DataFrame({"score": score, "y": (rng.random(n) < rate).astype(int),
                         "region": region, "age": rng.integers(20, 70, n)})


def _planted(planted: float, *, n: int = 20_000, seed: int = 1):
    pred = load_predictions(_frame(n, seed, planted=planted), score="score", label="y",
                            covariates=["region", "age"], nominal=["region"])
    return pred, search_subpopulations(pred, max_conditions=2, n_findings=3, seed=0)


@pytest.fixture(scope="module", params=[0.15, -0.15], ids=["more", "fewer"])
def planted(request):
    return request.param, *_planted(request.param)


def test_planted_finding_one_sign_everywhere(planted):
    shift, pred, search = planted
    verdict = review_verdict(cumulative_differences(pred), total=pred.n, search=search,
                             rates=mean_rates(pred))
    assert verdict.findings, verdict.sentences
    first = verdict.findings[0]
    assert "r7" in first.expression
    finding = next(f for f in search.findings if f.rank == first.rank)
    # the planted shift's sign (observed - predicted) is the sign of every statement of it
    sign = 1 if shift > 0 else -1
    assert np.sign(finding.mean_residual) == sign
    assert np.sign(signed_number(first.effect)) == sign
    assert first.direction == sign
    assert stated_direction(first.sentence) == sign
    low, high = (signed_number(part) for part in first.interval.split(" to "))
    assert low < signed_number(first.effect) < high
    assert (low > 0) if sign > 0 else (high < 0)
    # the same digits in the sentence as in the effect: one number
    assert first.effect.lstrip("+−") in first.sentence
    assert f"{abs(low):g}" in first.sentence and f"{abs(high):g}" in first.sentence
    # ~15 points planted in ~10% of rows: the interval holds it
    near, far = sorted((abs(low), abs(high)))
    assert near - 5 < 15 < far + 5
    assert first.sentence in verdict.sentences
    assert "Open Fix" in verdict.next_step
    assert verdict.next_step.endswith(".")
    assert not re.search(r"[.!?] [A-Z]", verdict.next_step)  # one sentence


def test_finding_sentences_hold_no_filter_operator_and_descriptions_reparse(planted):
    _, pred, search = planted
    assert search.findings
    for finding in search.findings:
        assert not any(op in finding.sentence for op in FILTER_OPERATORS), finding.sentence
        rows = select_rows(pred, parse_filter(finding.description, pred))
        np.testing.assert_array_equal(rows, finding.subpopulation.index)


def test_a_finding_slide_is_titled_by_its_group_in_words(planted):
    """#40: the deck's finding title is the sentence's group, never the filter's raw bounds."""
    from mcviz.present.deck import group_words

    _, pred, search = planted
    lines = review_verdict(cumulative_differences(pred), total=pred.n, search=search).findings
    assert lines
    for line in lines:
        assert line.group and line.sentence.startswith(f"Among rows with {line.group} (")
        assert group_words(line) == line.group
        assert not any(op in line.group for op in FILTER_OPERATORS)
    assert any("region is r7" in line.group for line in lines)


def test_headlines_hold_no_statistical_symbol(planted):
    _, pred, search = planted
    verdict = review_verdict(cumulative_differences(pred), total=pred.n, search=search,
                             rates=mean_rates(pred))
    for sentence in (*verdict.sentences, verdict.next_step):
        assert not SYMBOLS.search(sentence), sentence
    assert any("D/σ" in line for line in verdict.details)  # the numbers are in the details
    assert any("adjusted p" in line for line in verdict.details)


def test_calibrated_data_says_within_chance_and_what_could_be_missed():
    pred = load_predictions(_frame(6_000, 2, planted=0.0), score="score", label="y",
                            covariates=["region", "age"], nominal=["region"])
    search = search_subpopulations(pred, max_conditions=1, n_findings=3, seed=0)
    cumulative = cumulative_differences(pred)
    verdict = review_verdict(cumulative, total=pred.n, search=search, rates=mean_rates(pred))
    assert not any(f.confirmed for f in search.findings)  # seed 2: nothing is confirmed
    assert verdict.findings == ()
    assert "confirmed no group" in verdict.text
    assert "would have found, 4 times in 5, a group of 1% of the rows off by" in verdict.text
    assert ("within what chance" in verdict.sentences[0]) == (cumulative.p_value >= 0.05)
    # 6,000 rows cannot see 2 points in 5% of them (the MDE there is larger): more rows
    mde5 = dict(zip(search.mde.shares, search.mde.shift, strict=True))[0.05]
    assert mde5 > 0.02
    assert verdict.next_step.startswith("Collect more rows")
    factor = (mde5 / 0.02) ** 2
    assert f"about {factor:.2g} times as many rows" in verdict.next_step


def test_enough_rows_say_nothing_to_fix_with_the_mde():
    mde = R(shares=(0.01, 0.05, 0.2), shift=np.array([0.03, 0.015, 0.007]), power=0.8,
            alpha=0.05, n_tests=5)
    search = R(findings=(), mde=mde, candidates_scored=10, n_search=7, n_holdout=3,
               max_conditions=1, covariates=("a",))
    verdict = review_verdict(R(kuiper_z=1.0, p_value=0.6, n=10**6, path=None), search=search)
    assert verdict.next_step.startswith("Nothing to fix: no group is confirmed, and the search")
    assert not re.search(r"[.!?] [A-Z]", verdict.next_step)  # one sentence
    assert "off by 1.5 points" in verdict.next_step  # the MDE at 5% in words


@pytest.mark.parametrize(("p", "beyond"), [(0.049, True), (0.05, False), (0.07, False)])
def test_wording_at_the_level(p, beyond):
    result = R(kuiper_z=2.5, p_value=p, n=1000, path=None)
    full, ok = calibration_sentence(result)
    assert ok is (not beyond)
    assert ("miscalibrated beyond chance" in full) is beyond
    assert ("within what chance produces" in full) is (not beyond)
    sub, ok = calibration_sentence(result, description="age 40 or more", total=5000,
                                   deviation=True)
    assert ("beyond chance" in sub) is beyond and ok is (not beyond)
    # a selected group: the adjusted p decides, with the same threshold
    said, ok = selected_sentence(Selection(1000, p_adjusted=p, draws=200),
                                 description="x", size=10, total=100)
    assert ("beyond chance" in said) is beyond and ok is (not beyond)
    m = R(metric_z=4.2, n_subpopulations=1000, argmax=R(description="age >= 40", size=10))
    assert ("beyond chance" in multicalibration_sentence(m, R(p_value=p, draws=200))) is beyond
    # a finding: Finding.confirmed, the one rule
    from mcviz.search._confirm import is_confirmed

    assert is_confirmed("brownian", p) is beyond
    assert is_confirmed("simulated", p) is beyond
    assert is_confirmed("void", p) is False


def test_a_selected_group_is_never_beyond_chance_on_its_own_p():
    # own p = 1e-9 (D/σ 6.9), but it is the largest of 1,000: untested until the null exists
    own = R(kuiper_z=6.9, p_value=1e-9, n=120)
    untested = review_verdict(own, description="age 40 or more", total=1000, deviation=True,
                              selection=Selection(1000))
    assert "Largest of 1,000: not yet tested against chance." in untested.sentences[0]
    assert "beyond chance" not in untested.text
    assert untested.calibrated is None
    assert "0.0001" not in " ".join(untested.details)  # its own p is not shown
    assert untested.next_step.startswith("Test the largest deviation against chance")
    # then its adjusted p decides, both ways
    tested = review_verdict(own, description="age 40 or more", total=1000, deviation=True,
                            selection=Selection(1000, p_adjusted=0.31, draws=200))
    assert "within what chance produces" in tested.sentences[0]
    assert "Adjusted p = 0.31 (max statistic over 1,000 generated subpopulations, 200 null draws)." \
        in tested.details
    beyond = review_verdict(own, description="age 40 or more", total=1000, deviation=True,
                            selection=Selection(1000, p_adjusted=0.004, draws=200))
    assert "beyond chance" in beyond.sentences[0] and beyond.calibrated is False


def test_argmax_scope_of_the_dashboard_before_and_after_the_null():
    from dashboard import review
    from dashboard.runs import Run, Scope
    from mcviz.stats.multical import multicalibration
    from mcviz.stats.significance import null_distribution
    from mcviz.subpopulations import generate_subpopulations

    pred = load_predictions(_frame(4_000, 3, planted=0.0), score="score", label="y",
                            covariates=["region", "age"], nominal=["region"])
    subsets = generate_subpopulations(pred, n_subpopulations=200, seed=0)
    result = multicalibration(pred, subsets.subpopulations)
    run = Run(0, subsets, result)
    scope = Scope("argmax", result.argmax)
    results = review.review_results(pred, scope, variable=None, bins=(10,))
    own_p = float(results.cumulative.p_value)
    before = review.scope_verdict(pred, results, (run,), scope=scope)
    assert "Largest of 200: not yet tested against chance." in before.sentences[0]
    assert "beyond chance" not in before.sentences[0]
    null = null_distribution(pred, subsets, draws=39, seed=0)
    after = review.scope_verdict(pred, results, (run,), null=null, scope=scope)
    position = [s.id for s in result.subpopulations].index(result.argmax.id)
    adjusted = float(null.p_adjusted[position])
    assert adjusted > own_p  # choosing the largest costs: the adjusted p is the larger
    from mcviz.text import format_p

    assert (f"Adjusted p = {format_p(adjusted)} (max statistic over 200 generated "
            "subpopulations, 39 null draws).") in after.details
    assert ("beyond chance" in after.sentences[0]) == (adjusted < 0.05)
    assert "not yet tested" not in after.sentences[0]


def test_subpopulation_scope_speaks_of_its_deviation_in_words():
    pred, _ = _planted(0.15, n=8_000)
    sub = filter_subpopulation(pred, 'region == "r7"')
    deviation = subpopulation_deviation(pred, sub.index, description=sub.description)
    sentence, ok = calibration_sentence(deviation, description="region is r7", total=pred.n,
                                        deviation=True, rates=mean_rates(pred, index=sub.index))
    assert not ok
    assert sentence.startswith(f"The subpopulation region is r7 ({sub.size:,} rows, ")
    assert "deviates from the full population's calibration beyond chance" in sentence
    predicted, observed = mean_rates(pred, index=sub.index)
    assert observed > predicted + 0.1  # planted +15 points
    assert re.search(r"predicted \d+(\.\d+)?% positive and \d+(\.\d+)?% were", sentence)


def test_deviation_names_the_band_and_the_positives_against_the_full_population():
    """A subpopulation that is calibrated on average but short of positives in one score band:
    the sentence names that band and about how many positives it lacks against the full
    population at the same scores (simulated: every 5th row is the subpopulation; between
    scores 0.4 and 0.6 its labels are drawn at score - 0.25 and elsewhere at score + 0.05, so
    the full population there drops by 0.25/5 and the planted gap is 0.25 * 4/5 per row)."""
    from mcviz.io import Predictions

    rng = np.random.default_rng(3)
    n = 40_000
    score = np.sort(rng.random(n))
    label = (rng.random(n) < score).astype(float)
    sub = np.arange(n) % 5 == 0
    band = sub & (score > 0.4) & (score < 0.6)
    label[band] = rng.random(band.sum()) < score[band] - 0.25
    rest = sub & ~band
    label[rest] = rng.random(rest.sum()) < np.minimum(score[rest] + 0.05, 1.0)
    pred = Predictions.from_arrays(score, label)
    deviation = subpopulation_deviation(pred, np.flatnonzero(sub))
    sentence, ok = calibration_sentence(deviation, description="every fifth", total=n,
                                        deviation=True, rates=mean_rates(pred, index=sub))
    assert not ok
    found = re.search(r"the largest gap is where its scores run from (\d+)% to (\d+)%: about "
                      r"([\d,]+) fewer positives than the full population has at the same "
                      r"scores\.$", sentence)
    assert found, sentence
    low, high, count = int(found[1]), int(found[2]), int(found[3].replace(",", ""))
    assert 30 <= low <= 42 and 58 <= high <= 70, sentence
    planted = 0.25 * 0.8 * band.sum()  # about 320 positives
    assert abs(count - planted) < 0.25 * planted, (count, planted)
    # within chance of the full population (the same rows' labels drawn at the score): no band
    calibrated = Predictions.from_arrays(score, (rng.random(n) < score).astype(float))
    same, ok = calibration_sentence(subpopulation_deviation(calibrated, np.flatnonzero(sub)),
                                    description="every fifth", total=n, deviation=True)
    assert ok and "largest gap" not in same, same


def test_untested_multicalibration_names_the_cost_and_the_next_step():
    m = R(metric_z=4.2, n_subpopulations=1000, argmax=R(description="age >= 40", size=7))
    text = multicalibration_sentence(m, None, estimate="about 3.5 s", words="age 40 or more")
    assert "Largest of 1,000: not yet tested against chance (testing takes about 3.5 s)." in text
    verdict = review_verdict(R(kuiper_z=1.0, p_value=0.9, n=10, path=None), multicalibration=m)
    assert len(verdict.sentences) == 2
    assert verdict.findings == ()
    assert verdict.next_step.startswith("Test the largest deviation")


def test_sections_extend_the_verdict_and_their_next_step_wins():
    verdict = review_verdict(R(kuiper_z=1.0, p_value=0.9, n=10, path=None))
    extended = verdict.with_sections(Section("Decision", ("At threshold 0.5 ...",)))
    assert verdict.sections == ()
    assert extended.sections[0].title == "Decision"
    assert extended.sentences == verdict.sentences
    assert extended.next_step == verdict.next_step  # a section without a next step
    fixed = extended.with_sections(Section("Fix", ("...",), next_step="Ship the fix."))
    assert fixed.next_step == "Ship the fix."


def test_control_characters_never_reach_a_sentence():
    rng = np.random.default_rng(5)
    n = 20_000
    region = rng.choice(["a\u202eb", "line\nbreak", "tab\there", "plain"], n)
    score = rng.uniform(0.25, 0.75, n)
    rate = np.clip(score + 0.2 * (region == "a\u202eb"), 0, 1)
    frame = pd.DataFrame({"score": score, "y": (rng.random(n) < rate).astype(int),
                          "reg\u2028ion": region})
    pred = load_predictions(frame, score="score", label="y", covariates=["reg\u2028ion"],
                            nominal=["reg\u2028ion"])
    search = search_subpopulations(pred, max_conditions=1, n_findings=2, seed=0)
    verdict = review_verdict(cumulative_differences(pred), total=pred.n, search=search)
    assert verdict.findings
    controls = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
    for text in (*verdict.sentences, verdict.next_step, *verdict.details,
                 *(f.sentence for f in search.findings)):
        assert not controls.search(text), repr(text)
    assert "[U+202E]" in verdict.findings[0].sentence

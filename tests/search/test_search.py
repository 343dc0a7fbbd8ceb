"""The guided search (mcviz.search): planted groups, the null, re-parsing, Holm, the MDE."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import brentq
from scipy.stats import binom

from mcviz import (
    Predictions,
    ValidationError,
    brownian_range_sf,
    cumulative_differences,
    multicalibration,
    parse_filter,
    search_subpopulations,
)
from mcviz.core.path import run_ends
from mcviz.core.sigma import pooled_response_variance, sigma_adjacent
from mcviz.search._columns import Cut, prepare_columns
from mcviz.search._confirm import (
    effective_variance,
    holm,
    minimum_detectable_effect,
)
from mcviz.search.rules import RULES
from mcviz.settings import SearchSettings
from mcviz.stats.cumulative import sigma_bernoulli
from mcviz.subpopulations import describe_conditions, select_rows
from mcviz.subpopulations.words import FILTER_OPERATORS

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_find import GROUPS, own_z, planted, planted_rows, predictions


def _jaccard(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return np.intersect1d(a, b).size / np.union1d(a, b).size


@pytest.mark.parametrize("group", GROUPS)
def test_planted_group_is_the_first_finding(group):
    # The Done-when: every planted group whose own D/sigma over all rows is >= 8 is the
    # first finding (Jaccard >= 0.8) with p_adjusted < 0.01. At delta = 0.10 and 10^5 rows every
    # group of the generator reaches 8 (asserted, so the test cannot pass vacuously).
    frame, mask = planted(100_000, group, 0.10, seed=1)
    pred = predictions(frame)
    rows = planted_rows(pred, mask)
    assert own_z(pred, rows) >= 8
    result = search_subpopulations(pred)
    first = result.findings[0]
    assert _jaccard(first.subpopulation.index, rows) >= 0.8, first.description
    assert first.p_adjusted < 0.01
    # the direction: "over" is the over-predicted group
    assert (first.mean_residual < 0) == (group == "over")


def test_perfect_calibration_rarely_confirms_anything():
    # Under perfect calibration the held-out p-values are valid and Holm keeps the chance that
    # ANY finding has p_adjusted < 0.05 at or below 5% per draw. With 20 draws, 5 or more
    # positives has probability below 0.3% if the rate is 5%: the bound is a binomial tolerance.
    draws = 20
    positives = 0
    for seed in range(draws):
        frame, _ = planted(4000, None, 0.0, seed=100 + seed, calibrated=True)
        result = search_subpopulations(predictions(frame), seed=seed)
        positives += any(f.p_adjusted < 0.05 for f in result.findings)
    bound = int(binom.ppf(0.997, draws, 0.05))
    assert bound == 4
    assert positives <= bound


def _data_with_missing(n=3000, seed=7):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    x[rng.random(n) < 0.1] = np.nan
    level = rng.choice(["a", "b", "c", "d"], n).astype(object)
    level[rng.random(n) < 0.08] = None
    score = rng.uniform(0.1, 0.9, n)
    shift = 0.3 * (np.isnan(x) | (x > 1.0))
    label = rng.random(n) < np.clip(score + shift, 0, 1)
    return Predictions.from_arrays(score, label, covariates={
        "x": x, "level": pd.Categorical(level), "flag": rng.random(n) < 0.3})


def test_cuts_select_what_their_descriptions_select():
    # Each kind of cut on columns with missing values: the rows its mask keeps (the search's own
    # rule) equal the rows the filter language selects from its description (MISSING_RULE).
    pred = _data_with_missing()
    columns, _ = prepare_columns(pred, ["x", "level", "flag"], np.arange(pred.n))
    cuts = [Cut(0, "lt", hi=0.25), Cut(0, "ge", lo=-0.5), Cut(0, "band", lo=-0.5, hi=0.25),
            Cut(0, "missing"), Cut(0, "present"), Cut(1, "in", levels=(0,)),
            Cut(1, "in", levels=(0, 2)), Cut(1, "in", levels=(0, 1, 3)), Cut(1, "missing"),
            Cut(2, "in", levels=(1,))]
    rows = np.arange(pred.n)
    for cut in cuts:
        column = columns[cut.column]
        description = describe_conditions(cut.conditions(column))
        selected = select_rows(pred, parse_filter(description, pred))
        np.testing.assert_array_equal(np.flatnonzero(cut.mask(column, rows)), selected,
                                      err_msg=description)


def test_descriptions_reparse_to_the_same_rows():
    pred = _data_with_missing()
    result = search_subpopulations(pred, n_findings=3)
    assert result.findings
    for finding in result.findings:
        rows = select_rows(pred, parse_filter(finding.description, pred))
        np.testing.assert_array_equal(rows, finding.subpopulation.index)
    # the planted "x missing or x > 1" shows up: its rows are found by one of the findings
    planted_rows_ = np.flatnonzero(
        np.isnan(pred.covariates["x"].to_numpy()) | (pred.covariates["x"].to_numpy() > 1.0))
    assert max(_jaccard(f.subpopulation.index, planted_rows_) for f in result.findings) >= 0.8


def test_holm_by_hand():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> running max 0.06
    adjusted = holm(np.array([0.01, 0.04, 0.03, 0.005]))
    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02], rtol=1e-12)
    np.testing.assert_allclose(holm(np.array([0.6, 0.5])), [1.0, 1.0])


def test_minimum_detectable_effect_against_simulation():
    # A subpopulation of share s with R - S shifted by the MDE, tested on held-out rows at
    # alpha / 5 (Holm's first step): the share of draws with p below that is the power, 0.8 by
    # the approximation. 400 draws: binomial sd 0.02; allowed 0.8 +- 0.08.
    rng = np.random.default_rng(5)
    n, n_tests, draws = 20_000, 5, 400
    score = np.sort(rng.uniform(0.2, 0.8, n))
    sigma = sigma_bernoulli(score, np.ones(n))  # eq. (5), full population
    critical = brentq(lambda z: brownian_range_sf(z) - 0.05 / n_tests, 0.5, 10)
    for share in (0.01, 0.05, 0.2):
        held = np.zeros(n, dtype=bool)
        held[rng.choice(n, n // 2, replace=False)] = True
        rows = np.flatnonzero(held & (rng.random(n) < share))
        delta = minimum_detectable_effect(sigma, n, n // 2, (share,), n_tests=n_tests)[0]
        s = score[rows]
        hits = 0
        for _ in range(draws):
            y = rng.random(rows.size) < s + delta
            path = np.concatenate(([0.0], np.cumsum(y - s)))
            hits += (path.max() - path.min()) / np.sqrt(np.sum(s * (1 - s))) > critical
        assert abs(hits / draws - 0.8) < 0.08, (share, hits / draws)


def test_mde_is_reported_and_shrinks_with_share():
    frame, _ = planted(10_000, None, 0.0, seed=3, calibrated=True)
    result = search_subpopulations(predictions(frame), n_findings=2)
    assert result.mde.shares == (0.01, 0.05, 0.2)
    # delta(s) is proportional to 1/sqrt(s)
    np.testing.assert_allclose(result.mde.shift * np.sqrt(result.mde.shares),
                               result.mde.shift[0] * 0.1, rtol=1e-12)


def test_invariant_to_row_order_and_to_the_order_of_tied_rows():
    frame, _ = planted(20_000, "level", 0.2, seed=4)
    frame["score"] = frame["score"].round(2)  # many ties
    shuffled = frame.sample(frac=1.0, random_state=11).reset_index(drop=True)
    a = search_subpopulations(predictions(frame), n_findings=3)
    b = search_subpopulations(predictions(shuffled), n_findings=3)
    assert [f.description for f in a.findings] == [f.description for f in b.findings]
    for fa, fb in zip(a.findings, b.findings, strict=True):
        assert fa.holdout_kuiper_z == pytest.approx(fb.holdout_kuiper_z, rel=1e-9)
        assert fa.p_adjusted == pytest.approx(fb.p_adjusted, rel=1e-9)


def test_statistics_agree_with_independent_implementations():
    frame, _ = planted(20_000, "level", 0.2, seed=5)
    pred = predictions(frame)
    result = search_subpopulations(pred, n_findings=3)
    table = multicalibration(pred, result.subpopulations)  # mcviz.stats.multical's own loop
    np.testing.assert_allclose(table.kuiper_z[1:], [f.kuiper_z for f in result.findings],
                               rtol=1e-9)
    held = result.holdout_index
    asymptotic = 0
    for f in result.findings:
        rows = np.intersect1d(f.subpopulation.index, held)
        assert rows.size == f.holdout_size
        alone = cumulative_differences(Predictions.from_arrays(pred.score[rows], pred.label[rows]))
        assert f.holdout_kuiper_z == pytest.approx(alone.kuiper_z, rel=1e-9)
        # the Brownian tail, except for small held-out groups, whose p-value is simulated
        # (tests/search/test_holdout_p.py)
        if effective_variance(pred.score[rows], np.ones(rows.size)) >= RULES.simulate_below:
            assert f.p_value == pytest.approx(alone.p_value, rel=1e-9)
            asymptotic += 1
        residual = pred.label[rows] - pred.score[rows]
        assert f.mean_residual == pytest.approx(residual.mean(), rel=1e-12)
        half = 1.959963984540054 * residual.std(ddof=1) / np.sqrt(rows.size)
        assert f.ci_high - f.mean_residual == pytest.approx(half, rel=1e-9)
        assert f.observed_expected == pytest.approx(
            pred.label[rows].sum() / pred.score[rows].sum(), rel=1e-12)
    for f in result.findings:  # the sentence says the held-out effect and the adjusted p
        assert f.sentence.startswith("Among rows ")
        assert ("more than predicted" if f.mean_residual >= 0 else "fewer than predicted") \
            in f.sentence
        assert not any(op in f.sentence for op in FILTER_OPERATORS)
        assert ("not confirmed" in f.sentence) == (not f.confirmed)
    assert asymptotic >= 1
    r7 = next(f for f in result.findings if f.description == "region == r7")
    assert r7.sentence.startswith("Among rows with region is r7 (")
    # the default held-out share 0.3, stratified by score: each block of 20 holds 6 +- 1
    assert result.holdout == SearchSettings.holdout == 0.3
    assert abs(held.size - pred.n * 0.3) <= pred.n / 20


def test_continuous_response_uses_appendix_c_sigma():
    rng = np.random.default_rng(2)
    n = 6000
    g = rng.integers(0, 8, n)
    score = rng.uniform(0, 1, n)
    label = score + rng.normal(0, 0.2, n) + 0.1 * (g == 2)
    pred = Predictions.from_arrays(score, label, response="continuous", covariates={
        "g": pd.Categorical([f"g{v}" for v in g])})
    result = search_subpopulations(pred, n_findings=2)
    first = result.findings[0]
    assert first.description == "g == g2"
    rows = np.intersect1d(first.subpopulation.index, result.holdout_index)
    alone = cumulative_differences(Predictions.from_arrays(
        pred.score[rows], pred.label[rows], response="continuous"))
    # sigma: eq. (6) over the held-out members, floored by the pooled response variance of
    # the held-out rows at their scores (mcviz.core.sigma): never of the search rows
    held = np.asarray(result.holdout_index)
    floor = pooled_response_variance(pred.score[held], pred.label[held])[
        np.searchsorted(held, rows)]
    sigma = sigma_adjacent(pred.label[rows] - pred.score[rows], np.ones(rows.size),
                           run_ends(pred.score[rows]), floor=floor)
    assert first.holdout_kuiper_z == pytest.approx(alone.kuiper / sigma, rel=1e-9)
    assert "points" not in first.sentence
    # over all rows: the Subpopulations table's number (its floor pooled over all rows)
    table = multicalibration(pred, result.subpopulations)
    assert first.kuiper_z == pytest.approx(table.kuiper_z[1], rel=1e-9)


def test_progress_and_cancel():
    frame, _ = planted(5000, "level", 0.2, seed=6)
    pred = predictions(frame)
    seen = []
    search_subpopulations(pred, progress=lambda f, t: seen.append((f, t)))
    fractions = [f for f, _ in seen]
    assert fractions[-1] == 1.0
    assert all(0 <= f <= 1 for f in fractions)
    assert len(seen) > 5

    class Stop(Exception):
        pass

    def cancel(fraction, text):
        if fraction > 0.2:
            raise Stop

    with pytest.raises(Stop):
        search_subpopulations(pred, progress=cancel)


@pytest.mark.parametrize(("options", "message"), [
    ({"covariates": ["nope"]}, "no covariate 'nope'"),
    ({"max_conditions": 0}, "max_conditions must be an integer from 1 to 5"),
    ({"n_findings": 2.5}, "n_findings must be an integer"),
    ({"holdout": 1.5}, "holdout must be a number from 0.1 to 0.9"),
    ({"min_share": 0}, "min_share must be a number"),
])
def test_bad_input(options, message):
    frame, _ = planted(500, None, 0.0, seed=1)
    with pytest.raises(ValidationError, match=message):
        search_subpopulations(predictions(frame), **options)


def test_too_few_rows():
    pred = Predictions.from_arrays([0.2, 0.4, 0.6], [0, 1, 1], covariates={"x": [1.0, 2.0, 3.0]})
    with pytest.raises(ValidationError, match="too few to search"):
        search_subpopulations(pred)

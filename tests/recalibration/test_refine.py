"""The findings fix's candidates: refined to the group a term fits best, tested in order.

A planted too-extreme segment that no single condition shows is found from scratch, and a part
of it grows to it; Holm's weighted procedure against the step-down by hand (and Holm's own with
equal weights); a chance group at the head of the order does not block the segment behind it;
candidates refined on search rows and tested on the other rows keep the level on calibrated
rows (where testing on the rows that chose them does not).
"""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit
from scipy.stats import chi2

from mcviz.io import load_predictions
from mcviz.recalibration import holdout_split
from mcviz.recalibration._findings import score_tests, stepwise_tests, weighted_holm
from mcviz.recalibration._refine import refine, refine_candidates
from mcviz.search import holm
from mcviz.subpopulations import parse_filter, select_rows

NAMES = ["g", "x", "k"]


def _frame(n: int, seed: int, slope: float) -> pd.DataFrame:
    """Scores s; the truth sigma(slope * logit s) where g == a and x < 0.3, else s."""
    rng = np.random.default_rng(seed)
    g = rng.choice(np.array(["a", "b", "c"]), n)
    x = rng.uniform(0, 1, n)
    k = rng.integers(0, 10, n)
    s = expit(rng.normal(0, 1.5, n))
    inside = (g == "a") & (x < 0.3)
    truth = np.where(inside, expit(slope * logit(s)), s)
    return pd.DataFrame({"score": s, "label": (rng.random(n) < truth).astype(np.int8),
                         "g": pd.Categorical(g), "x": x, "k": k, "inside": inside})


def _load(frame: pd.DataFrame):
    return load_predictions(frame.drop(columns="inside"), score="score", label="label",
                            covariates=NAMES)


def _rows(pred, description: str) -> np.ndarray:
    mask = np.zeros(pred.n, dtype=bool)
    mask[select_rows(pred, parse_filter(description, pred))] = True
    return mask


def test_a_segment_no_single_condition_shows_is_found_from_scratch():
    frame = _frame(20_000, seed=1, slope=0.5)
    pred = _load(frame)
    eta, w = logit(pred.score), np.ones(pred.n)
    rows = np.arange(pred.n)
    found, q = refine(pred, eta, w, None, rows, NAMES, 3)
    assert found is not None
    mask, planted = _rows(pred, found), frame["inside"].to_numpy()[pred.row]
    assert (mask & planted).sum() >= 0.8 * (mask | planted).sum(), found  # Jaccard
    # Q is the score statistic of the rows the description selects (the score test's chi2)
    (tested,) = score_tests(pred, eta, w, [found], np.ones(pred.n, dtype=bool))
    assert chi2.sf(q, 2) == pytest.approx(tested.p_value, rel=1e-6)
    # a candidate that is part of the segment grows to it; a condition on noise does not stay
    grown, _ = refine(pred, eta, w, "g == a and x >= 0.1 and x < 0.2", rows, NAMES, 3)
    mask = _rows(pred, grown)
    assert (mask & planted).sum() >= 0.8 * (mask | planted).sum(), grown


def _step_down(p, v, alpha):
    """Holm's weighted step-down by hand: which hypotheses are rejected at ``alpha``."""
    left, rejected = set(range(len(p))), set()
    while left:
        k = min(left, key=lambda i: (p[i] / v[i], i))
        if p[k] > alpha * v[k] / sum(v[i] for i in left):
            break
        rejected.add(k)
        left.remove(k)
    return rejected


def test_weighted_holm_rejects_what_the_step_down_rejects():
    rng = np.random.default_rng(4)
    for _ in range(200):
        m = int(rng.integers(1, 7))
        p = rng.random(m) ** 3
        v = 0.5 ** np.arange(m)
        adjusted = weighted_holm(p, v)
        for alpha in (0.01, 0.05, 0.2):
            assert set(np.flatnonzero(adjusted <= alpha)) == _step_down(p, v, alpha)
    p = rng.random(6)
    np.testing.assert_allclose(weighted_holm(p, np.ones(6)), holm(p), rtol=1e-12)


def test_a_chance_group_first_does_not_block_the_segment_behind_it():
    frame = _frame(6_000, seed=2, slope=0.5)
    pred = _load(frame)
    eta, w = logit(pred.score), np.ones(pred.n)
    held = np.ones(pred.n, dtype=bool)
    candidates = ["g == b", "g == a and x < 0.3", "k >= 5"]
    tested = score_tests(pred, eta, w, candidates, held, sequence=True)
    raw = np.array([t.p_value for t in tested])
    np.testing.assert_allclose([t.p_adjusted for t in tested],
                               weighted_holm(raw, np.array([1.0, 0.5, 0.25])), rtol=1e-12)
    assert tested[0].p_value > 0.05
    assert tested[1].p_adjusted < 1e-4  # the segment, behind a null group: still rejected


def test_candidates_refined_on_search_rows_keep_the_level_on_the_test_rows():
    # calibrated rows, 100 label draws: the best groups from scratch and three refined search-like
    # candidates, tested in order (weighted Holm) on the other half; a chance term (any adjusted
    # p < 0.05) in at most 5% of draws: Binomial(100, 0.05) exceeds 12 with probability < 0.002.
    # Tested on the search rows instead (the rows that chose them) draws have one far more often.
    frame = _frame(3_000, seed=3, slope=1.0)
    base = _load(frame)
    eta, w = logit(base.score), np.ones(base.n)
    search_rows, _ = holdout_split(base, 0.5, seed=0)  # reads no label: one split for all draws
    held = np.ones(base.n, dtype=bool)
    held[search_rows] = False
    rng = np.random.default_rng(0)
    false_terms = on_search_rows = 0
    for _ in range(100):
        pred = replace(base, label=(rng.random(base.n) < base.score).astype(base.label.dtype))
        candidates = refine_candidates(pred, eta, w, ["x < 0.5", "g == c", "k >= 3"], held,
                                       NAMES, 3, [])
        tested = stepwise_tests(pred, eta, w, candidates, held, 0.05)
        false_terms += min(t.p_adjusted for t in tested) < 0.05
        chosen = score_tests(pred, eta, w, candidates, ~held, sequence=True)
        on_search_rows += min(t.p_adjusted for t in chosen) < 0.05
    print(f"chance terms {false_terms} of 100 draws; on the search rows {on_search_rows}")
    assert false_terms <= 12, false_terms
    assert on_search_rows >= 20, on_search_rows


def test_the_fix_tests_its_terms_on_rows_its_searches_never_saw(monkeypatch):
    # every row a search (either view) or the refinement was given is outside the rows the score
    # test reads; those are half the fit rows, drawn anew each pass
    import mcviz.recalibration._findings as findings
    import mcviz.search as search
    from mcviz.recalibration import Recalibrator
    from mcviz.recalibration.simulate import planted_fix_data

    seen, tested = [], []
    searching, scoring = search.search_subpopulations, findings.stepwise_tests

    def spy_search(pred, **options):
        seen.append(set(pred.row.tolist()))
        return searching(pred, **options)

    def spy_score(pred, eta, w, descriptions, held, level):
        tested.append(set(pred.row[held].tolist()))
        return scoring(pred, eta, w, descriptions, held, level)

    monkeypatch.setattr(search, "search_subpopulations", spy_search)
    monkeypatch.setattr(findings, "stepwise_tests", spy_score)
    frame = planted_fix_data(4_000, seed=2)
    pred = load_predictions(frame.drop(columns="truth"), score="score", label="label")
    Recalibrator("findings").fit(pred)
    assert len(seen) == 2 * len(tested) >= 2  # two views per pass
    for k, held in enumerate(tested):
        assert not held & (seen[2 * k] | seen[2 * k + 1])
        assert 0.45 * pred.n <= len(held) <= 0.55 * pred.n


def test_a_broad_group_gets_no_term_once_the_group_inside_it_has_one():
    # "x < 0.3" holds the planted too-extreme segment "g == a and x < 0.3" and calibrated rows:
    # alone it is significant, given the segment's term (fitted on the test rows) it is not
    frame = _frame(20_000, seed=5, slope=0.5)
    pred = _load(frame)
    eta, w = logit(pred.score), np.ones(pred.n)
    held = np.ones(pred.n, dtype=bool)
    candidates = ["g == a and x < 0.3", "x < 0.3"]
    plain = score_tests(pred, eta, w, candidates, held, sequence=True)
    assert plain[1].p_adjusted < 1e-3  # significant because of the segment inside it
    tested = stepwise_tests(pred, eta, w, candidates, held, 0.05)
    assert tested[0].p_value == pytest.approx(plain[0].p_value, rel=1e-12)  # the first step
    assert tested[0].p_adjusted < 1e-6
    assert tested[1].p_adjusted > 0.05, tested[1]


def test_a_group_only_a_pair_of_conditions_shows_is_found_from_scratch():
    # an XOR: where h == r the odds x 2.2 below x = 0.5 and / 2.2 above, elsewhere / 1.5 below
    # and x 1.5 above -- any condition on h alone or on x alone holds as much of one as of the
    # other; the first group found from scratch is one of the h == r halves (Jaccard >= 0.8)
    rng = np.random.default_rng(6)
    n = 20_000
    h = rng.choice(np.array(["p", "q", "r"]), n)
    x = rng.uniform(0, 1, n)
    k = rng.integers(0, 10, n)
    s = expit(rng.normal(-0.5, 1.2, n))
    xor = np.where(h == "r", 0.8, -0.4) * np.where(x < 0.5, 1.0, -1.0)
    frame = pd.DataFrame({"score": s, "label": rng.random(n) < expit(logit(s) + xor),
                          "g": pd.Categorical(h), "x": x, "k": k})
    frame["label"] = frame["label"].astype(np.int8)
    pred = load_predictions(frame, score="score", label="label", covariates=NAMES)
    eta, w = logit(pred.score), np.ones(pred.n)
    found = refine_candidates(pred, eta, w, [], np.zeros(pred.n, dtype=bool), NAMES, 3, [])
    mask = _rows(pred, found[0])
    halves = [(h == "r") & (x < 0.5), (h == "r") & (x >= 0.5)]
    assert max((mask & c[pred.row]).sum() / (mask | c[pred.row]).sum() for c in halves) >= 0.8, \
        found

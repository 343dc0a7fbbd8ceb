"""The floor of eq. (6) at the ends of the score range, real-valued responses (mcviz.core.sigma).

0/1 responses read as real-valued (``response="continuous"``) at scores near 1 are mostly 1;
counting the rare responses off the *population's* most common value (0) let blocks of all-1
responses stand alone, whose variance is that of the scores alone, so the top scores' groups
looked miscalibrated on calibrated data (Adult, "score >= 0.994862" confirmed). The floor now
counts, per block, the responses off that block's own most common value (module notes).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

import mcviz
from mcviz.core.sigma import (
    off_block_mode,
    pool_block_starts,
    pooled_response_variance,
    sigma_adjacent,
)


def _top_heavy(n: int, seed: int, centre: float = -1.0):
    """Scores with long tails towards 0 and 1 (logits N(centre, 2.5^2)); 0/1 labels from them.

    With ``centre`` -1 most labels are 0 (as on Adult) and about 250 of 20,000 scores exceed
    0.99; with +1 most are 1 and the rare value near 0 is the 1.
    """
    rng = np.random.default_rng(seed)
    score = np.sort(expit(rng.normal(centre, 2.5, n)))
    label = (rng.random(n) < score).astype(float)
    return score, label


def _range_z(score, label, index, floor):
    """D/sigma of the rows ``index`` (score order): the walk's range over eq. (6) floored."""
    residual = (label - score)[index]
    walk = np.concatenate(([0.0], np.cumsum(residual))) / index.size
    run_end = np.append(score[1:] != score[:-1], True)[index]
    return (walk.max() - walk.min()) / sigma_adjacent(residual, np.ones(index.size), run_end,
                                                      floor=floor[index])


def test_a_block_is_judged_by_its_own_most_common_response():
    label = np.concatenate((np.zeros(300), np.ones(300)))
    label[[10, 20, 590]] = [1.0, 1.0, 0.0]
    mode_off = off_block_mode(label, np.array([0, 300]))
    assert np.flatnonzero(mode_off).tolist() == [10, 20, 590]  # the rare ones, at both ends
    # with three rare responses in 600 rows no block has 100: one block, the whole range
    assert pool_block_starts(np.ones(600, dtype=bool), mode_off).tolist() == [0]


@pytest.mark.parametrize(("centre", "end"), [(-1.0, "top"), (1.0, "bottom")])
def test_calibrated_extreme_scores_are_not_beyond_chance(centre, end):
    # 200 label draws: the 200 most extreme rows' D/sigma exceeds 2.5 (the range of Brownian
    # motion exceeds 2.5 with probability near 5%) in few draws. Counting rare responses off the
    # population's most common value gave 0.71 of the draws at the top of the Adult scores
    # (median D/sigma 20), where that value is 0; at the bottom when it is 1.
    beyond = []
    for seed in range(200):
        score, label = _top_heavy(20_000, seed, centre)
        floor = pooled_response_variance(score, label)
        rows = np.arange(score.size - 200, score.size) if end == "top" else np.arange(200)
        beyond.append(_range_z(score, label, rows, floor) > 2.5)
    assert np.mean(beyond) <= 0.08, np.mean(beyond)


def test_search_confirms_no_more_than_alpha_on_calibrated_real_valued_responses():
    confirmed = 0
    for seed in range(20):
        score, label = _top_heavy(20_000, 100 + seed)
        rng = np.random.default_rng(seed)
        pred = mcviz.Predictions.from_arrays(
            score, label, covariates=pd.DataFrame({"x": rng.normal(size=score.size),
                                                   "g": rng.integers(0, 6, score.size)}),
            response="continuous")
        result = mcviz.search_subpopulations(pred, seed=seed, n_findings=3)
        confirmed += any(f.confirmed for f in result.findings)
    assert confirmed <= 1, confirmed  # 5% of 20 runs


def test_a_planted_real_valued_error_is_still_found():
    # responses: the score plus noise, 0.15 higher in group g == 2 (a sixth of the rows)
    found = 0
    for seed in range(5):
        rng = np.random.default_rng(seed)
        n = 20_000
        score = expit(rng.normal(1.0, 2.5, n))
        g = rng.integers(0, 6, n)
        response = score + 0.15 * (g == 2) + rng.normal(0, 0.3, n)
        pred = mcviz.Predictions.from_arrays(
            score, response, covariates=pd.DataFrame({"g": g.astype(str),
                                                      "x": rng.normal(size=n)}),
            response="continuous")
        result = mcviz.search_subpopulations(pred, seed=seed, n_findings=3)
        found += any(f.confirmed and f.description.replace('"', "") == "g == 2"
                     for f in result.findings)
    assert found == 5

"""The held-out p-values: valid for small groups, free of tie order, blind to held-out labels."""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pandas as pd
import pytest

from mcviz.io import Predictions
from mcviz.search import search_subpopulations
from mcviz.search._confirm import (
    effective_variance,
    holdout_p_values,
    simulated_p,
)
from mcviz.search.rules import RULES
from mcviz.stats.cumulative import brownian_range_sf


def test_simulated_p_keeps_the_level_where_the_brownian_p_does_not():
    # 3000 calibrated groups of 200 rows at scores 0.005-0.015 (V about 2): the Brownian-range
    # p-value rejects about twice as often as it should; the simulated one at most alpha
    # (within 2.5 standard errors of the simulation of the groups).
    rng = np.random.default_rng(11)
    groups, m = 3000, 200
    brownian, simulated = [], []
    for k in range(groups):
        score = np.sort(rng.uniform(0.005, 0.015, m))
        label = (rng.random(m) < score).astype(float)
        assert effective_variance(score, np.ones(m)) < RULES.simulate_below
        p, z, _ = simulated_p(score, np.ones(m), np.arange(m), label,
                              np.random.default_rng([k, 1]))
        brownian.append(float(brownian_range_sf(z)))
        simulated.append(p)
    brownian, simulated = np.array(brownian), np.array(simulated)
    for alpha in (0.005, 0.01):
        bound = alpha + 2.5 * np.sqrt(alpha * (1 - alpha) / groups)
        assert np.mean(simulated <= alpha) <= bound
        assert np.mean(brownian <= alpha) > bound  # the case the simulation is there for


def test_simulated_p_agrees_with_the_exact_tail():
    # 10 rows with tied scores and uneven weights: the exact P(T >= t) by summing over all
    # 2^10 label vectors (the path read at the ends of the tie runs, eq. (2)).
    score = np.array([0.03, 0.03, 0.05, 0.1, 0.1, 0.1, 0.2, 0.6, 0.9, 0.97])
    weight = np.array([1.0, 3.0, 1.0, 2.0, 0.5, 1.0, 1.0, 1.0, 2.0, 1.0])
    run = np.array([0, 0, 1, 2, 2, 2, 3, 4, 5, 6])
    label = np.array([1.0, 0, 0, 1, 0, 0, 0, 1, 1, 1])
    ends = np.flatnonzero(np.r_[run[1:] != run[:-1], True])
    sigma = np.sqrt(np.sum(score * (1 - score) * weight**2))

    def z_of(y):
        path = np.cumsum(weight * (y - score))[ends]
        return (max(path.max(), 0) - min(path.min(), 0)) / sigma

    observed = z_of(label)
    exact = 0.0
    for bits in itertools.product((0.0, 1.0), repeat=score.size):
        y = np.array(bits)
        if z_of(y) >= observed - 1e-12:
            exact += np.prod(np.where(y == 1, score, 1 - score))
    p, z, used = simulated_p(score, weight, run, label, np.random.default_rng(3),
                             draws=20_000, stop=10**6)
    assert z == pytest.approx(observed, rel=1e-12)
    assert used == 20_000
    assert abs(p - exact) < 4 * np.sqrt(exact * (1 - exact) / used)


def test_held_out_p_values_are_free_of_row_order_and_deterministic():
    rng = np.random.default_rng(5)
    n = 400
    score = rng.choice([0.01, 0.02, 0.04, 0.5], n)  # ties
    weight = rng.choice([1.0, 2.0], n)
    label = rng.random(n) < score
    ident = np.arange(n)
    got = []
    for order in (ident, rng.permutation(n), rng.permutation(n)):
        pred = Predictions.from_arrays(score[order], label[order], weight=weight[order],
                                       covariates={"id": ident[order].astype(float)})
        ids = pred.covariates["id"].to_numpy()
        groups = [np.flatnonzero((ids % 5 == 0) & (pred.score < 0.1)),
                  np.flatnonzero(ids < 300)]
        z = np.array([2.0, 2.0])
        got.append(holdout_p_values(pred, groups, z, ["a == 1", "b == 2"], seed=4))
    assert effective_variance(score[(ident % 5 == 0) & (score < 0.1)],
                              weight[(ident % 5 == 0) & (score < 0.1)]) < RULES.simulate_below
    assert got[0][0] != pytest.approx(float(brownian_range_sf(2.0)))  # simulated
    assert got[0][1] == float(brownian_range_sf(2.0))  # a large group: the Brownian p
    np.testing.assert_array_equal(got[0], got[1])
    np.testing.assert_array_equal(got[0], got[2])


@pytest.mark.parametrize("response", ["binary", "continuous"])
def test_the_search_never_sees_held_out_labels(response):
    # Tied scores, distinct rows: changing every held-out label must leave the split, the
    # findings and their search D/sigma exactly as they were (before: tied rows were ordered
    # by a hash that included the label, and real-valued sigma pooled held-out responses).
    rng = np.random.default_rng(0)
    n = 4000
    score = rng.choice(np.linspace(0.1, 0.9, 9), n)
    g = rng.integers(0, 6, n)
    x = rng.normal(size=n)
    if response == "binary":
        label = (rng.random(n) < np.clip(score + 0.15 * (g == 2), 0, 1)).astype(float)
    else:
        label = score + 0.2 * (g == 2) + rng.normal(0, 0.3 + 0.5 * (g == 4), n)

    def search(labels):
        pred = Predictions.from_arrays(score, labels, response=response, covariates={
            "g": pd.Categorical([f"g{v}" for v in g]), "x": x})
        return pred, search_subpopulations(pred, n_findings=3)

    pred, before = search(label)
    held = np.asarray(pred.row)[np.asarray(before.holdout_index)]  # input rows held out
    changed = label.copy()
    changed[held] = (1 - changed[held] if response == "binary"
                     else changed[held] + rng.normal(0, 2, held.size))
    _, after = search(changed)
    np.testing.assert_array_equal(before.holdout_index, after.holdout_index)
    # the same findings (listed by their held-out evidence, so their order may change)
    assert sorted(f.description for f in before.findings) == sorted(
        f.description for f in after.findings)
    if response == "binary":  # eq. (5): the search rows' D/sigma reads no held-out label
        assert sorted((f.description, f.search_kuiper_z) for f in before.findings) == sorted(
            (f.description, f.search_kuiper_z) for f in after.findings)
    # (real-valued: the search rows' D/sigma shown uses M's sigma, whose floor pools every
    # row; the search itself chose the findings with its own part's floor)


def test_a_small_held_out_finding_gets_the_simulated_p_in_the_search():
    rng = np.random.default_rng(0)
    n = 3000
    score = rng.uniform(0.02, 0.98, n)
    pred = Predictions.from_arrays(score, rng.random(n) < score,
                                   covariates={"x": rng.normal(size=n)})
    result = search_subpopulations(pred, n_findings=2, seed=3)
    small = 0
    for f in result.findings:
        rows = np.intersect1d(f.subpopulation.index, result.holdout_index)
        brownian = float(brownian_range_sf(f.holdout_kuiper_z))
        if effective_variance(pred.score[rows], pred.weight[rows]) >= RULES.simulate_below:
            assert f.p_value == brownian
            continue
        small += 1
        rng_f = np.random.default_rng([3, zlib.crc32(f.description.encode("utf-8"))])
        p, z, _ = simulated_p(pred.score[rows], pred.weight[rows], np.arange(rows.size),
                              pred.label[rows], rng_f)
        assert z == pytest.approx(f.holdout_kuiper_z, rel=1e-9)  # the same statistic
        assert f.p_value == p != brownian
    assert small >= 1

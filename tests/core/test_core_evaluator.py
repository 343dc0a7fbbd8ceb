"""Tests of mcviz.core.evaluator against a plain per-subpopulation loop written here."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcviz.core import (
    ChunkSummaries,
    Evaluator,
    combine,
    combine_all,
    finish,
    last_run_start,
    multicalibration_metric,
)


def brute(score, weight, label, index, method):
    """D, sigma of one subpopulation by the papers' formulas, written out with loops.

    Path at the origin and at the last member of each run of tied scores (eq. (1)-(2)); sigma
    eq. (5), or eq. (6) over tie runs (run weight V, weighted mean residual e).
    """
    s, w, r = score[index], weight[index], label[index] - score[index]
    total = w.sum()
    if index.size == 0:
        return 0.0, 0.0
    path, running = [0.0], 0.0
    runs = []  # (V, sum W d)
    for j in range(index.size):
        running += w[j] * r[j]
        if j == 0 or s[j] != s[j - 1]:
            runs.append([0.0, 0.0])
        runs[-1][0] += w[j]
        runs[-1][1] += w[j] * r[j]
        if j == index.size - 1 or s[j + 1] != s[j]:
            path.append(running / total)
    kuiper = max(path) - min(path)
    if method == "bernoulli":
        sigma = np.sqrt(np.sum(s * (1 - s) * w**2)) / total
    else:
        v = np.array([a for a, _ in runs])
        e = np.array([b / a for a, b in runs])
        if v.size < 2:
            sigma = 0.0
        else:
            num = sum((e[t] - e[t + 1]) ** 2 * (v[t] + v[t + 1]) ** 2 for t in range(v.size - 1))
            sigma = np.sqrt(num / (4 * total * (v[0] + v[-1] + 2 * v[1:-1].sum())))
    return kuiper, sigma


def data(n, seed, *, ties=True, real=False):
    rng = np.random.default_rng(seed)
    score = np.sort(np.round(rng.random(n), 2) if ties else rng.random(n))
    label = rng.random(n) if real else (rng.random(n) < score).astype(float)
    weight = rng.random(n) + 0.25
    members = [np.arange(n)] + [np.flatnonzero(rng.random(n) < p)
                                for p in (0.5, 0.2, 0.05, 0.01, 0.0, 0.3)]
    return score, label, weight, members


@pytest.mark.parametrize("method", ["bernoulli", "adjacent"])
@pytest.mark.parametrize("real", [False, True])
@pytest.mark.parametrize("n", [800, 6000])  # 6000: runs of 60 rows, summed before the path
def test_matches_brute_force_loop(method, real, n):
    score, label, weight, members = data(n, 1, real=real)
    st_ = Evaluator(score, weight).statistics(label - score, members, method)
    for k, index in enumerate(members):
        kuiper, sigma = brute(score, weight, label, index, method)
        assert st_.size[k] == index.size
        assert st_.kuiper[k] == pytest.approx(kuiper, abs=1e-13)
        assert st_.sigma[k] == pytest.approx(sigma, abs=1e-13)


def test_masks_and_positions_agree_and_groups_do_not_matter(monkeypatch):
    score, label, weight, members = data(1000, 2)
    ev = Evaluator(score, weight)
    masks = [np.isin(np.arange(score.size), m) for m in members]
    a = ev.statistics(label - score, members)
    b = ev.statistics(label - score, masks)
    import mcviz.core.evaluator as module

    monkeypatch.setattr(module, "GROUP_ELEMENTS", 7)  # every subpopulation its own group
    c = ev.statistics(label - score, members)
    np.testing.assert_array_equal(a.kuiper, b.kuiper)
    np.testing.assert_allclose(a.kuiper, c.kuiper, rtol=0, atol=1e-14)


@pytest.mark.parametrize("run_sums", [1, 10**9])
def test_run_sums_and_member_path_agree(monkeypatch, run_sums):
    # RUN_SUMS = 1: every group with ties sums its runs first; 10**9: never. Same D, sigma.
    import mcviz.core.evaluator as module

    score, label, weight, members = data(3000, 4)
    ev = Evaluator(score, weight)
    expected = [brute(score, weight, label, index, "bernoulli") for index in members]
    monkeypatch.setattr(module, "RUN_SUMS", run_sums)
    got = ev.statistics(label - score, members)
    draws = ev.statistics(np.column_stack([label - score] * 3), members)
    for k, (kuiper, sigma) in enumerate(expected):
        assert got.kuiper[k] == pytest.approx(kuiper, abs=1e-13)
        assert got.sigma[k] == pytest.approx(sigma, abs=1e-13)
        np.testing.assert_allclose(draws.kuiper[k], kuiper, rtol=0, atol=1e-13)


def test_hand_computed_tie_rule():
    # scores 0.1, 0.2, 0.2 with W(R-S) = 0.5, -1, 0.25 and total weight 2 (W = 1, 0.5, 0.5 with
    # R - S = 0.5, -2, 0.5): the tie at 0.2 is one step, so the path is 0, 0.25, -0.125 and
    # D = 0.375 (not via -0.25).
    ev = Evaluator(np.array([0.1, 0.2, 0.2]), np.array([1.0, 0.5, 0.5]))
    assert ev.kuiper(np.array([0.5, -2.0, 0.5]), [np.arange(3)])[0] == pytest.approx(0.375)


def test_constant_offset_gives_offset():
    score = np.linspace(0.1, 0.8, 50)
    for d in (0.05, -0.2):
        assert Evaluator(score).kuiper(np.full(50, d), [np.arange(50)])[0] == pytest.approx(
            abs(d), abs=1e-14)


def test_two_dimensional_residuals_equal_column_by_column():
    score, _, weight, members = data(600, 3)
    rng = np.random.default_rng(0)
    draws = (rng.random((score.size, 9)) < score[:, None]).astype(float)
    ev = Evaluator(score, weight)
    for method in ("bernoulli", "adjacent"):
        both = ev.statistics(draws - score[:, None], members, method)
        assert both.kuiper.shape == (len(members), 9)
        for j in range(9):
            one = ev.statistics(draws[:, j] - score, members, method)
            np.testing.assert_allclose(both.kuiper[:, j], one.kuiper, rtol=0, atol=1e-14)
            sigma = both.sigma if both.sigma.ndim == 1 else both.sigma[:, j]
            np.testing.assert_allclose(sigma, one.sigma, rtol=0, atol=1e-14)
    value = multicalibration_metric(both.kuiper, both.sigma)
    assert value.metric.shape == (9,)


@pytest.mark.parametrize("real", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chunks_combine_associatively_at_tie_run_ends(real, seed):
    score, label, weight, members = data(700, seed, real=real)
    rng = np.random.default_rng(seed + 10)
    whole = Evaluator(score, weight).summaries(label - score, members)
    ends = np.flatnonzero(np.r_[score[1:] != score[:-1], True]) + 1
    cuts = np.unique(np.r_[0, rng.choice(ends, 6, replace=False), score.size])
    chunks = []
    for a, b in itertools.pairwise(cuts):
        local = [m[(m >= a) & (m < b)] - a for m in members]
        chunks.append(Evaluator(score[a:b], weight[a:b]).summaries(label[a:b] - score[a:b], local))
    left = combine_all(chunks)
    right = chunks[-1]
    for chunk in reversed(chunks[:-1]):
        right = combine(chunk, right)
    empty = ChunkSummaries.empty(len(members))
    for combined in (left, right, combine(empty, combine(left, empty))):
        for method in ("bernoulli", "adjacent"):
            a, b = finish(combined, method), finish(whole, method)
            np.testing.assert_allclose(a.kuiper, b.kuiper, rtol=0, atol=1e-13)
            np.testing.assert_allclose(a.sigma, b.sigma, rtol=0, atol=1e-13)
            np.testing.assert_array_equal(a.size, b.size)


def test_last_run_start_holds_back_the_trailing_tie_run():
    assert last_run_start(np.array([0.1, 0.2, 0.2])) == 1
    assert last_run_start(np.array([0.1, 0.2])) == 1
    assert last_run_start(np.array([0.3, 0.3])) == 0


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 60), st.integers(0, 10**6))
def test_properties_row_order_within_ties_and_g_le_d_le_2g(n, seed):
    rng = np.random.default_rng(seed)
    score = np.sort(rng.integers(0, 5, n) / 4.0)
    label = rng.random(n)
    weight = rng.random(n) + 0.1
    members = [np.arange(n), np.flatnonzero(rng.random(n) < 0.5)]
    base = Evaluator(score, weight).statistics(label - score, members, "adjacent")
    order = np.lexsort((rng.random(n), score))  # shuffles rows inside each tie run only
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.arange(n)
    moved = [np.sort(inverse[m]) for m in members]
    other = Evaluator(score[order], weight[order]).statistics(
        label[order] - score[order], moved, "adjacent")
    np.testing.assert_allclose(base.kuiper, other.kuiper, rtol=0, atol=1e-12)
    np.testing.assert_allclose(base.sigma, other.sigma, rtol=0, atol=1e-12)
    # G <= D <= 2G on the full path
    total = weight.sum()
    ends = np.flatnonzero(np.r_[score[1:] != score[:-1], True])
    path = np.r_[0.0, np.cumsum(weight * (label - score))[ends] / total]
    g = np.abs(path).max()
    assert g - 1e-12 <= base.kuiper[0] <= 2 * g + 1e-12


def test_batches_with_held_back_tie_runs_equal_one_pass():
    import pandas as pd

    from mcviz.core import BatchAccumulator, MembershipPlan
    from mcviz.engines.base import as_specs
    from mcviz.subpopulations import Condition

    rng = np.random.default_rng(7)
    n = 3000
    score = np.sort(np.round(rng.random(n), 2))
    label = (rng.random(n) < score).astype(float)
    weight = rng.random(n) + 0.5
    x = rng.integers(0, 10, n).astype(float)
    c = pd.Series(rng.choice(["a", "b", "c"], n))
    specs = as_specs([[], [Condition("x", ">=", 4.0)], [Condition("c", "in", ("a", "b"))],
                      [Condition("x", "<", 7.0), Condition("c", "!=", "a")]])
    plan = MembershipPlan(specs)
    members = plan.members({"x": x, "c": c}, n)
    expected = finish(Evaluator(score, weight).summaries(label - score, members), "adjacent")
    cuts = np.unique(np.r_[0, rng.integers(0, n, 9), n])  # anywhere, ties split on purpose
    summaries = []
    for threads in (1, 3):  # chunks summarised on threads: the very same numbers
        acc = BatchAccumulator(specs, adjacent=True, threads=threads)
        for a, b in itertools.pairwise(cuts):
            acc.add(score[a:b], label[a:b], weight[a:b], {"x": x[a:b], "c": c.iloc[a:b]})
        summaries.append(acc.finish())
    _fields_equal(summaries[1], summaries[0])
    got = finish(summaries[0], "adjacent")
    np.testing.assert_array_equal(got.size, expected.size)
    np.testing.assert_allclose(got.kuiper, expected.kuiper, rtol=0, atol=1e-13)
    np.testing.assert_allclose(got.sigma, expected.sigma, rtol=0, atol=1e-13)


@pytest.mark.parametrize("ties", [True, False])
@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("method", ["bernoulli", "adjacent"])
@pytest.mark.parametrize(("group_elements", "threads"), [(64, 1), (1 << 18, 1), (64, 3)])
def test_label_statistics_match_brute_force_loop(ties, weighted, method, group_elements, threads,
                                                 monkeypatch):
    # label_statistics takes 0/1 responses (the integer path when unweighted and eq. (5)) and
    # must give what the plain loop gives, for 1-D responses and for every column of 2-D ones;
    # groups of 16 members summarised by three threads too (as from THREAD_MEMBERS members)
    import threading

    import mcviz.core.evaluator as module

    monkeypatch.setattr(module, "GROUP_ELEMENTS", group_elements)
    ran_on = set()
    if threads > 1:
        monkeypatch.setattr(module, "_workers", lambda members: threads)
        summarise = Evaluator._summarise_group

        def recorded(self, *args, **kwargs):
            ran_on.add(threading.get_ident())
            return summarise(self, *args, **kwargs)

        monkeypatch.setattr(Evaluator, "_summarise_group", recorded)
    score, _, weight, members = data(700, 5, ties=ties)
    rng = np.random.default_rng(4)
    draws = rng.random((score.size, 4)) < score[:, None]
    ev = Evaluator(score, weight if weighted else None)
    w = weight if weighted else np.ones(score.size)
    both = ev.label_statistics(draws, members, method)
    assert both.kuiper.shape == (len(members), 4)
    for j in range(4):
        for label in (draws[:, j], draws[:, j].astype(np.int8), draws[:, j].astype(float)):
            one = ev.label_statistics(label, members, method)
            for k, index in enumerate(members):
                kuiper, sigma = brute(score, w, draws[:, j].astype(float), index, method)
                assert one.kuiper[k] == pytest.approx(kuiper, abs=1e-13)
                assert both.kuiper[k, j] == pytest.approx(kuiper, abs=1e-13)
                assert one.sigma[k] == pytest.approx(sigma, abs=1e-13)
    if threads > 1:  # every group was summarised by the pool's threads, not this one
        assert ran_on
        assert threading.get_ident() not in ran_on


def test_workers_start_at_thread_members_and_never_exceed_the_cores_or_two(monkeypatch):
    import os

    import mcviz.core.evaluator as module

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert module._workers(module.THREAD_MEMBERS - 1) == 1
    assert module._workers(module.THREAD_MEMBERS) == module.THREAD_WORKERS == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert module._workers(10 * module.THREAD_MEMBERS) == 1


def test_label_statistics_of_real_valued_responses_match_brute_force_loop():
    score, label, _, members = data(500, 6, real=True)
    ev = Evaluator(score)
    st_ = ev.label_statistics(label[:, None], members, "adjacent")
    for k, index in enumerate(members):
        kuiper, sigma = brute(score, np.ones(score.size), label, index, "adjacent")
        assert st_.kuiper[k, 0] == pytest.approx(kuiper, abs=1e-13)
        assert st_.sigma[k, 0] == pytest.approx(sigma, abs=1e-13)


@pytest.mark.parametrize("weighted", [True, False])
def test_one_column_matrix_equals_one_dimensional_residual(weighted):
    # a (n, 1) residual is weighted after the gather, a (n,) one before: same statistics
    score, label, weight, members = data(400, 8)
    ev = Evaluator(score, weight if weighted else None)
    one = ev.statistics(label - score, members)
    matrix = ev.statistics((label - score)[:, None], members)
    np.testing.assert_allclose(matrix.kuiper[:, 0], one.kuiper, rtol=0, atol=1e-14)


def test_cuts_are_the_first_run_starts_at_or_after_each_multiple_of_the_budget():
    # Brute force: the members' run ids; a cut at j needs run[j] != run[j - 1]; for each
    # multiple w of the budget the cut is the first such j >= w (none when no run starts later).
    rng = np.random.default_rng(7)
    score = np.sort(np.round(rng.random(5000), 2))
    ev = Evaluator(score)
    for p, budget in ((0.9, 37), (0.3, 100), (1.0, 5000 // 3)):
        positions = np.flatnonzero(rng.random(score.size) < p)
        run = ev.run_id[positions]
        starts = [j for j in range(1, positions.size) if run[j] != run[j - 1]]
        expected = sorted({next((j for j in starts if j >= w), None)
                           for w in range(budget, positions.size, budget)} - {None})
        assert ev._cuts(positions, budget).tolist() == expected


def _fields_equal(a: ChunkSummaries, b: ChunkSummaries) -> None:
    from dataclasses import fields

    for f in fields(a):
        np.testing.assert_array_equal(getattr(a, f.name), getattr(b, f.name), err_msg=f.name)


def test_in_order_combines_in_submission_order_whatever_finishes_first():
    # later chunks finish first (shorter sleeps); combine is not commutative (high, low, the
    # eq. (6) bridge), so joining in the order of completion would give other numbers
    import time

    from mcviz.core.batches import InOrder

    score, label, weight, members = data(900, 11)
    cuts = [0, 150, 300, 450, 600, 750, 900]  # tie runs (2-decimal scores) cut on purpose
    parts = []
    for a, b in itertools.pairwise(cuts):
        ev = Evaluator(score[a:b], weight[a:b])
        local = [m[(m >= a) & (m < b)] - a for m in members]
        parts.append(ev.summaries(label[a:b] - score[a:b], local))
    expected = combine_all(parts)
    reversed_order = combine_all(parts[::-1])
    assert not np.array_equal(reversed_order.high, expected.high)  # the order matters here

    def late(k):
        time.sleep(0.01 * (len(parts) - k))
        return parts[k]

    for workers in (1, 3):
        chunks = InOrder(workers)
        for k in range(len(parts)):
            chunks.submit(late, k)
        _fields_equal(chunks.finish(), expected)


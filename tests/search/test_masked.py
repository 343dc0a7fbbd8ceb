"""Path sums of masked subsets in fixed-point blocks (mcviz.search._masked) against brute force.

The reference gathers each subset's members and takes the explicit cumulative sum of their
terms (Python integers, so no rounding and no overflow), read at the last member of each run
of tied scores, the origin included (eqs. (1), (2), (5) of paper 000).
"""

from __future__ import annotations

import numpy as np
import pytest

from mcviz import Predictions
from mcviz.search._find import _data
from mcviz.search._masked import BLOCK, fixed_point, layout, level_sums, masked_sums
from mcviz.search._screen import (
    _level_order,
    _level_z,
    _run_ends,
    masked_scores,
    score_candidates,
)


def _reference(values, variance, run, mask):
    """(high, low, end, variance) of ``mask``'s members by the definition, in Python ints."""
    members = np.flatnonzero(mask)
    path, points = 0, [0]
    for k, i in enumerate(members):
        path += int(values[i])
        if k + 1 == members.size or run[members[k + 1]] != run[i]:
            points.append(path)  # the last member of its tie run among the members
    return max(points), min(points), path, sum(int(variance[i]) for i in members)


def _ends(run):
    """Positions ending a tie run (None when no two rows share a run)."""
    if np.unique(run).size == run.size:
        return None
    return np.flatnonzero(np.append(run[1:] != run[:-1], True))


def _unweighted(n, digits, seed, shift=0.0):
    """Unweighted binary predictions' search data; scores rounded to ``digits`` (ties)."""
    rng = np.random.default_rng(seed)
    score = rng.uniform(0.05, 0.95, n)
    score = np.sort(score if digits is None else np.round(score, digits))
    label = (rng.random(n) < np.clip(score + shift, 0, 1)).astype(float)
    return rng, _data(Predictions.from_arrays(score, label), np.zeros(n, dtype=bool))


SIZES = [0, 1, 2, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 5, 2000]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("ties", [False, True])
def test_masked_sums_equal_the_explicit_cumulative_sum(size, ties):
    rng = np.random.default_rng(size + 1000 * ties)
    values = rng.integers(-10**12, 10**12, size) * rng.integers(0, 2, size)  # zeros too
    variance = rng.integers(0, 10**12, size)
    # runs of tied scores that straddle block ends (lengths 1..9), or every row its own run
    run = np.cumsum(rng.random(size) < 0.3) if ties else np.arange(size)
    # the node's rows among more rows (the layout gathers them)
    rows = np.sort(rng.choice(3 * size + 7, size, replace=False))
    every = [rng.integers(-10**12, 10**12, 3 * size + 7) for _ in range(2)]
    every[0][rows], every[1][rows] = values, variance
    node = layout(every[0], every[1], rows, _ends(run))
    masks = [np.zeros(size, dtype=bool), np.ones(size, dtype=bool),
             rng.random(size) < 0.5, rng.random(size) < 0.02,
             np.arange(size) >= size // 2]  # empty, full, half, rare, a contiguous stretch
    got = masked_sums(node, masks)
    for mask, row in zip(masks, got, strict=True):
        assert tuple(int(x) for x in row) == _reference(values, variance, run, mask)


def test_a_drift_far_from_block_ends_is_found():
    # the extremes inside a block (a sharp rise and fall within one block, at a tie run's end
    # only): the bounds must keep that block, and a point inside a tie run must not count
    size = 5 * BLOCK
    values = np.zeros(size, dtype=np.int64)
    peak = 2 * BLOCK + 10
    values[peak - 5: peak] = 100          # up to 500 at `peak - 1` ...
    values[peak: peak + 5] = -100         # ... and back to 0
    run = np.arange(size)
    run[peak - 1] = run[peak]             # `peak - 1` and `peak` tied: 500 is not read
    node = layout(values, np.zeros(size, dtype=np.int64), np.arange(size), _ends(run))
    mask = np.ones(size, dtype=bool)
    high, low, end, _ = (int(x) for x in masked_sums(node, [mask])[0])
    assert (high, low, end) == _reference(values, values * 0, run, mask)[:3] == (400, 0, 0)


def test_fixed_point_never_overflows_and_rounds_to_half_a_step():
    rng = np.random.default_rng(5)
    values = rng.normal(size=10_000) * np.exp(rng.normal(size=10_000))
    fixed = fixed_point(values)
    assert int(np.abs(fixed.values).astype(object).sum()) < 2**62  # no partial sum overflows
    error = np.abs(fixed.real(fixed.values) - values)
    assert error.max() <= 2.0 ** (-fixed.shift - 1)
    assert fixed.shift >= 40  # about 1e-12 of each term at most


@pytest.mark.parametrize("digits", [2, None])
def test_equal_members_score_the_same_from_any_rows(digits):
    # the same subset masked within two different row sets (two nodes of the beam) gets
    # bit-identical numbers: integer sums do not depend on the rows around the members
    n = 5000
    rng, data = _unweighted(n, digits, 17)
    members = np.sort(rng.choice(n, 1500, replace=False))
    one = np.union1d(members, rng.choice(n, 1000))
    two = np.union1d(members, rng.choice(n, 2500))
    first = masked_scores(data, one, [np.isin(one, members)])
    second = masked_scores(data, two, [np.isin(two, members)])
    assert first.tolist() == second.tolist()


@pytest.mark.parametrize("size", [0, 1, 2, BLOCK + 3])
def test_masked_scores_of_tiny_row_sets(size):
    # no rows, one row, a few rows: D/sigma by the definition (0 for an empty subset)
    rng = np.random.default_rng(size)
    n = 200
    score = np.sort(np.round(rng.uniform(0.1, 0.9, n), 1))  # many ties
    label = (rng.random(n) < score).astype(float)
    data = _data(Predictions.from_arrays(score, label), np.zeros(n, dtype=bool))
    rows = np.sort(rng.choice(n, size, replace=False))
    masks = [np.ones(size, dtype=bool), np.zeros(size, dtype=bool), rng.random(size) < 0.5]
    got = masked_scores(data, rows, masks)
    assert _run_ends(data, rows) is not None or size < 2
    for mask, (z, kuiper, sigma, mean) in zip(masks, got, strict=True):
        members = rows[mask]
        if members.size == 0:
            assert (z, kuiper, sigma, mean) == (0.0, 0.0, 0.0, 0.0)
            continue
        s, r = score[members], label[members] - score[members]
        path = np.cumsum(r)
        read = np.append(path[np.append(s[1:] != s[:-1], True)], 0.0)
        total = np.sum(s * (1 - s))
        assert kuiper == pytest.approx((read.max() - read.min()) / members.size, rel=1e-12,
                                       abs=1e-15)
        assert sigma == pytest.approx(np.sqrt(total) / members.size, rel=1e-12)
        assert z == pytest.approx((read.max() - read.min()) / np.sqrt(total), rel=1e-12,
                                  abs=1e-15)
        assert mean == pytest.approx(r.mean(), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("ties", ["none", "some", "all"])
@pytest.mark.parametrize("n_levels", [1, 3, 40])
def test_level_sums_equal_each_levels_explicit_cumulative_sum(ties, n_levels):
    # every level of a nominal covariate in one pass: each level's own path (its members in
    # score order), read at the last member of each of its tie runs, whatever comes before
    # (all tied: one run, read at each level's last member only)
    rng = np.random.default_rng(7 * n_levels + len(ties))
    size = 3 * BLOCK + 11
    values = rng.integers(-10**15, 10**15, size)  # large: a float sum would lose bits
    variance = rng.integers(0, 10**12, size)
    run = {"none": np.arange(size), "some": np.cumsum(rng.random(size) < 0.4),
           "all": np.zeros(size, dtype=np.int64)}[ties]
    node = layout(values, variance, np.arange(size), _ends(run))
    codes = rng.integers(0, n_levels, size)
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes)
    present = np.flatnonzero(counts)
    starts = np.concatenate(([0], np.cumsum(counts[present])[:-1]))
    got = level_sums(node, order, starts, None if ties == "none" else run[order])
    for level, row in zip(present, got, strict=True):
        expected = _reference(values, variance, run, codes == level)
        assert tuple(int(x) for x in row) == expected


@pytest.mark.parametrize("digits", [2, None])
def test_nominal_levels_are_scored_as_the_evaluator_scores_them(digits):
    # the screen's one-pass level scores (unweighted) against the core's evaluator on each
    # level's gathered members
    n = 6000
    rng, data = _unweighted(n, digits, 23, shift=0.04)
    rows = np.sort(rng.choice(n, 4000, replace=False))
    codes = rng.choice(30, rows.size, p=np.arange(30, 0, -1) / 465).astype(np.int32)
    order, present, sizes = _level_order(codes, 31)
    usable = sizes >= 20
    z = _level_z(data, rows, order, sizes, usable)
    expected = score_candidates(data, [rows[codes == c] for c in present[usable]])[:, 0]
    assert z[usable] == pytest.approx(expected, rel=1e-12)
    assert np.all(z[~usable] == -np.inf)


def test_the_fixed_point_scale_does_not_depend_on_the_labels():
    # the scale of W(R-S) comes from sum W (|R - S| <= 1 for binary responses): held-out labels
    # cannot move the rounding of the search rows' terms
    rng = np.random.default_rng(3)
    n = 3000
    score = np.sort(rng.uniform(0.0, 1.0, n))
    shifts = set()
    for labels in (np.zeros(n), np.ones(n), (rng.random(n) < score).astype(float)):
        data = _data(Predictions.from_arrays(score, labels), np.zeros(n, dtype=bool))
        _, residual, _ = data.layout(np.arange(n))
        shifts.add(residual.shift)
    assert len(shifts) == 1

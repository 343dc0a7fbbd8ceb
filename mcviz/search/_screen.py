r"""Scoring candidate subpopulations: a coarse screen of every cut, and the exact D/sigma.

Exact score (eqs. (1), (2), (5) of paper 000; Appendix C eq. (6) for real-valued responses).
For members :math:`i_1 < \dots < i_m` in score order,

.. math::
    D = \frac{\max_k P_k - \min_k P_k}{\sum_j W_{i_j}}, \quad P_k = \sum_{j \le k} W_{i_j}
    (R_{i_j} - S_{i_j}),\ P_0 = 0, \qquad
    \sigma = \frac{\sqrt{\sum_j S_{i_j}(1 - S_{i_j}) W_{i_j}^2}}{\sum_j W_{i_j}},

with :math:`P` read only at the last member of each run of tied scores; hence
:math:`D/\sigma = \operatorname{range}(P) / \sqrt{\sum_j S(1-S)W^2}`.

Coarse screen. The rows of a node (a parent subpopulation) are cut, in score order, into at most
:data:`BLOCKS` blocks that end at ends of tie runs. One weighted bincount gives, for every code
``c`` of a covariate and block ``b``, the sum :math:`T_{cb}` of :math:`W(R-S)` (and per code the
sum of :math:`S(1-S)W^2` and the count). The path of any set of codes, read at the block ends, is
the cumulative sum over blocks of the set's rows of :math:`T`; for numeric bins every interval of
bins is a difference of two prefix paths, for ordered levels every prefix set is a prefix, so
all thresholds, bands and level sets of a covariate are scored in :math:`O(m + B^2 K)` without
a rows x candidates matrix. The block-end path is a subset of the exact path, so the coarse
:math:`D/\sigma` never exceeds the exact one; the best few per covariate are re-scored exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcviz.core import Evaluator, SigmaMethod, finish, safe_ratio
from mcviz.search._columns import Column, Cut

BLOCKS = 256
"""Blocks of the coarse path (block ends are tie-run ends)."""


@dataclass(slots=True, eq=False)
class Data:
    """Per-row arrays of the predictions, in score order, computed once."""

    evaluator: Evaluator           # the core's: exact D and sigma of member sets
    weighted_residual: np.ndarray  # W (R - S)
    variance: np.ndarray           # S (1 - S) W^2 (binary); a screening proxy otherwise
    residual: np.ndarray           # R - S
    weight: np.ndarray
    bernoulli: bool                # eq. (5); False: Appendix C eq. (6)
    parity: np.ndarray             # two folds stratified by score, free of the order of ties


def _ranges(paths: np.ndarray) -> np.ndarray:
    """Range of each path along the last axis, with the origin P_0 = 0 included (eq. (2))."""
    return np.maximum(paths.max(axis=-1), 0.0) - np.minimum(paths.min(axis=-1), 0.0)


def _score_candidates(data: Data, members: list[np.ndarray]) -> np.ndarray:
    """Exact D/sigma, D, sigma and mean residual of each member set (rows ``(k, 4)``).

    Members are sorted positions in score order; the core's evaluator computes eqs. (1), (2)
    and (5) (Appendix C eq. (6) for real-valued responses) with the tie rule, 0/0 = 0.
    """
    if not members:
        return np.zeros((0, 4))
    summaries = data.evaluator.summaries(data.residual, members, adjacent=not data.bernoulli)
    stats = finish(summaries, SigmaMethod.BERNOULLI if data.bernoulli else SigmaMethod.ADJACENT)
    mean = safe_ratio(summaries.offset, summaries.weight)
    return np.column_stack((stats.kuiper_z, stats.kuiper, stats.sigma, mean))


def block_ids(data: Data, rows: np.ndarray) -> tuple[np.ndarray, int]:
    """Block of each row of a node (blocks end at tie-run ends) and the number of blocks."""
    groups = data.evaluator.run_id[rows]
    ends = np.flatnonzero(np.concatenate((groups[1:] != groups[:-1], [True])))
    n_blocks = min(BLOCKS, ends.size)
    last = ends[(np.arange(1, n_blocks + 1) * ends.size) // n_blocks - 1]
    sizes = np.diff(np.concatenate(([-1], last)))
    return np.repeat(np.arange(n_blocks, dtype=np.int64), sizes), n_blocks


@dataclass(frozen=True, slots=True)
class Screened:
    """A candidate from the coarse screen: its cut, coarse D/sigma and size."""

    z: float
    cut: Cut
    count: int


def screen_column(
    data: Data, rows: np.ndarray, block: np.ndarray, n_blocks: int, column: Column, j: int,
    *, min_rows: int, keep: int,
) -> tuple[list[Screened], int]:
    """Return the best ``keep`` cuts of one covariate in a node, and how many were screened."""
    codes = column.codes[rows]
    n_codes = column.n_codes
    table = np.bincount(
        codes.astype(np.int64) * n_blocks + block, weights=data.weighted_residual[rows],
        minlength=n_codes * n_blocks,
    ).reshape(n_codes, n_blocks)
    variance = np.bincount(codes, weights=data.variance[rows], minlength=n_codes)
    count = np.bincount(codes, minlength=n_codes)
    if column.kind == "numeric":
        found = _screen_numeric(table, variance, count, column, j)
    else:
        weight = np.bincount(codes, weights=data.weight[rows], minlength=n_codes)
        found = _screen_nominal(table, variance, count, weight, j)
    z, sizes, cuts = found
    usable = (sizes >= min_rows) & (sizes < rows.size) & np.isfinite(z)
    index = np.flatnonzero(usable)
    index = index[np.argsort(-z[index], kind="stable")]
    chosen: list[Screened] = []
    seen: set[tuple[int, float]] = set()
    for i in index:
        signature = (int(sizes[i]), round(float(z[i]), 9))  # equal sets from empty bins
        if signature in seen:
            continue
        seen.add(signature)
        chosen.append(Screened(float(z[i]), cuts(int(i)), int(sizes[i])))
        if len(chosen) == keep:
            break
    return chosen, int(z.size)


def _z(ranges: np.ndarray, variance: np.ndarray) -> np.ndarray:
    safe = np.where(variance > 0, variance, 1.0)
    return np.where(variance > 0, ranges / np.sqrt(safe), 0.0)


def _screen_numeric(table, variance, count, column: Column, j: int):
    bins = column.n_codes - 1  # observed bins; code `bins` is missing
    prefix = np.zeros((bins + 1, table.shape[1]))
    np.cumsum(table[:bins], axis=0, out=prefix[1:])
    paths = np.cumsum(prefix, axis=1)  # paths[b]: bins 0..b-1 read at the block ends
    missing_path = np.cumsum(table[bins])
    var_prefix = np.concatenate(([0.0], np.cumsum(variance[:bins])))
    count_prefix = np.concatenate(([0], np.cumsum(count[:bins])))
    n_missing = int(count[bins])
    low, high = np.triu_indices(bins + 1, k=1)  # bins low..high-1
    keep = ~((low == 0) & (high == bins))  # all observed: "present", handled below
    low, high = low[keep], high[keep]
    ranges = np.empty(low.size)
    for start in range(0, low.size, 512):  # bounded memory: 512 paths at a time
        part = slice(start, start + 512)
        diff = paths[high[part]] - paths[low[part]]
        upper = high[part] == bins  # "x >= lo" includes the missing rows
        diff[upper] += missing_path
        ranges[part] = _ranges(diff)
    var_set = var_prefix[high] - var_prefix[low] + np.where(high == bins, variance[bins], 0.0)
    sizes = count_prefix[high] - count_prefix[low] + np.where(high == bins, n_missing, 0)
    z = _z(ranges, var_set)
    edges = column.edges
    extra_z, extra_sizes = [], []
    if n_missing:
        observed_path = paths[bins]
        extra_z = [_z(_ranges(missing_path), variance[bins]),
                   _z(_ranges(observed_path), var_prefix[bins])]
        extra_sizes = [n_missing, int(count_prefix[bins])]
    all_z = np.concatenate((z, np.asarray(extra_z, dtype=float)))
    all_sizes = np.concatenate((sizes, np.asarray(extra_sizes, dtype=np.int64)))

    def cut(i: int) -> Cut:
        if i >= low.size:
            return Cut(j, "missing" if i == low.size else "present")
        a, b = int(low[i]), int(high[i])
        if a == 0:
            return Cut(j, "lt", hi=float(edges[b - 1]))
        if b == bins:
            return Cut(j, "ge", lo=float(edges[a - 1]))
        return Cut(j, "band", lo=float(edges[a - 1]), hi=float(edges[b - 1]))

    return all_z, all_sizes, cut


def _screen_nominal(table, variance, count, weight, j: int):
    levels = table.shape[0] - 1
    present = np.flatnonzero(count[:levels] > 0)
    totals = table[present].sum(axis=1)
    mean = totals / weight[present]  # levels ordered by weighted mean residual (as trees do)
    order = present[np.argsort(mean, kind="stable")]
    level_paths = np.cumsum(table[order], axis=1)  # each present level alone
    ascending = np.cumsum(level_paths, axis=0)[:-1]  # prefix sets of 1..L'-1 levels
    descending = np.cumsum(level_paths[::-1], axis=0)[:-1]
    var_sorted, count_sorted = variance[order], count[order]
    paths = [level_paths, ascending[1:], descending[1:]]
    sets: list[tuple[int, ...]] = [(int(c),) for c in order]
    sets += [tuple(int(c) for c in order[: k + 1]) for k in range(1, order.size - 1)]
    sets += [tuple(int(c) for c in order[::-1][: k + 1]) for k in range(1, order.size - 1)]
    var_sets = [var_sorted, np.cumsum(var_sorted)[1:-1], np.cumsum(var_sorted[::-1])[1:-1]]
    size_sets = [count_sorted, np.cumsum(count_sorted)[1:-1], np.cumsum(count_sorted[::-1])[1:-1]]
    n_missing = int(count[levels])
    z = _z(_ranges(np.concatenate(paths, axis=0)), np.concatenate(var_sets))
    sizes = np.concatenate(size_sets).astype(np.int64)
    if n_missing:
        missing_path = np.cumsum(table[levels])
        observed_path = level_paths.sum(axis=0)
        z = np.concatenate((z, [_z(_ranges(missing_path), variance[levels]),
                                _z(_ranges(observed_path), var_sorted.sum())]))
        sizes = np.concatenate((sizes, [n_missing, int(count_sorted.sum())]))

    def cut(i: int) -> Cut:
        if i >= len(sets):
            return Cut(j, "missing" if i == len(sets) else "present")
        return Cut(j, "in", levels=tuple(sorted(sets[i])))

    return z, sizes, cut

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
``RULES.blocks`` blocks that end at ends of tie runs. One weighted bincount gives, for every code
``c`` of a covariate and block ``b``, the sum :math:`T_{cb}` of :math:`W(R-S)` (and per code the
sum of :math:`S(1-S)W^2` and the count). The path of any set of codes, read at the block ends, is
the cumulative sum over blocks of the set's rows of :math:`T`; for numeric bins every interval of
bins is a difference of two prefix paths, so all thresholds and bands of a covariate are scored
in :math:`O(m + B^2 K)` without a rows x candidates matrix. The block-end path is a subset of
the exact path, so the coarse :math:`D/\sigma` never exceeds the exact one; the best few per
covariate are re-scored exactly.

Nominal covariates. Every single level (and ``is missing``) is scored exactly, whatever the
number of levels: the node's rows sorted by level (a stable radix sort keeps the score order
within each level) are cut into one member array per level and passed to the core's evaluator
at once, :math:`O(m)` memory. Level *sets* are candidates only when they beat their best single
level out of fold by a margin that grows with their size (:func:`_level_sets`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from mcviz.core import ChunkSummaries, Evaluator, SigmaMethod, finish, safe_ratio
from mcviz.search._columns import Column, Cut
from mcviz.search._masked import Fixed, Layout, fixed_point, layout, level_sums, masked_sums
from mcviz.search.rules import RULES

NODES_GATHERED = 3
"""Row arrays whose per-row arrays :meth:`Data.at` keeps gathered."""


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
    _nodes: list = field(default_factory=list)  # recent rows and their gathered arrays
    _fixed: tuple[Fixed, Fixed] | None = None   # W(R-S) and S(1-S)W^2 in fixed point
    _layouts: list = field(default_factory=list)  # recent rows and their :class:`Layout`

    def at(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``W(R-S)``, ``S(1-S)W^2`` and the fold parity at ``rows``.

        Every covariate of a node is screened over the same rows, and a refinement comes back
        to the same rows of the other conditions: the gathers of the last
        :data:`NODES_GATHERED` row arrays are kept (found by identity; they are never
        modified), 17 bytes per row each.
        """
        return _recent(self._nodes, rows, lambda: (
            self.weighted_residual[rows], self.variance[rows], self.parity[rows]))

    def layout(self, rows: np.ndarray) -> tuple[Layout, Fixed, Fixed]:
        """Return the fixed-point block layout of ``rows`` (:mod:`~mcviz.search._masked`).

        Made once per row array (the last :data:`NODES_GATHERED`, found by identity, 17 bytes
        per row each), with the fixed-point terms of all rows (made once).
        """
        if self._fixed is None:  # |W(R-S)| <= W (binary responses, scores in [0, 1]): a scale
            # free of the labels, so no held-out label reaches the search's numbers
            self._fixed = (fixed_point(self.weighted_residual, float(np.abs(self.weight).sum())),
                           fixed_point(self.variance))
        residual, variance = self._fixed
        made = _recent(self._layouts, rows, lambda: layout(
            residual.values, variance.values, rows, _run_ends(self, rows)))
        return made, residual, variance


def _recent(cache: list, rows: np.ndarray, make: Callable[[], object]) -> object:
    """Return what ``make`` gives for ``rows``, kept for the last :data:`NODES_GATHERED` arrays.

    ``cache`` holds ``(rows, value)`` pairs, the most recent last; row arrays are found by
    identity (they are never modified).
    """
    for k, (key, value) in enumerate(cache):
        if key is rows:
            cache.append(cache.pop(k))
            return value
    if len(cache) >= NODES_GATHERED:
        cache.pop(0)
    value = make()
    cache.append((rows, value))
    return value


def _ranges(paths: np.ndarray) -> np.ndarray:
    """Range of each path along the last axis, with the origin P_0 = 0 included (eq. (2))."""
    return np.maximum(paths.max(axis=-1), 0.0) - np.minimum(paths.min(axis=-1), 0.0)


def score_candidates(data: Data, members: list[np.ndarray]) -> np.ndarray:
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


def masked_scores(data: Data, rows: np.ndarray, masks: list[np.ndarray]) -> np.ndarray:
    r""":func:`score_candidates` of the subsets ``rows[mask]``, without gathering them.

    Rows ``(k, 4)``: exact D/sigma, D, sigma and mean residual of each subset. A row outside
    the subset adds 0 to the cumulative sum of :math:`W(R-S)` over ``rows`` (exactly: a sum
    plus 0 is the sum), so that path read at the ends of the tie runs of ``rows`` is the
    subset's own path at its run ends (a run's end within ``rows`` follows its last member with
    nothing added in between), repeated where runs hold no member: the same maximum and
    minimum. :math:`\sum W` and :math:`\sum S(1-S)W^2` (eq. (5)) are masked sums; the core's
    :func:`~mcviz.core.finish` turns them into D, sigma and D/sigma (eqs. (2), (5)). Bernoulli
    responses only; faster than gathering when the subsets hold a fair share of ``rows``
    (``tests/search`` compares both on tied, weighted rows).

    Unweighted rows: the path's extremes, end and :math:`\sum S(1-S)` are exact integer sums
    of fixed-point terms, in blocks (:func:`~mcviz.search._masked.masked_sums`: a third of the
    time of a cumulative sum; the same numbers for the same members whatever ``rows`` hold
    them). Weighted rows: a cumulative sum over ``rows`` per mask.
    """
    out = ChunkSummaries.empty(len(masks))
    if data.evaluator.weighted:
        _masked_float(data, rows, masks, out)
    else:
        node, residual, variance = data.layout(rows)
        _from_fixed(out, masked_sums(node, masks), residual, variance,
                    [np.count_nonzero(mask) for mask in masks])
    stats = finish(out, SigmaMethod.BERNOULLI)
    mean = safe_ratio(out.offset, out.weight)
    return np.column_stack((stats.kuiper_z, stats.kuiper, stats.sigma, mean))


def _from_fixed(out: ChunkSummaries, sums: np.ndarray, residual: Fixed, variance: Fixed,
                counts) -> None:
    """Fill ``out`` from integer ``(high, low, end, variance)`` sums of unweighted rows."""
    out.high[:], out.low[:], out.offset[:] = (residual.real(sums[:, i]) for i in range(3))
    out.variance[:] = variance.real(sums[:, 3])
    out.count[:] = counts
    out.weight[:] = out.count


def _masked_float(data: Data, rows: np.ndarray, masks: list[np.ndarray],
                  out: ChunkSummaries) -> None:
    """Fill ``out`` for :func:`masked_scores` by a cumulative sum over ``rows`` per mask."""
    weighted, variance, _ = data.at(rows)
    ends = _run_ends(data, rows)
    weight = data.weight[rows]
    path, terms = np.empty(rows.size), np.empty(rows.size)  # reused: no new pages per mask
    for k, mask in enumerate(masks):
        np.multiply(weighted, mask, out=path)  # x * 1 = x, x * 0 = 0: exact (no branch per row)
        np.cumsum(path, out=path)
        at_ends = path if ends is None else path[ends]
        if path.size:
            out.high[k] = max(float(at_ends.max()), 0.0)
            out.low[k] = min(float(at_ends.min()), 0.0)
            out.offset[k] = path[-1]
        out.count[k] = np.count_nonzero(mask)
        out.weight[k] = np.multiply(weight, mask, out=terms).sum()
        out.variance[k] = np.multiply(variance, mask, out=terms).sum()


def slab_variants_z(data: Data, rows: np.ndarray, base: np.ndarray, slab: np.ndarray,
                    slab_in: np.ndarray) -> np.ndarray:
    r"""Exact D/sigma of sets that share all members but a few: one pass over ``rows``.

    Variant :math:`k` holds the rows of ``rows`` where ``base`` is True, plus the rows at
    positions ``slab`` (indices into ``rows``, increasing, not in ``base``) where
    ``slab_in[k]`` is True: a cut point moved between two neighbouring candidate cuts changes
    only the membership of the rows between them. Its path (eq. (2), read at the ends of the
    tie runs of ``rows``: a run's end within ``rows`` follows its last member with nothing
    added in between, and a run without members repeats the value before it) is the base path
    :math:`P_F` plus the slab's own contribution :math:`C_k`, which is constant between two
    slab rows. With :math:`t` indexing the stretches of run ends between slab rows,

    .. math:: \max_e P_k(e) = \max_t \bigl(\max_{e \in t} P_F(e) + C_k(t)\bigr),

    and likewise the minimum, so every variant costs :math:`O(|\text{slab}|)` after one
    :math:`O(|\text{rows}|)` pass; :math:`\sigma^2` (eq. (5)) adds the slab rows'
    :math:`S(1-S)W^2` to the base's. The same numbers as :func:`score_candidates` (Bernoulli
    responses only; ``tests/search`` compares them on tied, weighted rows).
    """
    weighted = data.weighted_residual[rows]
    variance = data.variance[rows]
    path = np.cumsum(weighted * base)  # exact: x * 1 = x, x * 0 = 0
    ends = _run_ends(data, rows)
    if ends is None:  # no ties: every row ends its run, a stretch starts at each slab row
        starts = slab if slab.size and slab[0] == 0 else np.concatenate(([0], slab))  # sorted
        which = np.searchsorted(slab, starts, side="right")  # slab rows at or before each
        ends = slice(None)
    else:
        stretch = np.searchsorted(slab, ends, side="right")  # slab rows at or before each end
        starts = np.flatnonzero(np.concatenate(([True], stretch[1:] != stretch[:-1])))
        which = stretch[starts]  # the stretches that hold run ends
    high = np.maximum.reduceat(path[ends], starts)
    low = np.minimum.reduceat(path[ends], starts)
    added = np.where(slab_in, weighted[slab], 0.0)
    own = np.concatenate((np.zeros((slab_in.shape[0], 1)), np.cumsum(added, axis=1)), axis=1)
    shift = own[:, which]
    ranges = (np.maximum((high + shift).max(axis=1), 0.0)
              - np.minimum((low + shift).min(axis=1), 0.0))
    total = ((variance * base).sum()
             + np.where(slab_in, variance[slab], 0.0).sum(axis=1))
    return _z(ranges, total)


def _run_ends(data: Data, rows: np.ndarray) -> np.ndarray | None:
    """Positions in ``rows`` of the last row of each tie run (None: no ties, every row)."""
    if not data.evaluator.has_ties:
        return None
    groups = data.evaluator.run_id[rows]
    return np.flatnonzero(np.concatenate((groups[1:] != groups[:-1], [True])))


def block_ids(data: Data, rows: np.ndarray) -> tuple[np.ndarray, int]:
    """Block of each row of a node (blocks end at tie-run ends) and the number of blocks."""
    ends = _run_ends(data, rows)
    if ends is None:
        ends = np.arange(rows.size)
    n_blocks = min(RULES.blocks, ends.size)
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
    *, min_rows: int, keep: int, codes: np.ndarray | None = None,
) -> tuple[list[Screened], int]:
    """Return the best ``keep`` cuts of one covariate in a node, and how many were screened.

    Numeric covariates: every threshold and band at the candidate cuts, coarsely. Nominal
    covariates: every single level scored exactly, plus at most one level set per direction
    (:func:`_level_sets`), which comes on top of the ``keep`` best. ``codes``: the column's
    codes at ``rows`` when the caller has gathered them.
    """
    codes = column.codes[rows] if codes is None else codes
    n_codes = column.n_codes
    if column.kind == "nominal":
        return _screen_nominal(data, rows, block, n_blocks, codes, column, j,
                               min_rows=min_rows, keep=keep)
    weighted, variance, _ = data.at(rows)
    table, variance, count = _code_sums(codes, n_codes, block, n_blocks, weighted, variance)
    z, sizes, cuts = _screen_numeric(table, variance, count, column, j)
    return _best(z, sizes, cuts, rows.size, min_rows, keep), int(z.size)


def _code_sums(codes: np.ndarray, n_codes: int, block: np.ndarray, n_blocks: int,
               weighted: np.ndarray, variance: np.ndarray, *, count: bool = True):
    """Return the sums of ``weighted`` per code and block, of ``variance`` and rows per code.

    Shapes ``(n_codes, n_blocks)``, ``(n_codes,)``, ``(n_codes,)`` (bincounts; the counts
    None unless ``count``). The codes are widened to the index type once
    (:func:`np.bincount` would convert them on every call, and a narrow type's arithmetic
    would overflow); the sums are the same whatever the index's type (a bincount adds in row
    order).
    """
    wide = codes.astype(np.intp)
    index = wide * n_blocks
    index += block
    table = np.bincount(index, weights=weighted, minlength=n_codes * n_blocks)
    return (table.reshape(n_codes, n_blocks),
            np.bincount(wide, weights=variance, minlength=n_codes),
            np.bincount(wide, minlength=n_codes) if count else None)


def _best(z, sizes, cuts, n_rows: int, min_rows: int, keep: int) -> list[Screened]:
    """Return the ``keep`` largest ``z`` of usable size (equal member sets counted once)."""
    usable = (sizes >= min_rows) & (sizes < n_rows) & np.isfinite(z)
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
    return chosen


def _z(ranges: np.ndarray, variance: np.ndarray) -> np.ndarray:
    safe = np.where(variance > 0, variance, 1.0)
    return np.where(variance > 0, ranges / np.sqrt(safe), 0.0)


@functools.lru_cache(maxsize=8)
def _pairs(bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Bin intervals ``low..high-1`` of :func:`_screen_numeric`, row by row (read-only).

    Every pair ``low < high`` of ``0..bins`` but ``(0, bins)`` (all observed: "present",
    scored apart), ordered by ``low`` then ``high``; the same for every column of ``bins`` bins.
    """
    low, high = np.triu_indices(bins + 1, k=1)
    keep = ~((low == 0) & (high == bins))
    low, high = low[keep], high[keep]
    low.flags.writeable = high.flags.writeable = False
    return low, high


def _pair_ranges(paths: np.ndarray, missing_path: np.ndarray) -> np.ndarray:
    """Range (origin included) of ``paths[high] - paths[low]`` for the pairs of :func:`_pairs`.

    ``paths``: ``(bins + 1, blocks)`` prefix paths (single precision); an interval reaching
    the last bin (``x >= lo``) holds the missing rows too, so ``missing_path`` is added to
    its difference. Each row of prefix paths minus the rows after it, written into one
    buffer of about 512 paths and reduced at once: the same single-precision differences,
    maxima and minima as gathering each pair's two paths, without the gathers.
    """
    bins = paths.shape[0] - 1
    total = max(bins * (bins + 1) // 2 - 1, 0)
    highs = np.empty(total, dtype=paths.dtype)
    lows = np.empty_like(highs)
    buffer = np.empty((min(total, 512) + bins, paths.shape[1]), dtype=paths.dtype)
    at = done = 0  # rows of ``buffer`` filled; pairs reduced
    for a in range(bins):  # rows a + 1..bins minus row a, into the buffer
        diff = buffer[at:at + bins - a]
        np.subtract(paths[a + 1:], paths[a], out=diff)
        diff[-1] += missing_path  # the interval a..bins-1 and the missing rows
        at += diff.shape[0] - (a == 0)  # (0, bins) is "present": overwritten or left out
        if at >= 512 or a == bins - 1:  # bounded memory: about 512 paths at a time
            buffer[:at].max(axis=1, out=highs[done:done + at])
            buffer[:at].min(axis=1, out=lows[done:done + at])
            done, at = done + at, 0
    return (np.maximum(highs, 0.0) - np.minimum(lows, 0.0)).astype(np.float64)


def _screen_numeric(table, variance, count, column: Column, j: int):
    bins = column.n_codes - 1  # observed bins; code `bins` is missing
    prefix = np.zeros((bins + 1, table.shape[1]))
    np.cumsum(table[:bins], axis=0, out=prefix[1:])
    # paths[b]: bins 0..b-1 read at the block ends; single precision for the pairwise
    # differences (a coarse screen: 3x faster, errors ~1e-7 of the path; winners are re-scored)
    paths = np.cumsum(prefix, axis=1).astype(np.float32)
    missing_path = np.cumsum(table[bins]).astype(np.float32)
    var_prefix = np.concatenate(([0.0], np.cumsum(variance[:bins])))
    count_prefix = np.concatenate(([0], np.cumsum(count[:bins])))
    n_missing = int(count[bins])
    low, high = _pairs(bins)  # bins low..high-1, all but (0, bins)
    ranges = _pair_ranges(paths, missing_path)
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




def _level_order(codes: np.ndarray, n_codes: int):
    """Rows by level, each level in score order: (order, codes present, their counts)."""
    # a radix sort (stable: keeps the score order), one pass per byte of the narrowest type
    small = codes.astype(np.uint8 if n_codes <= 2**8 else np.uint16 if n_codes <= 2**16
                         else codes.dtype)
    order = np.argsort(small, kind="stable")
    counts = np.bincount(small, minlength=n_codes)
    present = np.flatnonzero(counts)
    return order, present, counts[present]


def _level_z(data: Data, rows: np.ndarray, order: np.ndarray, sizes: np.ndarray,
             usable: np.ndarray) -> np.ndarray:
    """Exact D/sigma of each level's members (``order``: rows by level; -inf where unusable).

    Unweighted Bernoulli rows: every level in one pass of exact integer sums
    (:func:`~mcviz.search._masked.level_sums`, the numbers of :func:`masked_scores`); else
    the core's evaluator on each usable level's members.
    """
    z = np.full(sizes.size, -np.inf)
    if not usable.any():
        return z
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    if data.evaluator.weighted or not data.bernoulli:
        members = np.split(rows[order], starts[1:])
        z[usable] = score_candidates(data, [members[i] for i in np.flatnonzero(usable)])[:, 0]
        return z
    node, residual, variance = data.layout(rows)
    run = data.evaluator.run_id[rows].take(order) if data.evaluator.has_ties else None
    out = ChunkSummaries.empty(sizes.size)
    _from_fixed(out, level_sums(node, order, starts, run), residual, variance, sizes)
    z[usable] = finish(out, SigmaMethod.BERNOULLI).kuiper_z[usable]
    return z


def _screen_nominal(data: Data, rows, block, n_blocks: int, codes, column: Column, j: int,
                    *, min_rows: int, keep: int) -> tuple[list[Screened], int]:
    """Every level exactly, ``is missing``, and the level sets.

    On the level view of a whole-number column (``column.ranges``) a level set is kept only when
    its out-of-fold D/sigma beats the coarse in-sample D/sigma of every range of the column in
    the node: numbers are read as ranges unless a set of codes is clearly better (a band of ages
    is not replaced by a subset of its ages).
    """
    n_codes = column.n_codes
    missing_code = n_codes - 1
    order, present, sizes = _level_order(codes, n_codes)
    usable = (sizes >= min_rows) & (sizes < rows.size)
    z = _level_z(data, rows, order, sizes, usable)
    count = np.zeros(n_codes, dtype=np.int64)
    count[present] = sizes

    def single(i: int) -> Cut:
        code = int(present[i])
        return Cut(j, "missing") if code == missing_code else Cut(j, "in", levels=(code,))

    chosen = _best(z, sizes, single, rows.size, min_rows, keep)
    observed = present[present != missing_code]
    if observed.size >= 3:
        sets = _level_sets(data, rows, block, n_blocks, codes, column, j, observed, count,
                           min_rows=min_rows)
        if sets and column.ranges is not None:  # codes: a set must beat every range
            weighted, variance, _ = data.at(rows)
            ranges = _screen_numeric(*_code_sums(codes, n_codes, block, n_blocks, weighted,
                                                 variance), column.ranges, j)
            usable = (ranges[1] >= min_rows) & (ranges[1] < rows.size)
            best_range = float(ranges[0][usable].max()) if usable.any() else -np.inf
            sets = [s for s in sets if s.z > best_range]
        chosen += sets
    return chosen, int(present.size + 2 * observed.size)


def level_priority(sums: np.ndarray, variance: np.ndarray, v0: float,
                   sign: float) -> np.ndarray:
    r"""Return the order in which levels join a set (largest first): the shrunken shift.

    A level :math:`l` with drift :math:`d_l = \sum W(R-S)` and variance
    :math:`v_l = \sum S(1-S)W^2` over its rows. If the model's log-odds are off by
    :math:`\theta_l` on the level, :math:`E[R-S] \approx \theta_l S(1-S)` row by row, so
    :math:`d_l \mid \theta_l \sim N(\theta_l v_l, v_l)` (unweighted rows; with weights the same
    with :math:`W`). With the prior :math:`\theta_l \sim N(0, 1/v_0)` the posterior mean is

    .. math:: \hat\theta_l = d_l / (v_l + v_0),

    the level's drift per unit variance shrunk toward 0 by its variance: a large level keeps its
    mean residual, a level of a few rows (:math:`v_l \ll v_0`) is pulled to 0 in proportion, so an
    extreme mean of three rows does not lead. Why the order of :math:`\hat\theta`: the set
    :math:`S` maximising the expected :math:`D/\sigma \approx \sum_S d_l / \sqrt{\sum_S v_l}`
    (a set's whole-path drift over its deviation) with :math:`E[d_l] = \hat\theta_l v_l` is a
    prefix of that order -- adding :math:`l` to :math:`(A, B) = (\sum d, \sum v)` raises
    :math:`A/\sqrt B` iff :math:`\hat\theta_l v_l / v_l` exceeds a threshold that depends on
    :math:`(A, B)` only (to first order :math:`A/(2B)`), so the optimum holds every level above
    a cut of :math:`\hat\theta` and none below (an exchange argument). The prior's precision
    :math:`v_0` is the callers' (:func:`prior_precision`). ``sign``: +1 for observed above
    predicted, -1 below.
    """
    return sign * sums / (variance + v0)


def prior_precision(variance: np.ndarray) -> float:
    r"""Return :math:`v_0` of :func:`level_priority`: the median variance of the levels present.

    The prior :math:`\theta_l \sim N(0, 1/v_0)` says a typical level's own shift is about one of
    its standard errors (:math:`\theta\sqrt{v_{\text{med}}} \approx 1`): a level smaller than
    the typical one is shrunk by more than half, a larger one less. The median, not a moment
    estimate of :math:`\tau^2`: a sparse shift (25 of 5,000 levels) hardly moves a moment
    estimate, which the largest levels' noise sets (``benchmarks/bench_find.py --more levels25``
    measured the orders: this one ranks as many true levels first as the plain z and leads to
    sets of fewer noise levels).
    """
    present = variance[variance > 0]
    if not present.size:
        return 1.0
    half = present.size // 2  # np.median's value: the middle one, or the mean of the two
    if present.size % 2:
        return float(np.partition(present, half)[half])
    middle = np.partition(present, (half - 1, half))
    return float((middle[half - 1] + middle[half]) / 2.0)


LEVEL_TABLE = 1 << 16
"""Levels x blocks up to which :func:`_level_sets` sums every level's rows per fold and block
at once (one bincount, 1 MiB at most: the sums of :func:`_prefix_paths_of`, whose bins hold
the same rows in the same order); above it only the levels of the orders are summed."""


def _prefix_paths(codes: np.ndarray, order: np.ndarray, n_codes: int, block: np.ndarray,
                  n_blocks: int, weighted: np.ndarray,
                  keep: np.ndarray | None = None) -> np.ndarray:
    """Block-end paths of the prefix sets of ``order`` (row k: the first k + 1 levels).

    Only the rows of the levels in ``order`` (and ``keep``, a row mask) are summed, into a table
    of ``len(order)`` x ``n_blocks``: memory O(rows + levels + len(order) x blocks) whatever the
    number of levels (never levels x blocks).
    """
    return _prefix_paths_of(codes, [order], n_codes, block, n_blocks, weighted, keep)[0]


def _prefix_paths_of(codes: np.ndarray, orders: list[np.ndarray], n_codes: int,
                     block: np.ndarray, n_blocks: int, weighted: np.ndarray,
                     keep: np.ndarray | None = None) -> list[np.ndarray]:
    """:func:`_prefix_paths` of several orders over the same rows, from one pass over them.

    The sums per level and block are those of one bincount over the levels of all the orders
    (a bin adds its rows in row order whatever the bins' numbering: the same sums), then each
    order's rows of that table are taken in its order.
    """
    levels = np.unique(np.concatenate(orders))
    rank = np.full(n_codes, -1, dtype=np.intp)
    rank[levels] = np.arange(levels.size)
    ranks = rank.take(codes)
    if keep is not None:
        ranks[~keep] = -1
    inside = np.flatnonzero(ranks >= 0)
    index = ranks[inside] * n_blocks + block[inside]
    table = np.bincount(index, weights=weighted[inside],
                        minlength=levels.size * n_blocks).reshape(levels.size, n_blocks)
    return [np.cumsum(np.cumsum(table[rank[order]], axis=1), axis=0) for order in orders]


def _level_sets(data: Data, rows, block, n_blocks: int, codes, column: Column, j: int,
                observed: np.ndarray, count: np.ndarray, *,
                min_rows: int) -> list[Screened]:
    r"""At most one level set per direction, chosen out of fold with a complexity penalty.

    Levels are ordered by their shrunken shift :math:`d_l / (v_l + v_0)`
    (:func:`level_priority`, :math:`v_0` by :func:`prior_precision`); the best set of each size
    :math:`k` is a prefix of that order. The order is learnt on one fold of the
    node's rows (:attr:`Data.parity`) and the prefix sets scored (coarse D/sigma at block ends)
    on the other, both ways: :math:`z_{\text{oof}}(k) = (z_{A\to B}(k) + z_{B\to A}(k))/\sqrt 2`.
    The size is :math:`k^* = \arg\max_k z_{\text{oof}}(k) - 0.75\log_2 k`: a penalty for
    complexity, so a set of :math:`k` levels must beat its best single level by
    :math:`0.75\log_2 k` and each smaller set of :math:`j` levels by :math:`0.75\log_2(k/j)`
    out of fold (noise levels lower the out-of-fold score in expectation, so a set of noise
    levels cannot outrank a real one-level group); :math:`k` ranges over the sizes whose set (the
    first :math:`k` levels in the order of all the node's rows) holds at least ``min_rows`` rows,
    so a true set of many small levels is not lost because its best out-of-fold size fell below
    the minimum. When :math:`k^* \ge 2` that set is the candidate. ``count``: rows per code. Per-level
    sums are bincounts over the level codes and the paths are built for the first
    ``RULES.max_set_levels`` levels only (:func:`_prefix_paths`): memory O(rows + levels)
    (or a table of every level's sums per fold and block, up to :data:`LEVEL_TABLE` entries).
    """
    n_codes = column.n_codes
    weighted, row_variance, parity = data.at(rows)
    code_fold = codes.astype(np.intp) * 2 + parity
    sums = np.bincount(code_fold, weights=weighted, minlength=n_codes * 2).reshape(n_codes, 2)
    variance = np.bincount(code_fold, weights=row_variance,
                           minlength=n_codes * 2).reshape(n_codes, 2)
    top = min(observed.size - 1, RULES.max_set_levels)
    by_block = folds = None
    if n_codes * n_blocks <= LEVEL_TABLE:  # few levels: every level's block sums in one pass
        by_block = np.bincount(code_fold * n_blocks + block, weights=weighted,
                               minlength=n_codes * 2 * n_blocks).reshape(n_codes, 2, n_blocks)
    else:
        folds = [parity == 0, None]
        folds[1] = ~folds[0]
    whole_variance = variance[observed].sum(axis=1)
    whole_sums, whole_v0 = sums[observed].sum(axis=1), prior_precision(whole_variance)
    fold_v0 = [prior_precision(variance[observed, fit]) for fit in (0, 1)]
    oofs = {1.0: np.zeros(top), -1.0: np.zeros(top)}
    for fit, test in ((0, 1), (1, 0)):  # both directions' orders scored in one pass
        orders = [observed[np.argsort(-level_priority(
            sums[observed, fit], variance[observed, fit], fold_v0[fit], sign), kind="stable")][:top]
            for sign in oofs]
        paths = [np.cumsum(np.cumsum(by_block[order, test], axis=1), axis=0)
                 for order in orders] if by_block is not None else _prefix_paths_of(
            codes, orders, n_codes, block, n_blocks, weighted, folds[test])
        for sign, order, path in zip(oofs, orders, paths, strict=True):
            oofs[sign] += _z(_ranges(path), np.cumsum(variance[order, test]))
    found = []
    for sign, oof in oofs.items():
        whole = level_priority(whole_sums, whole_variance, whole_v0, sign)
        whole = observed[np.argsort(-whole, kind="stable")][:top]
        sizes = np.cumsum(count[whole])  # the sets a size k* gives (on all the node's rows)
        oof /= np.sqrt(2.0)
        penalised = oof - RULES.set_penalty * np.log2(np.arange(1, top + 1))
        penalised[(sizes < min_rows) | (sizes >= rows.size)] = -np.inf  # usable sets only
        best_k = int(np.argmax(penalised)) + 1  # the first of equal maxima: the smaller set
        if best_k < 2 or not np.isfinite(penalised[best_k - 1]):
            continue
        found.append(Screened(float(oof[best_k - 1]), Cut(j, "in", levels=tuple(sorted(
            int(c) for c in whole[:best_k]))), int(sizes[best_k - 1])))
    return found


def join_threshold(own: np.ndarray, tail: float, most: int) -> float:
    r"""The own drift a level needs to join a set: a step-up threshold at ``tail``.

    ``own``: each of the :math:`L` levels' own drift (a z, one-sided in the finding's
    direction). With :math:`s_1 \ge s_2 \ge \dots` the drifts in decreasing order and
    :math:`c_k = \Phi^{-1}(1 - t k / L)`, the threshold is :math:`c_{k^*}`,
    :math:`k^* = \max\{k : k_0 \le k \le K,\ s_k \ge c_k\}` with :math:`k_0 = \lceil 1/t
    \rceil` and ``K`` = ``most`` (the set's largest size), and :math:`c_1` when no such
    :math:`k` exists. Among the :math:`k^*` levels that join, Benjamini & Hochberg's (1995)
    step-up keeps the expected share of unrelated ones at most :math:`t` (independent levels);
    below :math:`k_0` levels one unrelated level would be more than that share of the set, so
    :math:`c_1` guards as before (about :math:`t` unrelated levels join in all; when every level
    is unrelated, some level passes :math:`c_1` in :math:`t` of the draws, Simes). A set of
    many true levels of a few rows each failed :math:`c_1` one by one: 25 of 5,000 merchants
    at own D/sigma 30 kept 14--17 at :math:`c_1 = 4.1`; a true level now needs about
    :math:`c_{25} = 3.3` (issue #42). ``most`` below :math:`k_0`: :math:`c_1` (the search uses
    the step-up on columns of at least ``RULES.step_up_levels`` levels only).
    """
    levels = own.size
    if levels == 0:
        return np.inf
    normal = NormalDist()
    first = normal.inv_cdf(1.0 - tail / levels) if tail < levels else -np.inf
    top = min(int(most), levels)
    least = int(np.ceil(1.0 / tail)) if tail > 0 else top + 1
    if top < least:
        return first
    ranked = -np.sort(-own)[least - 1:top]
    cuts = np.array([normal.inv_cdf(1.0 - tail * k / levels) if tail * k < levels else -np.inf
                     for k in range(least, top + 1)])
    passed = np.flatnonzero(ranked >= cuts)
    return float(cuts[passed[-1]]) if passed.size else first


def best_level_prefix(data: Data, rows: np.ndarray, column: Column, j: int, under: bool,
                      *, min_rows: int) -> Cut | None:
    r"""Return the level set of a nominal covariate within ``rows`` (the others' rows).

    Used when a finding's other conditions are fixed (refinement), on all of its search rows:
    the levels are ordered by :func:`level_priority` in the finding's direction (``under``:
    observed above predicted) and the set is the prefix of :math:`k^*` levels,
    :math:`k^* = \arg\max_k z(k) - 0.5\log_2 k`, :math:`z(k)` the D/sigma of the first
    :math:`k` levels (block-end paths, ``RULES.blocks`` blocks): the same complexity penalty as
    :func:`_level_sets`, but in-sample on all the rows (the held-out confirmation judges the
    finding; halving the rows here lost the smallest true levels). A level joins only when its
    own drift there, :math:`\pm\sum W(R-S)/\sqrt{\sum S(1-S)W^2}`, is at least
    :math:`\Phi^{-1}(1 - t/L)` for :math:`L` levels present, :math:`t` = ``RULES.join_tail``
    (about :math:`t` of :math:`L` noise levels pass), so a many-level nominal does not fill a
    set with noise levels; a level that fails is passed over (a true level of a few rows that
    fails does not end the set: of 25 true levels of 5,000 a prefix ended at the first failure
    kept 16). The sums are bincounts over the level codes and the paths are built for the
    joining levels only (:func:`_prefix_paths`): memory O(rows + levels). A level set keeps at most
    ``RULES.max_set_levels`` levels; None when no level is usable.
    """
    codes = column.codes[rows]
    n_codes = column.n_codes
    block, n_blocks = block_ids(data, rows)
    weighted, row_variance, _ = data.at(rows)
    wide = codes.astype(np.intp)
    sums = np.bincount(wide, weights=weighted, minlength=n_codes)
    variance = np.bincount(wide, weights=row_variance, minlength=n_codes)
    count = np.bincount(wide, minlength=n_codes)
    observed = np.flatnonzero(count[:-1])  # the last code is missing: never in a set
    if observed.size == 0:
        return None
    sign = 1.0 if under else -1.0
    sums = sums[observed]
    v0 = prior_precision(variance[observed])
    order = np.argsort(-level_priority(sums, variance[observed], v0, sign), kind="stable")
    own = _z(sign * sums, variance[observed])[order]  # each level's own drift there
    most = RULES.max_set_levels if observed.size >= RULES.step_up_levels else 0  # 0: c_1
    joins = own >= join_threshold(own, RULES.join_tail, most)
    joins[0] = True  # the leader may be the set alone
    order = observed[order][joins][:RULES.max_set_levels]
    paths = _prefix_paths(codes, order, n_codes, block, n_blocks, weighted)
    z = _z(_ranges(paths), np.cumsum(variance[order]))
    sizes = np.cumsum(count[order])
    penalised = z - RULES.prefix_penalty * np.log2(np.arange(1, order.size + 1))
    penalised = np.where((sizes >= min_rows) & (sizes < rows.size), penalised, -np.inf)
    best = int(np.argmax(penalised))
    if not np.isfinite(penalised[best]):
        return None
    return Cut(j, "in", levels=tuple(sorted(int(c) for c in order[: best + 1])))

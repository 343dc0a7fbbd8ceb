r"""Exact nearest-neighbour search among the distinct inputs of an input space.

Memory is O(n) in the rows and independent of the number of category levels; a search costs
about (centres × neighbours) tree steps, never rows × rows.

* Observations with the same input (numeric columns and nominal codes) are merged into one
  *distinct input* with a count and summed per-observation terms (found by hashing the rows,
  O(n)), so a group of k observations sharing one input costs one neighbour, not k.
* Distinct inputs are split into *cells*, one per combination of nominal levels. The squared
  distance between inputs of different cells is the numeric squared distance plus the number
  of differing nominal covariates, so at least 1 (:class:`mcviz.stats.groupings.InputSpace`).
* A centre's neighbours come from two sources, each searched exactly with a k-d tree over the
  numeric columns: its own cell (gap 0) and, only when its k-th distance in its own cell is at
  least 1, every input (a tree over all distinct inputs, same-cell results dropped, true
  distances computed from the codes). Each source's search widens (doubling its number of
  neighbours) until every input it has not returned is provably farther than the centre's
  radius, so every input within the radius - ties included - is found (:func:`_cover`).
* Without numeric covariates the distance takes the values 0, 1, ..., q; cells are then the
  distinct inputs and are ranked by gap directly (:func:`_cover_nominal`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.spatial import cKDTree

from mcviz.stats.groupings._sums import _per_point
from mcviz.stats.groupings.results import InputSpace
from mcviz.io import Predictions

TIE_TOLERANCE = 1e-12
"""Relative tolerance under which two distances count as tied."""

BYTES_PER_CELL = 96
"""Peak bytes per (centre, candidate) cell of a search: distances, indices, the merge's order,
the gathered codes of other cells (measured with tracemalloc, rounded up)."""

NOMINAL_BLOCK = 4_000_000
"""Pure-nominal search: centre cells × cells compared at once (bounds its memory)."""

_MIX = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True, slots=True, eq=False)
class _Inputs:
    """The distinct inputs of an input space, with counts, summed terms and cells."""

    numeric: np.ndarray  # (u, p) numeric columns of each distinct input
    codes: np.ndarray  # (u, q) nominal codes of each distinct input
    of_row: np.ndarray  # (n,) distinct input of each observation
    count: np.ndarray  # (u,) observations per distinct input
    terms: np.ndarray  # (u, 6) sums of w, w², w d, w² d², w² spread, w s (SUM_KEYS)
    cell: np.ndarray  # (u,) cell (combination of nominal levels) of each distinct input
    order: np.ndarray  # (u,) distinct inputs sorted by cell
    start: np.ndarray  # (cells + 1,) where each cell's inputs begin in ``order``

    def members(self, cell: int) -> np.ndarray:
        """Distinct inputs of one cell."""
        return self.order[self.start[cell] : self.start[cell + 1]]


def _row_groups(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group identical rows: (group of each row, one representative row per group). O(n)."""
    n, width = matrix.shape
    if width == 0:
        return np.zeros(n, np.int64), np.zeros(min(n, 1), np.int64)
    bits = np.ascontiguousarray(matrix, dtype=np.float64).view(np.uint64)
    multipliers = np.random.default_rng(20231).integers(
        1, 2**63, size=width, dtype=np.uint64
    ) | np.uint64(1)
    key = np.zeros(n, np.uint64)
    for j in range(width):
        key ^= bits[:, j] * multipliers[j]
        key = ((key << np.uint64(7)) | (key >> np.uint64(57))) * _MIX
    group, uniques = pd.factorize(key)
    representative = np.empty(uniques.size, np.int64)
    representative[group] = np.arange(n)
    for j in range(width):  # a hash collision would merge different rows: then sort exactly
        if not np.array_equal(matrix[:, j], matrix[representative[group], j]):
            _, first, group = np.unique(matrix, axis=0, return_index=True, return_inverse=True)
            return group.ravel().astype(np.int64), first
    return group.astype(np.int64), representative


def _distinct_inputs(pred: Predictions, space: InputSpace) -> _Inputs:
    numeric, codes = space.numeric, space.codes
    joined = np.hstack((numeric, codes.astype(np.float64)))  # n × (p + q), not n × levels
    of_row, representative = _row_groups(joined)
    # number the distinct inputs in lexicographic order: consecutive centres are then nearby
    # points, whose k-d tree queries share nodes in cache (a third faster than score order)
    order = np.lexsort(joined[representative].T[::-1])
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    representative, of_row = representative[order], rank[of_row]
    del joined
    per_point = _per_point(pred).values()  # in the order of SUM_KEYS
    u = representative.size
    summed = np.column_stack([np.bincount(of_row, weights=t, minlength=u) for t in per_point])
    unique_codes = codes[representative]
    cell, cell_representative = _row_groups(unique_codes.astype(np.float64))
    order = np.argsort(cell, kind="stable")
    start = np.searchsorted(cell[order], np.arange(cell_representative.size + 1))
    return _Inputs(
        numeric=np.ascontiguousarray(numeric[representative]),
        codes=np.ascontiguousarray(unique_codes),
        of_row=of_row,
        count=np.bincount(of_row, minlength=u),
        terms=summed,
        cell=cell,
        order=order,
        start=start,
    )


class _Searcher:
    """k-d trees over the numeric columns: one per cell (built on demand) and one over all."""

    def __init__(self, inputs: _Inputs) -> None:
        self.inputs = inputs
        self.nominal = inputs.codes.shape[1] > 0
        # Without numeric covariates every input of a cell is the same point (one zero column).
        numeric = inputs.numeric
        self.points = numeric if numeric.shape[1] else np.zeros((numeric.shape[0], 1))
        self._trees: dict[int, cKDTree] = {}
        self._all: cKDTree | None = None

    def cell_tree(self, cell: int) -> cKDTree:
        """Tree over one cell's inputs (the whole space when there are no nominal covariates)."""
        if not self.nominal:
            return self.all_tree()
        if cell not in self._trees:
            self._trees[cell] = cKDTree(self.points[self.inputs.members(cell)])
        return self._trees[cell]

    def all_tree(self) -> cKDTree:
        """Tree over every distinct input."""
        if self._all is None:
            self._all = cKDTree(self.points)
        return self._all

    def cell_members(self, cell: int) -> np.ndarray:
        """Distinct inputs of a cell, in the order of its tree."""
        if not self.nominal:
            return np.arange(self.inputs.count.size)
        return self.inputs.members(cell)


def _query(tree: cKDTree, points: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    distance, index = tree.query(points, k=k, workers=-1)
    if k == 1:
        distance, index = distance[:, None], index[:, None]
    return distance, index


def _own_cell(
    searcher: _Searcher, centres: np.ndarray, k_own: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Find the k_own nearest inputs of each centre within its own cell, and a bound on the rest.

    Returns squared distances and indices of shape (m, max k_own) padded with inf, and the
    squared distance below which every input of the cell has been returned (inf: all were).
    """
    inputs = searcher.inputs
    m, width = centres.size, int(k_own.max())
    d2 = np.full((m, width), np.inf)
    index = np.zeros((m, width), dtype=np.int64)
    unseen = np.full(m, np.inf)
    cells = inputs.cell[centres] if searcher.nominal else np.zeros(m, np.int64)
    keys = cells * (width + 1) + k_own
    for key in np.unique(keys):
        rows = np.flatnonzero(keys == key)
        cell, kk = divmod(int(key), width + 1)
        members = searcher.cell_members(cell)
        distance, found = _query(searcher.cell_tree(cell), searcher.points[centres[rows]], kk)
        d2[rows, :kk] = distance**2
        index[rows, :kk] = members[found]
        if kk < members.size:
            unseen[rows] = distance[:, -1] ** 2
    return d2, index, unseen


def _other_cells(
    searcher: _Searcher, centres: np.ndarray, k_all: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Find the other-cell inputs among each centre's k_all numeric nearest, true distances.

    Returns squared distances (numeric plus the number of differing nominal covariates) and
    indices of shape (m, max k_all), inf where the neighbour is in the centre's own cell, and
    the squared distance below which every other-cell input has been returned.
    """
    inputs = searcher.inputs
    m, width = centres.size, int(k_all.max(initial=0))
    d2 = np.full((m, width), np.inf)
    index = np.zeros((m, width), dtype=np.int64)
    unseen = np.ones(m)  # an input of another cell lies at least 1 away
    u = inputs.count.size
    for kk in np.unique(k_all[k_all > 0]):
        rows = np.flatnonzero(k_all == kk)
        distance, found = _query(searcher.all_tree(), searcher.points[centres[rows]], int(kk))
        gap = (inputs.codes[found] != inputs.codes[centres[rows]][:, None, :]).sum(axis=2)
        d2[rows, :kk] = np.where(gap > 0, distance**2 + gap, np.inf)
        index[rows, :kk] = found
        unseen[rows] = np.inf if kk >= u else distance[:, -1] ** 2 + 1.0
    return d2, index, unseen


def _radius(d2: np.ndarray, index: np.ndarray, count: np.ndarray, k: int) -> np.ndarray:
    """Distance of the k-th nearest observation (inputs weighted by counts; inf if too few)."""
    if d2.shape[1] >= k and int(count.max(initial=0)) <= 1:  # one observation per input:
        return np.sqrt(d2[:, k - 1])  # the k-th nearest input (inf where fewer were found)
    cumulative = np.cumsum(np.where(np.isfinite(d2), count[index], 0), axis=1)
    enough = cumulative[:, -1] >= k
    reach = np.argmax(cumulative >= k, axis=1)
    radius = np.sqrt(d2[np.arange(d2.shape[0]), reach])
    return np.where(enough, radius, np.inf)


def _pieces(rows: np.ndarray, width: int, max_cells: int | None) -> list[np.ndarray]:
    """Split ``rows`` into consecutive pieces of at most ``max_cells`` (row, column) cells."""
    if max_cells is None or rows.size * max(width, 1) <= max_cells:
        return [rows]
    size = max(1, int(max_cells) // max(width, 1))
    return [rows[i : i + size] for i in range(0, rows.size, size)]


def _within(rows: np.ndarray, d2: np.ndarray, index: np.ndarray, radius: np.ndarray) -> tuple:
    """Keep the columns of a finished part that can lie within some row's radius."""
    if d2.shape[1] <= 1 or rows.size == 0:
        return rows, d2, index, radius
    bound = np.where(np.isfinite(radius), (radius * (1 + TIE_TOLERANCE)) ** 2, np.inf)
    inside = (d2 <= bound[:, None]) & np.isfinite(d2)
    keep = int(np.flatnonzero(inside.any(axis=0))[-1]) + 1 if inside.any() else 1
    return rows, d2[:, :keep], index[:, :keep], radius


def _cover(
    searcher: _Searcher, centres: np.ndarray, k: int, max_cells: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nearest distinct inputs of each centre, enough to hold every input within its radius.

    The radius of a centre is the distance of its k-th nearest *observation* (distinct inputs
    weighted by their counts). Returns ``distance`` and ``index`` of shape (m, width), sorted
    by distance and padded with inf (index 0), and the radius of each centre. Every distinct
    input within the radius (ties included, up to ``TIE_TOLERANCE``) is among the columns.

    First each centre's own cell is searched until every unseen input of the cell is farther
    than the radius found there; then, for centres whose radius is at least 1 (the nearest an
    input of another cell can be), the other cells are searched, widening until every unseen
    input is farther than the (shrinking) radius of the merged candidates.

    The run-time guard: ``max_cells`` bounds the (centre, candidate) cells searched at once
    (each costs about :data:`BYTES_PER_CELL` bytes): centres whose search widens are searched
    in pieces, and a finished centre keeps only the candidates within its radius, so a search
    that widens far more than foreseen (few inputs per combination of levels) takes longer
    instead of taking the memory.
    """
    inputs = searcher.inputs
    if inputs.numeric.shape[1] == 0:
        d2, index, radius = _cover_nominal(inputs, centres, k)
        return np.sqrt(d2), index, radius
    m, u = centres.size, inputs.count.size
    size = np.diff(inputs.start)[inputs.cell[centres]] if searcher.nominal else np.full(m, u)
    k_own = np.minimum(k + 1, size)
    parts: list[tuple[np.ndarray, ...]] = []
    rows = np.arange(m)
    while rows.size:  # own cell: widen while ties may continue past the radius
        again = []
        for piece in _pieces(rows, int(k_own[rows].max()), max_cells):
            d2, index, unseen = _own_cell(searcher, centres[piece], k_own[piece])
            radius = _radius(d2, index, inputs.count, k)
            short = np.isfinite(unseen) & (unseen <= (radius * (1 + TIE_TOLERANCE)) ** 2)
            parts.append(_within(piece[~short], d2[~short], index[~short], radius[~short]))
            k_own[piece[short]] = np.minimum(2 * k_own[piece[short]], size[piece[short]])
            again.append(piece[short])
        rows = np.concatenate(again)
    own_d2, own_index, radius = _assemble(parts, m)
    rows = np.flatnonzero((radius * (1 + TIE_TOLERANCE)) ** 2 >= 1.0) if searcher.nominal else []
    if len(rows) == 0:
        return np.sqrt(own_d2), own_index, radius
    rest = np.setdiff1d(np.arange(m), rows)
    parts = [(rest, own_d2[rest], own_index[rest], radius[rest])]
    k_all = np.full(m, min(k + 1, u))
    while rows.size:  # other cells: widen until every unseen input lies beyond the radius
        again = []
        width = own_d2.shape[1] + int(k_all[rows].max())
        for piece in _pieces(rows, width, max_cells):
            other_d2, other_index, unseen = _other_cells(searcher, centres[piece], k_all[piece])
            d2 = np.hstack((own_d2[piece], other_d2))
            del other_d2
            index = np.hstack((own_index[piece], other_index))
            del other_index
            order = np.argsort(d2, axis=1)
            d2 = np.take_along_axis(d2, order, axis=1)
            index = np.take_along_axis(index, order, axis=1)
            del order
            merged = _radius(d2, index, inputs.count, k)
            short = np.isfinite(unseen) & (unseen <= (merged * (1 + TIE_TOLERANCE)) ** 2)
            parts.append(_within(piece[~short], d2[~short], index[~short], merged[~short]))
            k_all[piece[short]] = np.minimum(2 * k_all[piece[short]], u)
            again.append(piece[short])
        rows = np.concatenate(again)
    d2, index, radius = _assemble(parts, m)
    return np.sqrt(d2), index, radius


def _assemble(parts: list, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stack per-round results (rows, squared distance, index, radius) into (m, width) arrays."""
    width = max(1, max(part[1].shape[1] for part in parts))
    d2 = np.full((m, width), np.inf)
    index = np.zeros((m, width), dtype=np.int64)
    radius = np.empty(m)
    for rows, d, i, r in parts:
        d2[rows, : d.shape[1]] = d
        index[rows, : i.shape[1]] = i
        radius[rows] = r
    finite = np.flatnonzero(np.isfinite(d2).any(axis=0))
    keep = int(finite[-1]) + 1 if finite.size else 1
    return d2[:, :keep], index[:, :keep], radius


def _cover_nominal(
    inputs: _Inputs, centres: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_cover` without numeric covariates: inputs ranked by their number of differing levels.

    Every distinct input is its own cell; a centre's group is every input whose gap is at most
    the gap of its k-th nearest observation. Works in blocks of ``NOMINAL_BLOCK`` comparisons.
    """
    u = inputs.count.size
    block = max(1, NOMINAL_BLOCK // max(u * inputs.codes.shape[1], 1))
    parts = []
    for start in range(0, centres.size, block):
        rows = np.arange(start, min(start + block, centres.size))
        gap = (inputs.codes[None, :, :] != inputs.codes[centres[rows]][:, None, :]).sum(axis=2)
        order = np.argsort(gap, axis=1, kind="stable")
        d2 = np.take_along_axis(gap, order, axis=1).astype(np.float64)
        radius = _radius(d2, order, inputs.count, k)
        width = int((d2 <= (radius**2)[:, None] + 0.5).sum(axis=1).max())
        parts.append((rows, d2[:, :width], order[:, :width], radius))
    return _assemble(parts, centres.size)


def _group_matrix(distance: np.ndarray, index: np.ndarray, radius: np.ndarray, u: int):
    """Sparse (m, u) 0/1 matrix: which distinct inputs lie within each point's radius."""
    m, width = index.shape
    inside = distance <= (radius * (1 + TIE_TOLERANCE))[:, None]
    return sparse.csr_matrix(
        (inside.ravel().astype(float), index.ravel(), np.arange(0, m * width + 1, width)),
        shape=(m, u),
    )

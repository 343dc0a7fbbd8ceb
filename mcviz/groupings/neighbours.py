"""Exact nearest-neighbour search among the distinct inputs of an input space."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.spatial import cKDTree

from mcviz.groupings._sums import _per_point
from mcviz.groupings.results import InputSpace
from mcviz.io import Predictions

MAX_CELLS = 64
"""Nearest-neighbour search splits rows by nominal levels when there are at most this many
combinations of levels (see ``_Searcher``)."""

TIE_TOLERANCE = 1e-12
"""Relative tolerance under which two distances count as tied."""


@dataclass(frozen=True, slots=True, eq=False)
class _Inputs:
    """The distinct inputs of an input space, with counts and summed per-observation terms."""

    matrix: np.ndarray  # (u, d) distinct rows
    of_row: np.ndarray  # (n,) distinct input of each observation
    count: np.ndarray  # (u,) observations per distinct input
    terms: np.ndarray  # (u, 6) sums of w, w², w d, w² d², w² spread, w s


_SUM_KEYS = ("v_sum", "v2_sum", "vd_sum", "vd2_sum", "var_sum", "vs_sum")


def _distinct_inputs(pred: Predictions, space: InputSpace) -> _Inputs:
    matrix, of_row = np.unique(space.matrix, axis=0, return_inverse=True)
    of_row = of_row.ravel()
    terms = _per_point(pred)
    w, d = terms["w"], terms["d"]
    per_point = (w, w**2, w * d, w**2 * d**2, w**2 * terms["spread"], w * terms["s"])
    u = matrix.shape[0]
    summed = np.column_stack([np.bincount(of_row, weights=t, minlength=u) for t in per_point])
    return _Inputs(matrix, of_row, np.bincount(of_row, minlength=u), summed)


class _Searcher:
    """Exact nearest-neighbour search among the distinct inputs of an input space.

    Without nominal covariates (or with more than ``MAX_CELLS`` combinations of their levels)
    this is one k-d tree. Otherwise the inputs are split into *cells* (one per combination of
    nominal levels), each with a k-d tree over the numeric columns only: the squared distance
    between inputs of cells c and c' is the numeric squared distance plus the number of nominal
    covariates in which they differ (levels lie 1 apart), so a cell is searched only while that
    gap is below the current k-th squared distance. Whichever search is faster on 256 queries spread
    over the first batch is used; both give the same neighbours up to the order of exact ties (which
    :func:`_covering_query` makes irrelevant).
    """

    def __init__(self, matrix: np.ndarray, nominal: np.ndarray | None) -> None:
        self.matrix = matrix
        self.tree: cKDTree | None = None
        self.cells = False
        nominal = np.zeros(matrix.shape[1], bool) if nominal is None else nominal
        if nominal.any() and (~nominal).any():
            keys, cell_of = np.unique(matrix[:, nominal], axis=0, return_inverse=True)
            if keys.shape[0] <= MAX_CELLS:
                cell_of = cell_of.ravel()
                self.cells = True
                self.nominal = nominal
                self.lookup = {key.tobytes(): c for c, key in enumerate(keys)}
                self.members = [np.flatnonzero(cell_of == c) for c in range(keys.shape[0])]
                numeric = matrix[:, ~nominal]
                self.trees = [cKDTree(numeric[m]) for m in self.members]
                gap = ((keys[:, None, :] - keys[None, :, :]) ** 2).sum(axis=2)
                self.gap = np.rint(gap * 1e9) / 1e9  # whole numbers of differing levels
                self.decided: dict[int, bool] = {}

    def _one_tree(self, points: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if self.tree is None:
            self.tree = cKDTree(self.matrix)
        distance, index = self.tree.query(points, k=k, workers=-1)
        if k == 1:
            distance, index = distance[:, None], index[:, None]
        return distance, index

    def query(self, points: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Return distances and indices of the k nearest distinct inputs, shape (m, k)."""
        if not self.cells:
            return self._one_tree(points, k)
        if k not in self.decided:
            # Probe: time both searches on the first queries and keep the faster one (they give
            # the same neighbours, so the choice changes the speed, never the result).
            probe = points[:: max(1, points.shape[0] // 256)][:256]  # spread over the input
            start = time.perf_counter()
            self._one_tree(probe, k)
            middle = time.perf_counter()
            self._cell_query(probe, k)
            self.decided[k] = time.perf_counter() - middle < middle - start
        if not self.decided[k]:
            return self._one_tree(points, k)
        return self._cell_query(points, k)

    def _cells_of(self, points: np.ndarray) -> np.ndarray:
        keys = np.ascontiguousarray(points[:, self.nominal])
        return np.array([self.lookup[row.tobytes()] for row in keys], dtype=np.int64)

    def _cell_query(self, points: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        m = points.shape[0]
        cell = self._cells_of(points)
        numeric = points[:, ~self.nominal]
        out_d2 = np.empty((m, k))
        out_i = np.empty((m, k), dtype=np.int64)
        for c in np.unique(cell):
            rows = np.flatnonzero(cell == c)
            best_d2 = np.full((rows.size, k), np.inf)
            best_i = np.zeros((rows.size, k), dtype=np.int64)
            for other in np.argsort(self.gap[c], kind="stable"):
                gap = self.gap[c, other]
                active = np.flatnonzero(gap < best_d2[:, -1])
                if active.size == 0:
                    break
                size = self.members[other].size
                kk = min(k, size)
                bound2 = float(best_d2[active, -1].max()) - gap
                bound = np.sqrt(bound2) * (1 + 1e-9) if np.isfinite(bound2) else np.inf
                d, i = self.trees[other].query(
                    numeric[rows[active]], k=kk, distance_upper_bound=bound, workers=-1
                )
                if kk == 1:
                    d, i = d[:, None], i[:, None]
                found = i < size
                d2 = np.where(found, d**2 + gap, np.inf)
                global_i = np.where(found, self.members[other][np.minimum(i, size - 1)], 0)
                merged_d2 = np.hstack((best_d2[active], d2))
                merged_i = np.hstack((best_i[active], global_i))
                order = np.argsort(merged_d2, axis=1, kind="stable")[:, :k]
                best_d2[active] = np.take_along_axis(merged_d2, order, axis=1)
                best_i[active] = np.take_along_axis(merged_i, order, axis=1)
            out_d2[rows] = best_d2
            out_i[rows] = best_i
        return np.sqrt(out_d2), out_i


def _covering_query(
    searcher: _Searcher, points: np.ndarray, k: int, count: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nearest distinct inputs of each point, enough to hold every input within its radius.

    The radius of a point is the distance of its k-th nearest *observation* (distinct inputs
    weighted by their counts). Returns ``distance`` and ``index`` of shape (m, width), sorted by
    distance and padded with inf (index 0), and the radius of each point. Every distinct input
    within the radius (ties included, up to ``TIE_TOLERANCE``) is among the columns.
    """
    m, u = points.shape[0], count.size
    width = min(k + 1, u)  # one more than needed, to see whether ties continue past the radius
    distance = np.full((m, width), np.inf)
    index = np.zeros((m, width), dtype=np.int64)
    radius = np.empty(m)
    rows = np.arange(m)
    kq = width
    while rows.size:
        d, i = searcher.query(points[rows], kq)
        if kq > distance.shape[1]:
            extra = kq - distance.shape[1]
            distance = np.hstack((distance, np.full((m, extra), np.inf)))
            index = np.hstack((index, np.zeros((m, extra), dtype=np.int64)))
        distance[rows, :kq] = d
        index[rows, :kq] = i
        reach = np.argmax(np.cumsum(count[i], axis=1) >= k, axis=1)
        r = d[np.arange(rows.size), reach]
        radius[rows] = r
        incomplete = (d[:, -1] <= r * (1 + TIE_TOLERANCE)) & (kq < u)
        rows = rows[incomplete]
        kq = min(2 * kq, u)
    return distance, index, radius


def _group_matrix(distance: np.ndarray, index: np.ndarray, radius: np.ndarray, u: int):
    """Sparse (m, u) 0/1 matrix: which distinct inputs lie within each point's radius."""
    m, width = index.shape
    inside = distance <= (radius * (1 + TIE_TOLERANCE))[:, None]
    return sparse.csr_matrix(
        (inside.ravel().astype(float), index.ravel(), np.arange(0, m * width + 1, width)),
        shape=(m, u),
    )


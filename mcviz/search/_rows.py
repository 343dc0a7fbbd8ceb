"""The state of one search: its rows, the pool of candidates and the exact scores of conjunctions.

:class:`SearchRows` holds what every step of the search shares: the data, the covariates, the
search rows, the pool of exactly scored candidates (conditions and numbers, no members) and the
caches of masks, members and scores; :meth:`SearchRows.expand` makes a node's children. The
steps that choose among candidates build on it: :class:`~mcviz.search._refine.Refining`
(cut points), :class:`~mcviz.search._prune.Pruning` (which conditions stay) and
:class:`~mcviz.search._beam.Beam` (the beam and the findings).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mcviz.search._columns import Column, Cut, select
from mcviz.search._screen import (
    Data,
    block_ids,
    masked_scores,
    score_candidates,
    screen_column,
)
from mcviz.search.rules import RULES, SearchRules


def remembered(method: Callable) -> Callable:
    """Compute ``method(self, cuts)`` once per :class:`SearchRows` and ordered conjunction.

    :meth:`Beam.refine`, :meth:`Beam.prune` and :meth:`Beam.grow` depend on the conditions in
    their order and on the beam's data, rows and limits, which do not change while the
    findings are drawn; several pool entries lead to the same conjunction (a pruned candidate
    grown back), which is then refined, pruned or grown once.
    """
    name = method.__name__

    @functools.wraps(method)
    def known(self: SearchRows, cuts: tuple[Cut, ...]) -> tuple[Cut, ...]:
        key = (name, tuple(cut.key() for cut in cuts))
        if key not in self._done:
            self._done[key] = method(self, tuple(cuts))
        return self._done[key]

    return known


@dataclass(slots=True, eq=False)
class Node:
    """A candidate: its cuts, exact D/sigma on the search rows, mean residual and size."""

    cuts: tuple[Cut, ...]
    z: float
    mean: float
    count: int
    rows: np.ndarray | None = None  # kept only while the node is in the beam

    def key(self) -> frozenset:
        """Order-free identity of the conjunction."""
        return frozenset(cut.key() for cut in self.cuts)


class SearchRows:
    """The rows of one search, its pool and caches (state: the data, columns, counters)."""

    def __init__(self, data: Data, columns: list[Column], rows: np.ndarray, min_rows: int,
                 progress: Callable[[float, str], None] | None, *,
                 rules: SearchRules = RULES, small: tuple[int, float] | None = None):
        self.data, self.columns, self.rows = data, columns, rows
        self.regular_rows = min_rows
        """Candidates of fewer search rows are small: kept only with D/sigma >= :attr:`small_z`."""
        self.min_rows, self.small_z = (min_rows, 0.0) if small is None else (
            min(small[0], min_rows), float(small[1]))
        """No candidate has fewer search rows (``small``'s floor when given)."""
        self.progress = progress
        self.rules = rules
        """The search's tuning constants (:class:`~mcviz.search.rules.SearchRules`)."""
        self.screened = 0
        self.pool: dict[frozenset, Node] = {}
        self._cache: dict[tuple, np.ndarray] = {}
        self._sets: dict[frozenset, np.ndarray] = {}  # recent conjunctions' members
        self._set_rows = 0  # positions held in ``_sets``
        self._scores: dict[frozenset, np.ndarray] = {}  # exact (z, D, sigma, mean) per key
        self._oof: dict[tuple, float] = {}  # out-of-fold T per condition and base
        self._done: dict[tuple, tuple] = {}  # refine, prune, grow per conjunction
        self.stops: dict[str, int | bool] = {}
        """Why candidates were not reported (see :meth:`~mcviz.search._beam.Beam.findings`)."""
        self.max_conditions = 3
        self._outsides: dict[tuple, SearchRows] = {}  # findings' search outside better ones
        self.refiner: SearchRows | None = None
        """Another search over a subset of the rows that refines the candidates' cut points
        in :meth:`~mcviz.search._beam.Beam.findings` (None: this one)."""

    @property
    def depth(self) -> int:
        """Return the conditions a finding may reach: past ``max_conditions`` by evidence.

        Up to ``rules.max_depth``, each added condition passing the tests of
        :meth:`~mcviz.search._prune.Pruning.grow` (in sample, out of fold, material).
        """
        return max(self.max_conditions, self.rules.max_depth)

    def _tell(self, fraction: float, text: str) -> None:
        if self.progress is not None:
            self.progress(float(min(max(fraction, 0.0), 1.0)), text)

    def members(self, cuts: tuple[Cut, ...], rows: np.ndarray | None = None) -> np.ndarray:
        """Search rows (or ``rows``) satisfying every cut (read-only; recent ones cached).

        The members of a conjunction depend on its conditions only, not on their order: the
        last few are kept (at most ``rules.sets_cached`` times the search rows' positions), as
        the finishing steps ask for the same conjunctions again and again.
        """
        if rows is None:  # masks over the search rows, the recent ones cached
            if not cuts:
                return self.rows
            key = frozenset(cut.key() for cut in cuts)
            found = self._sets.pop(key, None)
            if found is None:
                mask = self._mask(cuts[0])
                for cut in cuts[1:]:
                    mask = mask & self._mask(cut)
                found = select(self.rows, mask)
                found.flags.writeable = False
                self._set_rows += found.size
                while self._sets and self._set_rows > self.rules.sets_cached * self.rows.size:
                    self._set_rows -= self._sets.pop(next(iter(self._sets))).size
            self._sets[key] = found  # most recent last
            return found
        for cut in cuts:
            rows = select(rows, cut.mask(self.columns[cut.column], rows))
        return rows

    def scores(self, conjunctions: list[tuple[Cut, ...]]) -> np.ndarray:
        """Exact D/sigma, D, sigma and mean residual of each conjunction (rows ``(k, 4)``).

        :func:`~mcviz.search._screen.score_candidates` of their :meth:`members`, each computed
        once per conjunction (the numbers depend on its members only).
        """
        keys = [frozenset(cut.key() for cut in cuts) for cuts in conjunctions]
        todo = list({key: cuts for key, cuts in zip(keys, conjunctions, strict=True)
                     if key not in self._scores}.items())
        if todo:
            sets = [self.members(cuts) for _, cuts in todo]
            for (key, _), row in zip(todo, score_candidates(self.data, sets), strict=True):
                self._scores[key] = row
        return np.array([self._scores[key] for key in keys]).reshape(len(keys), 4)

    def _mask(self, cut: Cut) -> np.ndarray:
        """Which search rows satisfy one cut (the last ``rules.masks_cached`` are cached)."""
        key = cut.key()
        mask = self._cache.pop(key, None)
        if mask is None:
            mask = cut.mask(self.columns[cut.column], self.rows)
            if len(self._cache) >= self.rules.masks_cached:
                self._cache.pop(next(iter(self._cache)))
        self._cache[key] = mask  # most recent last
        return mask

    def _first(self, cut: Cut) -> np.ndarray:
        """Search rows satisfying one cut."""
        return self.members((cut,))

    def expand(self, node: Node, gain: float = 0.0, *, pool: bool = True) -> list[Node]:
        """Children of a node: the best cuts of each unused covariate, scored exactly.

        A child enters the pool (and may enter the beam) only when its D/sigma exceeds its
        parent's by more than ``gain`` (a condition that trims a few rows is not a finding).
        """
        rows = node.rows
        block, n_blocks = block_ids(self.data, rows)
        used = {self.columns[cut.column].name for cut in node.cuts}  # one covariate, two views
        children = []
        for j, column in enumerate(self.columns):
            if column.name in used:
                continue
            codes = column.codes[rows]  # gathered once: the screen and the masks read it
            screened, count = screen_column(
                self.data, rows, block, n_blocks, column, j, min_rows=self.min_rows,
                keep=self.rules.keep_per_column, codes=codes,
            )
            self.screened += count
            if not screened:
                continue
            scores, sizes = self._subsets(rows, _masks(column, rows, [s.cut for s in screened],
                                                       codes))
            for s, size, row in zip(screened, sizes, scores, strict=True):
                z, _, _, mean = row
                if len(s.cut.levels) > 1:  # a level set ranks by its out-of-fold D/sigma
                    z = min(z, s.z)
                child = Node((*node.cuts, s.cut), float(z), float(mean), int(size))
                key = child.key()
                self._scores.setdefault(key, row)  # exact: the same members as members()
                if node.cuts and not z > node.z + gain:
                    continue
                if size < self.regular_rows and z < self.small_z:
                    continue  # a small group that could not be confirmed at its size
                if pool and (key not in self.pool or self.pool[key].z < child.z):
                    self.pool[key] = child
                children.append(child)  # members are not kept: O(n + candidates) memory
        return children

    def _subsets(self, rows: np.ndarray, masks: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Exact scores (rows ``(k, 4)``, as :func:`score_candidates`) and sizes of ``rows[mask]``.

        Subsets holding at least ``rules.masked_share`` of ``rows`` are scored from their masks
        (:func:`~mcviz.search._screen.masked_scores`, Bernoulli responses), smaller ones
        gathered (their cost is then their size, not that of ``rows``).
        """
        sizes = np.array([np.count_nonzero(mask) for mask in masks], dtype=np.int64)
        masked = (sizes >= self.rules.masked_share * rows.size) if self.data.bernoulli else (
            np.zeros(len(masks), dtype=bool))
        scores = np.zeros((len(masks), 4))
        if masked.any():
            scores[masked] = masked_scores(self.data, rows,
                                           [masks[k] for k in np.flatnonzero(masked)])
        if not masked.all():
            scores[~masked] = score_candidates(self.data, [
                select(rows, masks[k]) for k in np.flatnonzero(~masked)])
        return scores, sizes


def _masks(column: Column, rows: np.ndarray, cuts: list[Cut],
           codes: np.ndarray | None = None) -> list[np.ndarray]:
    """Which of ``rows`` satisfy each cut, from the column's codes at ``rows`` where they can."""
    codes = column.codes[rows] if codes is None else codes
    masks = [cut.mask_codes(column, codes) for cut in cuts]
    return [cut.mask(column, rows) if mask is None else mask
            for cut, mask in zip(cuts, masks, strict=True)]


def _inside(a: np.ndarray, b: np.ndarray) -> float:
    """Share of the rows of ``a`` that are also in ``b`` (sorted position arrays)."""
    return np.intersect1d(a, b, assume_unique=True).size / a.size if a.size else 1.0


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Return |a & b| / |a | b| of two sorted position arrays."""
    common = np.intersect1d(a, b, assume_unique=True).size
    union = a.size + b.size - common
    return common / union if union else 0.0


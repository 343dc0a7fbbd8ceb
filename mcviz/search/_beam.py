"""The beam over conjunctions of cuts, the refinement of cut points, pruning and folding.

Level 1 expands the search rows by one cut per covariate; level ``d + 1`` expands each of the
:data:`BEAM_WIDTH` best nodes of level ``d`` (half under-, half over-predicted, by exact D/sigma)
by one cut on a covariate the node does not use yet. Each expansion screens every cut of every
covariate coarsely (:func:`~mcviz.search._screen.screen_column`) and re-scores the best
:data:`KEEP_PER_COLUMN` per covariate exactly. Every exactly scored candidate enters the pool
(conditions and numbers only, no members), from which the findings are drawn: cut points of
numeric conditions are refined to the best observed value between the neighbouring candidate
cuts, conditions that do not raise D/sigma materially are dropped (:func:`material`), and a
candidate whose members overlap an accepted finding's with Jaccard > 1/2 folds into it (so does
one whose D/sigma without the accepted findings' rows falls below half its own).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mcviz.search._columns import Column, Cut
from mcviz.search._screen import Data, _score_candidates, block_ids, screen_column

BEAM_WIDTH = 8
KEEP_PER_COLUMN = 3
REFINE_STEPS = 8
"""Observed values tried for each cut point between its neighbouring candidate cuts."""
MATERIAL_ABSOLUTE = 1.0
MATERIAL_RELATIVE = 0.05
JACCARD_FOLD = 0.5
EXPLAINED = 0.5
"""A candidate whose D/sigma without the rows of better findings falls below this share of its
own folds into them (its deviation is theirs)."""
EXAMINE_PER_FINDING = 3
"""Pool entries examined per finding wanted (bounds the finishing work)."""


def material(z: float) -> float:
    r"""Return the gain in D/sigma a condition must bring to stay: :math:`\max(1, 0.05\, D/\sigma)`.

    A condition stays in a finding only when dropping it lowers the finding's D/sigma on the
    search rows by at least this much (one unit is the scale of the noise of D/sigma itself).
    """
    return max(MATERIAL_ABSOLUTE, MATERIAL_RELATIVE * z)


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


class Beam:
    """One search over the search rows (state: the data, columns, counters)."""

    def __init__(self, data: Data, columns: list[Column], rows: np.ndarray, min_rows: int,
                 progress: Callable[[float, str], None] | None):
        self.data, self.columns, self.rows = data, columns, rows
        self.min_rows = min_rows
        self.progress = progress
        self.screened = 0
        self.pool: dict[frozenset, Node] = {}
        self._cache: dict[tuple, np.ndarray] = {}

    def _tell(self, fraction: float, text: str) -> None:
        if self.progress is not None:
            self.progress(float(min(max(fraction, 0.0), 1.0)), text)

    def members(self, cuts: tuple[Cut, ...], rows: np.ndarray | None = None) -> np.ndarray:
        """Search rows (or ``rows``) satisfying every cut."""
        rows = self.rows if rows is None else rows
        for cut in cuts:
            rows = rows[cut.mask(self.columns[cut.column], rows)]
        return rows

    def _first(self, cut: Cut) -> np.ndarray:
        """Search rows satisfying one cut (the last few are cached: pool entries share them)."""
        key = cut.key()
        if key not in self._cache:
            if len(self._cache) >= 8:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = self.members((cut,))
        return self._cache[key]

    def expand(self, node: Node) -> list[Node]:
        """Children of a node: the best cuts of each unused covariate, scored exactly."""
        rows = node.rows
        block, n_blocks = block_ids(self.data, rows)
        used = {cut.column for cut in node.cuts}
        children = []
        for j, column in enumerate(self.columns):
            if j in used:
                continue
            screened, count = screen_column(
                self.data, rows, block, n_blocks, column, j, min_rows=self.min_rows,
                keep=KEEP_PER_COLUMN,
            )
            self.screened += count
            if not screened:
                continue
            sets = [rows[s.cut.mask(column, rows)] for s in screened]
            scores = _score_candidates(self.data, sets)
            for s, members, (z, _, _, mean) in zip(screened, sets, scores, strict=True):
                child = Node((*node.cuts, s.cut), float(z), float(mean), members.size)
                key = child.key()
                if key not in self.pool or self.pool[key].z < child.z:
                    self.pool[key] = child
                children.append(child)  # members are not kept: O(n + candidates) memory
        return children

    def run(self, max_conditions: int) -> None:
        """Fill the pool with the beam over up to ``max_conditions`` cuts."""
        z, _, _, mean = _score_candidates(self.data, [self.rows])[0]
        beam = [Node((), float(z), float(mean), self.rows.size, self.rows)]
        total = 1 + BEAM_WIDTH * (max_conditions - 1)
        done = 0
        for level in range(max_conditions):
            children: list[Node] = []
            for node in beam:
                self._tell(0.8 * done / total, f"level {level + 1}: expanding "
                           f"{node.count:,} rows")
                children.extend(c for c in self.expand(node) if level == 0 or c.z > node.z)
                done += 1
            if level + 1 == max_conditions:
                break
            beam = _next_beam(children)
            beam = [Node(n.cuts, n.z, n.mean, n.count, self.members(n.cuts)) for n in beam]
            if not beam:
                break

    def refine(self, cuts: tuple[Cut, ...]) -> tuple[Cut, ...]:
        """Re-choose each numeric cut given the other conditions, then fine-tune its points.

        The covariate is screened afresh within the rows of the other conditions (every
        threshold and band at the candidate cuts); the better of that and the current cut is
        kept, and each of its cut points moves to the best observed value between the
        neighbouring candidate cuts.
        """
        cuts = list(cuts)
        for i, cut in enumerate(cuts):
            if cut.op not in ("lt", "ge", "band"):
                continue
            others = self.members(tuple(cuts[:i] + cuts[i + 1:]))
            column = self.columns[cut.column]
            block, n_blocks = block_ids(self.data, others)
            screened, count = screen_column(self.data, others, block, n_blocks, column,
                                            cut.column, min_rows=self.min_rows, keep=2)
            self.screened += count
            options = [cut] + [s.cut for s in screened if s.cut.op in ("lt", "ge", "band")]
            keys = column.keys[others]  # gathered once for every option and variant
            cuts[i] = self._best(options, keys, others)
            for side in ("lo", "hi"):
                current = getattr(cuts[i], side)
                if np.isnan(current):
                    continue
                values = _neighbourhood(column, keys, current)
                variants = [_moved(cuts[i], side, v) for v in values]
                variants = [v for v in variants if v.op != "band" or v.lo < v.hi]
                cuts[i] = self._best([cuts[i], *variants], keys, others)
        return tuple(cuts)

    def _best(self, options: list[Cut], keys: np.ndarray, rows: np.ndarray) -> Cut:
        """Return the numeric option with the largest exact D/sigma in ``rows`` (or the first)."""
        sets = [rows[option.mask_keys(keys)] for option in options]
        scores = _score_candidates(self.data, sets)[:, 0]
        sizes = np.array([members.size for members in sets])
        scores = np.where(sizes >= self.min_rows, scores, -np.inf)
        best = int(np.argmax(scores))
        return options[best] if np.isfinite(scores[best]) else options[0]

    def prune(self, cuts: tuple[Cut, ...]) -> tuple[Cut, ...]:
        """Drop conditions whose removal lowers D/sigma by less than :func:`material`.

        The gain of a level set is measured out of fold (:meth:`_set_gain`): the levels are
        chosen afresh on one half of the rows and scored on the other.
        """
        cuts = tuple(cuts)
        while cuts:
            z = _score_candidates(self.data, [self.members(cuts)])[0, 0]
            without = [cuts[:i] + cuts[i + 1:] for i in range(len(cuts))]
            bases = [self.members(c) for c in without]
            plain = z - _score_candidates(self.data, bases)[:, 0]
            gains = np.array([self._set_gain(cut, base) if cut.op == "in" else plain[i]
                              for i, (cut, base) in enumerate(zip(cuts, bases, strict=True))])
            worst = int(np.argmin(gains))
            if gains[worst] >= material(z):
                return cuts
            cuts = without[worst]
        return cuts

    def _set_gain(self, cut: Cut, base: np.ndarray) -> float:
        r"""Out-of-fold gain in D/sigma of a level set added to the rows ``base``.

        ``base`` is split into two folds stratified by score (alternate rows in the score order
        of :func:`~mcviz.search._confirm.split_rows`, free of the order of tied rows).
        On each fold the levels are ordered by weighted mean residual and the first
        ``len(cut.levels)`` in the set's direction are taken; the gain
        :math:`z(	ext{fold}' \cap 	ext{set}) - z(	ext{fold}')` is measured on the other fold.
        The two gains are added and divided by :math:`\sqrt 2` (the scale of the full rows).
        """
        column = self.columns[cut.column]
        inside = cut.mask(column, base)
        residual = self.data.weighted_residual[base]
        weight = self.data.weight[base]
        mean_in = residual[inside].sum() / max(weight[inside].sum(), 1e-300)
        mean_out = residual[~inside].sum() / max(weight[~inside].sum(), 1e-300)
        descending = mean_in >= mean_out
        odd = self.data.parity[base]
        folds = (base[~odd], base[odd])
        total = 0.0
        for fit, test in (folds, folds[::-1]):
            codes = column.codes[fit]
            sums = np.bincount(codes, weights=self.data.weighted_residual[fit],
                               minlength=column.n_codes)[:-1]
            weights = np.bincount(codes, weights=self.data.weight[fit],
                                  minlength=column.n_codes)[:-1]
            present = np.flatnonzero(weights > 0)
            if present.size == 0:
                continue
            means = sums[present] / weights[present]
            order = present[np.argsort(-means if descending else means, kind="stable")]
            chosen = Cut(cut.column, "in", levels=tuple(int(c) for c in order[:len(cut.levels)]))
            members = test[chosen.mask(column, test)]
            scores = _score_candidates(self.data, [members, test])[:, 0]
            total += scores[0] - scores[1]
        return total / np.sqrt(2.0)

    def findings(self, n_findings: int) -> list[tuple[Node, np.ndarray]]:
        """Distinct findings from the pool: refined, pruned, folded (Jaccard > 1/2)."""
        pool = sorted(self.pool.values(), key=lambda node: -node.z)
        accepted: list[tuple[Node, np.ndarray]] = []
        seen: set[frozenset] = set()
        examined: set[tuple] = set()
        refinements = 0
        taken = np.zeros(self.data.weight.size, dtype=bool)  # rows of accepted findings
        budget = EXAMINE_PER_FINDING * n_findings + 5
        for entry in pool:
            shape = (frozenset(cut.column for cut in entry.cuts), entry.mean >= 0)
            if shape in examined:  # refinement re-chooses the cuts: the same shape converges
                continue
            examined.add(shape)
            raw = self.members(entry.cuts[1:], self._first(entry.cuts[0]))
            if any(_inside(raw, other) > JACCARD_FOLD for _, other in accepted):
                continue  # mostly a part of a better finding
            refinements += 1
            if refinements > budget:
                break
            self._tell(0.8 + 0.2 * refinements / budget, f"checking candidate {refinements}")
            refined = self.refine(entry.cuts)
            cuts = self.prune(refined)
            if len(cuts) < len(refined):  # re-choose the cuts left without the dropped ones
                cuts = self.refine(cuts)
            node = Node(cuts, 0.0, 0.0, 0)
            if not cuts or node.key() in seen:
                continue
            seen.add(node.key())
            members = self.members(cuts)
            if members.size < self.min_rows:
                continue
            if any(_jaccard(members, other) > JACCARD_FOLD for _, other in accepted):
                continue  # folds into a better finding
            z, _, _, mean = _score_candidates(self.data, [members])[0]
            if accepted:  # most of its deviation lies in better findings' rows: folds too
                rest = members[~taken[members]]
                if rest.size < self.min_rows or _score_candidates(
                        self.data, [rest])[0, 0] < EXPLAINED * z:
                    continue
            taken[members] = True
            accepted.append((Node(cuts, float(z), float(mean), members.size), members))
            if len(accepted) == n_findings:
                break
        accepted.sort(key=lambda item: -item[0].z)
        return accepted


def _next_beam(children: list[Node]) -> list[Node]:
    """Choose the best nodes, half under-, half over-predicted, one per covariates and side."""
    unique: dict[tuple, Node] = {}
    for child in children:  # one node per set of covariates and direction: a diverse beam
        key = (frozenset(cut.column for cut in child.cuts), child.mean >= 0)
        if key not in unique or unique[key].z < child.z:
            unique[key] = child
    ranked = sorted(unique.values(), key=lambda node: -node.z)
    under = [node for node in ranked if node.mean >= 0][: BEAM_WIDTH // 2]
    over = [node for node in ranked if node.mean < 0][: BEAM_WIDTH // 2]
    chosen = {id(node) for node in (*under, *over)}
    rest = [node for node in ranked if id(node) not in chosen]
    beam = under + over + rest[: BEAM_WIDTH - len(under) - len(over)]
    return sorted(beam, key=lambda node: -node.z)


def _neighbourhood(column: Column, keys: np.ndarray, current: float) -> np.ndarray:
    """Observed values (among ``keys``) between the candidate cuts either side of ``current``."""
    edges = column.edges
    k = int(np.searchsorted(edges, current))
    low = edges[k - 1] if k >= 1 else -np.inf
    high = edges[k + 1] if k + 1 < edges.size else np.inf
    with np.errstate(invalid="ignore"):
        inside = keys[(keys > low) & (keys <= high)]
    if inside.size == 0:
        return np.array([current])
    values = np.unique(inside)
    if values.size > REFINE_STEPS:
        values = values[np.linspace(0, values.size - 1, REFINE_STEPS + 1).round().astype(int)]
    return np.union1d(values, [current])


def _moved(cut: Cut, side: str, value: float) -> Cut:
    return Cut(cut.column, cut.op, value if side == "lo" else cut.lo,
               value if side == "hi" else cut.hi, cut.levels)


def _inside(a: np.ndarray, b: np.ndarray) -> float:
    """Share of the rows of ``a`` that are also in ``b`` (sorted position arrays)."""
    return np.intersect1d(a, b, assume_unique=True).size / a.size if a.size else 1.0


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Return |a & b| / |a | b| of two sorted position arrays."""
    common = np.intersect1d(a, b, assume_unique=True).size
    union = a.size + b.size - common
    return common / union if union else 0.0

"""The beam over conjunctions of cuts, the refinement of cut points, pruning and folding.

Level 1 expands the search rows by one cut per covariate; level ``d + 1`` expands each of the
:data:`BEAM_WIDTH` best nodes of level ``d`` (half under-, half over-predicted, by exact D/sigma)
by one cut on a covariate the node does not use yet. Each expansion screens every cut of every
covariate coarsely (:func:`~mcviz.search._screen.screen_column`) and re-scores the best
:data:`KEEP_PER_COLUMN` per covariate exactly. Every exactly scored candidate enters the pool
(conditions and numbers only, no members), from which the findings are drawn: cut points of
numeric conditions are refined to the best observed value between the neighbouring candidate
cuts, conditions that do not raise D/sigma materially are dropped (:func:`material`), and a
candidate whose members overlap an accepted finding's with Jaccard > 1/2 folds into it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mcviz.search._columns import Column, Cut
from mcviz.search._screen import Data, _score_candidates, block_ids, screen_column

BEAM_WIDTH = 8
KEEP_PER_COLUMN = 3
REFINE_STEPS = 16
"""Observed values tried for each cut point between its neighbouring candidate cuts."""
MATERIAL_ABSOLUTE = 1.0
MATERIAL_RELATIVE = 0.05
JACCARD_FOLD = 0.5
EXAMINE_PER_FINDING = 6
"""Pool entries examined per finding wanted (bounds the finishing work)."""


def material(z: float) -> float:
    r"""The gain in D/sigma a condition must bring to stay: :math:`\max(1, 0.05\, D/\sigma)`.

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

    def _tell(self, fraction: float, text: str) -> None:
        if self.progress is not None:
            self.progress(float(min(max(fraction, 0.0), 1.0)), text)

    def members(self, cuts: tuple[Cut, ...], rows: np.ndarray | None = None) -> np.ndarray:
        """Search rows (or ``rows``) satisfying every cut."""
        rows = self.rows if rows is None else rows
        for cut in cuts:
            rows = rows[cut.mask(self.columns[cut.column], rows)]
        return rows

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
        """Move each numeric cut point to the best observed value between its neighbours."""
        cuts = list(cuts)
        for i, cut in enumerate(cuts):
            if cut.op not in ("lt", "ge", "band"):
                continue
            others = self.members(tuple(cuts[:i] + cuts[i + 1:]))
            column = self.columns[cut.column]
            for side in ("lo", "hi"):
                current = getattr(cut, side)
                if np.isnan(current):
                    continue
                values = _neighbourhood(column, self.data, others, current)
                variants = [_moved(cut, side, v) for v in values]
                variants = [v for v in variants if v.op != "band" or v.lo < v.hi]
                if not variants:
                    continue
                sets = [others[v.mask(column, others)] for v in variants]
                scores = _score_candidates(self.data, sets)
                sizes = np.array([s.size for s in sets])
                score = np.where(sizes >= self.min_rows, scores[:, 0], -np.inf)
                best = int(np.argmax(score))
                if np.isfinite(score[best]):
                    cut = variants[best]
            cuts[i] = cut
        return tuple(cuts)

    def prune(self, cuts: tuple[Cut, ...]) -> tuple[Cut, ...]:
        """Drop conditions whose removal lowers D/sigma by less than :func:`material`."""
        cuts = tuple(cuts)
        while cuts:
            z = _score_candidates(self.data, [self.members(cuts)])[0, 0]
            without = [cuts[:i] + cuts[i + 1:] for i in range(len(cuts))]
            scores = _score_candidates(self.data, [self.members(c) for c in without])[:, 0]
            best = int(np.argmax(scores))
            if z - scores[best] >= material(z):
                return cuts
            cuts = without[best]
        return cuts

    def findings(self, n_findings: int) -> list[tuple[Node, np.ndarray]]:
        """Distinct findings from the pool: refined, pruned, folded (Jaccard > 1/2)."""
        pool = sorted(self.pool.values(), key=lambda node: -node.z)
        accepted: list[tuple[Node, np.ndarray]] = []
        seen: set[frozenset] = set()
        budget = EXAMINE_PER_FINDING * n_findings + 10
        for k, entry in enumerate(pool[:budget]):
            self._tell(0.8 + 0.2 * k / budget, f"checking candidate {k + 1}")
            cuts = self.prune(self.refine(entry.cuts))
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
            accepted.append((Node(cuts, float(z), float(mean), members.size), members))
            if len(accepted) == n_findings:
                break
        accepted.sort(key=lambda item: -item[0].z)
        return accepted


def _next_beam(children: list[Node]) -> list[Node]:
    """The best nodes, half under- and half over-predicted, without repeated conjunctions."""
    unique: dict[frozenset, Node] = {}
    for child in children:
        key = child.key()
        if key not in unique or unique[key].z < child.z:
            unique[key] = child
    ranked = sorted(unique.values(), key=lambda node: -node.z)
    under = [node for node in ranked if node.mean >= 0][: BEAM_WIDTH // 2]
    over = [node for node in ranked if node.mean < 0][: BEAM_WIDTH // 2]
    chosen = {id(node) for node in (*under, *over)}
    rest = [node for node in ranked if id(node) not in chosen]
    beam = under + over + rest[: BEAM_WIDTH - len(under) - len(over)]
    return sorted(beam, key=lambda node: -node.z)


def _neighbourhood(column: Column, data: Data, rows: np.ndarray, current: float) -> np.ndarray:
    """Observed values between the candidate cuts either side of ``current`` (at most 17)."""
    edges = column.edges
    k = int(np.searchsorted(edges, current))
    low = edges[k - 1] if k >= 1 else -np.inf
    high = edges[k + 1] if k + 1 < edges.size else np.inf
    keys = column.keys[rows]
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


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """|a & b| / |a | b| of two sorted position arrays."""
    common = np.intersect1d(a, b, assume_unique=True).size
    union = a.size + b.size - common
    return common / union if union else 0.0

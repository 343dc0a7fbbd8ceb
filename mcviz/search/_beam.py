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
from dataclasses import dataclass, replace

import numpy as np

from mcviz.search._columns import Column, Cut
from mcviz.search._screen import (
    Data,
    _score_candidates,
    block_ids,
    screen_column,
)

BEAM_WIDTH = 16
BEAM_GAIN = 0.5
"""A condition added to a node must raise its D/sigma by more than this (search rows)."""
KEEP_PER_COLUMN = 3
REFINE_STEPS = 8
"""Observed values tried for each cut point between its neighbouring candidate cuts."""
DROP_GAIN = 0.75
"""A condition stays when its out-of-fold gain in D/sigma is at least this (see prune)."""
SURE_GAIN = 2.5
"""A condition whose gain on the search rows is at least this times sqrt(1 - f) stays."""
MIN_FOLD_ROWS = 10
MATERIAL_ABSOLUTE = 1.0
MATERIAL_RELATIVE = 0.05
JACCARD_FOLD = 0.5
EXPLAINED = 0.5
"""A candidate whose D/sigma without the rows of better findings falls below this share of its
own folds into them (its deviation is theirs)."""
EXAMINE_PER_FINDING = 3
MASKS_CACHED = 32
"""Boolean masks over the search rows kept for reuse (one byte per search row each)."""
"""Pool entries examined per finding wanted (bounds the finishing work)."""


def material(z: float, kept: float | np.ndarray = 0.0) -> float | np.ndarray:
    r"""Return the gain in D/sigma a condition must bring to stay.

    The condition keeps a share :math:`f` (``kept``) of the rows it is added to. If it had
    nothing to do with the deviation, the D/sigma with it would be that without it, shrunk by
    :math:`\sqrt f`, plus a noise of standard deviation about :math:`\sqrt{1-f}` (the part of
    the path it removes); a condition stays when it raises D/sigma by at least
    :math:`\min(\max(1, 0.05\,D/\sigma),\ 0.2 + 0.5\sqrt{1 - f})`: a condition that trims a
    few rows must bring a small gain, one that halves the rows a gain of the order of the noise.
    """
    cap = max(MATERIAL_ABSOLUTE, MATERIAL_RELATIVE * z)
    return np.minimum(cap, 0.2 + 0.5 * np.sqrt(np.clip(1.0 - np.asarray(kept), 0.0, 1.0)))


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
        self.deficit = 0.0
        """What the last :meth:`prune` found its conditions' in-sample gains to exceed their
        out-of-fold gains by, at most (0 when each is sure or out of fold as large)."""
        self.stops: dict[str, int | bool] = {}
        """Why candidates were not reported (see :meth:`findings`)."""

    def _tell(self, fraction: float, text: str) -> None:
        if self.progress is not None:
            self.progress(float(min(max(fraction, 0.0), 1.0)), text)

    def members(self, cuts: tuple[Cut, ...], rows: np.ndarray | None = None) -> np.ndarray:
        """Search rows (or ``rows``) satisfying every cut."""
        if rows is None:  # masks over the search rows, the recent ones cached
            if not cuts:
                return self.rows
            mask = self._mask(cuts[0])
            for cut in cuts[1:]:
                mask = mask & self._mask(cut)
            return self.rows[mask]
        for cut in cuts:
            rows = rows[cut.mask(self.columns[cut.column], rows)]
        return rows

    def _mask(self, cut: Cut) -> np.ndarray:
        """Which search rows satisfy one cut (the last :data:`MASKS_CACHED` are cached)."""
        key = cut.key()
        mask = self._cache.pop(key, None)
        if mask is None:
            mask = cut.mask(self.columns[cut.column], self.rows)
            if len(self._cache) >= MASKS_CACHED:
                self._cache.pop(next(iter(self._cache)))
        self._cache[key] = mask  # most recent last
        return mask

    def _first(self, cut: Cut) -> np.ndarray:
        """Search rows satisfying one cut."""
        return self.members((cut,))

    def expand(self, node: Node, gain: float = 0.0) -> list[Node]:
        """Children of a node: the best cuts of each unused covariate, scored exactly.

        A child enters the pool (and may enter the beam) only when its D/sigma exceeds its
        parent's by more than ``gain`` (a condition that trims a few rows is not a finding).
        """
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
                if len(s.cut.levels) > 1:  # a level set ranks by its out-of-fold D/sigma
                    z = min(z, s.z)
                if node.cuts and not z > node.z + gain:
                    continue
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
                children.extend(self.expand(node, gain=0.0 if level == 0 else BEAM_GAIN))
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
            if cut.op == "in":
                cuts[i] = self._rechoose_levels(cuts, i)
                continue
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

    def _rechoose_levels(self, cuts: list[Cut], i: int) -> Cut:
        """Re-choose the levels of a nominal condition within the other conditions' rows.

        The options are what the screen offers there (the best single levels, exactly scored,
        and a level set only when it passes the out-of-fold test of
        :func:`~mcviz.search._screen._level_sets`); the one with the largest exact D/sigma is
        taken. The current levels are not an option: they were chosen in other rows.
        """
        cut = cuts[i]
        others = self.members(tuple(cuts[:i] + cuts[i + 1:]))
        column = self.columns[cut.column]
        block, n_blocks = block_ids(self.data, others)
        screened, count = screen_column(self.data, others, block, n_blocks, column, cut.column,
                                        min_rows=self.min_rows, keep=2)
        self.screened += count
        options = [s.cut for s in screened if s.cut.op == "in"]
        if not options:
            return cut
        sets = [others[option.mask(column, others)] for option in options]
        scores = _score_candidates(self.data, sets)[:, 0]
        return options[int(np.argmax(scores))]

    def _best(self, options: list[Cut], keys: np.ndarray, rows: np.ndarray) -> Cut:
        """Return the numeric option with the largest exact D/sigma in ``rows`` (or the first)."""
        sets = [rows[option.mask_keys(keys)] for option in options]
        scores = _score_candidates(self.data, sets)[:, 0]
        sizes = np.array([members.size for members in sets])
        scores = np.where(sizes >= self.min_rows, scores, -np.inf)
        best = int(np.argmax(scores))
        return options[best] if np.isfinite(scores[best]) else options[0]

    def prune(self, cuts: tuple[Cut, ...]) -> tuple[Cut, ...]:
        r"""Drop conditions that do not carry the deviation; widen bands that need one side only.

        Dropping a condition is judged by its out-of-fold gain (:meth:`_oof_gain`: the
        covariate's best condition chosen afresh on one half of the rows of the other
        conditions, its gain measured on the other half), which a condition chosen for noise
        does not keep: it is dropped when that gain is below :data:`DROP_GAIN`, unless its gain
        on the search rows is at least :data:`SURE_GAIN` :math:`\sqrt{1 - f}` (:math:`f`: the
        share of the rows it keeps): a condition chosen for noise gains about
        :math:`\varepsilon\sqrt{1-f} - z(1 - \sqrt f)`, :math:`\varepsilon` the largest of as
        many standard normals as cuts were tried (about 4 for :math:`10^4`), so a large trim
        cannot gain that much by chance, while a small trim that does costs little. The last
        condition left is dropped only when the finding deviates less than all the search rows
        by :func:`material` (the held-out test then says whether it is more than chance). A
        band ``a <= x < b`` widens to ``x < b`` or ``x >= a`` when that lowers D/sigma on the
        search rows by less than :func:`material`. The simplification with the largest margin
        is made, and again, until none is left. (Both thresholds were set by measurement on
        the planted shapes of ``benchmarks/shapes.py``.)
        """
        cuts = tuple(cuts)
        while cuts:
            members = self.members(cuts)
            z, _, _, mean = _score_candidates(self.data, [members])[0]
            drops = [cuts[:i] + cuts[i + 1:] for i in range(len(cuts))]
            widen = [(*cuts[:i], replace(cut, op=op), *cuts[i + 1:])
                     for i, cut in enumerate(cuts) if cut.op == "band" for op in ("lt", "ge")]
            bases = [self.members(c) for c in drops + widen]
            sizes = np.array([b.size for b in bases])
            loss = z - _score_candidates(self.data, bases)[:, 0]
            kept = members.size / np.maximum(sizes, 1)
            excess = np.empty(len(bases))
            self.deficit = 0.0
            for i, cut in enumerate(cuts):
                sure = loss[i] - SURE_GAIN * np.sqrt(1.0 - kept[i])
                if len(cuts) == 1:  # the last one: is the finding more than all the rows?
                    excess[i] = loss[i] - material(z)
                elif sure >= 0:
                    excess[i] = sure
                else:
                    gain = self._oof_gain(cut, bases[i], mean >= 0)
                    excess[i] = gain - DROP_GAIN
                    self.deficit = max(self.deficit, loss[i] - gain)
            excess[len(drops):] = loss[len(drops):] - material(z, kept[len(drops):])
            excess = np.where(sizes >= self.min_rows, excess, np.inf)
            best = int(np.argmin(excess))
            if excess[best] >= 0:
                return cuts
            cuts = (drops + widen)[best]
        self.deficit = 0.0
        return cuts

    def _oof_gain(self, cut: Cut, base: np.ndarray, under: bool) -> float:
        r"""Out-of-fold gain in D/sigma of a condition on ``cut``'s covariate added to ``base``.

        ``base`` is split into two folds stratified by score (alternate rows in the score order
        of :func:`~mcviz.search._confirm.split_rows`, free of the order of tied rows). On each
        fold the covariate's best condition in the finding's direction (``under``: observed
        above predicted) is chosen by the screen; its gain
        :math:`z(\text{fold}' \cap \text{condition}) - z(\text{fold}')` is measured on the
        other fold. The two gains are added and divided by :math:`\sqrt 2` (the scale of the
        full rows). A condition that only fits noise has a negative gain in expectation; a
        level set is judged the same way (its levels chosen on the other fold).
        """
        column = self.columns[cut.column]
        odd = self.data.parity[base]
        folds = (base[~odd], base[odd])
        least = max(MIN_FOLD_ROWS, self.min_rows // 2)
        total = 0.0
        for fit, test in (folds, folds[::-1]):
            if fit.size <= least or test.size == 0:
                return 0.0
            block, n_blocks = block_ids(self.data, fit)
            screened, count = screen_column(self.data, fit, block, n_blocks, column,
                                            cut.column, min_rows=least, keep=3)
            self.screened += count
            if not screened:
                return 0.0
            options = [s.cut for s in screened]
            scores = _score_candidates(self.data, [fit[o.mask(column, fit)] for o in options])
            scores[:, 0] = np.where((scores[:, 3] >= 0) == under, scores[:, 0], -np.inf)
            chosen = options[int(np.argmax(scores[:, 0]))]
            members = test[chosen.mask(column, test)]
            if members.size == 0:
                return 0.0
            held = _score_candidates(self.data, [members, test])[:, 0]
            total += held[0] - held[1]
        return total / np.sqrt(2.0)

    def _explained(self, members: np.ndarray, z: float, others: list[np.ndarray]) -> bool:
        """Return True when the deviation of ``members`` lies in the rows of ``others``.

        That is, when its D/sigma outside their rows is below :data:`EXPLAINED` of ``z`` (or
        too few rows are left).
        """
        if not others:
            return False
        taken = np.zeros(members.size, dtype=bool)
        for other in others:
            taken |= np.isin(members, other, assume_unique=True)
        rest = members[~taken]
        return bool(rest.size < self.min_rows
                    or _score_candidates(self.data, [rest])[0, 0] < EXPLAINED * z)

    def findings(self, n_findings: int) -> list[tuple[Node, np.ndarray]]:
        """Distinct findings from the pool: refined, pruned, folded (Jaccard > 1/2).

        Pool entries are examined by their D/sigma on the search rows. A finding ranks by that
        D/sigma less the largest excess of a condition's gain on the search rows over its
        out-of-fold gain (:meth:`prune`): conditions fitted to noise gain nothing out of fold,
        so a conjunction of noise bands ranks below a real finding. Refinement and pruning can
        lower the rank, so a later entry that overlaps an accepted finding (Jaccard > 1/2) and
        ranks higher replaces it.
        """
        pool = sorted(self.pool.values(), key=lambda node: -node.z)
        accepted: list[tuple[Node, np.ndarray]] = []
        seen: set[frozenset] = set()
        examined: set[tuple] = set()
        refinements = 0
        budget = EXAMINE_PER_FINDING * n_findings + 5
        self.stops = {"overlap": 0, "small": 0, "weak": 0, "budget": False}
        for entry in pool:
            shape = (frozenset(cut.column for cut in entry.cuts), entry.mean >= 0)
            if shape in examined:  # refinement re-chooses the cuts: the same shape converges
                continue
            examined.add(shape)
            raw = self.members(entry.cuts[1:], self._first(entry.cuts[0]))
            if any(_inside(raw, other) > JACCARD_FOLD and entry.z <= node.z
                   for node, other in accepted):
                self.stops["overlap"] += 1
                continue  # mostly a part of a better finding
            refinements += 1
            if refinements > budget:
                self.stops["budget"] = True
                break
            self._tell(0.8 + 0.2 * refinements / budget, f"checking candidate {refinements}")
            refined = self.refine(entry.cuts)
            cuts = self.prune(refined)
            deficit = self.deficit
            if len(cuts) < len(refined):  # re-choose the cuts left without the dropped ones
                cuts = self.refine(cuts)
            node = Node(cuts, 0.0, 0.0, 0)
            if not cuts:
                self.stops["weak"] += 1
                continue
            if node.key() in seen:
                self.stops["overlap"] += 1
                continue
            seen.add(node.key())
            members = self.members(cuts)
            if members.size < self.min_rows:
                self.stops["small"] += 1
                continue
            z, _, _, mean = _score_candidates(self.data, [members])[0]
            z = float(z - deficit)  # ranked as its conditions' out-of-fold gains support it
            same = [k for k, (node, other) in enumerate(accepted)
                    if _jaccard(members, other) > JACCARD_FOLD]
            if any(accepted[k][0].z >= z for k in same):
                self.stops["overlap"] += 1
                continue  # folds into a better finding
            if same:  # a better version of accepted findings (their pool entry ranked higher)
                self.stops["overlap"] += len(same)
                accepted = [item for k, item in enumerate(accepted) if k not in same]
            if self._explained(members, z, [o for n, o in accepted if n.z >= z]):
                self.stops["overlap"] += 1
                continue  # most of its deviation lies in better findings' rows: folds too
            keep = [(n, o) for n, o in accepted
                    if n.z >= z or not self._explained(o, n.z, [members])]
            self.stops["overlap"] += len(accepted) - len(keep)
            accepted = keep  # weaker findings whose deviation lies in its rows fold into it
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

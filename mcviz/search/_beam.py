"""The beam over conjunctions of cuts, the refinement of cut points, pruning and folding.

Level 1 expands the search rows by one cut per covariate; level ``d + 1`` expands each of the
:data:`BEAM_WIDTH` best nodes of level ``d`` (half under-, half over-predicted, by exact D/sigma)
by one cut on a covariate the node does not use yet (a level-1 node only when its condition
raises D/sigma over all the search rows by :func:`material`). Each expansion screens every cut
of every covariate coarsely (:func:`~mcviz.search._screen.screen_column`) and re-scores the best
:data:`KEEP_PER_COLUMN` per covariate exactly. Every exactly scored candidate enters the pool
(conditions and numbers only, no members), from which the findings are drawn: every condition
is re-chosen within the rows of the others until none changes (level sets by an exact best
prefix, numeric cut points to the best observed value between the neighbouring candidate
cuts), conditions without which D/sigma is not significantly lower are dropped
(:meth:`Beam.prune`), a significant missing condition is added (:meth:`Beam.grow`), and a
candidate whose members overlap an accepted finding's with Jaccard > 1/2 folds into it (so does
one whose D/sigma without the accepted findings' rows falls below half its own).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from mcviz.search._columns import Column, Cut, select
from mcviz.search._screen import (
    Data,
    _score_candidates,
    best_level_prefix,
    block_ids,
    masked_scores,
    screen_column,
    slab_variants_z,
)

BEAM_WIDTH = 16
BEAM_GAIN = 0.5
"""A condition added to a node must raise its D/sigma by more than this (search rows)."""
KEEP_PER_COLUMN = 3
REFINE_STEPS = 8
"""Observed values tried for each cut point between its neighbouring candidate cuts."""
DROP_T = 3.0
"""A condition stays when the D/sigma without it is lower by this many standard errors of an
unrelated condition (see :meth:`Beam.prune`)."""
DROP_T_OOF = 2.5
"""... and when its out-of-fold T (:meth:`Beam._oof_t`) is at least this ..."""
SURE_T = 5.0
"""... unless its T on the search rows is at least this (noise conditions, the largest of a few
thousand cuts, hardly reach it)."""
MIN_FOLD_ROWS = 10
GROW_LIMIT = 4
"""Pruned candidates that :meth:`Beam.grow` tries to complete (it screens every covariate)."""
GROW_TRIES = 3
"""Conditions :meth:`Beam.grow` tests out of fold per step (the largest D/sigma first)."""
REFINE_PASSES = 2
"""Passes of the coordinate ascent over a finding's conditions (:meth:`Beam.refine`)."""
MATERIAL_ABSOLUTE = 1.0
MATERIAL_RELATIVE = 0.05
JACCARD_FOLD = 0.5
EXPLAINED = 0.5
"""A candidate whose D/sigma without the rows of better findings falls below this share of its
own folds into them (its deviation is theirs)."""
EXAMINE_PER_FINDING = 3
"""Pool entries examined per finding wanted (bounds the finishing work)."""
MASKS_CACHED = 32
"""Boolean masks over the search rows kept for reuse (one byte per search row each)."""
MASKED_SHARE = 0.125
"""Subsets of at least this share of a node's rows are scored from masks (:meth:`Beam._subsets`)."""
SETS_CACHED = 2
"""Members of recent conjunctions kept for reuse, in all at most this many times the search
rows (eight bytes per position)."""


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


def _remembered(method: Callable) -> Callable:
    """Compute ``method(self, cuts)`` once per :class:`Beam` and ordered conjunction.

    :meth:`Beam.refine`, :meth:`Beam.prune` and :meth:`Beam.grow` depend on the conditions in
    their order and on the beam's data, rows and limits, which do not change while the
    findings are drawn; several pool entries lead to the same conjunction (a pruned candidate
    grown back), which is then refined, pruned or grown once.
    """
    name = method.__name__

    @functools.wraps(method)
    def remembered(self: Beam, cuts: tuple[Cut, ...]) -> tuple[Cut, ...]:
        key = (name, tuple(cut.key() for cut in cuts))
        if key not in self._done:
            self._done[key] = method(self, tuple(cuts))
        return self._done[key]

    return remembered


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
        self._sets: dict[frozenset, np.ndarray] = {}  # recent conjunctions' members
        self._set_rows = 0  # positions held in ``_sets``
        self._scores: dict[frozenset, np.ndarray] = {}  # exact (z, D, sigma, mean) per key
        self._oof: dict[tuple, float] = {}  # :meth:`_oof_t` per condition and base
        self._done: dict[tuple, tuple] = {}  # refine, prune, grow per conjunction
        self.stops: dict[str, int | bool] = {}
        self.max_conditions = 3
        """Why candidates were not reported (see :meth:`findings`)."""
        self.refiner: Beam | None = None
        """Another search over a subset of the rows that refines the candidates' cut points
        in :meth:`findings` (None: this one)."""

    def _tell(self, fraction: float, text: str) -> None:
        if self.progress is not None:
            self.progress(float(min(max(fraction, 0.0), 1.0)), text)

    def members(self, cuts: tuple[Cut, ...], rows: np.ndarray | None = None) -> np.ndarray:
        """Search rows (or ``rows``) satisfying every cut (read-only; recent ones cached).

        The members of a conjunction depend on its conditions only, not on their order: the
        last few are kept (at most :data:`SETS_CACHED` times the search rows' positions), as
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
                while self._sets and self._set_rows > SETS_CACHED * self.rows.size:
                    self._set_rows -= self._sets.pop(next(iter(self._sets))).size
            self._sets[key] = found  # most recent last
            return found
        for cut in cuts:
            rows = select(rows, cut.mask(self.columns[cut.column], rows))
        return rows

    def scores(self, conjunctions: list[tuple[Cut, ...]]) -> np.ndarray:
        """Exact D/sigma, D, sigma and mean residual of each conjunction (rows ``(k, 4)``).

        :func:`~mcviz.search._screen._score_candidates` of their :meth:`members`, each computed
        once per conjunction (the numbers depend on its members only).
        """
        keys = [frozenset(cut.key() for cut in cuts) for cuts in conjunctions]
        todo = list({key: cuts for key, cuts in zip(keys, conjunctions, strict=True)
                     if key not in self._scores}.items())
        if todo:
            sets = [self.members(cuts) for _, cuts in todo]
            for (key, _), row in zip(todo, _score_candidates(self.data, sets), strict=True):
                self._scores[key] = row
        return np.array([self._scores[key] for key in keys]).reshape(len(keys), 4)

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

    def expand(self, node: Node, gain: float = 0.0, *, pool: bool = True) -> list[Node]:
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
            codes = column.codes[rows]  # gathered once: the screen and the masks read it
            screened, count = screen_column(
                self.data, rows, block, n_blocks, column, j, min_rows=self.min_rows,
                keep=KEEP_PER_COLUMN, codes=codes,
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
                if pool and (key not in self.pool or self.pool[key].z < child.z):
                    self.pool[key] = child
                children.append(child)  # members are not kept: O(n + candidates) memory
        return children

    def run(self, max_conditions: int) -> None:
        r"""Fill the pool with the beam over up to ``max_conditions`` cuts.

        Every child of the search rows (the root) enters the pool, but it is expanded (enters
        level 1 of the beam) only when its D/sigma exceeds the root's :math:`z` by
        :func:`material` of :math:`z` and the share :math:`f` of the rows it keeps. A condition
        unrelated to the deviation gives about :math:`\sqrt f z` plus a noise of standard
        deviation :math:`\sqrt{1 - f}`; one that keeps most rows (``bmi >= 16``: 98% of them)
        and gains less than that noise would make a node that repeats the root's expansion on
        nearly the same rows (0.2-0.4 CPU s each at 10^6 rows). The rule is laxer than the one
        :meth:`prune` applies to a finding's last condition (a gain of ``material(z)``, which
        is 0.7, at least this one), so no condition that could stand alone is kept out; a
        conjunction is still
        reached from any of its conditions that passes (measured on the planted shapes of
        ``benchmarks/bench_find.py``: the same recovery at 10^5 rows).
        """
        self.max_conditions = max_conditions
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
            if level == 0:  # a first condition must bring a material gain to be expanded
                root = beam[0]
                children = [child for child in children if child.z - root.z >= material(
                    root.z, child.count / max(root.count, 1))]
            beam = _next_beam(children)
            beam = [Node(n.cuts, n.z, n.mean, n.count, self.members(n.cuts)) for n in beam]
            if not beam:
                break

    @_remembered
    def refine(self, cuts: tuple[Cut, ...]) -> tuple[Cut, ...]:
        """Re-choose every condition given the others until none changes (coordinate ascent).

        One pass takes the conditions in turn; each is chosen afresh within the rows of the
        others (:meth:`_rechoose`), so a condition first picked where the others were not yet
        in place (a level set chosen before the band that carries the deviation) is put right.
        The cycle stops as soon as every condition has been re-chosen once without a change
        since the last change (re-choosing one whose others did not move gives it again), at
        most :data:`REFINE_PASSES` passes.
        """
        cuts = list(cuts)
        if not cuts:
            return ()
        under = bool(self.scores([tuple(cuts)])[0, 3] >= 0) if self.members(
            tuple(cuts)).size else True
        stable = 0  # conditions re-chosen in a row without a change
        for step in range(REFINE_PASSES * len(cuts)):
            i = step % len(cuts)
            new = self._rechoose(cuts, i, under)
            stable = stable + 1 if new == cuts[i] else 0
            cuts[i] = new
            if stable >= len(cuts):  # a full cycle without a change: converged
                break
        return tuple(cuts)

    def _rechoose(self, cuts: list[Cut], i: int, under: bool) -> Cut:
        """Condition ``i`` chosen again within the rows of the other conditions.

        A level set is the best prefix of the levels ordered by their drift there
        (:func:`~mcviz.search._screen.best_level_prefix`); a numeric cut is the best of the
        current one and what the screen offers there (every threshold and band at the candidate
        cuts, and "is missing"), its points then moved to the best observed values between the
        neighbouring candidate cuts. Other conditions (``is missing``) stay.
        """
        cut = cuts[i]
        if cut.op not in ("in", "lt", "ge", "band"):
            return cut
        others = self.members(tuple(cuts[:i] + cuts[i + 1:]))
        column = self.columns[cut.column]
        if cut.op == "in":
            chosen = best_level_prefix(self.data, others, column, cut.column, under,
                                       min_rows=self.min_rows)
            return cut if chosen is None else chosen
        block, n_blocks = block_ids(self.data, others)
        screened, count = screen_column(self.data, others, block, n_blocks, column,
                                        cut.column, min_rows=self.min_rows, keep=2)
        self.screened += count
        options = [cut] + [s.cut for s in screened]  # "is missing" too: "bmi >= 33" may be it
        keys = column.keys[others]  # gathered once for every option and variant
        cut = self._best(options, keys, others)
        for side in ("lo", "hi"):
            current = getattr(cut, side)
            if np.isnan(current):
                continue
            values = _neighbourhood(column, keys, current)
            variants = [_moved(cut, side, v) for v in values]
            variants = [v for v in variants if v.op != "band" or v.lo < v.hi]
            cut = self._best_moved([cut, *variants], side, keys, others)
        return cut

    def _best_moved(self, options: list[Cut], side: str, keys: np.ndarray,
                    rows: np.ndarray) -> Cut:
        """:meth:`_best` of variants of one cut that differ in one cut point (``side``).

        Rows outside the span of the moved points are in all variants or in none, so the
        variants are scored in one pass (:func:`~mcviz.search._screen.slab_variants_z`).
        """
        if not self.data.bernoulli or rows.size == 0:
            return self._best(options, keys, rows)
        points = np.array([getattr(option, side) for option in options])
        with np.errstate(invalid="ignore"):
            inside = (keys >= points.min()) & (keys <= points.max())
        base = options[0].mask_keys(keys) & ~inside
        union = np.flatnonzero(base | inside)  # rows in no variant add nothing to any path
        if union.size == 0:
            return options[0]
        inside, base = inside[union], base[union]
        slab = np.flatnonzero(inside)
        slab_in = np.array([option.mask_keys(keys[union[slab]]) for option in options])
        scores = np.round(slab_variants_z(self.data, rows[union], base, slab, slab_in), 9)
        sizes = int(base.sum()) + slab_in.sum(axis=1)
        scores = np.where(sizes >= self.min_rows, scores, -np.inf)
        best = int(np.argmax(scores))  # the first of equal sets: the current cut when equal
        return options[best] if np.isfinite(scores[best]) else options[0]

    def _best(self, options: list[Cut], keys: np.ndarray, rows: np.ndarray) -> Cut:
        """Return the numeric option with the largest exact D/sigma in ``rows`` (or the first)."""
        masks = [np.isnan(keys) == (option.op == "missing") if option.op in (
            "missing", "present") else option.mask_keys(keys) for option in options]
        scores, sizes = self._subsets(rows, masks)
        scores = np.where(sizes >= self.min_rows, scores[:, 0], -np.inf)
        best = int(np.argmax(scores))
        return options[best] if np.isfinite(scores[best]) else options[0]

    def _subsets(self, rows: np.ndarray, masks: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Exact scores (rows ``(k, 4)``, as :func:`_score_candidates`) and sizes of ``rows[mask]``.

        Subsets holding at least :data:`MASKED_SHARE` of ``rows`` are scored from their masks
        (:func:`~mcviz.search._screen.masked_scores`, Bernoulli responses), smaller ones
        gathered (their cost is then their size, not that of ``rows``).
        """
        sizes = np.array([np.count_nonzero(mask) for mask in masks], dtype=np.int64)
        masked = (sizes >= MASKED_SHARE * rows.size) if self.data.bernoulli else (
            np.zeros(len(masks), dtype=bool))
        scores = np.zeros((len(masks), 4))
        if masked.any():
            scores[masked] = masked_scores(self.data, rows,
                                           [masks[k] for k in np.flatnonzero(masked)])
        if not masked.all():
            scores[~masked] = _score_candidates(self.data, [
                select(rows, masks[k]) for k in np.flatnonzero(~masked)])
        return scores, sizes

    @_remembered
    def prune(self, cuts: tuple[Cut, ...]) -> tuple[Cut, ...]:
        r"""Drop conditions that do not carry the deviation; widen bands that need one side only.

        A condition is kept when the D/sigma without it is significantly lower. Let :math:`z`
        be the finding's D/sigma, :math:`z_0` that without the condition and :math:`f` the share
        of those rows the condition keeps. If the condition had nothing to do with the deviation,
        its rows would carry the share :math:`f` of the path's drift and of its variance, so
        :math:`z \approx \sqrt f z_0` plus a noise of standard deviation :math:`\sqrt{1-f}`
        (the part of the path it removes is independent of the part it keeps). Hence

        .. math:: T = \frac{z - \sqrt f\, z_0}{\sqrt{1 - f}}

        is about standard normal for an unrelated condition (a condition chosen among many cuts
        of its covariate: the largest of as many, hence the threshold :data:`DROP_T`), and
        about :math:`z_0\sqrt{(1-f)/f}` for one that bounds the deviation. A condition stays
        when :math:`T \ge` :data:`DROP_T` and :math:`z > z_0`. The last condition left is
        dropped only when the finding deviates less than all the search rows by
        :func:`material` (the held-out test then says whether it is more than chance). A band
        ``a <= x < b`` widens to ``x < b`` or ``x >= a`` when that lowers D/sigma on the search
        rows by less than :func:`material`. The simplification with the largest margin is
        made, and again, until none is left. (:data:`DROP_T` was set by measurement on the
        planted shapes of ``benchmarks/shapes.py``.)
        """
        cuts = tuple(cuts)
        while cuts:
            drops = [cuts[:i] + cuts[i + 1:] for i in range(len(cuts))]
            widen = [(*cuts[:i], replace(cut, op=op), *cuts[i + 1:])
                     for i, cut in enumerate(cuts) if cut.op == "band" for op in ("lt", "ge")]
            scores = self.scores([cuts, *drops, *widen])
            z, _, _, mean = scores[0]
            size = self.members(cuts).size
            sizes = np.array([self.members(c).size for c in drops + widen])
            without = scores[1:, 0]
            loss = z - without
            kept = size / np.maximum(sizes, 1)
            n_drops = len(drops)
            if len(cuts) == 1:  # the last one: is the finding more than all the rows?
                excess = loss[:1] - material(z)
            else:
                f = np.clip(kept[:n_drops], 0.0, 1.0)
                t = (z - np.sqrt(f) * without[:n_drops]) / np.sqrt(np.maximum(1.0 - f, 1e-12))
                excess = np.minimum(t - DROP_T, loss[:n_drops] - material(z, f))
                for i in np.flatnonzero((excess >= 0) & (t < SURE_T)):  # and out of fold?
                    excess[i] = min(excess[i], self._oof_t(cuts[i], drops[i], mean >= 0)
                                    - DROP_T_OOF)
            excess = np.concatenate((excess, loss[n_drops:] - material(z, kept[n_drops:])))
            excess = np.where(sizes >= self.min_rows, excess, np.inf)
            best = int(np.argmin(excess))
            if excess[best] >= 0:
                return cuts
            cuts = (drops + widen)[best]
        return cuts

    @_remembered
    def grow(self, cuts: tuple[Cut, ...]) -> tuple[Cut, ...]:
        r"""Add the conditions a finding lacks, while one is significant (then refine).

        Within the finding's rows every cut of every covariate it does not use is screened and
        the best few per covariate scored exactly; the best (largest D/sigma :math:`z'`) is
        added when it passes :meth:`prune`'s test against the finding's :math:`z`:
        :math:`(z' - \sqrt f z) / \sqrt{1 - f} \ge` :data:`DROP_T` with :math:`z' > z` +
        :data:`BEAM_GAIN` (:math:`f` the share of the rows it keeps), and, as in :meth:`prune`,
        when that :math:`T` is below :data:`SURE_T`, an out-of-fold :math:`T` (:meth:`_oof_t`)
        of at least :data:`DROP_T_OOF`: the best of some 600 cuts passes :data:`DROP_T` in
        sample by chance, and :meth:`prune` would drop it again after a costly refinement.
        The :data:`GROW_TRIES` largest are tested in turn; the first that passes is added. A
        beam can reach a conjunction by a detour (a score band in place of the count that
        bounds the group); once the detour is pruned, this puts the missing condition in.
        """
        while len(cuts) < self.max_conditions:
            rows = self.members(cuts)
            if rows.size < 2 * self.min_rows:
                break
            z = float(self.scores([cuts])[0, 0])
            children = self.expand(Node(cuts, z, 0.0, rows.size, rows), gain=-np.inf,
                                   pool=False)
            f = np.minimum(np.array([child.count for child in children]) / rows.size, 1.0)
            t = (np.array([child.z for child in children]) - np.sqrt(f) * z) / np.sqrt(
                np.maximum(1.0 - f, 1e-12))
            significant = sorted(((child, ti) for child, ti in zip(children, t, strict=True)
                                  if ti >= DROP_T), key=lambda item: -item[0].z)
            under = bool(self.scores([cuts])[0, 3] >= 0)  # prune's test, out of fold too
            significant = [(child, ti) for child, ti in significant[:GROW_TRIES]
                           if ti >= SURE_T or self._oof_t(child.cuts[-1], cuts, under)
                           >= DROP_T_OOF][:1]
            if not significant:
                break
            grown = self.refine(significant[0][0].cuts)
            if not (self.scores([grown])[0, 0] - z
                    >= material(z, self.members(grown).size / rows.size)):
                break
            cuts = grown
        return cuts

    def _oof_t(self, cut: Cut, others: tuple[Cut, ...], under: bool) -> float:
        r"""Out-of-fold :math:`T` of :meth:`prune` for a condition on ``cut``'s covariate.

        ``base`` (the rows of the ``others`` conditions) is split into two folds stratified by
        score (the parity of :func:`~mcviz.search._confirm.split_rows`, free of the order of
        tied rows). On each fold the covariate's best condition in the finding's direction
        (``under``: observed above predicted) is chosen by the screen, and
        :math:`T = (z - \sqrt f z_0)/\sqrt{1-f}` measured on the other fold; the two are added
        and divided by :math:`\sqrt 2`. The condition was not chosen on the rows it is measured
        on, so for an unrelated covariate this is about standard normal whatever the number of
        cuts tried; for one that bounds the deviation it is about the in-sample :math:`T`.
        It depends on the covariate, the other conditions and the direction only (computed
        once for each).
        """
        key = (cut.column, frozenset(c.key() for c in others), under)
        if key not in self._oof:
            self._oof[key] = self._oof_t_of(cut, self.members(others), under)
        return self._oof[key]

    def _oof_t_of(self, cut: Cut, base: np.ndarray, under: bool) -> float:
        column = self.columns[cut.column]
        odd = self.data.parity[base]
        folds = (select(base, ~odd), select(base, odd))
        least = max(MIN_FOLD_ROWS, self.min_rows // 2)
        if min(folds[0].size, folds[1].size) <= least:
            return 0.0
        codes = (column.codes[folds[0]], column.codes[folds[1]])  # gathered once per fold
        total = 0.0
        for (fit, test), (fit_codes, test_codes) in ((folds, codes), (folds[::-1], codes[::-1])):
            block, n_blocks = block_ids(self.data, fit)
            screened, count = screen_column(self.data, fit, block, n_blocks, column,
                                            cut.column, min_rows=least, keep=3, codes=fit_codes)
            self.screened += count
            if not screened:
                return 0.0
            options = [s.cut for s in screened]
            scores, _ = self._subsets(fit, _masks(column, fit, options, fit_codes))
            scores[:, 0] = np.where((scores[:, 3] >= 0) == under, scores[:, 0], -np.inf)
            chosen = options[int(np.argmax(scores[:, 0]))]
            scores, sizes = self._subsets(test, [*_masks(column, test, [chosen], test_codes),
                                                 np.ones(test.size, dtype=bool)])
            size = int(sizes[0])
            if size == 0 or size == test.size:
                return 0.0
            z, z0 = scores[:, 0]
            f = size / test.size
            total += (z - np.sqrt(f) * z0) / np.sqrt(1.0 - f)
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

        Pool entries are examined by their D/sigma on the search rows. Each is refined (every
        condition re-chosen given the others until stable, :meth:`refine`), pruned (a condition
        stays only when the D/sigma without it is significantly lower, :meth:`prune`), and, when
        a condition was dropped and others are left, grown again (:meth:`grow`: a significant
        missing condition is added). A finding ranks by its D/sigma on the search rows.
        Refinement and pruning can lower the rank, so a later entry that overlaps an accepted
        finding (Jaccard > 1/2) and ranks higher replaces it.

        An entry whose own (unrefined) rows deviate by less than :data:`EXPLAINED` of its
        D/sigma outside the rows of better accepted findings is folded before it is refined:
        the test a refined entry faces last (:meth:`_explained`), made first. Refining and
        pruning re-choose and drop conditions among those rows, so such an entry ends as
        a part of those findings (16 of the 20 entries examined on the 10^6-row benchmark's
        first draw, at about 0.2 s each); it counts against the entries examined, as before.
        When the cut points are refined on a subset of the rows (:attr:`refiner`: above
        ``FINISH_ROWS`` search rows), at most ``ceil((EXAMINE_PER_FINDING * n + 5) k / m)``
        entries are examined (:math:`k` rows in the subset, :math:`m` searched): an entry's
        work grows with the rows, so the phase costs about what it costs on :math:`k` rows.
        (Pruning stays on all the search rows: pruned on the subset first, the 10^6-row
        benchmark's draw 6 lost a true condition.) There an entry whose last condition fails
        :meth:`prune`'s test against the rest (:meth:`_noise_tail`) is not refined (it counts
        as examined). Each accepted finding's conditions are re-chosen, grown and pruned once
        more on all the search rows and the result kept when its D/sigma is larger
        (:meth:`_polished`; findings that then overlap fold): the precision of the cut points
        and the conditions that a better version of the finding, examined later, used to
        bring.
        """
        pool = sorted(self.pool.values(), key=lambda node: -node.z)
        accepted: list[tuple[Node, np.ndarray]] = []
        seen: set[frozenset] = set()
        examined: set[tuple] = set()
        refinements = grows = 0
        budget = EXAMINE_PER_FINDING * n_findings + 5
        if self.refiner is not None:  # entries cost work in proportion to the rows
            budget = int(np.ceil(budget * self.refiner.rows.size / self.rows.size))
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
            if self._explained(raw, entry.z, [o for node, o in accepted if node.z >= entry.z]):
                self.stops["overlap"] += 1  # the check below, on its unrefined rows: refining
                continue  # and pruning keep it inside the rows of the better findings
            if self.refiner is not None and self._noise_tail(entry):
                self.stops["weak"] += 1  # pruning would drop its last condition; its shape
                examined.discard(shape)  # may still come from another order of conditions
                continue
            refiner = self.refiner or self  # cut points on a subset of the rows, at 10^6
            refined = refiner.refine(entry.cuts)
            cuts = self.prune(refined)
            if cuts and len(cuts) < len(refined):  # re-choose those left (none left: weak)
                cuts = refiner.refine(cuts)
                if grows < GROW_LIMIT:  # the strongest candidates (examined first) only
                    grows += 1
                    grown = self.grow(cuts)
                    if grown != cuts:
                        cuts = self.prune(grown)
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
            z, _, _, mean = self.scores([cuts])[0]
            z = float(z)
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
        if self.refiner is not None:
            accepted = self._polish_all(accepted)
        accepted.sort(key=lambda item: -item[0].z)
        return accepted

    def _noise_tail(self, entry: Node) -> bool:
        r"""Return True when an entry's last condition fails :meth:`prune`'s test.

        The beam made the entry by adding its last condition to a node of its own (the other
        conditions). With :math:`z` the entry's D/sigma, :math:`z_0` the node's and :math:`f`
        the share of the node's rows the condition keeps, :math:`T = (z - \sqrt f z_0) /
        \sqrt{1 - f}`; the condition fails when :math:`T <` :data:`DROP_T`, or :math:`T <`
        :data:`SURE_T` and its out-of-fold :math:`T` (:meth:`_oof_t`) is below
        :data:`DROP_T_OOF`: the test :meth:`prune` applies, here to the beam's own cut
        points. Such an entry (the best of a few thousand cuts added to a node by chance) would
        be refined and pruned back to a part of that node, which is in the pool itself, at
        0.2-0.7 CPU s an entry at 10^6 rows. Used above ``FINISH_ROWS`` search rows only.
        """
        if len(entry.cuts) < 2:
            return False
        node = entry.cuts[:-1]
        (z, _, _, mean), (z0, _, _, _) = self.scores([entry.cuts, node])
        size, size0 = self.members(entry.cuts).size, self.members(node).size
        if size >= size0:
            return True
        f = size / size0
        t = (z - np.sqrt(f) * z0) / np.sqrt(1.0 - f)
        if t >= SURE_T:
            return False
        return bool(t < DROP_T
                    or self._oof_t(entry.cuts[-1], node, bool(mean >= 0)) < DROP_T_OOF)

    def _polish_all(self, accepted: list[tuple[Node, np.ndarray]]) -> list[tuple[Node, np.ndarray]]:
        """Each finding :meth:`_polished`; a finding that then overlaps a better one folds."""
        polished = sorted((self._polished(node, members) for node, members in accepted),
                          key=lambda item: -item[0].z)
        kept: list[tuple[Node, np.ndarray]] = []
        for node, members in polished:
            if any(_jaccard(members, other) > JACCARD_FOLD for _, other in kept):
                self.stops["overlap"] += 1  # two findings became one
            else:
                kept.append((node, members))
        return kept

    def _polished(self, node: Node, members: np.ndarray) -> tuple[Node, np.ndarray]:
        """Return the finding refined, grown and pruned on all the search rows, if better.

        The growing step (:meth:`grow`, for a finding of fewer than the most conditions) puts
        back a condition the subset's refinement lost, as when ``cnt >= 2`` came out as the
        band ``2 <= cnt < 7`` there and was then pruned (the 10^6-row benchmark's draw 6).
        """
        cuts = self.prune(self.refine(node.cuts))
        if cuts and len(cuts) < self.max_conditions:
            grown = self.grow(cuts)
            if grown != cuts:
                cuts = self.prune(grown)
        if cuts == node.cuts:
            return node, members
        found = self.members(cuts)
        z, _, _, mean = self.scores([cuts])[0]
        if found.size < self.min_rows or not z > node.z:
            return node, members
        return Node(cuts, float(z), float(mean), found.size), found


def _masks(column: Column, rows: np.ndarray, cuts: list[Cut],
           codes: np.ndarray | None = None) -> list[np.ndarray]:
    """Which of ``rows`` satisfy each cut, from the column's codes at ``rows`` where they can."""
    codes = column.codes[rows] if codes is None else codes
    masks = [cut.mask_codes(column, codes) for cut in cuts]
    return [cut.mask(column, rows) if mask is None else mask
            for cut, mask in zip(cuts, masks, strict=True)]


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

"""Cut points re-chosen within the rows of a finding's other conditions (coordinate ascent)."""

from __future__ import annotations

import numpy as np

from mcviz.search._columns import Column, Cut
from mcviz.search._rows import SearchRows, remembered
from mcviz.search._screen import best_level_prefix, block_ids, screen_column, slab_variants_z


class Refining(SearchRows):
    """:meth:`refine`: every condition of a conjunction re-chosen given the others."""

    @remembered
    def refine(self, cuts: tuple[Cut, ...]) -> tuple[Cut, ...]:
        """Re-choose every condition given the others until none changes (coordinate ascent).

        One pass takes the conditions in turn; each is chosen afresh within the rows of the
        others (:meth:`_rechoose`), so a condition first picked where the others were not yet
        in place (a level set chosen before the band that carries the deviation) is put right.
        The cycle stops as soon as every condition has been re-chosen once without a change
        since the last change (re-choosing one whose others did not move gives it again), at
        most ``rules.refine_passes`` passes.
        """
        cuts = list(cuts)
        if not cuts:
            return ()
        under = bool(self.scores([tuple(cuts)])[0, 3] >= 0) if self.members(
            tuple(cuts)).size else True
        stable = 0  # conditions re-chosen in a row without a change
        for step in range(self.rules.refine_passes * len(cuts)):
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
        neighbouring candidate cuts (the current cut's points moved too, and the better of the
        two kept). Other conditions (``is missing``) stay.
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
        best = self._best(options, keys, others)
        if best == cut:
            return self._points_moved(cut, column, keys, others)
        # a screened option replaces the current cut only once both have their best points:
        # the options' points are candidate cuts, the current cut's may lie between them
        # (issue #42: "0.798 <= u < 0.890" lost to "u < 0.860" and never reached 0.9)
        moved = [self._points_moved(option, column, keys, others) for option in (best, cut)]
        return self._best(moved, keys, others)

    def _points_moved(self, cut: Cut, column: Column, keys: np.ndarray,
                      rows: np.ndarray) -> Cut:
        """Each cut point moved to the best observed value between its neighbouring candidate
        cuts (:func:`_neighbourhood`), one side after the other."""
        for side in ("lo", "hi"):
            current = getattr(cut, side)
            if np.isnan(current):
                continue
            values = _neighbourhood(column, keys, current, self.rules.refine_steps)
            variants = [_moved(cut, side, v) for v in values]
            variants = [v for v in variants if v.op != "band" or v.lo < v.hi]
            cut = self._best_moved([cut, *variants], side, keys, rows)
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
        slab_keys = keys[union[slab]]  # gathered once for every variant
        slab_in = np.array([option.mask_keys(slab_keys) for option in options])
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


def _neighbourhood(column: Column, keys: np.ndarray, current: float,
                   steps: int) -> np.ndarray:
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
    if values.size > steps:
        values = values[np.linspace(0, values.size - 1, steps + 1).round().astype(int)]
    return np.union1d(values, [current])


def _moved(cut: Cut, side: str, value: float) -> Cut:
    return Cut(cut.column, cut.op, value if side == "lo" else cut.lo,
               value if side == "hi" else cut.hi, cut.levels)



"""The conditions a finding keeps (:meth:`Pruning.prune`) and lacks (:meth:`Pruning.grow`)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from mcviz.search._columns import Cut, select
from mcviz.search._refine import Refining
from mcviz.search._rows import Node, _masks, remembered
from mcviz.search._screen import block_ids, screen_column


class Pruning(Refining):
    """The significance test of a condition's gain, in sample and out of fold."""

    @remembered
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
        of its covariate: the largest of as many, hence the threshold ``rules.drop_t``), and
        about :math:`z_0\sqrt{(1-f)/f}` for one that bounds the deviation. A condition stays
        when :math:`T \ge` ``rules.drop_t`` and :math:`z > z_0`. The last condition left is
        dropped only when the finding deviates less than all the search rows by
        ``rules.material`` (the held-out test then says whether it is more than chance). A band
        ``a <= x < b`` widens to ``x < b`` or ``x >= a`` when that lowers D/sigma on the search
        rows by less than ``rules.material``. The simplification with the largest margin is
        made, and again, until none is left.
        """
        cuts, rules = tuple(cuts), self.rules
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
                excess = loss[:1] - rules.material(z)
            else:
                f = np.clip(kept[:n_drops], 0.0, 1.0)
                t = (z - np.sqrt(f) * without[:n_drops]) / np.sqrt(np.maximum(1.0 - f, 1e-12))
                excess = np.minimum(t - rules.drop_t, loss[:n_drops] - rules.material(z, f))
                for i in np.flatnonzero(excess >= 0):  # and out of fold?
                    if self._sure(cuts[i], t[i]):
                        continue
                    excess[i] = min(excess[i], self._oof_t(cuts[i], drops[i], mean >= 0)
                                    - rules.drop_t_oof)
            excess = np.concatenate((excess, loss[n_drops:] - rules.material(z, kept[n_drops:])))
            excess = np.where(sizes >= self.min_rows, excess, np.inf)
            best = int(np.argmin(excess))
            if excess[best] >= 0:
                return cuts
            cuts = (drops + widen)[best]
        return cuts

    @remembered
    def grow(self, cuts: tuple[Cut, ...]) -> tuple[Cut, ...]:
        r"""Add the conditions a finding lacks, while one is significant (then refine).

        Within the finding's rows every cut of every covariate it does not use is screened and
        the best few per covariate scored exactly; the best (largest D/sigma :math:`z'`) is
        added when it passes :meth:`prune`'s test against the finding's :math:`z`:
        :math:`(z' - \sqrt f z) / \sqrt{1 - f} \ge` ``rules.drop_t`` with :math:`z' > z` +
        ``rules.beam_gain`` (:math:`f` the share of the rows it keeps), and, as in :meth:`prune`,
        when that :math:`T` is below ``rules.sure_t``, an out-of-fold :math:`T` (:meth:`_oof_t`)
        of at least ``rules.drop_t_oof``: the best of some 600 cuts passes ``rules.drop_t`` in
        sample by chance, and :meth:`prune` would drop it again after a costly refinement.
        The ``rules.grow_tries`` largest are tested in turn; the first that passes is added. A
        beam can reach a conjunction by a detour (a score band in place of the count that
        bounds the group); once the detour is pruned, this puts the missing condition in.
        """
        while len(cuts) < self.depth:  # past max_conditions by evidence only
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
                                  if ti >= self.rules.drop_t), key=lambda item: -item[0].z)
            under = bool(self.scores([cuts])[0, 3] >= 0)  # prune's test, out of fold too
            significant = [(child, ti) for child, ti in significant[:self.rules.grow_tries]
                           if self._sure(child.cuts[-1], ti) or self._oof_t(child.cuts[-1], cuts, under)
                           >= self.rules.drop_t_oof][:1]
            if not significant:
                break
            grown = self.refine(significant[0][0].cuts)
            if not (self.scores([grown])[0, 0] - z
                    >= self.rules.material(z, self.members(grown).size / rows.size)):
                break
            cuts = grown
        return cuts

    def _sure(self, cut: Cut, t: float) -> bool:
        r"""Return True when a condition's in-sample :math:`T` spares it the out-of-fold test.

        ``rules.sure_t`` bounds the largest :math:`T` of the few thousand cuts (thresholds,
        bands, single levels) a covariate offers. A set of several levels is chosen among the
        :math:`2^L` subsets of its :math:`L` levels (a prefix of an order the same rows set), so
        its in-sample :math:`T` has no such bound: with :math:`L = 72` unrelated levels the
        exclusion of the 8 most adverse ones reaches :math:`T \approx 5` by selection alone
        (``age not in {22, 27, ...}`` beside a planted region, issue #42). A set of several levels
        therefore always faces the out-of-fold test.
        """
        return bool(t >= self.rules.sure_t) and not (cut.op == "in" and len(cut.levels) > 1)

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
        least = max(self.rules.min_fold_rows, self.min_rows // 2)
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

    def _noise_tail(self, entry: Node) -> bool:
        r"""Return True when an entry's last condition fails :meth:`prune`'s test.

        The beam made the entry by adding its last condition to a node of its own (the other
        conditions). With :math:`z` the entry's D/sigma, :math:`z_0` the node's and :math:`f`
        the share of the node's rows the condition keeps, :math:`T = (z - \sqrt f z_0) /
        \sqrt{1 - f}`; the condition fails when :math:`T <` ``rules.drop_t``, or :math:`T <`
        ``rules.sure_t`` and its out-of-fold :math:`T` (:meth:`_oof_t`) is below
        ``rules.drop_t_oof``: the test :meth:`prune` applies, here to the beam's own cut
        points. Such an entry (the best of a few thousand cuts added to a node by chance) would
        be refined and pruned back to a part of that node, which is in the pool itself, at a
        cost that grows with the rows. Used above ``rules.finish_rows`` search rows only.
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
        if self._sure(entry.cuts[-1], t):
            return False
        return bool(t < self.rules.drop_t
                    or self._oof_t(entry.cuts[-1], node, bool(mean >= 0)) < self.rules.drop_t_oof)


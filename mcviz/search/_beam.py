"""The beam over conjunctions of cuts, and the findings drawn from its pool.

Level 1 expands the search rows by one cut per covariate; level ``d + 1`` expands each of the
``beam_width`` best nodes of level ``d`` (half under-, half over-predicted, by exact D/sigma)
by one cut on a covariate the node does not use yet (a level-1 node only when its condition
raises D/sigma over all the search rows by ``rules.material``).
Each expansion screens every cut of every covariate coarsely
(:func:`~mcviz.search._screen.screen_column`) and re-scores the best ``keep_per_column`` per
covariate exactly (:meth:`~mcviz.search._rows.SearchRows.expand`). Every exactly scored
candidate enters the pool (conditions and numbers only, no members), from which the findings
are drawn: every condition is re-chosen within the rows of the others until none changes (level
sets by an exact best prefix, numeric cut points to the best observed value between the
neighbouring candidate cuts), conditions without which D/sigma is not significantly lower are
dropped (:meth:`~mcviz.search._prune.Pruning.prune`), a significant missing condition is added
(:meth:`~mcviz.search._prune.Pruning.grow`), and a candidate whose members overlap an accepted
finding's with Jaccard > 1/2 folds into it (so does one whose D/sigma without the accepted
findings' rows falls below half its own). A finding that overlaps no better one is
re-chosen outside their rows, and at the end each outside the others' (the second arm of a
union, whose cut points the first arm's rows pull toward it; :meth:`Beam._apart`). Every
constant named here is a field of :class:`~mcviz.search.rules.SearchRules`; the classes
build on each other: :class:`~mcviz.search._rows.SearchRows` (rows, pool, caches) ->
:class:`~mcviz.search._refine.Refining` (cut points) -> :class:`~mcviz.search._prune.Pruning`
(which conditions stay) -> :class:`Beam`.
"""

from __future__ import annotations

import numpy as np

from mcviz.search._columns import Cut
from mcviz.search._prune import Pruning
from mcviz.search._rows import Node, _inside, _jaccard
from mcviz.search._screen import score_candidates

__all__ = ["Beam", "Node", "jaccard"]

jaccard = _jaccard
"""|a & b| / |a | b| of two sorted position arrays (the fold rule's index)."""


class Beam(Pruning):
    """One search: the beam over conjunctions of cuts, then the findings drawn from its pool."""

    refiner: Beam | None
    """Another search over a subset of the rows that refines the candidates' cut points in
    :meth:`findings` (None: this one)."""

    def run(self, max_conditions: int) -> None:
        r"""Fill the pool with the beam over up to ``max_conditions`` cuts.

        Every child of the search rows (the root) enters the pool, but it is expanded (enters
        level 1 of the beam) only when its D/sigma exceeds the root's :math:`z` by
        ``rules.material`` of :math:`z` and the share :math:`f` of the rows it keeps. A
        condition unrelated to the deviation gives about :math:`\sqrt f z` plus a noise of
        standard deviation :math:`\sqrt{1 - f}`; one that keeps most rows and gains less than
        that noise would make a node that repeats the root's expansion on nearly the same rows.
        The rule is laxer than the one :meth:`prune` applies to a finding's last condition (a
        gain of ``rules.material(z)``, at least this one), so no condition that could stand
        alone is kept out; a conjunction is still reached from any of its conditions that
        passes (``benchmarks/search_rules.md``).
        """
        self.max_conditions = max_conditions
        z, _, _, mean = score_candidates(self.data, [self.rows])[0]
        beam = [Node((), float(z), float(mean), self.rows.size, self.rows)]
        total = 1 + self.rules.beam_width * (max_conditions - 1)
        done = 0
        for level in range(max_conditions):
            children: list[Node] = []
            for node in beam:
                self._tell(0.8 * done / total, f"level {level + 1}: expanding "
                           f"{node.count:,} rows")
                children.extend(self.expand(node, gain=0.0 if level == 0 else self.rules.beam_gain))
                done += 1
            if level + 1 == max_conditions:
                break
            if level == 0:  # a first condition must bring a material gain to be expanded
                root = beam[0]
                children = [child for child in children if child.z - root.z >= self.rules.material(
                    root.z, child.count / max(root.count, 1))]
            beam = _next_beam(children, self.rules.beam_width,
                              [column.name for column in self.columns])
            beam = [Node(n.cuts, n.z, n.mean, n.count, self.members(n.cuts)) for n in beam]
            if not beam:
                break

    def explained(self, members: np.ndarray, z: float, others: list[np.ndarray]) -> bool:
        """Return True when the deviation of ``members`` lies in the rows of ``others``.

        That is, when its D/sigma outside their rows is below ``rules.explained`` of ``z`` (or
        too few rows are left).
        """
        if not others:
            return False
        taken = np.zeros(members.size, dtype=bool)
        for other in others:
            taken |= np.isin(members, other, assume_unique=True)
        rest = members[~taken]
        return bool(rest.size < self.min_rows
                    or score_candidates(self.data, [rest])[0, 0] < self.rules.explained * z)

    def findings(self, n_findings: int) -> list[tuple[Node, np.ndarray]]:
        """Distinct findings from the pool: refined, pruned, folded (Jaccard > 1/2).

        Pool entries are examined by their D/sigma on the search rows. Each is refined (every
        condition re-chosen given the others until stable, :meth:`refine`), pruned (a condition
        stays only when the D/sigma without it is significantly lower, :meth:`prune`), and, when
        a condition was dropped and others are left, grown again (:meth:`grow`: a significant
        missing condition is added). A finding ranks by its D/sigma on the search rows.
        Refinement and pruning can lower the rank, so a later entry that overlaps an accepted
        finding (Jaccard > 1/2) and ranks higher replaces it.

        An entry whose own (unrefined) rows deviate by less than ``rules.explained`` of its
        D/sigma outside the rows of better accepted findings is folded before it is refined:
        the test a refined entry faces last (:meth:`explained`), made first. Refining and
        pruning re-choose and drop conditions among those rows, so such an entry would end as
        a part of those findings; it counts against the entries examined.
        When the cut points are refined on a subset of the rows (:attr:`refiner`: above
        ``rules.finish_rows`` search rows), at most ``ceil((examine_per_finding * n + 5) k / m)``
        entries are examined (:math:`k` rows in the subset, :math:`m` searched): an entry's
        work grows with the rows, so the phase costs about what it costs on :math:`k` rows.
        Pruning stays on all the search rows (a subset's noise can drop a true condition).
        An entry whose finished conditions overlap no better finding is finished again outside
        their rows (:meth:`_apart_from`), and an entry that lies mostly in an accepted finding's
        rows and ranks below the pool entry that finding came from is folded before it is
        refined (a variant of it: refining it would give the same finding again, at the cost of
        the examination budget) -- when that finding's D/sigma reaches :attr:`small_z` (a lead
        too weak to be confirmed folds nothing: a noise band's rows held the one entry that
        leads to a planted group, issue #42, bench_find "score" draw 6); the findings are last re-chosen each outside the others
        (:meth:`_apart`).
        There an entry whose last condition fails
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
        origin: dict[frozenset, float] = {}  # accepted finding -> D/sigma of its pool entry
        refinements = grows = 0
        budget = self.rules.examine_per_finding * n_findings + 5
        if self.refiner is not None:  # entries cost work in proportion to the rows
            budget = int(np.ceil(budget * self.refiner.rows.size / self.rows.size))
        self.stops = {"overlap": 0, "small": 0, "weak": 0, "budget": False}
        for entry in pool:
            shape = (frozenset(cut.column for cut in entry.cuts), entry.mean >= 0)
            if shape in examined:  # refinement re-chooses the cuts: the same shape converges
                continue
            examined.add(shape)
            raw = self.members(entry.cuts[1:], self._first(entry.cuts[0]))
            if any(_inside(raw, other) > self.rules.jaccard_fold and node.z >= self.small_z
                   and entry.z <= max(node.z, origin.get(node.key(), node.z))
                   for node, other in accepted):
                self.stops["overlap"] += 1
                continue  # mostly a part of a better finding
            refinements += 1
            if refinements > budget:
                self.stops["budget"] = True
                break
            self._tell(0.8 + 0.2 * refinements / budget, f"checking candidate {refinements}")
            if self.explained(raw, entry.z, [o for node, o in accepted if node.z >= entry.z]):
                self.stops["overlap"] += 1  # the check below, on its unrefined rows: refining
                continue  # and pruning keep it inside the rows of the better findings
            if self.refiner is not None and self._noise_tail(entry):
                self.stops["weak"] += 1  # pruning would drop its last condition; its shape
                examined.discard(shape)  # may still come from another order of conditions
                continue
            cuts, grew = self._finished(entry.cuts, grow=grows < self.rules.grow_limit)
            grows += grew
            cuts = self._apart_from(entry.cuts, cuts,
                                    [o for node, o in accepted if node.z >= entry.z])
            if not cuts:
                self.stops["weak"] += 1
                continue
            key = Node(cuts, 0.0, 0.0, 0).key()
            if key in seen:
                self.stops["overlap"] += 1
                continue
            seen.add(key)
            members = self.members(cuts)
            if members.size < self.min_rows or (members.size < self.regular_rows and self.scores(
                    [cuts])[0, 0] < self.small_z):
                self.stops["small"] += 1
                continue
            accepted, added = self._admitted(accepted, cuts, members)
            if added:  # the pool entry it came from: later entries rank below it
                origin[frozenset(cut.key() for cut in cuts)] = entry.z
            if added and len(accepted) == n_findings:
                break
        if self.refiner is not None:
            accepted = self._polish_all(accepted)
        accepted = self._apart(accepted)
        accepted.sort(key=lambda item: -item[0].z)
        self.screened += sum(beam.screened for beam in self._outsides.values())
        self._outsides.clear()
        return accepted

    def _apart_from(self, entry: tuple[Cut, ...], cuts: tuple[Cut, ...],
                    better: list[np.ndarray]) -> tuple[Cut, ...]:
        """Return a pool entry's finished conditions, re-chosen outside ``better`` findings' rows.

        ``cuts`` are the entry's conditions refined and pruned on all the search rows. When
        their rows and a better finding's lie mostly one in the other (:func:`_same`) they
        are kept: a better version of it, which :meth:`_admitted` lets replace it, or a part.
        Otherwise the entry may be another group -- the second arm of a union -- whose cut
        points the better findings' rows pull toward them, or whose deviation, no larger than
        that of all the search rows that hold the first arm, pruning drops
        (:meth:`_outside`); the entry is refined and pruned again outside those rows, and that
        result kept when nothing was left on all the rows or it is the same group re-chosen
        (:func:`_same`).
        """
        if not better:
            return cuts
        members = self.members(cuts) if cuts else None
        if members is not None and any(_same(members, other, self.rules.jaccard_fold)
                                       for other in better):
            return cuts
        apart, _ = self._outside(better)._finished(entry, grow=False)
        if not apart or apart == cuts:
            return cuts
        if members is None or _same(self.members(apart), members, self.rules.jaccard_fold):
            return apart
        return cuts

    def _apart(self, accepted: list[tuple[Node, np.ndarray]]) -> list[tuple[Node, np.ndarray]]:
        """Each finding's conditions re-chosen outside the rows of the others (:meth:`_outside`).

        A finding accepted before another was chosen with the other's rows among its own
        search rows (the first arm of a union, its band stretched by the second arm's rows,
        issue #42); once every finding is known, each is refined and pruned again where no other
        finding lies -- another group, not one nested in it or holding it (:func:`_same`) --
        whose D/sigma could be confirmed (at least :attr:`small_z` when small groups
        are searched: a lead below it would only move the cut points by chance), and the
        result kept when it is the same finding re-chosen (:func:`_same`; else it moved
        elsewhere); a finding that then overlaps a better one folds.
        """
        strong = [k for k, (node, _) in enumerate(accepted) if node.z >= self.small_z]
        if len(accepted) < 2 or not strong:
            return accepted
        redone = []
        for k, (node, members) in enumerate(accepted):
            others = [accepted[j][1] for j in strong  # distinct groups, not nested ones
                      if j != k and not _same(members, accepted[j][1], self.rules.jaccard_fold)]
            cuts = self._outside(others)._finished(node.cuts, grow=False)[0] if others else ()
            if not cuts or cuts == node.cuts:
                redone.append((node, members))
                continue
            found = self.members(cuts)
            z, _, _, mean = self.scores([cuts])[0]
            small = found.size < self.regular_rows and z < self.small_z
            if found.size < self.min_rows or small or not _same(found, members,
                                                                self.rules.jaccard_fold):
                redone.append((node, members))  # not the same finding re-chosen: kept as found
                continue
            redone.append((Node(cuts, float(z), float(mean), found.size), found))
        redone.sort(key=lambda item: -item[0].z)
        kept: list[tuple[Node, np.ndarray]] = []
        for node, members in redone:
            if any(_jaccard(members, other) > self.rules.jaccard_fold for _, other in kept):
                self.stops["overlap"] += 1
            else:
                kept.append((node, members))
        return kept

    def _outside(self, better: list[np.ndarray]) -> Beam:
        """Return the search over the search rows outside ``better`` findings (self: none).

        A candidate's conditions are re-chosen and pruned where no better finding lies
        (:meth:`_apart_from`, :meth:`_apart`): inside those rows the better finding's own
        deviation would pull a cut point toward it -- the band of a union's second arm
        ``0.8 <= u < 0.9`` stretched to ``u < 0.977`` by the rows of the first arm
        ``kind in {k3, k7}`` beyond 0.9 (issue #42), where on the rows outside the first
        arm 0.9 is the best end. The candidate is still scored, ranked and folded on all
        the search rows. The most recent such search is kept (its caches are those of
        :class:`~mcviz.search._rows.SearchRows`); above ``rules.finish_rows`` its cut points
        are refined on the refiner's rows outside the same
        findings.
        """
        if not better:
            return self
        taken = np.unique(np.concatenate(better))
        key = (taken.size, hash(taken.tobytes()))
        if key not in self._outsides:
            self.screened += sum(beam.screened for beam in self._outsides.values())
            self._outsides.clear()
            small = None if self.min_rows == self.regular_rows else (self.min_rows, self.small_z)
            outside = Beam(self.data, self.columns, np.setdiff1d(self.rows, taken,
                                                                 assume_unique=True),
                           self.regular_rows, None, rules=self.rules, small=small)
            outside.max_conditions = self.max_conditions
            if self.refiner is not None:
                outside.refiner = Beam(self.data, self.columns, np.setdiff1d(
                    self.refiner.rows, taken, assume_unique=True), self.refiner.regular_rows,
                    None, rules=self.rules, small=None if self.refiner.min_rows
                    == self.refiner.regular_rows else (self.refiner.min_rows,
                                                        self.refiner.small_z))
                outside.refiner.max_conditions = self.max_conditions
            self._outsides[key] = outside
        return self._outsides[key]

    def _finished(self, cuts: tuple[Cut, ...], *, grow: bool) -> tuple[tuple[Cut, ...], bool]:
        """Return a pool entry's conditions refined, pruned (and grown), and whether it grew.

        The cut points are refined on :attr:`refiner` (all the search rows when None), the
        conditions pruned on all the search rows; when a condition was dropped and others are
        left, those are refined again and, when ``grow``, a missing condition is sought
        (:meth:`grow`) and the result pruned. A missing condition is also sought when the
        finding has ``max_conditions`` conditions, or ``rules.grow_from`` under a deeper beam.
        """
        refiner = self.refiner or self  # cut points on a subset of the rows, at 10^6
        refined = refiner.refine(cuts)
        cuts = self.prune(refined)
        dropped = bool(cuts) and len(cuts) < len(refined)
        if dropped:  # re-choose those left (none left: weak)
            cuts = refiner.refine(cuts)
        # grown when a condition was dropped, or when the beam's depth was reached (depth by
        # evidence: past max_conditions only through grow's out-of-fold tests) -- or the
        # default depth, rules.grow_from, under a deeper beam: a deeper beam grows every finding
        # the default one would (issue #42: at depth 4 a three-condition finding missing its
        # fourth condition was left as it was)
        reached = len(cuts) >= min(self.max_conditions, self.rules.grow_from)
        grew = bool(grow and cuts and (dropped or reached))
        if grew:  # the strongest candidates (examined first) only
            grown = self.grow(cuts)
            if grown != cuts:
                cuts = self.prune(grown)
        return cuts, grew

    def _admitted(self, accepted: list[tuple[Node, np.ndarray]], cuts: tuple[Cut, ...],
                  members: np.ndarray) -> tuple[list[tuple[Node, np.ndarray]], bool]:
        """Return the accepted findings after this one is considered, and whether it was added.

        It folds into an accepted finding it overlaps (Jaccard above
        ``rules.jaccard_fold``) that ranks at least as high, or
        whose rows explain its deviation (:meth:`explained`); it replaces the overlapping ones
        that rank lower (even when it then folds), and the weaker findings whose deviation lies
        in its rows fold into it.
        """
        z, _, _, mean = self.scores([cuts])[0]
        z = float(z)
        same = [k for k, (node, other) in enumerate(accepted)
                if _jaccard(members, other) > self.rules.jaccard_fold]
        if any(accepted[k][0].z >= z for k in same):
            self.stops["overlap"] += 1
            return accepted, False  # folds into a better finding
        if same:  # a better version of accepted findings (their pool entry ranked higher)
            self.stops["overlap"] += len(same)
            accepted = [item for k, item in enumerate(accepted) if k not in same]
        if self.explained(members, z, [o for n, o in accepted if n.z >= z]):
            self.stops["overlap"] += 1
            return accepted, False  # most of its deviation lies in better findings' rows
        keep = [(n, o) for n, o in accepted
                if n.z >= z or not self.explained(o, n.z, [members])]
        self.stops["overlap"] += len(accepted) - len(keep)
        # weaker findings whose deviation lies in its rows fold into it
        return [*keep, (Node(cuts, z, float(mean), members.size), members)], True

    def _polish_all(self, accepted: list[tuple[Node, np.ndarray]]) -> list[tuple[Node, np.ndarray]]:
        """Each finding :meth:`_polished`; a finding that then overlaps a better one folds."""
        polished = sorted((self._polished(node, members) for node, members in accepted),
                          key=lambda item: -item[0].z)
        kept: list[tuple[Node, np.ndarray]] = []
        for node, members in polished:
            if any(_jaccard(members, other) > self.rules.jaccard_fold for _, other in kept):
                self.stops["overlap"] += 1  # two findings became one
            else:
                kept.append((node, members))
        return kept

    def _polished(self, node: Node, members: np.ndarray) -> tuple[Node, np.ndarray]:
        """Return the finding refined, grown and pruned on all the search rows, if better.

        The growing step (:meth:`grow`, for a finding of fewer than the most conditions) puts
        back a condition the subset's refinement lost (a threshold refined into a band there,
        then pruned: ``benchmarks/search_rules.md``).

        When pruning the re-chosen conditions leaves none (they deviate no more than all the
        search rows), the finding's own conditions, which passed :meth:`prune` on the same rows
        when it was accepted, are grown instead; a result with no condition keeps the finding
        as found: all the rows are the full population, never a finding (their larger D/sigma
        would otherwise replace it).
        """
        cuts = self.prune(self.refine(node.cuts)) or node.cuts
        if len(cuts) < self.depth:
            grown = self.grow(cuts)
            if grown != cuts:
                cuts = self.prune(grown)
        if not cuts or cuts == node.cuts:
            return node, members
        found = self.members(cuts)
        z, _, _, mean = self.scores([cuts])[0]
        if found.size < self.min_rows or not z > node.z or (
                found.size < self.regular_rows and z < self.small_z):
            return node, members
        return Node(cuts, float(z), float(mean), found.size), found



def _same(new: np.ndarray, old: np.ndarray, share: float) -> bool:
    """Return True when one of two row sets lies mostly (above ``share``) in the other.

    A finding re-chosen in place (a band's end moved back, a stray level dropped), not moved
    to other rows.
    """
    return _inside(new, old) > share or _inside(old, new) > share


def _next_beam(children: list[Node], width: int, names: list[str]) -> list[Node]:
    """Choose the best nodes, half under-, half over-predicted, one per covariates and side.

    Covariates are told apart by ``names``: an integer column searched both as ranges and as
    level sets is one covariate, so ``cnt < 1`` and ``cnt == 0`` (the same rows) do not take
    two places of the beam (issue #42: 3 of level 1's 16 places went to such twins).
    """
    unique: dict[tuple, Node] = {}
    for child in children:  # one node per set of covariates and direction: a diverse beam
        key = (frozenset(names[cut.column] for cut in child.cuts), child.mean >= 0)
        if key not in unique or unique[key].z < child.z:
            unique[key] = child
    ranked = sorted(unique.values(), key=lambda node: -node.z)
    under = [node for node in ranked if node.mean >= 0][: width // 2]
    over = [node for node in ranked if node.mean < 0][: width // 2]
    chosen = {id(node) for node in (*under, *over)}
    rest = [node for node in ranked if id(node) not in chosen]
    beam = under + over + rest[: width - len(under) - len(over)]
    return sorted(beam, key=lambda node: -node.z)



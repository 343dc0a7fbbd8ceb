r"""A candidate's group refined to the one its term fits best, on the rows that proposed it.

The guided search ranks groups by the range of the cumulative differences (any shape); a term
of the findings fix is an offset and a slope on the logit within its group, whose evidence is
the score statistic of adding :math:`b + a\eta` (:func:`~mcviz.recalibration._findings.
score_tests`). The two need not agree on the group: measured on the planted data
(:func:`~mcviz.recalibration.simulate.planted_shapes_data`, 2 x 10^5 rows, seed 2) the search
proposed "age in [24.7, 35)" and "channel == phone" for the planted slope segment "age < 35 and
channel == phone" (neither held up: Holm-adjusted p 1 and 0.94), and at 10^6 rows (seed 2) it
proposed a superset ("channel != web and age < 46") whose term (one slope over both channels)
left the planted segment at held-out D/sigma 3.2.

So each candidate is refined before it is tested, by coordinate ascent on the statistic

.. math::
    Q(G) = U_G^\top V_G^{-1} U_G, \qquad U_G = \sum_{i \in G} w_i x_i (y_i - p_i),\quad
    V_G = \sum_{i \in G} w_i^2 p_i (1 - p_i)\, x_i x_i^\top,\quad x_i = (1, \eta_i),

on the rows the search used (never on its held-out rows, where the refined group is then
tested: the test stays valid however the group was chosen). One covariate at a time, given the
conditions on the others, its condition is replaced by the best one of its kind: for an ordinal
covariate the best interval between :data:`CUTS` quantiles of its values and the bounds the
pass's searches put on it (measured: on the 5% quantiles alone the group "age >= 61.4 and channel
== web" replaced the search's "age >= 60.19 ..." for the planted "age >= 60 ...", whose strip
60-61.4 then kept held-out D/sigma 4.1, 2 x 10^5 rows, seed 0): ``x >= a``, ``x < b``, both,
or none (``x >= a`` keeps the missing values, as the filter language's rule says); for a
nominal one the best set of levels reached by adding or removing one level at a time (or none:
all rows). A state is worth its :math:`Q` less its cost (:data:`BOUND_COST`, 2 ln 21, per bound
of an ordinal condition; 2 ln L for a set of L levels: about what the best of that many chance
choices gains), and a move is taken when it gains more than :data:`MOVE_MARGIN` (6: a covariate
that had no condition) or :data:`ADJUST_MARGIN` (2: one that had) -- without the costs the
ascent added chance conditions ("region in {7 of 8 levels}", gain 12 in Q) to every group.
Rounds repeat while the worth grows (at most :data:`ROUNDS`); a group keeps :data:`MIN_ROWS`
search rows at least, at most ``max_conditions`` covariates with a condition, and one condition
at least. Conditions the refinement cannot write
back exactly (dates, ``==`` on an ordinal, missing-value tests) are kept as they are. The refined
group is described in the filter language and its rows selected again from the description; a
group whose rows differ from the ones refined (a value that does not read back) is left as the
search proposed it.

The same ascent finds the group a term fits best from scratch, started at the best group of one
or two simple conditions (:func:`_starts`: every interval of an ordinal covariate's cut points,
every level of a nominal one alone or left out, and every pair of those, scored exactly from
two-way tables of the sums; the ascent from all rows could not reach a group that no single
condition shows); it is run :data:`FROM_SCRATCH` times, each time given the terms (offset and
slope, fitted on the search rows) of the groups found before, so a strong group does not hide a
weaker one, and each brings :data:`ALTERNATIVES` runners-up (the next best starts, ascended),
tested after the groups found from scratch. The order to
test in (:func:`refine_candidates`): the groups from scratch as found, their runners-up, then
the search's candidates, refined, by :math:`Q`; a group sharing half its search rows with one
before it is left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["ALTERNATIVES", "CUTS", "FROM_SCRATCH", "MIN_ROWS", "PAIR_COVARIATES", "ROUNDS",
           "refine", "refine_candidates"]

CUTS = 20
"""Quantile cut points per ordinal covariate (its 5% quantiles, to 4 significant digits)."""
ROUNDS = 4
"""Rounds of coordinate ascent at most (each visits every covariate once)."""
MIN_ROWS = 50
"""A refined group keeps at least this many search rows."""
BOUND_COST = 2.0 * np.log(CUTS + 1)
"""What a bound of an ordinal condition costs in Q (2 ln of the cut points it is chosen from)."""
MOVE_MARGIN = 6.0
"""A condition on a covariate that had none must gain this in Q beyond its cost."""
ADJUST_MARGIN = 2.0
"""A change of a covariate's condition must gain this in Q beyond the change of its cost."""
FROM_SCRATCH = 3
"""Groups sought from scratch per pass at most (each given the terms of the ones before)."""
SAME_GROUP = 0.5
"""Two candidates sharing this share of their search rows (Jaccard) are one: the one with the
larger Q is kept."""
ALTERNATIVES = 2
"""Each group found from scratch brings this many runners-up (the next best starts, ascended
too), tested after the groups found from scratch: the best on the search rows may be a chance
group (measured: "age < 36.24 and tenure < 12", Q 35.3, over the planted "age < 35 and channel
== phone" on 2 x 10^5 rows, seed 1), and the test rows decide."""
PAIR_COVARIATES = 8
"""A search from scratch starts from the best pair of simple conditions over at most this many
covariates (those whose best single condition has the largest Q)."""
MAX_LEVELS = 50
"""Nominal covariates with more levels keep the candidate's condition as it is."""


def _q(stats: np.ndarray) -> np.ndarray:
    """Score statistic of each group from its five sums (last axis: R0, R1, V00, V01, V11)."""
    r0, r1, v00, v01, v11 = np.moveaxis(stats, -1, 0)
    det = v00 * v11 - v01**2
    two = det > 1e-9 * np.maximum(v00 * v11, 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        q2 = (r0**2 * v11 - 2 * r0 * r1 * v01 + r1**2 * v00) / det
        q1 = r0**2 / v00
    return np.where(v00 > 0, np.where(two, q2, q1), 0.0)


class _Slot:
    """One covariate's condition as the refinement moves it: codes of the search rows, state."""

    def __init__(self, name: str, kind: str, codes: np.ndarray, labels: list, has_missing: bool):
        self.name, self.kind, self.codes = name, kind, codes
        self.labels, self.has_missing = labels, has_missing  # cut values / level values
        self.size = len(labels) + 1 if kind == "ordinal" else len(labels)
        self.state: tuple | None = None  # ordinal (lo, hi); nominal frozenset of levels

    def member(self) -> np.ndarray | None:
        """Which search rows the condition keeps (None: no condition)."""
        if self.state is None:
            return None
        return self.bins_kept(self.state)[self.codes]

    def bins_kept(self, state) -> np.ndarray:
        """Which codes ``state`` keeps (the missing code last)."""
        keep = np.zeros(self.size + 1, dtype=bool)
        if self.kind == "ordinal":
            lo, hi = state
            keep[lo:hi + 1] = True
            keep[-1] = hi == self.size - 1  # x >= a keeps the missing values; x < b does not
        else:
            keep[list(state)] = True
        return keep

    def conditions(self) -> list:
        """Return the state as conditions of the filter language."""
        from mcviz.subpopulations import Condition

        if self.state is None:
            return []
        if self.kind == "nominal":
            levels = tuple(self.labels[k] for k in sorted(self.state))
            return [Condition(self.name, "==", levels[0]) if len(levels) == 1
                    else Condition(self.name, "in", levels)]
        lo, hi = self.state
        out = [Condition(self.name, ">=", self.labels[lo - 1])] if lo > 0 else []
        if hi < self.size - 1:
            out.append(Condition(self.name, "<", self.labels[hi]))
        return out


def _slot(pred, name: str, rows: np.ndarray, conditions: Sequence,
          extra: Sequence[float] = ()) -> _Slot | None:
    """Return covariate ``name``'s slot started at ``conditions`` (None: keep them as they are)."""
    import pandas as pd

    from mcviz.core.conditions import is_datetime, ordinal_keys

    series = pred.covariates[name]
    if pred.covariate_kinds[name] == "ordinal":
        if is_datetime(series) or any(c.op not in ("<", ">=") for c in conditions):
            return None
        keys, missing = ordinal_keys(series)
        keys, missing = keys[rows], missing[rows]
        present = keys[~missing]
        if not present.size:
            return None
        bounds = [float(c.value) for c in conditions] + [float(v) for v in extra]
        quantiles = np.quantile(present, np.linspace(0, 1, CUTS + 1)[1:-1], method="inverted_cdf")
        cuts = np.unique(np.concatenate(([float(f"{v:.4g}") for v in quantiles], bounds)))
        cuts = cuts[cuts > present.min()]  # a cut at the minimum keeps every row
        codes = np.where(missing, cuts.size + 1, np.searchsorted(cuts, keys, side="right"))
        slot = _Slot(name, "ordinal", codes, [v.item() for v in cuts], bool(missing.any()))
        if conditions:
            # x >= cuts[i] keeps codes i + 1 and up; x < cuts[i] codes up to i
            lo = max((int(np.searchsorted(cuts, c.value)) + int(c.value in cuts)
                      for c in conditions if c.op == ">="), default=0)
            hi = min((int(np.searchsorted(cuts, c.value)) for c in conditions if c.op == "<"),
                     default=cuts.size)
            slot.state = (lo, hi) if lo <= hi else None
        return slot
    values = pd.Series(series).iloc[rows]
    levels = sorted(pd.unique(values.dropna()), key=str)
    if len(levels) > MAX_LEVELS or not all(type(v) is str for v in levels):
        return None
    lookup = {v: k for k, v in enumerate(levels)}
    codes = values.map(lookup).to_numpy(dtype=float, na_value=len(levels)).astype(np.int64)
    slot = _Slot(name, "nominal", codes, levels, bool(values.isna().any()))
    if conditions:
        kept = np.ones(len(levels), dtype=bool)
        for c in conditions:
            items = set(c.value) if isinstance(c.value, tuple | list) else {c.value}
            inside = np.array([v in items for v in levels])
            kept &= ~inside if c.op in ("!=", "not in") else inside
        if kept.all() or not kept.any():
            return None  # the missing values decide: keep it as it is
        slot.state = frozenset(np.flatnonzero(kept).tolist())
    return slot


def _cost(slot: _Slot, state) -> float:
    r"""Return what a state costs in Q.

    :data:`BOUND_COST` per bound of an ordinal condition, :math:`2 \ln L` for a set of a
    nominal covariate's :math:`L` levels, 0 for no condition.
    """
    if state is None:
        return 0.0
    if slot.kind == "ordinal":
        return BOUND_COST * ((state[0] > 0) + (state[1] < slot.size - 1))
    return 2.0 * np.log(max(len(slot.labels), 2))


def _best_state(slot: _Slot, sums: np.ndarray, current: float):
    """Return the slot's best state given the others (``sums``: six per code) and its Q.

    Best: the largest Q less the state's :func:`_cost`; it replaces the slot's state when it
    gains more than :data:`MOVE_MARGIN` (a covariate with no condition) or
    :data:`ADJUST_MARGIN` (one with a condition) over the current one.
    """
    margin = MOVE_MARGIN if slot.state is None else ADJUST_MARGIN
    now = current - _cost(slot, slot.state)
    if slot.kind == "ordinal":
        n = slot.size  # codes 0..n-1 present values, n: missing
        prefix = np.vstack((np.zeros((1, sums.shape[1])), np.cumsum(sums[:n], axis=0)))
        lo, hi = np.triu_indices(n)
        stats = prefix[hi + 1] - prefix[lo]
        stats[hi == n - 1] += sums[n]
        q = np.where(stats[:, 5] >= MIN_ROWS, _q(stats[:, :5]), -np.inf)
        value = q - BOUND_COST * ((lo > 0).astype(float) + (hi < n - 1))
        k = int(np.argmax(value))
        if value[k] > now + margin:
            state = (int(lo[k]), int(hi[k]))
            return (None if state == (0, n - 1) else state), float(q[k])
        return slot.state, current
    every = len(slot.labels)
    state = set(slot.state) if slot.state is not None else set(range(every))
    best, best_q = now, current
    while True:
        trials = [t for t in (state ^ {k} for k in range(every)) if t]
        stats = np.array([sums[sorted(t)].sum(axis=0) + (sums[-1] if len(t) == every else 0)
                          for t in trials])
        q = np.where(stats[:, 5] >= MIN_ROWS, _q(stats[:, :5]), -np.inf)
        value = q - np.array([_cost(slot, None if len(t) == every else t) for t in trials])
        k = int(np.argmax(value))
        if value[k] <= best + margin:
            break
        state, best, best_q = trials[k], float(value[k]), float(q[k])
        margin = ADJUST_MARGIN
    if best_q == current:
        return slot.state, current
    return (None if len(state) == every else frozenset(state)), best_q


def refine(pred, eta: np.ndarray, w: np.ndarray, description: str | None, rows: np.ndarray,
           names: Sequence[str], max_conditions: int | None,
           cuts: Mapping[str, Sequence[float]] | None = None,
           rank: int = 0) -> tuple[str | None, float]:
    """Return the candidate's group refined on ``rows`` (search rows) and its Q there.

    ``description`` None: the group a term fits best, found from scratch, from the ``rank``-th
    best group of one or two simple conditions (:func:`_starts`; None when there are not that
    many that gain enough).
    """
    from scipy.special import expit

    from mcviz.subpopulations import describe_conditions, parse_filter, select_rows

    conditions = parse_filter(description, pred) if description else ()
    e = eta[rows]
    p = expit(e)
    r, v = w[rows] * (pred.label[rows] - p), w[rows] ** 2 * p * (1 - p)
    row_stats = np.column_stack((r, r * e, v, v * e, v * e * e, np.ones(rows.size)))
    slots, fixed = [], []
    for name in dict.fromkeys([*(c.column for c in conditions), *names]):
        own = [c for c in conditions if c.column == name]
        slot = (_slot(pred, name, rows, own, (cuts or {}).get(name, ()))
                if name in pred.covariate_kinds else None)
        if slot is None:
            fixed.extend(own)
        else:
            slots.append(slot)
    base = np.ones(rows.size, dtype=bool)
    if fixed:
        base[:] = False
        base[np.searchsorted(rows, np.intersect1d(rows, select_rows(pred, tuple(fixed))))] = True
    start = current = float(_q(row_stats[_kept(slots, base), :5].sum(axis=0)))
    if description is None:
        starts = _starts(slots, row_stats, max_conditions, current) if slots else []
        if len(starts) <= rank:
            return None, current
        for j, state in starts[rank][2]:
            slots[j].state = state
        current = starts[rank][1]
    for _ in range(ROUNDS):
        moved = False
        for j, slot in enumerate(slots):
            others = _kept([s for k, s in enumerate(slots) if k != j], base)
            sums = np.stack([np.bincount(slot.codes[others], row_stats[others, m],
                                         slot.size + 1) for m in range(6)], axis=1)
            state, q = _best_state(slot, sums, current)
            if state != slot.state and _allowed(slots, fixed, j, state, max_conditions):
                slot.state, current, moved = state, q, True
        if not moved:
            break
    refined = [c for s in slots for c in s.conditions()] + list(fixed)
    if current <= start or not refined:
        return description, start
    text = describe_conditions(refined)
    mask = np.zeros(pred.n, dtype=bool)
    mask[select_rows(pred, parse_filter(text, pred))] = True
    if np.array_equal(mask[rows], _kept(slots, base)):
        return text, current
    return description, start  # a value that does not read back: as the search proposed it


def _simple_states(slot: _Slot) -> tuple[list, np.ndarray]:
    """Return a slot's simple states and which codes each keeps (a row per state).

    Ordinal: every interval of its cut points (no condition excluded); nominal: each level
    alone and each level left out (one level, or a set of one fewer).
    """
    n = slot.size
    if slot.kind == "ordinal":
        states = [(lo, hi) for lo, hi in zip(*np.triu_indices(n), strict=True)
                  if (lo, hi) != (0, n - 1)]
    else:
        every = frozenset(range(n))
        states = list(dict.fromkeys(
            [frozenset({k}) for k in range(n)] + [every - {k} for k in range(n)] if n > 1
            else []))
    return states, np.array([slot.bins_kept(s) for s in states], dtype=float).reshape(
        len(states), n + 1)


def _starts(slots, row_stats: np.ndarray, max_conditions: int | None, q_all: float) -> list:
    r"""Return where a search from scratch may start: groups of one or two simple conditions.

    Coordinate ascent from all rows adds one condition at a time, so a group that no single
    condition shows (a segment "age < 35 and channel == phone": measured on the planted data,
    2 x 10^5 rows, seed 1, Q 33.4 for the segment, 15.9 for "channel == phone" and 34.2 for
    "age < 35", which also holds other channels' rows) is never reached, and a nominal level
    among many ("region == r3") is reached only through sets of one level fewer at a time (the
    ascent took "channel in {phone, store}", Q 46, over "region == r3 and channel == store",
    Q 253). So every simple state of one covariate (:func:`_simple_states`) and every pair of
    them over :data:`PAIR_COVARIATES` covariates (those whose best simple state has the largest
    Q) is worth its Q less its costs (:func:`_cost`) and :data:`MOVE_MARGIN` per condition,
    computed from one two-way table of the six sums per pair. Returned: the best state of each
    covariate and of each pair that beats all rows, as ``(worth, Q, ((slot, state), ...))``,
    best first.
    """
    pairs_allowed = max_conditions is None or max_conditions >= 2
    simple = [_simple_states(slot) for slot in slots]
    found, single_q = [], []
    for j, (slot, (states, keep)) in enumerate(zip(slots, simple, strict=True)):
        if not states:
            single_q.append(-np.inf)
            continue
        sums = np.stack([np.bincount(slot.codes, row_stats[:, m], slot.size + 1)
                         for m in range(6)], axis=1)
        stats = keep @ sums
        q = np.where(stats[:, 5] >= MIN_ROWS, _q(stats[:, :5]), -np.inf)
        worth = q - np.array([_cost(slot, state) for state in states]) - MOVE_MARGIN
        k = int(np.argmax(worth))
        single_q.append(float(q.max()))
        found.append((float(worth[k]), float(q[k]), ((j, states[k]),)))
    top = sorted(range(len(slots)), key=lambda j: -single_q[j])[:PAIR_COVARIATES]
    for a, b in ((a, b) for i, a in enumerate(top) for b in top[i + 1:] if pairs_allowed):
        (states_a, keep_a), (states_b, keep_b) = simple[a], simple[b]
        if not states_a or not states_b:
            continue
        width = slots[b].size + 1
        grid = np.stack([np.bincount(slots[a].codes * width + slots[b].codes, row_stats[:, m],
                                     (slots[a].size + 1) * width) for m in range(6)], axis=1)
        stats = np.einsum("sa,tb,abk->stk", keep_a, keep_b,
                          grid.reshape(slots[a].size + 1, width, 6), optimize=True)
        q = np.where(stats[..., 5] >= MIN_ROWS, _q(stats[..., :5]), -np.inf)
        worth = (q - np.array([_cost(slots[a], s) for s in states_a])[:, None]
                 - np.array([_cost(slots[b], s) for s in states_b])[None, :] - 2 * MOVE_MARGIN)
        i, k = np.unravel_index(int(np.argmax(worth)), worth.shape)
        found.append((float(worth[i, k]), float(q[i, k]),
                      ((a, states_a[i]), (b, states_b[k]))))
    return sorted((f for f in found if f[0] > q_all), key=lambda f: -f[0])


def _kept(slots, base: np.ndarray) -> np.ndarray:
    """Return which search rows the slots' conditions and the fixed ones keep."""
    keep = base.copy()
    for slot in slots:
        kept = slot.member()
        if kept is not None:
            keep &= kept
    return keep


def _allowed(slots, fixed, j: int, state, max_conditions: int | None) -> bool:
    """Whether slot ``j`` may take ``state``: one condition at least, ``max_conditions`` at most."""
    used = {c.column for c in fixed} | {s.name for k, s in enumerate(slots)
                                        if (state if k == j else s.state) is not None}
    return bool(used) and (max_conditions is None or len(used) <= max_conditions)


def refine_candidates(pred, eta: np.ndarray, w: np.ndarray, descriptions: Sequence[str],
                      held: np.ndarray, names: Sequence[str], max_conditions: int | None,
                      notes: list[str]) -> list[str]:
    """Return the groups to test, in order: the best from scratch, then the refined candidates.

    On the rows the searches used (not ``held``): up to :data:`FROM_SCRATCH` groups found from
    scratch, each the best given the ones before it (its term, offset and slope, fitted on its
    search rows before the next is sought: a strong group does not hide a weaker one), in the
    order found; then the search's candidates, each refined, by their Q there, largest first.
    A group sharing :data:`SAME_GROUP` of its rows with one before it is left out. Notes what
    changed.
    """
    from mcviz.recalibration._logistic import fit_logistic

    rows = np.flatnonzero(~held)
    cuts = _search_bounds(pred, descriptions)
    ordered: list[str] = []
    others: list[str] = []
    residual = eta.copy()
    for _ in range(FROM_SCRATCH):
        found, _q_found = refine(pred, residual, w, None, rows, names, max_conditions, cuts)
        if found is None or found in ordered:
            break
        notes.append(f"{found!r} is the group a term fits best on the search rows.")
        ordered.append(found)
        for rank in range(1, 1 + ALTERNATIVES):
            other, _q_other = refine(pred, residual, w, None, rows, names, max_conditions, cuts,
                                     rank)
            if other is not None and other not in ordered + others:
                others.append(other)
        inside = rows[_in_group(pred, found)[rows]]
        e = residual[inside]
        b, a = fit_logistic(np.column_stack((np.ones(e.size), e)), pred.label[inside], w[inside])
        residual[inside] = b + a * e
    ordered += [d for d in others if d not in ordered]
    scored: dict[str, float] = {}
    for description in descriptions:
        refined, q = refine(pred, eta, w, description, rows, names, max_conditions, cuts)
        if refined is not None and refined != description:
            notes.append(f"{description!r} was refined on the search rows to {refined!r} "
                         "(the group a term fits best there).")
        if refined is not None:
            scored[refined] = max(q, scored.get(refined, -np.inf))
    ordered += sorted((d for d in scored if d not in ordered), key=lambda d: -scored[d])
    return _distinct(pred, ordered, rows)


def _search_bounds(pred, descriptions: Sequence[str]) -> dict[str, list[float]]:
    """Return the bounds (``<``, ``>=``) the searches put on each ordinal covariate."""
    from mcviz.subpopulations import parse_filter

    bounds: dict[str, list[float]] = {}
    for description in descriptions:
        for c in parse_filter(description, pred):
            if (c.op in ("<", ">=") and isinstance(c.value, int | float | np.number)
                    and not isinstance(c.value, bool | np.bool_)):
                bounds.setdefault(c.column, []).append(float(c.value))
    return bounds


def _in_group(pred, description: str) -> np.ndarray:
    """Return which rows of ``pred`` the description selects (a mask)."""
    from mcviz.subpopulations import parse_filter, select_rows

    mask = np.zeros(pred.n, dtype=bool)
    mask[select_rows(pred, parse_filter(description, pred))] = True
    return mask


def _distinct(pred, descriptions: Sequence[str], rows: np.ndarray) -> list[str]:
    """Drop a group sharing :data:`SAME_GROUP` of its search rows (Jaccard) with one before it."""
    kept, masks = [], []
    for description in descriptions:
        mask = _in_group(pred, description)[rows]
        if all((mask & m).sum() < SAME_GROUP * (mask | m).sum() for m in masks):
            kept.append(description)
            masks.append(mask)
    return kept

r"""The block evaluator: per-subpopulation ordered chunk summaries of the cumulative path.

One code path serves the in-memory library (:func:`~mcviz.multicalibration`), the screening
engines (numpy in memory; DuckDB and Spark on score-sorted batches), the null draws (responses
redrawn N times: a residual matrix) and the guided search (many candidate subpopulations).

For a subpopulation :math:`k` and a contiguous stretch of the score-sorted rows (a *chunk*, cut
at the end of a tie run), the :class:`ChunkSummaries` hold

* ``count``, ``weight`` :math:`\sum W`, ``variance`` :math:`\sum S(1-S)W^2` (eq. (5));
* ``floor`` :math:`\sum \hat v W^2`, the pooled floor of eq. (6) for real-valued responses
  (:func:`~mcviz.core.sigma.pooled_response_variance`; 0 when the evaluator has none);
* ``offset`` :math:`\sum W(R-S)`: the rise of the (unnormalised) path over the chunk;
* ``high``, ``low``: the highest and lowest point of the unnormalised path at tie-run ends,
  relative to the chunk start, with the start itself included (so ``high >= 0 >= low``);
* for Appendix C eq. (6): ``adjacent`` (the sum of its numerator terms over consecutive tie
  runs inside the chunk) and the first and last run's weight and weighted mean residual, so the
  term across a chunk edge can be added when chunks are joined.

Chunks combine associatively in score order (:func:`combine`):

.. math::
    (o, h, l) \oplus (o', h', l') = (o + o', \max(h, o + h'), \min(l, o + l')),

and :func:`finish` turns the summaries into :math:`D_k = (h - l)/\sum W` (eqs. (1)-(2), the
origin and every tie-run end being points of the path) and :math:`\sigma_k` (eq. (5), or
Appendix C eq. (6) floored by the pooled response variance: see :mod:`mcviz.core.sigma`).
Responses can be a matrix (one column per set of responses, e.g. null
draws); every residual-dependent summary then has a trailing axis of length N.

Inside a chunk the subpopulations are processed in groups whose members are gathered into one
array: a segmented cumulative sum over the group replaces a Python loop per subpopulation.

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eqs. (1)-(5), Appendix C eq. (6).
.. [2] M. Tygert, "Cumulative deviation of a subpopulation from the full population", J. Big
   Data 10, 2023; section "High-level strategy" (ordered chunk summaries).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields

import numpy as np

from mcviz.core import kernels
from mcviz.core.arrays import readonly as _readonly
from mcviz.core.path import run_ends
from mcviz.core.ratio import safe_ratio
from mcviz.core.sigma import (
    SigmaMethod,
    adjacent_terms,
    pooled_response_variance,
    sigma_adjacent_from_terms,
    sigma_floored,
    sigma_from_variance,
)

__all__ = [
    "ChunkSummaries",
    "Evaluator",
    "Statistics",
    "combine",
    "combine_all",
    "finish",
]

GROUP_ELEMENTS = 1 << 18
"""Members x response columns gathered at once (a few MB per work array)."""

THREAD_MEMBERS = 1 << 22
"""Members in all from which the groups of :meth:`Evaluator._summarise` are summarised by
several threads (:func:`_workers`); each group writes its own rows of the summaries, and the
pieces a subpopulation is cut into do not depend on the threads, so the numbers are the same
whatever the threads and their order. Below it, a thread's start costs more than it saves."""

THREAD_WORKERS = 2
"""Threads at most; the groups are then :data:`GROUP_ELEMENTS` over the threads, so the work
arrays in flight hold as many values as one thread's (the memory estimates stand)."""

RUN_SUMS = 8
"""Sum tie runs first when members are at least this many times the runs (see
:meth:`Evaluator._summarise_group`; below it a cumulative sum over members is faster)."""


@dataclass(frozen=True, slots=True, eq=False)
class ChunkSummaries:
    r"""Ordered chunk summaries of ``l`` subpopulations over one stretch of score-sorted rows.

    Arrays of shape (l,) do not depend on the responses; those of shape (l,) or (l, N) do
    (N sets of responses). All sums are unnormalised (not divided by :math:`\sum W`).

    Attributes
    ----------
    count : ndarray of int64, (l,)
    weight : ndarray, (l,)
        :math:`\sum W`.
    variance : ndarray, (l,)
        :math:`\sum S(1-S) W^2` (eq. (5)).
    floor : ndarray, (l,)
        :math:`\sum \hat v W^2`, the pooled floor of eq. (6) (0 without one).
    first_weight, last_weight : ndarray, (l,)
        :math:`V` of the first and last tie run of the subpopulation in the chunk (0 if empty).
    offset : ndarray, (l,) or (l, N)
        :math:`\sum W(R-S)`.
    high, low : ndarray, (l,) or (l, N)
        Highest and lowest point of the path (start included) relative to the chunk start.
    adjacent : ndarray, (l,) or (l, N)
        Sum of eq. (6)'s numerator terms over consecutive tie runs inside the chunk.
    first_mean, last_mean : ndarray, (l,) or (l, N)
        Weighted mean residual :math:`e` of the first and last tie run.
    """

    count: np.ndarray
    weight: np.ndarray
    variance: np.ndarray
    floor: np.ndarray
    first_weight: np.ndarray
    last_weight: np.ndarray
    offset: np.ndarray
    high: np.ndarray
    low: np.ndarray
    adjacent: np.ndarray
    first_mean: np.ndarray
    last_mean: np.ndarray

    @property
    def size(self) -> int:
        """Number of subpopulations l."""
        return int(self.count.size)

    @classmethod
    def empty(cls, size: int, draws: int | None = None) -> ChunkSummaries:
        """Summaries of ``size`` subpopulations with no members (the identity of combine)."""
        shape = (size,) if draws is None else (size, draws)
        return cls(
            count=np.zeros(size, dtype=np.int64), weight=np.zeros(size),
            variance=np.zeros(size), floor=np.zeros(size), first_weight=np.zeros(size),
            last_weight=np.zeros(size),
            offset=np.zeros(shape), high=np.zeros(shape), low=np.zeros(shape),
            adjacent=np.zeros(shape), first_mean=np.zeros(shape), last_mean=np.zeros(shape),
        )

    def take(self, positions: np.ndarray) -> ChunkSummaries:
        """Summaries of the subpopulations at ``positions`` (in that order)."""
        return ChunkSummaries(**{f.name: getattr(self, f.name)[positions] for f in fields(self)})


def combine(first: ChunkSummaries, second: ChunkSummaries) -> ChunkSummaries:
    """Join the summaries of two adjacent chunks, ``first`` before ``second`` in score order.

    Associative (up to rounding), with :meth:`ChunkSummaries.empty` as identity: Spark
    partitions or DuckDB batches can be combined in any grouping as long as the order is kept.
    """
    a, b = first, second
    has_a = a.count > 0
    has_b = b.count > 0
    both = _col(has_a & has_b, a.offset)
    bridge = np.where(  # the eq. (6) term between the last run of a and the first of b
        both, (a.last_mean - b.first_mean) ** 2 * _col(a.last_weight + b.first_weight,
                                                       a.offset) ** 2, 0.0)
    return ChunkSummaries(
        count=a.count + b.count,
        weight=a.weight + b.weight,
        variance=a.variance + b.variance,
        floor=a.floor + b.floor,
        first_weight=np.where(has_a, a.first_weight, b.first_weight),
        last_weight=np.where(has_b, b.last_weight, a.last_weight),
        offset=a.offset + b.offset,
        high=np.maximum(a.high, a.offset + b.high),
        low=np.minimum(a.low, a.offset + b.low),
        adjacent=a.adjacent + b.adjacent + bridge,
        first_mean=np.where(_col(has_a, a.offset), a.first_mean, b.first_mean),
        last_mean=np.where(_col(has_b, a.offset), b.last_mean, a.last_mean),
    )


def combine_all(chunks: Iterable[ChunkSummaries]) -> ChunkSummaries:
    """Combine summaries of consecutive chunks given in score order (at least one)."""
    iterator = iter(chunks)
    total = next(iterator)
    for chunk in iterator:
        total = combine(total, chunk)
    return total


def _col(values: np.ndarray, like: np.ndarray) -> np.ndarray:
    """View a per-subpopulation array (l,) as (l, 1) when ``like`` has a draws axis."""
    return values.reshape(values.shape + (1,) * (like.ndim - values.ndim))


@dataclass(frozen=True, slots=True, eq=False)
class Statistics:
    r"""Per-subpopulation statistics from finished summaries.

    Attributes
    ----------
    size : ndarray of int64, (l,)
    weight_total : ndarray, (l,)
    kuiper : ndarray, (l,) or (l, N)
        :math:`D_k` (eq. (2), tie rule).
    sigma : ndarray, (l,) or (l, N)
        :math:`\sigma_k` (eq. (5), or Appendix C eq. (6) over tie runs with its pooled floor).
        Shape (l,) for ``"bernoulli"`` (it does not depend on the responses), else that of
        ``kuiper``.
    kuiper_z : ndarray, shape of ``kuiper``
        :math:`D_k/\sigma_k` (0/0 = 0, d/0 = inf).
    sigma_method : SigmaMethod
    """

    size: np.ndarray
    weight_total: np.ndarray
    kuiper: np.ndarray
    sigma: np.ndarray
    kuiper_z: np.ndarray
    sigma_method: SigmaMethod


def finish(summaries: ChunkSummaries, sigma_method: SigmaMethod | str) -> Statistics:
    r"""Turn summaries of the whole score range into :math:`D_k`, :math:`\sigma_k`, z-scores.

    ``sigma_method`` is ``"bernoulli"`` (eq. (5)) or ``"adjacent"`` (Appendix C eq. (6)), already
    resolved (:func:`~mcviz.core.sigma.resolve_sigma_method`). For ``"adjacent"``,
    :math:`\sigma_k = \max(\sigma_{(6),k}, \sqrt{\texttt{floor}_k}/\sum W)`
    (:func:`~mcviz.core.sigma.sigma_floored`; the floor is 0 when the evaluator has none).
    """
    method = SigmaMethod(sigma_method)
    s = summaries
    weight = _col(s.weight, s.offset)
    kuiper = safe_ratio(s.high - s.low, np.broadcast_to(weight, s.high.shape))  # eq. (2)
    kuiper = np.asarray(kuiper, dtype=float)
    if method is SigmaMethod.BERNOULLI:
        sigma = np.asarray(sigma_from_variance(s.variance, s.weight), dtype=float)  # eq. (5)
    elif method is SigmaMethod.ADJACENT:
        sigma = sigma_floored(sigma_adjacent_from_terms(  # Appendix C eq. (6) over tie runs
            s.adjacent, s.weight, s.first_weight, s.last_weight), s.floor, s.weight)
    else:
        raise ValueError(f"finish takes 'bernoulli' or 'adjacent', not {method.value!r}")
    z = safe_ratio(kuiper, _col(sigma, kuiper) if sigma.ndim < kuiper.ndim else sigma)
    return Statistics(
        size=_readonly(s.count.copy()), weight_total=_readonly(s.weight.copy()),
        kuiper=_readonly(kuiper), sigma=_readonly(np.asarray(sigma, dtype=float)),
        kuiper_z=_readonly(np.asarray(z, dtype=float)), sigma_method=method,
    )


class Evaluator:
    r"""Score-sorted rows prepared once; evaluates any number of subpopulations on them.

    Parameters
    ----------
    score : ndarray, shape (n,)
        Sorted ascending (ties in any order). A batch of an engine is cut at a tie-run end.
    weight : ndarray, shape (n,), optional
        Default: every weight 1.
    run_end : ndarray of bool, shape (n,), optional
        True at the last row of each run of tied scores (computed from ``score`` when omitted).
    response_variance : ndarray, shape (n,), optional
        The pooled response variance :math:`\hat v_j` of each row, the floor of eq. (6)
        (:func:`~mcviz.core.sigma.pooled_response_variance`); :meth:`from_predictions` gives it
        for real-valued responses. None: no floor.

    Notes
    -----
    Members are given as sorted positions (int arrays, e.g. ``Subpopulation.index``) or as
    boolean masks of shape (n,). Positions must be sorted ascending and distinct (members in
    score order); the evaluator trusts them.
    """

    def __init__(
        self,
        score: np.ndarray,
        weight: np.ndarray | None = None,
        *,
        run_end: np.ndarray | None = None,
        response_variance: np.ndarray | None = None,
    ) -> None:
        self.score = np.asarray(score, dtype=float)
        self.n = self.score.size
        self.weighted = weight is not None
        self._weight = np.asarray(weight, dtype=float) if self.weighted else None
        self._ends = run_ends(self.score) if run_end is None else np.asarray(run_end, dtype=bool)
        self.has_ties = bool(self.n) and not bool(self._ends.all())
        self._next_run_row: np.ndarray | None = None  # see _cuts
        # the floor of eq. (6), times W^2 (unweighted: W = 1, nothing to do)
        self.floor = None if response_variance is None else np.array(
            response_variance, dtype=float)
        if self.weighted and self.floor is not None:
            self.floor *= self._weight**2

    @property
    def weight(self) -> np.ndarray:
        """The weights :math:`W` (every one 1 when none were given), shape (n,)."""
        if self._weight is None:
            self._weight = np.ones(self.n)
        return self._weight

    @functools.cached_property
    def variance(self) -> np.ndarray:
        """The terms of eq. (5), :math:`S(1 - S)W^2`, shape (n,)."""
        variance = self.score * (1.0 - self.score)
        if self.weighted:
            variance *= self._weight**2
        return variance

    @functools.cached_property
    def run_id(self) -> np.ndarray:
        """Tie-run id of each row (equal ids: tied scores), int32 when it fits, shape (n,)."""
        id_type = np.int32 if self.n < 2**31 - 1 else np.int64  # half the bytes to gather
        if not self.n:
            return np.zeros(0, dtype=id_type)
        return np.concatenate(([0], np.cumsum(self._ends[:-1], dtype=id_type)))

    @classmethod
    def from_predictions(cls, pred) -> Evaluator:
        """Build from :class:`~mcviz.io.Predictions` (already score-sorted).

        Real-valued responses get the pooled floor of eq. (6)
        (:func:`~mcviz.core.sigma.pooled_response_variance`).
        """
        weight = pred.weight if pred.weighted else None
        floor = None if pred.response_kind == "binary" else pooled_response_variance(
            pred.score, pred.label, weight, pred.run_end)
        return cls(pred.score, weight, run_end=pred.run_end, response_variance=floor)

    def residual(self, label: np.ndarray) -> np.ndarray:
        """Return :math:`R - S` for responses of shape (n,) or (n, N)."""
        label = np.asarray(label, dtype=float)
        return label - (self.score if label.ndim == 1 else self.score[:, None])

    def summaries(
        self, residual: np.ndarray, members: Sequence[np.ndarray], *, adjacent: bool = True
    ) -> ChunkSummaries:
        """Chunk summaries of each subpopulation over these rows.

        Parameters
        ----------
        residual : ndarray, shape (n,) or (n, N)
            :math:`R - S` (unweighted; the evaluator applies the weights), one column per set
            of responses.
        members : sequence of ndarray
            Per subpopulation: sorted positions (int) or a boolean mask of shape (n,).
        adjacent : bool, default True
            Also compute the pieces of Appendix C eq. (6) (``adjacent``, ``first_mean``,
            ``last_mean``, ``first_weight``, ``last_weight``); False leaves them 0 (faster, for
            eq. (5) only).

        Returns
        -------
        ChunkSummaries
        """
        residual = np.asarray(residual, dtype=float)
        compiled = None if residual.ndim != 1 or adjacent else kernels.loops(
            _member_count(members))
        if compiled is not None:  # one pass per subpopulation (mcviz.core._compiled.walk)
            return self._walk(compiled, residual * self.weight if self.weighted else residual,
                              members)
        if residual.ndim == 1:  # weighted once (n values); 2-D: after the gather
            columns = (residual * self.weight if self.weighted else residual)[:, None]
        else:  # a member's N values are contiguous: one gather of a row per member
            columns = np.ascontiguousarray(residual)
        return self._summarise(columns, None, residual.ndim == 1, members, adjacent=adjacent)

    def label_summaries(
        self, label: np.ndarray, members: Sequence[np.ndarray], *, adjacent: bool = True
    ) -> ChunkSummaries:
        r"""Chunk summaries from responses :math:`R` rather than residuals :math:`R - S`.

        Equal to ``summaries(residual(label), ...)`` (to rounding). 0/1 responses (bool, or
        numbers that are all 0 or 1) without ``adjacent`` are gathered as one byte each and
        the path is :math:`\sum_{j \le k} W_j R_j - \sum_{j \le k} W_j S_j`, both sums
        started at each subpopulation (unweighted, the first is counted exactly in integers);
        the null draws of :func:`~mcviz.stats.significance.null_distribution` are this case.

        Parameters
        ----------
        label : ndarray, shape (n,) or (n, N)
            Responses, one column per set of responses.
        members, adjacent
            As in :meth:`summaries`.

        Returns
        -------
        ChunkSummaries
        """
        label = np.asarray(label)
        binary = label.dtype == bool or bool(np.all((label == 0) | (label == 1)))
        if adjacent or not binary:
            return self.summaries(self.residual(label), members, adjacent=adjacent)
        counts = label.view(np.uint8) if label.dtype == bool else label.astype(np.uint8)
        columns = counts[:, None] if label.ndim == 1 else np.ascontiguousarray(counts)
        return self._summarise(columns, self.score, label.ndim == 1, members, adjacent=False)

    def statistics(
        self,
        residual: np.ndarray,
        members: Sequence[np.ndarray],
        sigma_method: SigmaMethod | str = SigmaMethod.BERNOULLI,
    ) -> Statistics:
        r"""Return :func:`finish` of :meth:`summaries`: :math:`D_k`, :math:`\sigma_k`, z-scores."""
        return _finished(self.summaries, residual, members, sigma_method)

    def label_statistics(
        self,
        label: np.ndarray,
        members: Sequence[np.ndarray],
        sigma_method: SigmaMethod | str = SigmaMethod.BERNOULLI,
    ) -> Statistics:
        """Return :func:`finish` of :meth:`label_summaries` (responses, not residuals)."""
        return _finished(self.label_summaries, label, members, sigma_method)

    def kuiper(self, residual: np.ndarray, members: Sequence[np.ndarray]) -> np.ndarray:
        """Return :math:`D_k` of each subpopulation, shape (l,) or (l, N)."""
        return self.statistics(residual, members).kuiper

    def _summarise(self, columns, base, one_d, members, *, adjacent) -> ChunkSummaries:
        """Summaries of every subpopulation, group by group (see :meth:`_summarise_group`).

        A subpopulation with more members than a group holds is cut into pieces at tie-run
        ends, summarised as pieces and joined with :func:`combine` (work arrays stay in cache
        whatever the size of the subpopulation). One set of unweighted residuals is put beside
        the eq. (5) terms, row by row, so that one gather fetches both (the same cache lines;
        the same values as two gathers).
        """
        # pieces of at most half a group, whatever the threads (the same pieces, the same
        # rounding); groups of GROUP_ELEMENTS over the threads: as many values in work arrays
        budget = max(GROUP_ELEMENTS // (THREAD_WORKERS * columns.shape[1]), 1)
        indices, owner = [], []
        for k, member in enumerate(members):
            positions = _positions(member)
            pieces = [positions] if positions.size <= budget else np.split(
                positions, self._cuts(positions, budget))
            indices.extend(pieces)
            owner.extend([k] * len(pieces))
        draws = None if one_d else columns.shape[1]
        out = ChunkSummaries.empty(len(indices), draws)
        sizes = np.fromiter((i.size for i in indices), dtype=np.int64, count=len(indices))
        pair = None
        if base is None and one_d and int(sizes.sum()) >= self.n:
            # rows of (W(R - S), S(1 - S)W^2), built over all n rows: worth it only when the
            # members hold at least n positions in all (the search asks for a few small sets)
            pair = np.empty((self.n, 2))
            pair[:, 0] = columns[:, 0]
            if self.weighted or "variance" in self.__dict__:
                pair[:, 1] = self.variance
            else:  # the same products, never kept apart
                np.multiply(self.score, 1.0 - self.score, out=pair[:, 1])
        workers = _workers(int(sizes.sum()))
        groups = list(_groups(sizes, max(GROUP_ELEMENTS // (workers * columns.shape[1]), 1)))
        if workers > 1 and len(groups) > 1:  # each group fills its own rows of ``out``
            from concurrent.futures import ThreadPoolExecutor

            _ = self.variance, self.run_id if self.has_ties else None  # computed once, here
            with ThreadPoolExecutor(workers) as pool:
                for done in [pool.submit(self._summarise_group, columns, base, indices, group,
                                         out, adjacent=adjacent, pair=pair)
                             for group in groups]:
                    done.result()
        else:
            for group in groups:
                self._summarise_group(columns, base, indices, group, out, adjacent=adjacent,
                                      pair=pair)
        return out if len(indices) == len(members) else _join_pieces(out, np.asarray(owner))

    def _walk(self, compiled, values: np.ndarray, members) -> ChunkSummaries:
        """Eq. (5) summaries by the compiled loop (:func:`mcviz.core._compiled.walk`).

        Members given as a list are joined into one array a few million at a time
        (:data:`WALK_MEMBERS`); :class:`~mcviz.core.kernels.FlatMembers` are read as they are.
        """
        out = ChunkSummaries.empty(len(members))
        rows = np.empty((self.n, 4))
        rows[:, 0] = values
        rows[:, 1] = self.variance
        rows[:, 2] = self._weight if self.weighted else 1.0
        rows[:, 3] = self._run_starts()[self.run_id] if self.has_ties else np.arange(
            1, self.n + 1)
        floor = np.empty(0) if self.floor is None else self.floor
        for first, stop, index, start, length in _flat_chunks(members):
            compiled.walk(rows, floor, index, start, length, out.offset[first:stop],
                          out.high[first:stop], out.low[first:stop], out.weight[first:stop],
                          out.variance[first:stop], out.floor[first:stop])
            out.count[first:stop] = length
        return out

    def _run_starts(self) -> np.ndarray:
        """First row of tie run r + 1, for every run r (n after the last run)."""
        if self._next_run_row is None:
            self._next_run_row = np.append(
                np.flatnonzero(self.run_id[1:] != self.run_id[:-1]) + 1, self.n)
        return self._next_run_row

    def _cuts(self, positions: np.ndarray, budget: int) -> np.ndarray:
        """Where to cut sorted ``positions`` into pieces of about ``budget``: at tie-run starts.

        Each cut is the first member at or after a multiple of ``budget`` that starts a tie run
        (the first member past the run of the member before it): only the members at the
        wanted cuts are looked at, never the whole subpopulation.
        """
        wanted = np.arange(budget, positions.size, budget)
        if not self.has_ties or not wanted.size:
            return wanted
        after = self._run_starts()[self.run_id[positions[wanted - 1]]]
        cuts = np.searchsorted(positions, after)
        return np.unique(cuts[cuts < positions.size])

    def _summarise_group(self, columns, base, indices, group, out: ChunkSummaries, *,
                         adjacent: bool, pair: np.ndarray | None = None) -> None:
        """Fill ``out`` for the subpopulations ``group`` (all non-empty) in one gathered pass.

        ``columns`` (n, N) holds one set of responses per column: residuals (``base`` None;
        weighted already when they came from a 1-D residual) or 0/1 counts (``base`` the
        scores, unweighted), and the path is their cumulative sum minus that of ``base``.
        The members' rows of ``columns`` are gathered and transposed to (N, members), so the
        sums run along contiguous memory (numpy's sums along axis 0 are several times slower,
        and a gather along axis 1 misses the cache once per value). Residuals: one cumulative
        sum per segment (a sum across the group minus its value before each segment would cost
        fewer calls but loses precision when a heavy subpopulation precedes a light one); when
        the members are at least :data:`RUN_SUMS` times their tie runs, the runs are summed
        first and the cumulative sum runs over the runs' sums (same path at run ends, to
        rounding; a reduction costs a fraction of a cumulative sum per value). Counts: exact
        integer sums per segment minus the per-segment cumulative sum of
        ``base`` (:meth:`_count_path`). The path is read at the last row of each tie run of
        each segment. ``pair``: ``columns`` (one set, weighted already) beside the eq. (5)
        terms, as rows of two, gathered once for both.
        """
        parts = [indices[k] for k in group]
        lengths = np.fromiter((q.size for q in parts), dtype=np.int64, count=len(parts))
        # one conversion to intp: take() is fastest with native indices, every gather reuses it
        index = np.concatenate(parts, dtype=np.intp, casting="safe") if len(parts) > 1 else (
            parts[0].astype(np.intp, copy=False))
        seg_start = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        seg_last = seg_start + lengths - 1
        if pair is not None:  # (a strided view: the same numbers in the same order)
            both = np.take(pair, index, axis=0, mode="clip")
            values = both[:, 0].reshape(1, -1)
        else:
            values = np.ascontiguousarray(np.take(columns, index, axis=0, mode="clip").T)
        weight = np.take(self.weight, index, mode="clip") if self.weighted else None
        one_d = out.offset.ndim == 1  # a 1-D residual was weighted before the gather
        if base is None and not one_d and weight is not None:
            values *= weight
        ends = self._run_ends(index, seg_last)  # None: every member ends a run
        if base is None and ends is not None and RUN_SUMS * ends.size <= index.size:
            # long tie runs: the path at run ends is the segmented cumulative sum of the runs'
            # sums (a reduction is several times faster per value than a cumulative sum)
            first = np.searchsorted(ends, seg_start)  # first run of each segment
            runs = np.add.reduceat(values, np.concatenate(([0], ends[:-1] + 1)), axis=1)
            at_ends = _segmented_cumsum(runs, first, np.diff(np.append(first, ends.size)))
            offset = at_ends[:, np.append(first[1:], ends.size) - 1]
        else:
            path = self._count_path(values, np.take(base, index, mode="clip"), weight,
                                    seg_start, lengths) if base is not None else (
                _segmented_cumsum(values, seg_start, lengths))  # eq. (1), unnormalised
            offset = path[:, seg_last]
            if ends is None:
                at_ends, first = path, seg_start
            else:
                at_ends = np.take(path, ends, axis=1)
                first = np.searchsorted(ends, seg_start)  # first end of each segment
        high = np.maximum(np.maximum.reduceat(at_ends, first, axis=1), 0.0)
        low = np.minimum(np.minimum.reduceat(at_ends, first, axis=1), 0.0)
        positions = np.asarray(group)
        for name, value in (("high", high), ("low", low), ("offset", offset)):
            getattr(out, name)[positions] = value[0] if one_d else value.T
        out.count[positions] = lengths
        out.weight[positions] = (np.add.reduceat(weight, seg_start) if self.weighted
                                 else lengths.astype(float))
        out.variance[positions] = np.add.reduceat(
            both[:, 1] if pair is not None else np.take(self.variance, index, mode="clip"),
            seg_start)
        if self.floor is not None:
            out.floor[positions] = np.add.reduceat(
                np.take(self.floor, index, mode="clip"), seg_start)
        if adjacent:
            self._adjacent(values[0] if one_d else values.T, weight, ends, seg_start, lengths,
                           positions, out)

    def _run_ends(self, index: np.ndarray, seg_last: np.ndarray) -> np.ndarray | None:
        """Positions (in the gathered members) of the last member of each segment's tie runs.

        None when no score is tied (every member ends a run).
        """
        if not self.has_ties:
            return None
        run = np.take(self.run_id, index, mode="clip")
        end = np.ones(index.size, dtype=bool)
        np.not_equal(run[1:], run[:-1], out=end[:-1])
        end[seg_last] = True
        return np.flatnonzero(end)

    @staticmethod
    def _count_path(counts, base, weight, seg_start, lengths) -> np.ndarray:
        """Per-segment path of 0/1 counts minus ``base``, shape (N, members), float64.

        Unweighted: each segment's integer cumulative sum is exact. Weighted: the sums of
        :math:`W R` and :math:`W S` are float, each starting at its segment. Either way the
        rounding is that of one subpopulation evaluated alone (one numpy call per segment and
        sum: no pass over the group to subtract what came before).
        """
        total = counts.shape[1]
        if weight is None:
            path = np.empty(counts.shape, dtype=np.int32 if total < 2**31 else np.int64)
        else:
            counts = counts * weight  # W R, float64
            base = base * weight
            path = counts
        base_path = np.empty(total)
        for start, stop in zip(seg_start.tolist(), (seg_start + lengths).tolist(), strict=True):
            np.cumsum(counts[:, start:stop], axis=1, out=path[:, start:stop])
            np.cumsum(base[start:stop], out=base_path[start:stop])
        return np.subtract(path, base_path, out=path if weight is not None else None)

    def _adjacent(self, values, weight, ends, seg_start, lengths, positions, out) -> None:
        """Eq. (6) pieces over the tie runs of each segment (see :func:`sigma_adjacent`)."""
        weight = np.ones(values.shape[0]) if weight is None else weight
        if ends is None:  # no ties: every row is a run
            run_sum, run_weight, first_run = values, weight, seg_start
        else:
            run_start = np.concatenate(([0], ends[:-1] + 1))
            run_sum = np.add.reduceat(values, run_start, axis=0)
            run_weight = np.add.reduceat(weight, run_start)
            first_run = np.searchsorted(run_start, seg_start)
        last_run = np.concatenate((first_run[1:], [run_weight.size])) - 1
        terms = np.zeros_like(run_sum)
        terms[1:] = adjacent_terms(run_sum, run_weight)
        terms[first_run] = 0.0  # no term across two segments
        mean = safe_ratio(run_sum, _col(run_weight, run_sum))
        out.first_weight[positions] = run_weight[first_run]
        out.last_weight[positions] = run_weight[last_run]
        out.adjacent[positions] = np.add.reduceat(terms, first_run, axis=0)
        out.first_mean[positions] = mean[first_run]
        out.last_mean[positions] = mean[last_run]


def _finished(summarise, data, members, sigma_method) -> Statistics:
    """:func:`finish` of ``summarise(data, members, adjacent=...)`` for ``sigma_method``."""
    method = SigmaMethod(sigma_method)
    return finish(summarise(data, members, adjacent=method is SigmaMethod.ADJACENT), method)


def _join_pieces(pieces: ChunkSummaries, owner: np.ndarray) -> ChunkSummaries:
    """Combine consecutive pieces with the same ``owner`` (non-decreasing, from 0) in order.

    Round r joins every owner's (r+1)-th piece at once, so the loop runs as many times as the
    largest subpopulation has pieces, never once per subpopulation.
    """
    first = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    count = np.diff(np.r_[first, owner.size])
    out = pieces.take(first)
    for r in range(1, int(count.max())):
        rows = np.flatnonzero(count > r)
        joined = combine(out.take(rows), pieces.take(first[rows] + r))
        for f in fields(out):
            getattr(out, f.name)[rows] = getattr(joined, f.name)
    return out


def _segmented_cumsum(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Cumulative sums along axis 1, restarted at each segment.

    One numpy call per segment, so each segment's rounding is that of the segment alone,
    whatever precedes it.
    """
    path = np.empty_like(values)
    for start, stop in zip(starts.tolist(), (starts + lengths).tolist(), strict=True):
        np.cumsum(values[:, start:stop], axis=1, out=path[:, start:stop])
    return path


WALK_MEMBERS = 1 << 22
"""Members of a list joined at once for the compiled loop (32 MiB of positions)."""


def _member_count(members) -> int:
    """Members in all, as :func:`~mcviz.core.kernels.loops` needs them.

    A mask's length bounds its members: its True values are counted only when that bound
    could reach :data:`~mcviz.core.kernels.WORTH_LOADING` and the loops are not loaded yet.
    """
    if isinstance(members, kernels.FlatMembers):
        return members.total
    upper = sum(len(m) for m in members)
    if upper < kernels.WORTH_LOADING or kernels.loaded():
        return upper
    return sum(int(np.count_nonzero(m)) if np.asarray(m).dtype == bool else len(m)
               for m in members)


def _flat_chunks(members) -> Iterable[tuple]:
    """(first, stop, index, start, length): subpopulations first:stop as one flat array."""
    if isinstance(members, kernels.FlatMembers):
        yield 0, len(members), members.index, members.start, members.length
        return
    positions = [_positions(m) for m in members]
    lengths = np.fromiter((p.size for p in positions), dtype=np.int64, count=len(positions))
    first = 0
    while first < len(positions):
        stop = first + 1 + int(np.searchsorted(
            np.cumsum(lengths[first + 1:]), WALK_MEMBERS - lengths[first], side="right"))
        part = lengths[first:stop]
        index = (np.concatenate(positions[first:stop], dtype=np.int64, casting="safe")
                 if stop > first + 1 else positions[first].astype(np.int64, copy=False))
        yield first, stop, index, np.concatenate(([0], np.cumsum(part)[:-1])), part
        first = stop


def _workers(members: int) -> int:
    """Threads to summarise groups holding ``members`` in all (1: this thread alone).

    From :data:`THREAD_MEMBERS` members, one per core this process may run on (its affinity
    mask), at most :data:`THREAD_WORKERS`: numpy's gathers, cumulative sums and reductions
    release the interpreter lock, and each group is summarised from cache-sized arrays.
    """
    if members < THREAD_MEMBERS:
        return 1
    from mcviz.budget import usable_cores

    return min(usable_cores(), THREAD_WORKERS)


def _positions(member: np.ndarray) -> np.ndarray:
    array = np.asarray(member)
    return np.flatnonzero(array) if array.dtype == bool else array


def _groups(sizes: np.ndarray, budget: int) -> Iterable[list[int]]:
    """Consecutive non-empty subpopulations with at most ``budget`` members in all (or one)."""
    group: list[int] = []
    total = 0
    for k, size in enumerate(sizes.tolist()):
        if size == 0:
            continue
        if group and total + size > budget:
            yield group
            group, total = [], 0
        group.append(k)
        total += size
    if group:
        yield group

r"""Score-sorted batches -> per-subpopulation chunk summaries (the engines' exact mode).

An engine that can sort (DuckDB ``ORDER BY score``, a Spark range partition) hands its rows to
:func:`summarise_rows` one complete chunk at a time (a chunk must end at a tie-run end), or
streams arbitrary score-sorted batches through :class:`BatchAccumulator`, which holds back the
trailing run of tied scores of each batch until the next one arrives. The summaries of
consecutive chunks combine in score order (:func:`~mcviz.core.evaluator.combine`), on one
machine or on a driver. :class:`InOrder` summarises chunks on worker threads (the evaluator's
numpy work releases the GIL) and still combines them in score order, so the result does not
depend on the number of threads.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from mcviz.core.evaluator import ChunkSummaries, Evaluator, combine
from mcviz.core.membership import MembershipPlan, last_run_start

__all__ = ["BatchAccumulator", "InOrder", "summarise_rows"]


class InOrder:
    """Chunk summaries computed on ``workers`` threads, combined in the order submitted.

    Each :meth:`submit` runs ``function(*args, **kwargs)``, which returns the
    :class:`ChunkSummaries` of the next chunk in score order; at most ``workers`` chunks are
    held at once (memory: that many chunks' members), and the summaries are joined in order as
    :func:`~mcviz.core.evaluator.combine_all` joins them: the same numbers for any number of
    workers. One worker: no thread, each chunk is summarised on the spot.
    """

    def __init__(self, workers: int = 1) -> None:
        self.workers = max(int(workers), 1)
        self.total: ChunkSummaries | None = None
        self._pool = ThreadPoolExecutor(self.workers) if self.workers > 1 else None
        self._pending: deque = deque()

    def submit(self, function: Callable[..., ChunkSummaries], *args, **kwargs) -> None:
        """Summarise the next chunk (later than every chunk submitted before)."""
        if self._pool is None:
            self._join(function(*args, **kwargs))
            return
        while len(self._pending) >= self.workers:  # at most ``workers`` chunks held at once
            self._join(self._pending.popleft().result())
        self._pending.append(self._pool.submit(function, *args, **kwargs))

    def finish(self) -> ChunkSummaries | None:
        """Wait for every chunk; return their combined summaries (None when none was given)."""
        try:
            while self._pending:
                self._join(self._pending.popleft().result())
        finally:
            self.close()
        return self.total

    def close(self) -> None:
        """Drop the chunks not started and stop the threads (after an error, too)."""
        for future in self._pending:
            future.cancel()
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _join(self, chunk: ChunkSummaries) -> None:
        self.total = chunk if self.total is None else combine(self.total, chunk)


def summarise_rows(
    plan: MembershipPlan,
    score: np.ndarray,
    label: np.ndarray,
    weight: np.ndarray | None,
    columns: Mapping[str, object],
    *,
    adjacent: bool = False,
) -> ChunkSummaries:
    """Chunk summaries of every spec of ``plan`` over one chunk of score-sorted rows.

    Parameters
    ----------
    plan : MembershipPlan
    score, label : ndarray, shape (m,)
        Sorted by score; the chunk must end at the end of a run of tied scores (the next chunk
        starts with a higher score).
    weight : ndarray, shape (m,), optional
    columns : mapping
        At least ``plan.columns``: numpy, pandas or pyarrow arrays of length m.
    adjacent : bool, default False
        Also the Appendix C pieces (real-valued responses).
    """
    return _summarise_codes(plan, np.asarray(score, dtype=float), np.asarray(label, dtype=float),
                            None if weight is None else np.asarray(weight, dtype=float),
                            plan.encode(columns), adjacent=adjacent)


def _summarise_codes(plan, score, label, weight, codes, *, adjacent,
                     observe=None) -> ChunkSummaries:
    """:func:`summarise_rows` from the integer codes of :meth:`MembershipPlan.encode`."""
    members = plan.members_from_codes(codes, score.size, compiled=True)
    if observe is not None:
        observe(score, label, weight, members)
    evaluator = Evaluator(score, weight)
    return evaluator.summaries(label - score, members, adjacent=adjacent)


class BatchAccumulator:
    """Feed score-sorted batches in order; read the combined summaries at the end.

    Each batch's covariates are encoded on arrival (:meth:`MembershipPlan.encode`: the codes
    mean the same in every batch), so the rows held back between batches are plain numpy
    arrays. ``threads`` > 1: chunks are summarised on that many threads (:class:`InOrder`;
    the same numbers); ``observe`` keeps one thread (it sees the chunks in order).

    Examples
    --------
    >>> from mcviz.subpopulations import Condition, Subpopulation
    >>> specs = [Subpopulation(0, 0, (), "full population", np.arange(4)),
    ...          Subpopulation(1, 1, (Condition("x", ">=", 1.0),), "x ≥ 1", np.arange(2))]
    >>> acc = BatchAccumulator(specs)
    >>> acc.add([0.1, 0.2, 0.2], [1, 0, 0], None, {"x": [0.0, 1.0, 2.0]})  # 0.2 held back
    >>> acc.add([0.2, 0.3], [1, 1], None, {"x": [3.0, 0.0]})
    >>> summaries = acc.finish()

    Offsets: full population 0.9 - 0.2 - 0.2 + 0.8 + 0.7 = 2; x >= 1 (the three rows at 0.2):
    -0.2 - 0.2 + 0.8 = 0.4.

    >>> summaries.count.tolist(), summaries.offset.round(12).tolist()
    ([5, 3], [2.0, 0.4])
    """

    def __init__(self, specs, *, adjacent: bool = False, observe=None, threads: int = 1) -> None:
        self.plan = specs if isinstance(specs, MembershipPlan) else MembershipPlan(specs)
        self.adjacent = adjacent
        self.observe = observe
        """Called as ``observe(score, label, weight, members)`` on each chunk summarised (every
        row once, in score order; ``members`` as :meth:`MembershipPlan.members`): other sums
        over the same members without testing the conditions again."""
        self._chunks = InOrder(1 if observe is not None else threads)
        self._held: dict | None = None

    @property
    def total(self) -> ChunkSummaries | None:
        """Combined summaries of the chunks summarised so far (None before the first)."""
        return self._chunks.total

    def add(self, score, label, weight, columns: Mapping[str, object]) -> None:
        """Add the next batch (scores not below the previous batch's)."""
        batch = {"score": np.asarray(score, dtype=float), "label": np.asarray(label, dtype=float),
                 "weight": None if weight is None else np.asarray(weight, dtype=float),
                 "codes": self.plan.encode(columns)}
        if self._held is not None:
            batch = _concat(self._held, batch)
        cut = last_run_start(batch["score"])
        self._held = _slice(batch, cut, batch["score"].size)
        if cut:
            self._summarise(_slice(batch, 0, cut))

    def finish(self) -> ChunkSummaries:
        """Summarise the rows held back and return the combined summaries."""
        try:
            if self._held is not None and self._held["score"].size:
                self._summarise(self._held)
            self._held = None
            total = self._chunks.finish()
        finally:
            self._chunks.close()
        return ChunkSummaries.empty(len(self.plan.specs)) if total is None else total

    def close(self) -> None:
        """Stop the worker threads without a result (e.g. when the batches stop on an error)."""
        self._chunks.close()

    def _summarise(self, batch: dict) -> None:
        self._chunks.submit(_summarise_codes, self.plan, batch["score"], batch["label"],
                            batch["weight"], batch["codes"], adjacent=self.adjacent,
                            observe=self.observe)


def _slice(batch: dict, start: int, stop: int) -> dict:
    return {"score": batch["score"][start:stop], "label": batch["label"][start:stop],
            "weight": None if batch["weight"] is None else batch["weight"][start:stop],
            "codes": {c: v[start:stop] for c, v in batch["codes"].items()}}


def _concat(a: dict, b: dict) -> dict:
    if (a["weight"] is None) != (b["weight"] is None):
        raise ValueError("every batch must carry weights, or none")
    return {"score": np.concatenate((a["score"], b["score"])),
            "label": np.concatenate((a["label"], b["label"])),
            "weight": None if a["weight"] is None else np.concatenate((a["weight"], b["weight"])),
            "codes": {c: np.concatenate((v, b["codes"][c])) for c, v in a["codes"].items()}}

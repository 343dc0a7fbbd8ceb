r"""Score-sorted batches -> per-subpopulation chunk summaries (the engines' exact mode).

An engine that can sort (DuckDB ``ORDER BY score``, a Spark range partition) hands its rows to
:func:`summarise_rows` one complete chunk at a time (a chunk must end at a tie-run end), or
streams arbitrary score-sorted batches through :class:`BatchAccumulator`, which holds back the
trailing run of tied scores of each batch until the next one arrives. The summaries of
consecutive chunks combine in score order (:func:`~mcviz.core.evaluator.combine`), on one
machine or on a driver.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from mcviz.core.evaluator import ChunkSummaries, Evaluator, combine
from mcviz.core.membership import MembershipPlan, last_run_start

__all__ = ["BatchAccumulator", "summarise_rows"]


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
    members = plan.members_from_codes(codes, score.size)
    if observe is not None:
        observe(score, label, weight, members)
    evaluator = Evaluator(score, weight)
    return evaluator.summaries(label - score, members, adjacent=adjacent)


class BatchAccumulator:
    """Feed score-sorted batches in order; read the combined summaries at the end.

    Each batch's covariates are encoded on arrival (:meth:`MembershipPlan.encode`: the codes
    mean the same in every batch), so the rows held back between batches are plain numpy
    arrays.

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

    def __init__(self, specs, *, adjacent: bool = False, observe=None) -> None:
        self.plan = specs if isinstance(specs, MembershipPlan) else MembershipPlan(specs)
        self.adjacent = adjacent
        self.observe = observe
        """Called as ``observe(score, label, weight, members)`` on each chunk summarised (every
        row once, in score order; ``members`` as :meth:`MembershipPlan.members`): other sums
        over the same members without testing the conditions again."""
        self.total: ChunkSummaries | None = None
        self._held: dict | None = None

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
        if self._held is not None and self._held["score"].size:
            self._summarise(self._held)
        self._held = None
        if self.total is None:
            return ChunkSummaries.empty(len(self.plan.specs))
        return self.total

    def _summarise(self, batch: dict) -> None:
        chunk = _summarise_codes(self.plan, batch["score"], batch["label"], batch["weight"],
                                 batch["codes"], adjacent=self.adjacent, observe=self.observe)
        self.total = chunk if self.total is None else combine(self.total, chunk)


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

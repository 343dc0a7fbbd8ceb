r"""The pooled floor of eq. (6) from score-sorted batches: rows that never sit in memory together.

:func:`~mcviz.core.sigma.pooled_response_variance` cuts the :math:`n` score-sorted rows into
blocks of at least :math:`b = \max(\text{POOL\_MIN\_ROWS}, \lfloor n/\text{POOL\_BLOCKS}\rfloor)`
rows ending at tie-run ends, joins a short last block to the one before, decides each block's
most common response, joins blocks with fewer than ``POOL_MIN_INFORMATIVE`` responses off it to
the next, and gives every row its block's weighted variance :math:`\hat v_b` of :math:`R - S`.
A subpopulation :math:`k` needs only :math:`\sum_{j\in k} W_j^2 \hat v_j =
\sum_b \hat v_b \sum_{j \in k \cap b} W_j^2`, so :class:`StreamedFloor` reads the rows once, in
score order, in batches cut at tie-run ends, and keeps:

* the rows of at most three blocks (the one being filled and the last two completed: whether the
  last block is short is known only at the end), about :math:`3n/100` rows at most;
* per completed block: its rows, :math:`\sum W`, its weighted mean residual, its centred sum
  :math:`\sum W (d - \bar d_b)^2`, its pair sum :math:`\sum_{i<j} W_i W_j` and the rows off its
  most common response; per subpopulation, :math:`\sum W^2` of its members in the block.

A row ends a block when it ends a tie run and the run holds a row :math:`t` with
:math:`(t + 1) \bmod b = 0` (the first run end at or after each of the rows :math:`b - 1, 2b - 1,
\dots`, as in memory), or when it is the last row. Blocks join exactly as in memory
(:func:`~mcviz.core.sigma.thick_block_ends`), their sums combined by
:math:`\sum W(d - \bar d)^2 = \sum_b [\sum_b W(d - \bar d_b)^2 + W_b(\bar d_b - \bar d)^2]` and
:math:`\text{pairs}(A \cup B) = \text{pairs}(A) + \text{pairs}(B) + W_A W_B` (every term
non-negative). The result equals the in-memory floor up to rounding
(``tests/core/test_pooled_stream.py``: to 1e-12 relative on ties, weights and zero-inflated
responses whose blocks join).
"""

from __future__ import annotations

import numpy as np

from mcviz.core.ratio import safe_ratio
from mcviz.core.sigma import POOL_BLOCKS, POOL_MIN_ROWS, thick_block_ends

__all__ = ["StreamedFloor"]


class StreamedFloor:
    """Per-subpopulation :math:`\\sum W^2 \\hat v` of the pooled floor, from sorted batches.

    Parameters
    ----------
    n : int
        The number of rows that will be added (the block size depends on it).
    k : int
        The number of subpopulations.
    """

    def __init__(self, n: int, k: int) -> None:
        self.n, self.k = int(n), int(k)
        self.size = max(POOL_MIN_ROWS, self.n // POOL_BLOCKS)
        self.seen = 0
        self.last_end = -1  # global index of the last tie-run end seen
        self._filling: list[tuple] = []  # (weight, residual, label, member W^2 (k,)) pieces
        self._pending: list[dict] = []  # the last (up to two) completed blocks, raw
        self._blocks: list[dict] = []  # finished blocks' sums

    def add(self, residual: np.ndarray, label: np.ndarray, weight: np.ndarray,
            run_end: np.ndarray, members: list[np.ndarray]) -> None:
        """Add the next rows in score order; the batch ends at a tie-run end.

        ``members`` holds one boolean mask per subpopulation over these rows.
        """
        ends = np.flatnonzero(run_end)
        if ends.size == 0:
            raise ValueError("a batch must end at a tie-run end")
        global_ends = ends + self.seen
        before = np.concatenate(([self.last_end], global_ends[:-1]))
        cuts = ends[(global_ends + 1) // self.size > (before + 1) // self.size]
        if self.seen + residual.size >= self.n and (not cuts.size or cuts[-1] != residual.size - 1):
            cuts = np.append(cuts, residual.size - 1)  # the last row ends the last block
        start = 0
        ww = weight * weight
        complete = set((cuts + 1).tolist())
        for stop in sorted(complete | {residual.size}):
            if stop > start:
                part = slice(start, stop)
                self._filling.append((weight[part], residual[part], label[part],
                                      np.array([ww[part][m[part]].sum() for m in members])))
            if stop in complete:
                self._complete()
            start = stop
        self.seen += residual.size
        self.last_end = int(global_ends[-1])

    def _complete(self) -> None:
        pieces = self._filling
        self._filling = []
        block = {name: np.concatenate([p[i] for p in pieces])
                 for i, name in enumerate(("w", "d", "label"))}
        block["ww"] = np.sum([p[3] for p in pieces], axis=0)
        self._pending.append(block)
        if len(self._pending) > 2:
            self._blocks.append(_sums(self._pending.pop(0)))

    def finish(self) -> np.ndarray:
        """Return :math:`\\sum_{j \\in k} W_j^2 \\hat v_j` per subpopulation, shape (k,)."""
        if self._filling:
            self._complete()
        pending = self._pending
        if len(pending) == 2 and pending[1]["w"].size < self.size // 2:
            pending = [{name: np.concatenate((pending[0][name], pending[1][name]))
                        if name != "ww" else pending[0][name] + pending[1][name]
                        for name in pending[0]}]  # a short last block joins the one before
        blocks = self._blocks + [_sums(block) for block in pending]
        if not blocks:
            return np.zeros(self.k)
        keep = thick_block_ends(np.array([b["informative"] for b in blocks]))
        floor = np.zeros(self.k)
        first = 0
        for last in keep:
            group = blocks[first:last + 1]
            variance = _joined_variance(group)
            for block in group:
                floor += variance * block["ww"]
            first = last + 1
        return floor


def _sums(block: dict) -> dict:
    """A completed block's sums (as :func:`~mcviz.core.sigma.pooled_response_variance`)."""
    w, d, label = block["w"], block["d"], block["label"]
    total = float(w.sum())
    mean = float(safe_ratio(np.dot(w, d), total))
    before = np.concatenate(([0.0], np.cumsum(w)[:-1]))
    values, counts = np.unique(label, return_counts=True)
    return {"total": total, "mean": mean, "spread": float(np.dot(w, (d - mean) ** 2)),
            "pairs": float(np.dot(w, before)), "ww": block["ww"],
            "informative": int(label.size - (counts.max() if values.size else 0))}


def _joined_variance(group: list[dict]) -> float:
    r""":math:`\hat v` of blocks joined: their centred sums and pair sums combined exactly."""
    total = sum(b["total"] for b in group)
    mean = float(safe_ratio(sum(b["total"] * b["mean"] for b in group), total))
    spread = sum(b["spread"] + b["total"] * (b["mean"] - mean) ** 2 for b in group)
    pairs, weight = 0.0, 0.0
    for b in group:
        pairs += b["pairs"] + weight * b["total"]
        weight += b["total"]
    value = float(safe_ratio(spread, safe_ratio(2.0 * pairs, total)))
    return value if np.isfinite(value) else 0.0

r"""Path sums of many subsets of one node's rows, from masks: exact integers, in blocks.

:func:`~mcviz.search._screen.masked_scores` needs, for each mask over a node's rows (in score
order), the highest and lowest point of the subset's path :math:`P_k = \sum_{j \le k} W(R-S)`
(read at the ends of the tie runs, the origin included), its end :math:`\sum W(R-S)` and
:math:`\sum S(1-S)W^2` (eqs. (1), (2), (5) of paper 000). A cumulative sum over the rows costs
about 3 ns a row (numpy's is sequential); this costs about a third of that.

Fixed point. Every :math:`W(R-S)` is rounded once to an integer multiple of :math:`2^{-s}`,
with :math:`s` chosen from the data (:func:`fixed_point`) so that every partial sum of every
subset stays below :math:`2^{62}` in magnitude: integer sums are then exact, so they do not
depend on the order in which they are added. (i) Any grouping of the additions (blocks, SIMD
lanes) gives the same numbers as a sequential cumulative sum of the rounded terms. (ii) The
same members give the same numbers whatever node's rows hold them (the rows outside a subset
add exactly 0): equal subsets reached from two nodes score identically, so no ranking depends
on which node they came from. The rounding moves each term by at most :math:`2^{-s-1}`
(:math:`s \ge 42` at :math:`10^6` unweighted rows: :math:`10^{-13}`), the size of float64's
own rounding of a cumulative sum of that many terms. :math:`S(1-S)W^2` gets its own scale.

Blocks. A node's rows are cut into blocks of :data:`BLOCK` consecutive rows (the last padded
with zeros). For a mask, one pass gives each block's masked sum :math:`T_b`, hence the path at
every block end, :math:`E_b = \sum_{c \le b} T_c`. The highest point of the path is at least
:math:`L = \max(0, \max_b E_b)` (block ends that end a tie run only; 0 is the origin). Inside
block :math:`b` the path never exceeds :math:`E_{b-1} + U_b`, :math:`U_b` the sum of the positive
terms of *all* the block's rows (a subset's positive terms sum to at most that), so only blocks
with :math:`E_{b-1} + U_b \ge L` can hold a higher point; likewise for the lowest point with the
negative terms. Only those blocks (about 2% on the benchmark's nodes) are summed row by row.
Both bounds and path values are exact integers, so the maximum found is the maximum of the
whole path, exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

BLOCK = 64
"""Rows per block (a power of two; 32-128 measured alike, 64 fastest on the benchmark)."""

MASKED_TERMS = 1 << 20
"""Mask terms (8 bytes each) :func:`masked_sums` holds at once: several masks of a node of up
to 2^20 rows together, one at a time above."""


@dataclass(frozen=True, slots=True)
class Fixed:
    """Per-row terms as integers times ``2**-shift`` (every partial sum below 2**62)."""

    values: np.ndarray  # int64
    shift: int

    def real(self, value) -> np.ndarray:
        """Return integer sums as floats (``value * 2**-shift``)."""
        return np.ldexp(np.asarray(value, dtype=np.float64), -self.shift)


def fixed_point(values: np.ndarray, bound: float = 0.0) -> Fixed:
    r"""Round ``values`` to integers times :math:`2^{-s}`, :math:`s` as large as is safe.

    With :math:`\sum |v| < 2^e` (``frexp``), :math:`s = 61 - e`: the rounded magnitudes add up
    to less than :math:`2^{61} + n/2 < 2^{62}`, so no partial sum of any subset overflows.
    ``bound``: a known upper bound of :math:`\sum |v|` that sets the scale instead (so that the
    scale does not depend on the values: W(R-S) of binary responses is bounded by
    :math:`\sum W` whatever the labels, held-out ones included); the sum itself when larger.
    """
    total = max(float(bound), float(np.abs(values).sum()))
    exponent = math.frexp(total)[1] if total > 0 else 0
    shift = 61 - exponent
    return Fixed(np.rint(np.ldexp(values, shift)).astype(np.int64), shift)


@dataclass(frozen=True, slots=True, eq=False)
class Layout:
    """One node's rows, fixed point, in blocks (see the module's docstring)."""

    size: int                 # rows of the node
    blocks: np.ndarray        # (n_blocks, BLOCK) int64: W(R-S), zero padded
    variance: np.ndarray      # (size,) int64: S(1-S)W^2
    up: np.ndarray            # (n_blocks,) sum of each block's positive terms
    down: np.ndarray          # (n_blocks,) sum of each block's negative terms
    ends: np.ndarray | None   # (n_blocks, BLOCK) bool: the row ends a tie run (None: all)
    valid: np.ndarray | None  # (n_blocks,) bool: the block's last row ends a tie run


def layout(residual: np.ndarray, variance: np.ndarray, rows: np.ndarray,
           ends: np.ndarray | None) -> Layout:
    """Lay out the fixed-point terms at a node's ``rows``; ``ends``: positions ending tie runs."""
    size = rows.size
    n_blocks = -(-size // BLOCK)
    blocks = np.empty(n_blocks * BLOCK, dtype=np.int64)
    blocks[size:] = 0
    np.take(residual, rows, out=blocks[:size], mode="clip")  # rows are valid: no check, no copy
    blocks = blocks.reshape(n_blocks, BLOCK)
    up = np.einsum("ij->i", np.maximum(blocks, 0))  # exact: integers
    down = np.einsum("ij->i", blocks) - up
    flags = valid = None
    if ends is not None:
        flags = np.zeros(n_blocks * BLOCK, dtype=bool)
        flags[ends[ends < size]] = True  # (no rows: one end is claimed at position 0)
        flags = flags.reshape(n_blocks, BLOCK)
        valid = flags[:, -1].copy()
        if n_blocks:
            valid[-1] = True  # the padding repeats the last row's point, which ends a run
    return Layout(size=size, blocks=blocks, variance=np.take(variance, rows, mode="clip"), up=up,
                  down=down, ends=flags, valid=valid)


def masked_sums(node: Layout, masks: list[np.ndarray]) -> np.ndarray:
    r"""Integer ``(high, low, end, variance)`` of each mask's subset (rows ``(k, 4)``).

    ``high``/``low``: the highest and lowest point of the subset's path at tie-run ends, the
    origin included; ``end``: :math:`\sum W(R-S)`; ``variance``: :math:`\sum S(1-S)W^2`; all
    exact integer sums of the fixed-point terms.
    """
    out = np.zeros((len(masks), 4), dtype=np.int64)
    if node.size == 0:
        return out
    n_blocks = node.blocks.shape[0]
    step = max(1, MASKED_TERMS // (n_blocks * BLOCK))
    for first in range(0, len(masks), step):  # a few masks at a time: bounded memory
        _masked_chunk(node, masks[first:first + step], out[first:first + step])
    return out


def _masked_chunk(node: Layout, masks: list[np.ndarray], out: np.ndarray) -> None:
    """Fill ``out`` (rows ``(k, 4)``) for :func:`masked_sums` of a few masks at once.

    Every sum is an exact integer sum, so computing the masks together (one einsum, one
    cumulative sum, the candidate blocks of all masks gathered at once) gives the numbers of
    one mask at a time.
    """
    n_blocks = node.blocks.shape[0]
    flat = np.zeros((len(masks), n_blocks * BLOCK), dtype=np.int64)  # masks as 0/1, padded
    for k, mask in enumerate(masks):
        np.copyto(flat[k, : node.size], mask)
    indicator = flat.reshape(len(masks), n_blocks, BLOCK)
    sums = np.einsum("kij,ij->ki", indicator, node.blocks)  # exact: integers
    at_end = np.cumsum(sums, axis=1)
    before = at_end - sums
    read = at_end if node.valid is None else at_end[:, node.valid]
    high = np.maximum(read.max(axis=1, initial=0), 0)  # the origin included
    low = np.minimum(read.min(axis=1, initial=0), 0)
    # blocks that may hold a higher or lower point: row by row
    which, inside = np.nonzero((before + node.up >= high[:, None])
                               | (before + node.down <= low[:, None]))
    if inside.size:
        path = node.blocks[inside] * indicator[which, inside]
        np.cumsum(path, axis=1, out=path)
        path += before[which, inside, None]
        where = True if node.ends is None else node.ends[inside]
        np.maximum.at(high, which, path.max(axis=1, where=where, initial=np.iinfo(np.int64).min))
        np.minimum.at(low, which, path.min(axis=1, where=where, initial=np.iinfo(np.int64).max))
    out[:, 0], out[:, 1], out[:, 2] = high, low, at_end[:, -1]
    out[:, 3] = np.einsum("ki,i->k", flat[:, : node.size], node.variance)


def level_sums(node: Layout, order: np.ndarray, starts: np.ndarray,
               run: np.ndarray | None) -> np.ndarray:
    r"""Integer ``(high, low, end, variance)`` of consecutive segments of a reordered node.

    ``order`` lists the node's rows segment after segment (the members of each level of a
    nominal covariate, each in score order: a stable sort by level), ``starts`` the first
    position of each segment, ``run`` the tie-run id of each row in ``order`` (None: no ties).
    One cumulative sum runs over all segments at once: with integers (exact sums) the path of
    a segment is that sum minus its value before the segment, with no rounding carried over
    from the segments before it (a float sum would carry it). It is read at the last member
    of each tie run of the segment (a member whose next member in the segment has another
    run, or that ends the segment), the origin included, as in :func:`masked_sums`.
    """
    out = np.zeros((starts.size, 4), dtype=np.int64)
    if not order.size:
        return out
    terms = node.blocks.reshape(-1).take(order)
    path = np.cumsum(terms)
    before = path[starts] - terms[starts]
    if run is None:
        read, first = path, starts
    else:
        last = np.ones(order.size, dtype=bool)
        np.not_equal(run[1:], run[:-1], out=last[:-1])
        last[starts[1:] - 1] = True  # each segment's last member ends its run
        ends = np.flatnonzero(last)
        read, first = path[ends], np.searchsorted(ends, starts)
    out[:, 0] = np.maximum(np.maximum.reduceat(read, first) - before, 0)
    out[:, 1] = np.minimum(np.minimum.reduceat(read, first) - before, 0)
    out[:, 2] = path[np.append(starts[1:], order.size) - 1] - before
    out[:, 3] = np.add.reduceat(node.variance.take(order), starts)
    return out

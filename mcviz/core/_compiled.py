r"""The evaluator's and the membership plan's inner loops, compiled by numba.

Imported only through :mod:`mcviz.core.kernels` (which loads numba when the work is worth its
import): every function here computes exactly what the numpy code beside it computes, one
subpopulation after another, in one pass over its members.

* :func:`flat_members` is :meth:`~mcviz.core.membership.MembershipPlan.members_from_codes`:
  each spec keeps the rows of its parent (every row for a root) whose codes pass each of the
  conditions it adds, every condition a table lookup ``table[code]`` (a comparison of codes is
  the same lookup in a table of the comparison's results over all codes). The members of
  every spec are written one after another into one array: a spec's parent's rows are a slice
  of what was written before it.
* :func:`walk` is the eq. (5) pass of :meth:`~mcviz.core.evaluator.Evaluator.summaries` for one
  set of responses: per subpopulation :math:`\sum W`, :math:`\sum S(1-S)W^2`, the pooled floor
  :math:`\sum \hat v W^2`, the offset :math:`\sum W(R-S)` and the highest and lowest point of
  the unnormalised path of eq. (1) at the ends of tie runs, the start included (eq. (2) is
  :math:`D_k = (h - l)/\sum W`). The path is summed member by member in score order, the same
  sequence of additions as numpy's ``cumsum`` of the members' values, so the offset and the
  extremes are those of the numpy pass to the last bit for subpopulations the numpy pass
  sums in one piece; :math:`\sum W` and the variance are summed sequentially (numpy's
  ``add.reduceat`` sums pairwise), equal to rounding.

References
----------
.. [1] I. Guy et al., "Measuring multi-calibration", 2025; eqs. (1), (2), (5).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["flat_members", "walk"]

_compile = numba.njit(nogil=True, cache=True)


@_compile
def flat_members(codes, parent, condition_start, condition_column, table_start, tables, n,
                 index):  # pragma: no cover - compiled (tests call it through the plan)
    """Members of every spec, written one after another into ``index``.

    Parameters
    ----------
    codes : int32 array (columns, n)
        The plan's codes of each column its conditions name (row j of column c:
        ``codes[c, j]``).
    parent : int64 array (specs,)
        Position of each spec's parent among the specs (earlier), or -1: every row.
    condition_start : int64 array (specs + 1,)
        Spec k adds the conditions ``condition_start[k]:condition_start[k + 1]``.
    condition_column, table_start : int64 arrays (conditions,)
        The column of each condition, and where its table starts in ``tables``.
    tables : bool array
        The tables one after another: condition c holds on code x when
        ``tables[table_start[c] + x]``.
    n : int
        Rows.
    index : int32 array
        The buffer to write into (a new, larger one is made when the members are more; a
        buffer used again costs no page faults, which cost more than the loop on a VM).

    Returns
    -------
    index, total, start, length
        Spec k's members (sorted row positions) are ``index[start[k]:start[k] + length[k]]``;
        ``index[:total]`` holds them all (the buffer may be longer).
    """
    specs = parent.size
    start = np.empty(specs, np.int64)
    length = np.empty(specs, np.int64)
    parent_rows = np.empty(n, index.dtype)  # a copy of the parent's rows: read apart from
    m = 0  # the buffer written (measured: a third faster than reading the buffer itself)
    rows_filled = False
    for k in range(specs):
        p = parent[k]
        source = n if p < 0 else length[p]
        if m + source + 1 > index.size:  # grow by half (+1: the row written, not kept)
            bigger = np.empty(max(index.size + index.size // 2, m + source + 1), index.dtype)
            bigger[:m] = index[:m]
            index = bigger
        if p >= 0:
            rows_filled = False
            parent_rows[:source] = index[start[p]:start[p] + source]
        elif not rows_filled:  # a root reads every row: 0, 1, ..., n - 1
            for i in range(n):
                parent_rows[i] = i
            rows_filled = True
        start[k] = m
        out = index[m:]
        kept = 0
        first, last = condition_start[k], condition_start[k + 1]
        if last == first:  # nothing added: the parent's rows
            out[:source] = parent_rows[:source]
            kept = source
        elif last == first + 1:  # one condition (Algorithm 1 adds one a level)
            column = codes[condition_column[first]]
            table = tables[table_start[first]:]
            for i in range(source):  # branch-free: written always, kept when it holds
                row = parent_rows[i]
                out[kept] = row
                kept += table[column[row]]
        else:
            for i in range(source):
                row = parent_rows[i]
                keep = 1
                for c in range(first, last):
                    keep &= tables[table_start[c] + codes[condition_column[c], row]]
                out[kept] = row
                kept += keep
        m += kept
        length[k] = kept
    return index, m, start, length


@_compile
def walk(rows, floor, index, start, length, offset, high, low, weight_sum, variance_sum,
         floor_sum):  # pragma: no cover - compiled
    r"""Eq. (5) summaries of each subpopulation, in one pass over its members.

    Parameters
    ----------
    rows : float64 array (n, 4)
        Per row :math:`W(R - S)` (weighted already), :math:`S(1 - S)W^2`, :math:`W`, and the
        position of the first row of the next tie run (n after the last): one cache line
        holds what a member needs.
    floor : float64 array (n,) or (0,)
        :math:`\hat v W^2`; empty: none (floor 0).
    index, start, length : int arrays
        Subpopulation k's members are ``index[start[k]:start[k] + length[k]]`` (sorted).
    offset, high, low, weight_sum, variance_sum, floor_sum : float64 arrays (l,)
        Filled: the path's rise, its highest and lowest point at tie-run ends (the start, 0,
        included), :math:`\sum W`, :math:`\sum S(1-S)W^2`, :math:`\sum \hat v W^2`.
    """
    floored = floor.size > 0
    for k in range(start.size):
        first = start[k]
        stop = first + length[k]
        path = 0.0
        top = 0.0
        bottom = 0.0
        var = 0.0
        total = 0.0
        pooled = 0.0
        for i in range(first, stop):
            row = index[i]
            path += rows[row, 0]  # eq. (1), unnormalised: the same additions as a cumsum
            var += rows[row, 1]
            total += rows[row, 2]
            if floored:
                pooled += floor[row]
            # a new extreme counts where the member is the last of its tie run (a point of
            # the path); tested in that order: new extremes are rare, the test is a load
            if (path > top or path < bottom) and (
                    i + 1 == stop or index[i + 1] >= rows[row, 3]):
                if path > top:
                    top = path
                else:
                    bottom = path
        offset[k] = path
        high[k] = top
        low[k] = bottom
        weight_sum[k] = total
        variance_sum[k] = var
        floor_sum[k] = pooled

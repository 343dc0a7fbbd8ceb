"""Local calibration: k-NN and kernel groups around centres in input space."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.spatial import cKDTree

from mcviz.budget import (
    Budget,
    Progress,
    as_budget,
    check,
    format_bytes,
    format_seconds,
    kernel_estimate,
    knn_estimate,
    report_progress,
)
from mcviz.core.arrays import readonly as _readonly
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.stats.groupings._sums import SUM_KEYS, _from_sums
from mcviz.stats.groupings.input_space import (
    _centres,
    _check_k,
    _n_centres,
    input_space,
    space_shape,
)
from mcviz.stats.groupings.neighbours import (
    BYTES_PER_CELL,
    _cover,
    _distinct_inputs,
    _group_matrix,
    _Inputs,
    _Searcher,
)
from mcviz.stats.groupings.results import GroupErrors, InputSpace, LocalCalibration, Scaling

CHUNK_NEIGHBOURS = 1_000_000
"""At most this many (centre, candidate) cells are searched at once (bounds the search's memory;
a smaller memory budget lowers it, :func:`_search_cells`)."""

PILOT_CENTRES = 64
"""The first chunk of a k-NN search is this small: its time projects the whole search's."""

MAX_PAIRS = 30_000_000
"""Kernel groups and the k trade-off refuse to hold more (centre, neighbour) pairs than this."""

GAUSSIAN_CUTOFF = 4.0
"""Gaussian kernels are truncated at this many bandwidths (the dropped mass is below 1e-3)."""


def _search_cells(budget: Budget, fixed: int) -> int:
    """Cells searched at once: :data:`CHUNK_NEIGHBOURS`, fewer when the budget leaves less room.

    The room is the budget less the O(n) part of the estimate; half of it goes to one chunk's
    search (the other half to what the chunks' results add up to).
    """
    room = max(budget.bytes - fixed, 0) // 2
    return max(1_000, min(CHUNK_NEIGHBOURS, room // BYTES_PER_CELL))


@dataclass(frozen=True, slots=True, eq=False)
class _Prepared:
    """An input space with its distinct inputs and the (distinct) inputs of the centres."""

    space: InputSpace
    centres: np.ndarray  # rows (score order) at which groups are formed
    sampled: bool
    inputs: _Inputs
    queries: np.ndarray  # distinct inputs of the centres
    inverse: np.ndarray  # position in ``queries`` of each centre
    multiplicity: np.ndarray  # centres sharing each query
    budget: Budget
    cells: int  # (centre, candidate) cells searched at once


def _prepare(
    pred: Predictions,
    covariates: Sequence[str] | None,
    *,
    scaling: Scaling,
    max_centres: int | None,
    seed: int,
    k: int,
    budget: Budget | int | str | None,
    progress: Progress | None,
) -> _Prepared:
    """Check the cost against the budget, then standardise and merge identical inputs."""
    if scaling not in ("robust", "standard"):
        raise ValidationError(f"scaling must be 'robust' or 'standard', not {scaling!r}.")
    shape = space_shape(pred, covariates)
    budget = as_budget(budget)
    fixed = knn_estimate(pred.n, numeric=shape.numeric, nominal=shape.nominal,
                         levels=shape.levels, centres=1, k=1, chunk=0,
                         level_counts=shape.level_counts).bytes
    cells = _search_cells(budget, fixed)
    check(
        knn_estimate(
            pred.n, numeric=shape.numeric, nominal=shape.nominal, levels=shape.levels,
            centres=_n_centres(pred.n, max_centres), k=k, chunk=cells,
            level_counts=shape.level_counts,
        ),
        budget,
    )
    report_progress(progress, 0.0, "standardising the input space")
    space = input_space(pred, shape.names, scaling=scaling)
    centres, sampled = _centres(pred.n, max_centres, seed)
    report_progress(progress, 0.03, "merging identical inputs")
    inputs = _distinct_inputs(pred, space)
    queries, inverse, multiplicity = np.unique(
        inputs.of_row[centres], return_inverse=True, return_counts=True
    )
    return _Prepared(space=space, centres=centres, sampled=sampled, inputs=inputs, queries=queries,
                     inverse=inverse.ravel(), multiplicity=multiplicity, budget=budget, cells=cells)


def local_calibration(
    pred: Predictions,
    covariates: Sequence[str] | None = None,
    *,
    k: int = 100,
    scaling: Scaling = "robust",
    max_centres: int | None = None,
    seed: int = 0,
    budget: Budget | int | str | None = None,
    progress: Progress | None = None,
) -> LocalCalibration:
    r"""Local calibration error of every point from its k nearest neighbours in input space.

    Parameters
    ----------
    pred : Predictions
    covariates : sequence of str, optional
        Covariates spanning the input space (default: all); see :func:`input_space`.
    k : int, default 100
        Group size. Larger k: smaller variance (Proposition 3 of [1], standard error about
        :math:`\sqrt{\bar S(1-\bar S)/k}`) but groups reaching further (Proposition 2: local
        miscalibration of opposite signs averages away). See :func:`neighbourhood_tradeoff`.
    scaling : {"robust", "standard"}
    max_centres : int, optional
        Estimate at a seeded random sample of this many centres (neighbours are always searched
        among all observations). Default: every observation.
    seed : int, default 0
    budget : Budget, int, str or None
        Memory (and time) budget; see :mod:`mcviz.budget`. Default: ``MCVIZ_MEMORY_BUDGET`` or a
        share of the machine's memory.
    progress : callable, optional
        ``progress(fraction, text)``, called as the search advances; it may raise (e.g.
        :class:`mcviz.budget.Cancelled`) to stop the computation, which leaves no state behind.

    Returns
    -------
    LocalCalibration

    Raises
    ------
    ValidationError
        For bad arguments, or before anything is computed when the estimated cost
        (:func:`mcviz.budget.knn_estimate`) exceeds the budget.

    Notes
    -----
    For each centre :math:`x`, let :math:`r_k(x)` be the distance of its k-th nearest
    observation (the centre included; Euclidean distance in the standardised space, found
    exactly with k-d trees, :mod:`mcviz.stats.groupings.neighbours`). The group is every observation
    within that distance,

    .. math:: I_x = \{ i : \|x_i - x\| \le r_k(x) \}, \qquad |I_x| \ge k,

    so observations tied at the k-th distance - in particular all observations sharing an
    input - are all in or all out (footnotes 3 and 11 of [1]) and no result depends on the
    order of the rows. The local error is :math:`c(I_x)` of eq. (6) of [1] with the sign of
    this package, response minus score: the estimator of
    :math:`\mathbb{E}[Y \mid X = x] - \hat p(x)` (Proposition 5 of [1] with the sign reversed).
    ``groups.size`` holds :math:`|I_x|`; ``radius`` holds :math:`r_k(x)` (0 when k observations
    share the input).

    Cost: memory O(n) in the rows plus O(centres × k) for one chunk of the search, whatever
    the number of category levels; time about centres × k tree steps (each centre searches its
    own combination of nominal levels, and the other cells only when its k-th distance there is
    at least 1). Measured (``benchmarks/bench_groupings.py``, k = 100): 10^5 rows with four
    numeric and one 12-level nominal covariate, every row a centre, about 6 CPU seconds; 10^6
    rows with a 500-level nominal covariate and 2,000 centres, about 2.5 CPU seconds and 0.3 GB.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=200)
    >>> pred = Predictions.from_arrays(np.full(200, 0.5), (x > 0).astype(int),
    ...                                covariates={"x": x})
    >>> local = local_calibration(pred, k=20)
    >>> bool(local.groups.error[np.argmin(x[pred.row])] < -0.4)
    True
    """
    k = _check_k(k, pred.n)
    prep = _prepare(
        pred, covariates, scaling=scaling, max_centres=max_centres, seed=seed, k=k,
        budget=budget, progress=progress,
    )
    total, size, radius, covered = _search(prep, k, progress)
    inputs = prep.inputs
    report_progress(progress, 0.95, "assembling the group errors")
    return LocalCalibration(
        groups=_knn_groups(pred, prep, k, seed, total, size),
        method="k-NN",
        k=k,
        bandwidth=None,
        kernel=None,
        radius=_readonly(radius[prep.inverse]),
        membership=_readonly(np.rint(covered[inputs.of_row]).astype(np.int64)),
        space=prep.space,
        sampled=prep.sampled,
        seed=seed,
    )


def _knn_groups(pred: Predictions, prep: _Prepared, k: int, seed: int, total: np.ndarray,
                size: np.ndarray) -> GroupErrors:
    """Return the k-NN groups (one per centre) from the searched sums and sizes per input."""
    total = total[prep.inverse]
    sums = {key: np.ascontiguousarray(total[:, j]) for j, key in enumerate(SUM_KEYS)}
    note = f", {prep.centres.size:,} sampled centres (seed {seed})" if prep.sampled else ""
    description = (f"{k} nearest neighbours (ties at the k-th distance included) in "
                   f"({', '.join(prep.space.covariates)}){note}")
    return _centre_groups(pred, prep, "k-NN", description,
                          np.rint(size[prep.inverse]).astype(np.int64), sums)


def _centre_groups(pred: Predictions, prep: _Prepared, kind: str, description: str,
                   size: np.ndarray, sums: dict[str, np.ndarray]) -> GroupErrors:
    """Return one overlapping group per centre, labelled by its row, from its sums."""
    return _from_sums(
        pred=pred, kind=kind, description=description,
        labels=[f"row {r}" for r in pred.row[prep.centres]], size=size,
        mass=pred.weight[prep.centres].astype(float), centre=prep.centres, overlapping=True,
        notice=None, sums=sums,
    )


def _search(
    prep: _Prepared, k: int, progress: Progress | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Search every query's group in chunks: summed terms, sizes, radii and coverage.

    The first chunk is a pilot of :data:`PILOT_CENTRES` queries whose time projects the rest
    (:func:`_check_pace`); each later chunk holds as many queries as fit ``prep.cells`` at the
    width the previous one needed.
    """
    inputs, queries = prep.inputs, prep.queries
    searcher = _Searcher(inputs)
    u = inputs.count.size
    totals, sizes, radii = [], [], []
    covered = np.zeros(u)  # groups containing each distinct input (Proposition 4)
    what = f"searching the {k} nearest neighbours of {queries.size:,} centres"
    started, start = time.monotonic(), 0
    step = min(PILOT_CENTRES, queries.size)  # the pilot: its time projects the rest
    while start < queries.size:
        stop = min(start + step, queries.size)
        report_progress(progress, 0.05 + 0.9 * start / queries.size, what)
        distance, index, radius = _cover(searcher, queries[start:stop], k, prep.cells)
        groups_of = _group_matrix(distance, index, radius, u)
        totals.append(groups_of @ inputs.terms)
        sizes.append(groups_of @ inputs.count)
        radii.append(radius)
        covered += groups_of.T @ prep.multiplicity[start:stop].astype(float)
        if start == 0:
            _check_pace(time.monotonic() - started, stop, queries.size, prep)
        # the next chunk: as many centres as fit the cells at the width this one needed, at
        # least 20 chunks for progress reports when there are many centres
        width = max(distance.shape[1], k)
        step = max(1, min(prep.cells // width, max(256, -(-queries.size // 20))))
        start = stop
    return (np.vstack(totals), np.concatenate(sizes), np.concatenate(radii), covered)


def _check_pace(seconds: float, done: int, total: int, prep: _Prepared) -> None:
    """Refuse a search whose first chunk projects past the time budget (when one is set)."""
    if prep.budget.seconds is None or done >= total:
        return
    projected = seconds * total / max(done, 1)
    if projected > prep.budget.seconds:
        raise ValidationError(
            f"refused after measuring: the k-NN search took {format_seconds(seconds)} for its "
            f"first {done:,} of {total:,} centres, so all would take about "
            f"{format_seconds(projected)} (time budget {format_seconds(prep.budget.seconds)}, "
            f"memory held to chunks of {format_bytes(prep.cells * BYTES_PER_CELL)}). To run "
            "it: choose fewer centres (max_centres) or a smaller k, or fewer covariates "
            "(nominal ones with many levels make each search wider). The time budget is set "
            "by MCVIZ_TIME_BUDGET."
        )


def _pairs_within(
    searcher: _Searcher, centres: np.ndarray, reach: float, limit: int,
    affordable: Callable[[int], object] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (centre, distinct input) pair within ``reach``: rows, columns, distances.

    Counts the pairs first (an upper bound when other cells can be in reach) and refuses more
    than ``limit`` - or, through ``affordable(pairs)``, more than the memory budget holds -
    before allocating them.
    """
    inputs = searcher.inputs
    cells = inputs.cell[centres] if searcher.nominal else np.zeros(centres.size, np.int64)
    unique_cells = np.unique(cells)
    own = [(np.flatnonzero(cells == c), int(c)) for c in unique_cells]
    trees = [cKDTree(searcher.points[centres[rows]]) for rows, _ in own]
    other = searcher.nominal and reach**2 > 1
    other_reach = np.sqrt(max(reach**2 - 1.0, 0.0)) * (1 + 1e-12)
    counted = sum(
        int(tree.count_neighbors(searcher.cell_tree(c), reach))
        for tree, (_, c) in zip(trees, own, strict=True)
    )
    all_centres = cKDTree(searcher.points[centres]) if other else None
    if other:
        counted += int(all_centres.count_neighbors(searcher.all_tree(), other_reach))
    if counted > limit:
        raise ValidationError(
            f"the kernel groups would hold {counted:,} (centre, observation) pairs (limit "
            f"{limit:,}); choose a smaller bandwidth or fewer centres (max_centres)."
        )
    if affordable is not None:
        affordable(counted)
    rows, cols, dist = [], [], []
    for tree, (members_of, c) in zip(trees, own, strict=True):
        pairs = tree.sparse_distance_matrix(searcher.cell_tree(c), reach, output_type="ndarray")
        # one cell holding every centre (no nominal covariates): the tree indices are the
        # answer already, no gather of the pairs through the identity
        rows.append(pairs["i"] if members_of.size == centres.size else (
            np.take(members_of, pairs["i"])))
        cols.append(np.take(searcher.cell_members(c), pairs["j"]) if searcher.nominal else (
            pairs["j"]))
        dist.append(pairs["v"])
    if other:
        pairs = all_centres.sparse_distance_matrix(
            searcher.all_tree(), other_reach, output_type="ndarray"
        )
        i, j = pairs["i"].astype(np.int64), pairs["j"].astype(np.int64)
        gap = (inputs.codes[j] != inputs.codes[centres[i]]).sum(axis=1)
        d2 = pairs["v"] ** 2 + gap
        keep = (gap > 0) & (d2 <= reach**2)
        rows.append(i[keep])
        cols.append(j[keep])
        dist.append(np.sqrt(d2[keep]))
    return tuple(np.ascontiguousarray(part[0], dtype=dtype) if len(part) == 1 else (
        np.concatenate(part).astype(dtype, copy=False))
        for part, dtype in ((rows, np.int64), (cols, np.int64), (dist, float)))


def _kernel_sums(
    prep: _Prepared, rows: np.ndarray, cols: np.ndarray, distance: np.ndarray,
    bandwidth: float, kernel: str,
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Kernel-weighted sizes, coverage and sums of the terms over the (centre, input) pairs."""
    inputs = prep.inputs
    # K(u), u = distance / bandwidth, in place: the pairs are many (up to MAX_PAIRS) and every
    # fresh array of that length costs its page faults
    kernel_weight = distance  # a fresh array of _pairs_within
    kernel_weight /= bandwidth
    np.square(kernel_weight, out=kernel_weight)
    if kernel == "epanechnikov":
        np.subtract(1.0, kernel_weight, out=kernel_weight)
    else:
        kernel_weight *= -0.5
        np.exp(kernel_weight, out=kernel_weight)
    positive = kernel_weight > 0
    if not positive.all():  # pairs exactly at the reach (Epanechnikov weight 0)
        rows, cols, kernel_weight = (np.compress(positive, a) for a in (rows, cols, kernel_weight))
    q = prep.queries.size
    buffer = np.empty(kernel_weight.size)

    def summed(values, at, by, weight=None, length=q):
        """Sum over pairs, grouped by ``by``, of ``values[at]`` (times ``weight``)."""
        np.take(np.asarray(values, dtype=float), at, out=buffer)
        if weight is not None:
            np.multiply(buffer, weight, out=buffer)
        return np.bincount(by, weights=buffer, minlength=length)

    # Per distinct input the terms are sums of w, w², w d, w² d², w² spread, w s: the kernel
    # multiplies the first kind once and the second (squared weights) twice.
    power = (1, 2, 1, 2, 2, 1)
    terms = np.asfortranarray(inputs.terms)  # each column contiguous for its gather
    size = summed(inputs.count, cols, rows)[prep.inverse]
    covered = summed(prep.multiplicity, rows, cols, length=inputs.count.size)
    sums = {}
    for p in (1, 2):  # K first, then K² in place (no second array of the pairs' length)
        if p == 2:
            np.square(kernel_weight, out=kernel_weight)
        for j, key in enumerate(SUM_KEYS):
            if power[j] == p:
                sums[key] = summed(terms[:, j], cols, rows, kernel_weight)[prep.inverse]
    return size, covered, sums


def kernel_calibration(
    pred: Predictions,
    covariates: Sequence[str] | None = None,
    *,
    bandwidth: float = 0.5,
    kernel: Literal["epanechnikov", "gaussian"] = "epanechnikov",
    scaling: Scaling = "robust",
    max_centres: int | None = 10_000,
    seed: int = 0,
    budget: Budget | int | str | None = None,
    progress: Progress | None = None,
) -> LocalCalibration:
    r"""Kernel-weighted local calibration errors around each centre (eq. (9), Prop. 6 of [1]).

    Parameters
    ----------
    pred : Predictions
    covariates : sequence of str, optional
    bandwidth : float, default 0.5
        :math:`\gamma` in standardised units (1 = one robust standard deviation of a numeric
        covariate, or the distance between two levels of a nominal one).
    kernel : {"epanechnikov", "gaussian"}
        :math:`K(u) = 1 - u^2` for :math:`u < 1`, or :math:`e^{-u^2/2}` truncated at
        :math:`u = 4`; :math:`u = \|x - x'\| / \gamma`.
    scaling : {"robust", "standard"}
    max_centres : int or None, default 10,000
        Estimate at a seeded sample of this many centres (None: every observation; the cost
        grows with the number of pairs within reach, refused above ``MAX_PAIRS``).
    seed : int, default 0
    budget, progress
        As for :func:`local_calibration`.

    Returns
    -------
    LocalCalibration
        ``groups.size`` counts observations with positive kernel weight, ``effective_size``
        Kish's effective number; ``radius`` is the kernel's reach.

    Notes
    -----
    .. math:: C(q_x) = \frac{\sum_i W_i K(\|x - x_i\|/\gamma)(R_i - S_i)}
                            {\sum_i W_i K(\|x - x_i\|/\gamma)}

    is eq. (9) of [1] with the kernel distribution :math:`q_x` of Proposition 6, in this
    package's sign (response minus score). Every centre lies in its own group, so no group is
    empty.
    """
    if not np.isfinite(bandwidth) or bandwidth <= 0:
        raise ValidationError(f"bandwidth must be a positive number, not {bandwidth!r}.")
    if kernel not in ("epanechnikov", "gaussian"):
        raise ValidationError(f"kernel must be 'epanechnikov' or 'gaussian', not {kernel!r}.")
    m = _n_centres(pred.n, max_centres)
    prep = _prepare(
        pred, covariates, scaling=scaling, max_centres=max_centres, seed=seed,
        k=max(1, min(pred.n, MAX_PAIRS // m)), budget=budget, progress=progress,
    )
    inputs = prep.inputs
    reach = bandwidth * (1.0 if kernel == "epanechnikov" else GAUSSIAN_CUTOFF)
    report_progress(progress, 0.1, f"finding the pairs within reach of {m:,} centres")
    columns = prep.space.numeric.shape[1] + prep.space.codes.shape[1]
    rows, cols, distance = _pairs_within(
        _Searcher(inputs), prep.queries, reach, MAX_PAIRS,
        lambda pairs: check(kernel_estimate(pred.n, columns=columns, centres=m, pairs=pairs),
                            prep.budget),
    )
    report_progress(progress, 0.8, "summing the kernel groups")
    size, covered, sums = _kernel_sums(prep, rows, cols, distance, bandwidth, kernel)
    sums = {key: sums[key] for key in SUM_KEYS}
    note = f", {m:,} sampled centres (seed {seed})" if prep.sampled else ""
    description = (f"{kernel} kernel, bandwidth {bandwidth:g}, in "
                   f"({', '.join(prep.space.covariates)}){note}")
    groups = _centre_groups(pred, prep, "kernel", description, np.rint(size).astype(np.int64),
                            sums)
    report_progress(progress, 1.0, "done")
    return LocalCalibration(
        groups=groups,
        method="kernel",
        k=None,
        bandwidth=float(bandwidth),
        kernel=kernel,
        radius=_readonly(np.full(prep.centres.size, reach)),
        membership=_readonly(np.rint(covered[inputs.of_row]).astype(np.int64)),
        space=prep.space,
        sampled=prep.sampled,
        seed=seed,
    )

"""Local calibration: k-NN and kernel groups around centres, the k trade-off."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from mcviz.errors import ValidationError
from mcviz.groupings._sums import _check_columns, _error_and_se, _from_sums, _per_point
from mcviz.groupings.input_space import _centres, _check_k, input_space
from mcviz.groupings.neighbours import (
    _SUM_KEYS,
    TIE_TOLERANCE,
    _covering_query,
    _distinct_inputs,
    _group_matrix,
    _Searcher,
)
from mcviz.groupings.results import (
    LocalCalibration,
    LocalErrorDistribution,
    LocalMap,
    NeighbourhoodTradeoff,
    Scaling,
    _readonly,
)
from mcviz.io import Predictions

MAX_MAP_POINTS = 10_000
"""The local-calibration map carries at most this many points (a seeded sample)."""

MAX_CELLS = 64
"""Nearest-neighbour search splits rows by nominal levels when there are at most this many
combinations of levels (see ``_Searcher``)."""

CHUNK_NEIGHBOURS = 5_000_000
"""Neighbours searched per chunk by :func:`local_calibration` (bounds its memory)."""

MAX_PAIRS = 30_000_000
"""Kernel groups and the k trade-off refuse to hold more (centre, neighbour) pairs than this."""

GAUSSIAN_CUTOFF = 4.0
"""Gaussian kernels are truncated at this many bandwidths (the dropped mass is below 1e-3)."""


def local_calibration(
    pred: Predictions,
    covariates: Sequence[str] | None = None,
    *,
    k: int = 100,
    scaling: Scaling = "robust",
    max_centres: int | None = None,
    seed: int = 0,
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

    Returns
    -------
    LocalCalibration

    Notes
    -----
    For each centre :math:`x`, let :math:`r_k(x)` be the distance of its k-th nearest
    observation (the centre included; Euclidean distance in the standardised space, found with
    scipy's ``cKDTree``). The group is every observation within that distance,

    .. math:: I_x = \{ i : \|x_i - x\| \le r_k(x) \}, \qquad |I_x| \ge k,

    so observations tied at the k-th distance - in particular all observations sharing an
    input - are all in or all out (footnotes 3 and 11 of [1]) and no result depends on the
    order of the rows. The local error is :math:`c(I_x)` of eq. (6) of [1], the estimator of
    :math:`\hat p(x) - \mathbb{E}[Y \mid X = x]` of Proposition 5. ``groups.size`` holds
    :math:`|I_x|`; ``radius`` holds :math:`r_k(x)` (0 when k observations share the input).

    Cost: the k-d tree search grows quickly with the number of numeric dimensions; nominal
    covariates with at most ``MAX_CELLS`` level combinations are searched cell by cell. With
    k = 100 and 10^5 rows it takes about 2-3 CPU seconds with two or three numeric covariates
    and about 17 with four numeric covariates and a 12-level nominal one
    (``benchmarks/bench_groupings.py``); for wide spaces estimate at a sample of centres
    (``max_centres``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=200)
    >>> pred = Predictions.from_arrays(np.full(200, 0.5), (x > 0).astype(int),
    ...                                covariates={"x": x})
    >>> local = local_calibration(pred, k=20)
    >>> bool(local.groups.error[np.argmin(x[pred.row])] > 0.4)
    True
    """
    k = _check_k(k, pred.n)
    space = input_space(pred, covariates, scaling=scaling)
    centres, sampled = _centres(pred.n, max_centres, seed)
    inputs = _distinct_inputs(pred, space)
    queries, inverse, multiplicity = np.unique(
        inputs.of_row[centres], return_inverse=True, return_counts=True
    )
    searcher = _Searcher(inputs.matrix, space.nominal)
    u = inputs.count.size
    # Search in chunks of about CHUNK_NEIGHBOURS neighbours, so memory stays bounded for any k.
    step = max(1, CHUNK_NEIGHBOURS // k)
    totals, sizes, radii = [], [], []
    covered = np.zeros(u)  # groups containing each distinct input (Proposition 4)
    for start in range(0, queries.size, step):
        chunk = queries[start : start + step]
        distance, index, radius = _covering_query(searcher, inputs.matrix[chunk], k, inputs.count)
        groups_of = _group_matrix(distance, index, radius, u)
        totals.append(groups_of @ inputs.terms)
        sizes.append(groups_of @ inputs.count)
        radii.append(radius)
        covered += groups_of.T @ multiplicity[start : start + step].astype(float)
    total = np.vstack(totals)[inverse.ravel()]
    sums = {key: np.ascontiguousarray(total[:, j]) for j, key in enumerate(_SUM_KEYS)}
    size = np.rint(np.concatenate(sizes)[inverse.ravel()]).astype(np.int64)
    radius = np.concatenate(radii)[inverse.ravel()]
    membership = np.rint(covered[inputs.of_row]).astype(np.int64)
    labels = [f"row {r}" for r in pred.row[centres]]
    note = f", {centres.size:,} sampled centres (seed {seed})" if sampled else ""
    groups = _from_sums(
        pred=pred,
        kind="k-NN",
        description=(
            f"{k} nearest neighbours (ties at the k-th distance included) in "
            f"({', '.join(space.covariates)}){note}"
        ),
        labels=labels,
        size=size,
        mass=pred.weight[centres].astype(float),
        centre=centres,
        overlapping=True,
        notice=None,
        **sums,
    )
    return LocalCalibration(
        groups=groups,
        method="k-NN",
        k=k,
        bandwidth=None,
        kernel=None,
        radius=_readonly(radius),
        membership=_readonly(membership),
        space=space,
        sampled=sampled,
        seed=seed,
    )


def kernel_calibration(
    pred: Predictions,
    covariates: Sequence[str] | None = None,
    *,
    bandwidth: float = 0.5,
    kernel: Literal["epanechnikov", "gaussian"] = "epanechnikov",
    scaling: Scaling = "robust",
    max_centres: int | None = 10_000,
    seed: int = 0,
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
        grows with the number of pairs within reach).
    seed : int, default 0

    Returns
    -------
    LocalCalibration
        ``groups.size`` counts observations with positive kernel weight, ``effective_size``
        Kish's effective number; ``radius`` is the kernel's reach.

    Notes
    -----
    .. math:: C(q_x) = \frac{\sum_i W_i K(\|x - x_i\|/\gamma)(S_i - R_i)}
                            {\sum_i W_i K(\|x - x_i\|/\gamma)}

    is eq. (9) of [1] with the kernel distribution :math:`q_x` of Proposition 6. Every centre
    lies in its own group, so no group is empty.
    """
    if not np.isfinite(bandwidth) or bandwidth <= 0:
        raise ValidationError(f"bandwidth must be a positive number, not {bandwidth!r}.")
    if kernel not in ("epanechnikov", "gaussian"):
        raise ValidationError(f"kernel must be 'epanechnikov' or 'gaussian', not {kernel!r}.")
    space = input_space(pred, covariates, scaling=scaling)
    centres, sampled = _centres(pred.n, max_centres, seed)
    reach = bandwidth * (1.0 if kernel == "epanechnikov" else GAUSSIAN_CUTOFF)
    tree = cKDTree(space.matrix)
    centre_tree = cKDTree(space.matrix[centres])
    n_pairs = int(centre_tree.count_neighbors(tree, reach))
    if n_pairs > MAX_PAIRS:
        raise ValidationError(
            f"bandwidth {bandwidth:g} puts {n_pairs:,} observations in the {centres.size:,} "
            f"kernel groups (limit {MAX_PAIRS:,}); choose a smaller bandwidth or fewer centres "
            "(max_centres)."
        )
    pairs = centre_tree.sparse_distance_matrix(tree, reach, output_type="ndarray")
    rows = pairs["i"].astype(np.int64)
    cols = pairs["j"].astype(np.int64)
    u = pairs["v"] / bandwidth
    # The 'ndarray' output keeps pairs at distance 0 (the centre itself, duplicates).
    kernel_weight = 1.0 - u**2 if kernel == "epanechnikov" else np.exp(-0.5 * u**2)
    positive = kernel_weight > 0
    rows, cols, kernel_weight = rows[positive], cols[positive], kernel_weight[positive]
    terms = _per_point(pred)
    v = terms["w"][cols] * kernel_weight
    d = terms["d"][cols]
    m = centres.size

    def total(values: np.ndarray) -> np.ndarray:
        return np.bincount(rows, weights=values, minlength=m)

    sums = {
        "v_sum": total(v),
        "v2_sum": total(v * v),
        "vd_sum": total(v * d),
        "vd2_sum": total(v * v * d * d),
        "var_sum": total(v * v * terms["spread"][cols]),
        "vs_sum": total(v * terms["s"][cols]),
    }
    size = np.bincount(rows, minlength=m)
    membership = np.bincount(cols, minlength=pred.n)
    note = f", {m:,} sampled centres (seed {seed})" if sampled else ""
    groups = _from_sums(
        pred=pred,
        kind="kernel",
        description=(
            f"{kernel} kernel, bandwidth {bandwidth:g}, in ({', '.join(space.covariates)}){note}"
        ),
        labels=[f"row {r}" for r in pred.row[centres]],
        size=size,
        mass=pred.weight[centres].astype(float),
        centre=centres,
        overlapping=True,
        notice=None,
        **sums,
    )
    return LocalCalibration(
        groups=groups,
        method="kernel",
        k=None,
        bandwidth=float(bandwidth),
        kernel=kernel,
        radius=_readonly(np.full(m, reach)),
        membership=_readonly(membership),
        space=space,
        sampled=sampled,
        seed=seed,
    )


# --------------------------------------------------------------------------------------------
# Views of local errors


def local_calibration_map(
    local: LocalCalibration,
    pred: Predictions,
    x: str,
    y: str,
    *,
    max_points: int = MAX_MAP_POINTS,
    seed: int = 0,
) -> LocalMap:
    """Points for a scatter of the local errors over two covariates (a seeded sample).

    Parameters
    ----------
    local : LocalCalibration
    pred : Predictions
        The predictions ``local`` was computed from.
    x, y : str
        Covariates for the axes (any covariates, not only those spanning the input space).
    max_points : int, default 10,000
        At most this many centres are drawn, a seeded uniform sample when there are more.
    seed : int, default 0

    Returns
    -------
    LocalMap
    """
    _check_columns(pred, [x, y])
    centres = local.groups.centre
    total = centres.size
    if total > max_points:
        pick = np.sort(np.random.default_rng(seed).choice(total, size=max_points, replace=False))
    else:
        pick = np.arange(total)

    def values(name: str) -> np.ndarray:
        series = pred.covariates[name].iloc[centres[pick]]
        if isinstance(series.dtype, pd.CategoricalDtype):
            return series.astype(object).where(series.notna(), "missing").to_numpy()
        return series.to_numpy()

    what = (
        f"k-NN, k = {local.k}" if local.method == "k-NN"
        else f"{local.kernel} kernel, bandwidth {local.bandwidth:g}"
    )
    shown = (
        f"a seeded sample (seed {seed}) of {pick.size:,} of {total:,} points"
        if pick.size < total else f"all {total:,} points"
    )
    return LocalMap(
        x=_readonly(values(x)),
        y=_readonly(values(y)),
        error=_readonly(local.groups.error[pick].copy()),
        x_name=x,
        y_name=y,
        n_total=total,
        n_shown=int(pick.size),
        note=f"local error c(I) = mean(score − label), {what}; {shown}",
    )


def _weighted_quantiles(values: np.ndarray, mass: np.ndarray, q: Sequence[float]) -> np.ndarray:
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(mass[order])
    cumulative /= cumulative[-1]
    position = np.searchsorted(cumulative, np.asarray(q) - 1e-12, side="left")
    return values[order][np.minimum(position, values.size - 1)]


def local_error_distribution(local: LocalCalibration, *, bins: int = 60) -> LocalErrorDistribution:
    """Histogram by probability mass and quantiles of the local errors.

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.5] * 4, [0, 1, 0, 1], covariates={"x": [0, 1, 2, 3]})
    >>> dist = local_error_distribution(local_calibration(pred, k=4), bins=3)
    >>> float(dist.mass.sum()), dist.mean
    (1.0, 0.0)
    """
    groups = local.groups
    error, mass = groups.error, groups.mass
    low, high = float(error.min()), float(error.max())
    if high <= low:
        low, high = low - 0.005, high + 0.005
    edges = np.linspace(low, high, bins + 1)
    histogram, _ = np.histogram(error, bins=edges, weights=mass)
    levels = (0.05, 0.25, 0.5, 0.75, 0.95)
    quantiles = dict(zip(levels, _weighted_quantiles(error, mass, levels).tolist(), strict=True))
    return LocalErrorDistribution(
        edges=_readonly(edges),
        mass=_readonly(histogram / histogram.sum()),
        quantiles=quantiles,
        mean=float(np.sum(error * mass)),
        note=groups.description,
    )


def neighbourhood_tradeoff(
    pred: Predictions,
    covariates: Sequence[str] | None = None,
    *,
    ks: Sequence[int] = (10, 30, 100, 300, 1000),
    scaling: Scaling = "robust",
    max_centres: int | None = 2_000,
    seed: int = 0,
) -> NeighbourhoodTradeoff:
    """Tabulate the group-size trade-off of k-NN groups over several k (Props. 2-3 of [1]).

    One neighbour search with the largest k serves every k (the k-NN of a point are the first k
    of its ``max(ks)`` nearest neighbours).

    Parameters
    ----------
    pred : Predictions
    covariates : sequence of str, optional
    ks : sequence of int
        Values of k (those above the number of observations are dropped).
    scaling : {"robust", "standard"}
    max_centres : int or None, default 2,000
        Seeded sample of centres (time and memory grow as centres × max(ks)).
    seed : int, default 0

    Returns
    -------
    NeighbourhoodTradeoff
    """
    ks_array = np.unique(np.asarray([k for k in ks if 1 <= k <= pred.n], dtype=np.int64))
    if ks_array.size == 0:
        raise ValidationError(f"no k in {list(ks)} lies between 1 and n = {pred.n:,}.")
    space = input_space(pred, covariates, scaling=scaling)
    centres, sampled = _centres(pred.n, max_centres, seed)
    if centres.size * int(ks_array[-1]) > MAX_PAIRS:
        raise ValidationError(
            f"{centres.size:,} centres × k = {int(ks_array[-1]):,} neighbours exceed "
            f"{MAX_PAIRS:,} pairs; lower max_centres or the largest k."
        )
    kmax = int(ks_array[-1])
    inputs = _distinct_inputs(pred, space)
    queries, inverse = np.unique(inputs.of_row[centres], return_inverse=True)
    inverse = inverse.ravel()
    searcher = _Searcher(inputs.matrix, space.nominal)
    distance, index, _ = _covering_query(searcher, inputs.matrix[queries], kmax, inputs.count)
    distance, index = distance[inverse], index[inverse]
    present = np.isfinite(distance)
    rows = np.arange(centres.size)[:, None]
    cumulative_count = np.cumsum(np.where(present, inputs.count[index], 0), axis=1)
    # For each k: the radius r_k and the last column within it (ties included).
    reach = np.stack([np.argmax(cumulative_count >= k, axis=1) for k in ks_array], axis=1)
    radius = distance[rows, reach]
    last = np.stack(
        [(distance <= radius[:, [j]] * (1 + TIE_TOLERANCE)).sum(axis=1) - 1
         for j in range(ks_array.size)],
        axis=1,
    )

    def at_k(column: int) -> np.ndarray:
        values = np.where(present, inputs.terms[index, column], 0.0)
        return np.take_along_axis(np.cumsum(values, axis=1), last, axis=1)

    size = np.take_along_axis(cumulative_count, last, axis=1)
    v_sum = at_k(0)
    error, se = _error_and_se(
        pred.response_kind, size, v_sum, at_k(1), at_k(2), at_k(3), at_k(4)
    )
    mass = pred.weight[centres] / pred.weight[centres].sum()
    mean_error = mass @ error
    sd = np.sqrt(np.maximum(mass @ (error - mean_error) ** 2, 0.0))
    note = (
        f"{centres.size:,} {'sampled ' if sampled else ''}centres"
        f"{f' (seed {seed})' if sampled else ''}; input space ({', '.join(space.covariates)})"
    )
    return NeighbourhoodTradeoff(
        k=_readonly(ks_array),
        median_radius=_readonly(np.median(radius, axis=0)),
        mean_standard_error=_readonly(mass @ se),
        mean_absolute_error=_readonly(mass @ np.abs(error)),
        max_absolute_error=_readonly(np.abs(error).max(axis=0)),
        error_sd=_readonly(sd),
        n_centres=int(centres.size),
        note=note,
    )

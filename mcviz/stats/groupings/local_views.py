"""Views of local calibration errors: a map over two covariates and their distribution."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mcviz.core.arrays import readonly as _readonly
from mcviz.core.arrays import weighted_quantile
from mcviz.stats.groupings._sums import _check_columns
from mcviz.stats.groupings.results import LocalCalibration, LocalErrorDistribution, LocalMap
from mcviz.io import Predictions

MAX_MAP_POINTS = 10_000
"""The local-calibration map carries at most this many points (a seeded sample)."""


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
        note=f"local error e(I) = mean(label − score), {what}; {shown}",
    )


def local_error_distribution(local: LocalCalibration, *, bins: int = 60) -> LocalErrorDistribution:
    """Histogram by probability mass and quantiles of the local errors.

    Examples
    --------
    >>> from mcviz.stats.groupings import local_calibration
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
    quantiles = dict(zip(levels, weighted_quantile(error, mass, levels).tolist(), strict=True))
    return LocalErrorDistribution(
        edges=_readonly(edges),
        mass=_readonly(histogram / histogram.sum()),
        quantiles=quantiles,
        mean=float(np.sum(error * mass)),
        note=groups.description,
    )



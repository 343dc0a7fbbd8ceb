"""How the k-NN calibration errors change with k (Propositions 2 and 3 of Höltgen & Williamson)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import mcviz.stats.groupings.local as _local
from mcviz.budget import Budget, Progress, report_progress
from mcviz.core.arrays import readonly as _readonly
from mcviz.errors import ValidationError
from mcviz.stats.groupings._sums import _error_and_se
from mcviz.stats.groupings.neighbours import TIE_TOLERANCE, _cover, _Inputs, _Searcher
from mcviz.stats.groupings.results import NeighbourhoodTradeoff, Scaling
from mcviz.io import Predictions


def neighbourhood_tradeoff(
    pred: Predictions,
    covariates: Sequence[str] | None = None,
    *,
    ks: Sequence[int] = (10, 30, 100, 300, 1000),
    scaling: Scaling = "robust",
    max_centres: int | None = 2_000,
    seed: int = 0,
    budget: Budget | int | str | None = None,
    progress: Progress | None = None,
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
    budget, progress
        As for :func:`mcviz.stats.groupings.local_calibration`.

    Returns
    -------
    NeighbourhoodTradeoff
    """
    ks_array = np.unique(np.asarray([k for k in ks if 1 <= k <= pred.n], dtype=np.int64))
    if ks_array.size == 0:
        raise ValidationError(f"no k in {list(ks)} lies between 1 and n = {pred.n:,}.")
    kmax = int(ks_array[-1])
    m = pred.n if max_centres is None else min(pred.n, max(int(max_centres), 1))
    if m * kmax > _local.MAX_PAIRS:
        raise ValidationError(
            f"{m:,} centres × k = {kmax:,} neighbours exceed "
            f"{_local.MAX_PAIRS:,} pairs; lower max_centres or the largest k."
        )
    prep = _local._prepare(
        pred, covariates, scaling=scaling, max_centres=max_centres, seed=seed, k=kmax,
        budget=budget, progress=progress,
    )
    report_progress(progress, 0.1, f"searching the {kmax} nearest neighbours of {m:,} centres")
    distance, index, _ = _cover(_Searcher(prep.inputs), prep.queries, kmax)
    report_progress(progress, 0.9, "tabulating the groups for each k")
    radius, size, sums = _sums_at_each_k(
        distance[prep.inverse], index[prep.inverse], prep.inputs, ks_array
    )
    error, se = _error_and_se(pred.response_kind, size, *sums)
    weight = pred.weight[prep.centres]
    mass = weight / weight.sum()
    mean_error = mass @ error
    sd = np.sqrt(np.maximum(mass @ (error - mean_error) ** 2, 0.0))
    sampled = prep.sampled
    note = (
        f"{m:,} {'sampled ' if sampled else ''}centres"
        f"{f' (seed {seed})' if sampled else ''}; input space ({', '.join(prep.space.covariates)})"
    )
    return NeighbourhoodTradeoff(
        k=_readonly(ks_array),
        median_radius=_readonly(np.median(radius, axis=0)),
        mean_standard_error=_readonly(mass @ se),
        mean_absolute_error=_readonly(mass @ np.abs(error)),
        max_absolute_error=_readonly(np.abs(error).max(axis=0)),
        error_sd=_readonly(sd),
        n_centres=int(m),
        note=note,
    )


def _sums_at_each_k(
    distance: np.ndarray, index: np.ndarray, inputs: _Inputs, ks: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Radius, size and the five sums of :func:`_error_and_se` of each centre's group per k."""
    present = np.isfinite(distance)
    rows = np.arange(distance.shape[0])[:, None]
    cumulative_count = np.cumsum(np.where(present, inputs.count[index], 0), axis=1)
    # For each k: the radius r_k and the last column within it (ties included).
    reach = np.stack([np.argmax(cumulative_count >= k, axis=1) for k in ks], axis=1)
    radius = distance[rows, reach]
    last = np.stack(
        [(distance <= radius[:, [j]] * (1 + TIE_TOLERANCE)).sum(axis=1) - 1
         for j in range(ks.size)],
        axis=1,
    )

    def at_k(column: int) -> np.ndarray:
        values = np.where(present, inputs.terms[index, column], 0.0)
        return np.take_along_axis(np.cumsum(values, axis=1), last, axis=1)

    size = np.take_along_axis(cumulative_count, last, axis=1)
    return radius, size, [at_k(j) for j in range(5)]

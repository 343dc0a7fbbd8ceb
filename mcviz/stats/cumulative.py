r"""Cumulative differences between responses and scores, and the Kuiper and KS statistics.

With observations sorted by score (or by any variable), the cumulative difference

.. math:: C_k = \frac{\sum_{j \le k} W_j (R_j - S_j)}{\sum_j W_j}, \qquad C_0 = 0,

is a driftless random walk under perfect calibration; miscalibration shows as slope. The Kuiper
statistic is its range and the Kolmogorov–Smirnov statistic its largest excursion from 0:

.. math:: D = \max_k C_k - \min_k C_k, \qquad G = \max_k |C_k|,

with the scale of pure noise

.. math:: \sigma = \frac{\sqrt{\sum_j S_j (1 - S_j) W_j^2}}{\sum_j W_j}.

Ties. The path is evaluated only at the last index of each run of tied scores (equivalently, tied
observations are merged into one step), so no statistic depends on the order of tied rows. With
no ties this is exactly the papers' definition.

References
----------
.. [1] M. Tygert, "Cumulative deviation of a subpopulation from the full population", J. Big
   Data 10, 2023; Appendix A, eqs. (44)-(50).
.. [2] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eqs. (1)-(3) and (5), Appendix C eq. (6).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcviz.core.arrays import after_zero
from mcviz.core.arrays import readonly as _readonly
from mcviz.core.brownian import BROWNIAN_RANGE_MEAN, bridge_range_sf, brownian_range_sf
from mcviz.core.path import cumulative_path, path_axes, path_kuiper_ks, run_ends, value_order
from mcviz.core.ratio import safe_ratio
from mcviz.core.sigma import (
    SigmaMethod,
    pooled_response_variance,
    resolve_sigma_method,
    sigma_adjacent,
    sigma_bernoulli,
    sigma_from_variance,
)
from mcviz.errors import ValidationError
from mcviz.io import Predictions

__all__ = [
    "BROWNIAN_RANGE_MEAN",
    "CumulativeResult",
    "brownian_range_sf",
    "cumulative_differences",
    "cumulative_from_runs",
    "decimate_path",
    "mean_rates",
    "sigma_adjacent",
    "sigma_bernoulli",
]

DECIMATION_TARGET = 4000

@dataclass(frozen=True, slots=True, eq=False)
class CumulativeResult:
    r"""The cumulative-difference path and its statistics.

    Attributes
    ----------
    x : ndarray
        Abscissa of each path point: :math:`k/n`, or the cumulative weight :math:`A_k` when
        weighted; starts at 0.
    fraction : ndarray
        :math:`k/n` at each path point (the top axis).
    position : ndarray
        The score (or the ordering variable) at each path point; ``position[0]`` repeats the first.
        ``datetime64[ns]`` when ordered by a datetime covariate (UTC for time-zone aware ones).
    path : ndarray
        :math:`C_k` at the origin and at the end of each run of tied values (eq. (1) of [2]).
    kuiper, ks : float
        :math:`D` (eq. (2)) and :math:`G`.
    sigma : float
        Eq. (5) of [2] (or Appendix C eq. (6) over tie runs for non-binary responses, floored
        by the pooled response variance at nearby scores; see
        :func:`~mcviz.core.sigma.sigma_adjacent`).
    kuiper_z, ks_z : float
        :math:`D/\sigma` and :math:`G/\sigma` (0 when both are 0, inf when only sigma is).
    p_value : float
        :math:`P(\text{range of Brownian motion on } [0,1] > D/\sigma)`; NaN when the weights
        depend on the labels (``Predictions.weights_depend_on_label``, Appendix B).
    n : int
        Observations on the path.
    weight_total : float
    weighted : bool
    sigma_method : str
        ``"bernoulli"`` (eq. (5)) or ``"adjacent"`` (eq. (6)).
    order_by : str or None
        The variable the path is ordered by (None: the score).
    n_missing : int
        Observations left off because the ordering variable is missing.
    plot_index : ndarray
        Indices into the path that keep every extreme (see :func:`decimate_path`).
    """

    x: np.ndarray
    fraction: np.ndarray
    position: np.ndarray
    path: np.ndarray
    kuiper: float
    ks: float
    sigma: float
    kuiper_z: float
    ks_z: float
    p_value: float
    n: int
    weight_total: float
    weighted: bool
    sigma_method: str
    order_by: str | None
    n_missing: int
    plot_index: np.ndarray


def cumulative_differences(
    pred: Predictions,
    *,
    index: np.ndarray | None = None,
    order_by: str | None = None,
    sigma_method: str = "auto",
    centred: bool = False,
) -> CumulativeResult:
    r"""Cumulative differences between responses and scores, with D, G, sigma and p.

    Parameters
    ----------
    pred : Predictions
    index : array of int or bool, optional
        A subpopulation (positions in score order or a mask, as
        :meth:`~mcviz.io.Predictions.subset` takes): the statistic of its rows alone.
    order_by : str, optional
        Order the observations by this numeric covariate instead of the score (the cumulative
        view along a variable). Rows where it is missing are left off and counted.
    sigma_method : {"auto", "bernoulli", "adjacent"}
        ``"auto"`` uses eq. (5) for binary responses and eq. (6) otherwise
        (:data:`~mcviz.core.sigma.SIGMA_METHODS`; ``"variance"`` is refused: it belongs to
        :func:`~mcviz.subpopulation_deviation`).
    centred : bool, default False
        Accumulate the residuals about their weighted mean,
        :math:`R_j - S_j - \bar d` with :math:`\bar d = \sum_j W_j (R_j - S_j) / \sum_j W_j`
        (the path then ends at 0: :math:`C_k - A_k C_n`). Along a variable this asks whether
        the miscalibration *changes* with it, whatever the overall offset: a constant offset
        gives :math:`D = 0`, a 30-point error in the top 3% of V a spike at the end. Under
        calibration up to a constant the path is a Brownian bridge and ``p_value`` is the
        survival function of its range, Kuiper's distribution
        (:func:`~mcviz.core.brownian.bridge_range_sf`); :math:`\sigma` is unchanged.

    Returns
    -------
    CumulativeResult

    Notes
    -----
    Implements eqs. (1)-(3) and (5) of [2] (Appendix A eqs. (44)-(50) of [1]), evaluated at the
    ends of runs of tied values. Abscissa :math:`A_k = \sum_{j\le k} W_j / \sum_j W_j` when
    weighted, else :math:`k/n`.

    Examples
    --------
    A constant offset d between responses and scores gives D = G = |d|:

    >>> pred = Predictions.from_arrays([0.2, 0.4, 0.6, 0.8], [0.3, 0.5, 0.7, 0.9],
    ...                                response="continuous")
    >>> result = cumulative_differences(pred)
    >>> round(result.kuiper, 12), round(result.ks, 12)
    (0.1, 0.1)
    """
    pred = pred.subset(index)
    label = pred.label
    if centred:  # residuals about their weighted mean: the responses shifted by it
        label = label - float(np.dot(pred.weight, label - pred.score) / pred.weight.sum())
    method = resolve_sigma_method(sigma_method, pred.response_kind).value
    # the floor of eq. (6): the pooled response variance at nearby scores, in score order
    floor = None if method == SigmaMethod.BERNOULLI else pooled_response_variance(
        pred.score, pred.label, pred.weight, pred.run_end)
    if order_by is None:
        return _cumulative(
            pred.score, label, pred.weight, pred.score, pred.run_end, floor,
            weighted=pred.weighted, sigma_method=method, order_by=None, n_missing=0,
            void=pred.weights_depend_on_label, bridge=centred,
        )
    import pandas as pd  # only with a covariate to order by (not on `mcviz metrics`' path)

    from mcviz.core.conditions import ordinal_values

    pred.require_covariate(order_by, " to order by")
    variable = pred.covariates[order_by]
    if isinstance(variable.dtype, pd.CategoricalDtype):
        raise ValidationError(
            f"covariate {order_by!r} is nominal; the cumulative view needs a numeric variable.",
            column=order_by,
        )
    dates = pd.api.types.is_datetime64_any_dtype(variable)
    if dates:  # exact int64 nanoseconds (UTC for time-zone aware columns); NaT is missing
        values = pd.DatetimeIndex(variable).as_unit("ns").asi8
        present = variable.notna().to_numpy()
    else:
        values = ordinal_values(variable)  # NaN where missing
        present = ~np.isnan(values)
    if present.sum() == 0:
        raise ValidationError(f"covariate {order_by!r} is missing on every row.", column=order_by)
    order = np.flatnonzero(present)[value_order(values[present])]  # ties in any order
    sorted_values = values[order]
    run_end = run_ends(sorted_values)
    if dates:  # positions as datetime64[ns], so figures and tables write dates
        sorted_values = sorted_values.view("datetime64[ns]")
    return _cumulative(
        pred.score[order], label[order], pred.weight[order], sorted_values,
        run_end, None if floor is None else floor[order],
        weighted=pred.weighted, sigma_method=method, order_by=order_by,
        n_missing=int((~present).sum()), void=pred.weights_depend_on_label, bridge=centred,
    )


def _cumulative(
    score: np.ndarray,
    label: np.ndarray,
    weight: np.ndarray,
    position: np.ndarray,
    run_end: np.ndarray,
    floor: np.ndarray | None,
    *,
    weighted: bool,
    sigma_method: str,
    order_by: str | None,
    n_missing: int,
    void: bool,
    bridge: bool = False,
) -> CumulativeResult:
    n = score.size
    weight_total = float(weight.sum())
    residual = label - score
    # (unweighted: W = 1, the residuals themselves)
    path, ends = cumulative_path(weight * residual if weighted else residual, weight_total,
                                 run_end)  # eq. (1)
    kuiper, ks = path_kuiper_ks(path)  # eq. (2)
    sigma = (
        sigma_bernoulli(score, weight) if sigma_method == SigmaMethod.BERNOULLI
        else sigma_adjacent(residual, weight, run_end, floor=floor)
    )  # eq. (5) or Appendix C eq. (6) over tie runs, floored
    x, fraction = path_axes(weight, ends, weighted=weighted)
    position_at = np.concatenate((position[:1], position[ends]))
    return CumulativeResult(
        x=_readonly(x),
        fraction=_readonly(fraction),
        position=_readonly(position_at),
        **path_statistics(path, kuiper, ks, sigma, void=void, bridge=bridge),
        n=n,
        weight_total=weight_total,
        weighted=weighted,
        sigma_method=sigma_method,
        order_by=order_by,
        n_missing=n_missing,
    )


def cumulative_from_runs(score: np.ndarray, count: np.ndarray, weight: np.ndarray,
                         positive: np.ndarray, square_weight: np.ndarray, *, weighted: bool,
                         bin_width: float | None = None, axes: tuple | None = None,
                         ) -> tuple[CumulativeResult, float]:
    r"""Return the cumulative differences of binary rows given as sums per run (a GROUP BY).

    The runs are :class:`mcviz.stats.measures.runs.ScoreRuns`' arrays: ascending ``score``
    and per run the rows, :math:`\sum W`, :math:`\sum W R` and :math:`\sum W^2`. Returns
    the result and the bound :math:`\beta` on how far the in-memory path can lie from it.

    Runs of one distinct score each (``bin_width`` None): eq. (1) at the run ends,
    :math:`C_k = \sum_{j \le k} (\sum W R - S_j \sum W)_j / \sum W`, is the in-memory path
    itself (the same points, at the ends of tie runs), so :math:`D`, :math:`G`, eq. (5)'s
    :math:`\sigma = \sqrt{\sum_j S_j (1 - S_j) \sum W^2_j} / \sum W` and :math:`p` are the
    in-memory numbers up to the order of additions; :math:`\beta = 0`.

    Fine score bins (``bin_width`` :math:`h`, each run at its rows' weighted mean score): the
    bins hold whole tie runs and :math:`\sum W S = S_b \sum W` per bin, so the points drawn
    are in-memory path points (those at the bins' ends) exactly. Between two of them the
    in-memory path rises by at most :math:`\sum_{R=1} W (1 - S) < (\sum W R)_b (1 - S_b + h)`
    and falls by at most :math:`\sum_{R=0} W S < (\sum W - \sum W R)_b (S_b + h)` (divided
    by :math:`W`), so with :math:`\beta` the largest of these over the bins the in-memory path
    lies within :math:`\beta` of the drawn one, :math:`D \le D_{\text{bins}} + 2\beta`,
    :math:`G \le G_{\text{bins}} + \beta` (and not below them); each score moves by less
    than :math:`h` and :math:`|\partial_S S(1-S)| \le 1`, so
    :math:`|\sigma^2_{\text{bins}} - \sigma^2| \le h \sum W^2 / W^2`. The p-value is that
    of the drawn :math:`D/\sigma` (the verdict's own is measured exactly by the engine's
    sorted pass).

    ``axes``: the ``(x, fraction, position)`` already drawn for these runs (a finding's
    deviation from its distinct scores: eq. (28)'s axes and the scores, the same numbers),
    shared instead of made again.
    """
    score = np.asarray(score, dtype=float)
    weight = np.asarray(weight, dtype=float)
    count = np.asarray(count, dtype=np.int64)
    if score.size == 0:
        raise ValidationError("there are no rows.")
    weight_total = float(weight.sum())
    # one working array a run beside what is returned: each step in place, the same values
    work = score * weight
    np.subtract(np.asarray(positive, dtype=float), work, out=work)  # sum of W (R - S) per run
    np.cumsum(work, out=work)
    path = (after_zero(work, weight_total) if weight_total > 0
            else after_zero(safe_ratio(work, weight_total)))  # eq. (1)
    kuiper, ks = path_kuiper_ks(path)  # eq. (2)
    np.subtract(1.0, score, out=work)
    np.multiply(score, work, out=work)
    work *= np.asarray(square_weight, dtype=float)
    sigma = float(sigma_from_variance(np.sum(work), weight_total))  # eq. (5)
    del work
    n = int(count.sum())
    if axes is not None and all(np.size(axis) == score.size + 1 for axis in axes):
        x, fraction, position = axes
    else:
        rows = np.cumsum(count)
        fraction = after_zero(rows, float(rows[-1]))
        del rows
        x = after_zero(np.cumsum(weight), weight_total) if weighted else fraction
        position = np.concatenate((score[:1], score))
    beta = 0.0
    if bin_width is not None:  # the largest rise or fall within a bin (docstring)
        positive = np.asarray(positive, dtype=float)
        beta = float(np.maximum(positive * (1.0 - score + bin_width),
                                (weight - positive) * (score + bin_width)).max() / weight_total)
    return CumulativeResult(
        x=_readonly(x), fraction=_readonly(fraction),
        position=_readonly(position), **path_statistics(path, kuiper, ks, sigma), n=n,
        weight_total=weight_total, weighted=weighted, sigma_method="bernoulli",
        order_by=None, n_missing=0), beta


def path_statistics(path: np.ndarray, kuiper: float, ks: float, sigma: float, *,
                    void: bool = False, bridge: bool = False) -> dict:
    r"""Return the fields every cumulative-path result shares (here and in the deviation).

    :math:`D/\sigma` and :math:`G/\sigma` by the safe-ratio rule, the Brownian-range p-value of
    :math:`D/\sigma` (Kuiper's Brownian-bridge range when ``bridge``: a path pinned at 0 at
    its end; NaN when ``void``: weights that depend on the labels), and the decimation kept
    for plotting.
    """
    kuiper_z = safe_ratio(kuiper, sigma)
    tail = bridge_range_sf if bridge else brownian_range_sf
    return {
        "path": _readonly(path),
        "kuiper": kuiper,
        "ks": ks,
        "sigma": sigma,
        "kuiper_z": kuiper_z,
        "ks_z": safe_ratio(ks, sigma),
        "p_value": float("nan") if void else float(tail(kuiper_z)),
        "plot_index": _readonly(decimate_path(path)),
    }


def decimate_path(path: np.ndarray, *, target: int = DECIMATION_TARGET) -> np.ndarray:
    """Return indices of about ``target`` path points that keep every bucket's extremes.

    The path is cut into ``target // 2`` equal buckets; the index of the minimum and of the
    maximum of each bucket is kept, plus the first and last points. The global maximum and
    minimum are therefore always kept, so the range (the Kuiper statistic) and the largest
    absolute value (Kolmogorov–Smirnov) read off the drawn path equal the exact ones.

    Examples
    --------
    >>> path = np.sin(np.linspace(0, 20, 100_001))
    >>> index = decimate_path(path, target=400)
    >>> bool(index.size <= 402), bool(path[index].max() == path.max())
    (True, True)
    >>> bool(path[index].min() == path.min())
    True
    """
    size = path.size
    if size <= target:
        return np.arange(size)
    buckets = max(target // 2, 1)
    width = -(-size // buckets)
    padded = np.empty(buckets * width)
    padded[:size] = path
    padded[size:] = path[-1]
    blocks = padded.reshape(buckets, width)
    offsets = np.arange(buckets) * width
    lows = offsets + blocks.argmin(axis=1)
    highs = offsets + blocks.argmax(axis=1)
    index = np.concatenate(([0, size - 1], np.minimum(lows, size - 1), np.minimum(highs, size - 1)))
    return np.unique(index)


def mean_rates(pred: Predictions, *, index: np.ndarray | None = None) -> tuple[float, float]:
    r"""Return the weighted mean score and mean response of the rows ``index`` (all: None).

    :math:`\sum W S / \sum W` and :math:`\sum W R / \sum W`: what the model predicted and what
    happened, the words of a verdict ("the model predicted 24.1% positive and 20.9% were");
    their difference is the end of the cumulative path, :math:`C_n` of eq. (1). NaN without rows
    or weight.

    Examples
    --------
    >>> pred = Predictions.from_arrays(np.array([0.2, 0.4, 0.6]), np.array([0, 1, 1]))
    >>> [round(v, 12) for v in mean_rates(pred)], mean_rates(pred, index=np.array([0]))
    ([0.4, 0.666666666667], (0.2, 0.0))
    """
    rows = slice(None) if index is None else np.asarray(index)
    weight = pred.weight[rows]
    total = float(weight.sum())
    if not total > 0:
        return float("nan"), float("nan")
    return (float(weight @ pred.score[rows]) / total, float(weight @ pred.label[rows]) / total)

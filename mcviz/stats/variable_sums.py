r"""Variable-based calibration along a numeric variable from the rows' sums per value.

For data too large to hold, an engine sums the binary rows per distinct value :math:`v` of
the variable V (one ``GROUP BY``): rows :math:`n_v`, :math:`\sum W`, :math:`\sum W^2`,
:math:`\sum W e`, :math:`\sum W \hat e`, :math:`\sum W e \hat e`, :math:`\sum W \hat e^2`
(Kelly & Smyth's :math:`e` and :math:`\hat e`, Section 6 of [1]; :math:`e^2 = e`),
:math:`\sum W R`, :math:`\sum W S` and :math:`\sum W^2 S (1 - S)`, plus those of the rows
where V is missing. :func:`variable_calibration_from_sums` gives
:func:`~mcviz.stats.variable_curves.variable_calibration` of those rows from them, because
every step of it depends on the rows only through these sums:

* the LOESS curves of :math:`e`, :math:`\hat e` and the gap :math:`r = e - \hat e`
  (:func:`~mcviz.stats.smoothing.curves.spiked_fits_from_sums`: spikes by their weight, the
  grid's quantiles and the windows' :math:`q` nearest rows by row positions, kernel sums over
  values whose rows share a kernel weight, the band's :math:`\sum l_i^2` from
  :math:`\sum W^2`, the residual sums :math:`\sum W (y_a - \hat g_a)(y_b - \hat g_b)` from
  :math:`\sum W y_a y_b`, :math:`\sum W y_a` and :math:`\sum W`);
* VCE(v*) (eq. (8) of [1]) over the same grid with the same thin-support rules, the weight
  within the window at v*, and its Scheffé band;
* VECE (eq. (7) of [1]): decile edges from row positions, bin sums from value sums;
* the histogram, the rank knots (order statistics) and the cumulative differences along V
  (paper 003, eq. (1), centred on the mean residual of *all* rows, V missing or not, tied
  values as one step, eq. (5)'s :math:`\sigma` from :math:`\sum W^2 S (1-S)`).

So when the groups are the distinct values every field equals the in-memory one up to the
order of additions (``tests/engines/test_variable_sums_engines.py``: 1e-9), with one stated
difference: above :data:`~mcviz.stats.variable_curves.CV_ROWS` rows the in-memory span is
cross-validated on that many rows evenly spaced in score order (a subsample), while here
the generalised cross-validation runs on every row (the sums hold them all), so the span,
and then the curves, can differ from the in-memory ones there (the same span as the
in-memory rule applied to all rows).

Fine bins (more distinct values than the engine returns): each bin's rows are placed at
their mean value, a move of less than the bin's width per row. The results are exactly those
of the rows so moved. Given each bin's smallest and largest value (``lo``, ``hi``), the result
also carries how far each drawn point of the curves, VCE(v*), VECE and :math:`D/\sigma` can
be from those of the rows themselves (``within``; derived in :mod:`mcviz.stats.variable_bound`).

References
----------
.. [1] M. Kelly, P. Smyth, "Variable-Based Calibration for Machine Learning Classifiers",
   AAAI 2023; eqs. (7)-(8), Section 6.
"""
from __future__ import annotations

import numpy as np

from mcviz.core.arrays import readonly as _readonly
from mcviz.core.path import path_kuiper_ks
from mcviz.core.ratio import safe_ratio
from mcviz.core.sigma import sigma_from_variance
from mcviz.errors import ValidationError
from mcviz.stats.cumulative import path_statistics
from mcviz.stats.smoothing import counted_quantile, spiked_fits_from_sums
from mcviz.stats.smoothing.curves import SPIKE_SHARE
from mcviz.stats.variable_bound import fine_bin_bound
from mcviz.stats.variable_curves import (
    HISTOGRAM_BINS,
    VariableCalibration,
    assembled,
    curves_from_fits,
    gcv_span,
)

__all__ = ["VALUE_SUMS", "variable_calibration_from_sums"]

VALUE_SUMS = ("v", "n", "w", "ww", "we", "wp", "wep", "wpp", "wr", "ws", "wwv")
"""The sums per value (module notes; ``v`` the value, ``wwv`` :math:`\\sum W^2 S(1-S)`)."""


def variable_calibration_from_sums(
    variable: str, sums: dict, *, weighted: bool, missing: dict | None = None,
    span: float | None = None, degree: int = 2, grid_points: int = 500,
    exact: bool | None = None, dates: bool = False,
) -> VariableCalibration:
    r""":func:`~mcviz.stats.variable_curves.variable_calibration` from sums per value.

    Parameters
    ----------
    variable : str
    sums : dict
        One array per name of :data:`VALUE_SUMS`, ``v`` ascending and distinct (V present);
        optionally ``lo`` and ``hi``, each group's smallest and largest value (fine bins: the
        result's ``within`` then bounds the difference from the rows; module notes).
    weighted : bool
        The rows have a weight column (else :math:`W = 1` and ``w`` equals ``n``).
    missing : dict, optional
        ``n``, ``w``, ``wr``, ``ws`` of the rows where V is missing (they are counted and
        enter the centring of the cumulative view, as in memory).
    span, degree, grid_points, exact
        As :func:`~mcviz.stats.variable_curves.variable_calibration` (span None: chosen by
        generalised cross-validation on every row; module notes).
    dates : bool, default False
        V is a datetime covariate summed by its nanoseconds since 1970-01-01 (as the
        in-memory curves place it; the figures write the abscissae as dates).

    Raises
    ------
    ValidationError
        Infinite values, or a single value where V is present.
    """
    v = np.asarray(sums["v"], dtype=float)
    n = np.asarray(sums["n"], dtype=np.int64)
    w, ww, we, wp = (np.asarray(sums[k], dtype=float) for k in ("w", "ww", "we", "wp"))
    _check_values(variable, v, n)
    means = np.column_stack((we / w, wp / w))
    wep, wpp = np.asarray(sums["wep"], dtype=float), np.asarray(sums["wpp"], dtype=float)
    cross = np.stack((np.stack((we, wep), axis=1), np.stack((wep, wpp), axis=1)), axis=2)

    def fits_at(points, span):
        return spiked_fits_from_sums(v, n, w, ww, means, cross, points, span=span,
                                     degree=degree, exact=exact, grid_points=grid_points,
                                     spike_share=SPIKE_SHARE)

    chosen = span is None
    if chosen:
        span = gcv_span(lambda s: fits_at(np.empty(0), s))
    fits = fits_at(None, span)
    curves = curves_from_fits(variable, fits, span, v, w if weighted else n.astype(float))
    along, sigma, centre = _along(sums, missing)
    within = None
    if "lo" in sums and (np.asarray(sums["hi"]) > np.asarray(sums["lo"])).any():
        within = fine_bin_bound(fits, sums, degree=degree, thin=curves[0].thin, sigma=sigma,
                                centre=centre)
    spikes = curves[0].x[curves[0].spike]
    hist_edges = np.linspace(v[0], v[-1], HISTOGRAM_BINS + 1)
    cum = np.concatenate(([0], np.cumsum(n)))
    counts = cum[np.searchsorted(v, hist_edges, side="right")]
    counts[0] = 0
    return assembled(
        variable, curves, _vece(v, n, w, we, wp, spikes), hist_edges, np.diff(counts),
        n=int(n.sum()), n_missing=0 if missing is None else int(missing["n"]), span=span,
        span_chosen=chosen, along=along, rank_knots=_rank_knots(v, n, spikes), within=within,
        dates=dates,
    )


def _check_values(variable: str, v: np.ndarray, n: np.ndarray) -> None:
    """Refuse what the in-memory curves refuse: infinite values, a single value."""
    if not v.size:
        raise ValidationError(f"covariate {variable!r} is missing on every row.", column=variable)
    infinite = ~np.isfinite(v)
    if infinite.any():
        raise ValidationError(
            f"column {variable!r}: {int(n[infinite].sum()):,} of {int(n.sum()):,} rows are "
            "infinite; a curve along it cannot be drawn.", column=variable)
    if v.size < 2:
        raise ValidationError(
            f"covariate {variable!r} takes a single value ({v[0]:g}) on the {int(n.sum()):,} "
            "rows where it is present; there is no curve to draw.", column=variable)


def _vece(v: np.ndarray, n: np.ndarray, w: np.ndarray, we: np.ndarray, wp: np.ndarray,
          spikes: np.ndarray, bins: int = 10) -> tuple:
    """Eq. (7) of [1] over the in-memory bins (:func:`~mcviz.stats.variable_curves.vece`).

    Decile edges of the rows off the spikes from row positions; right-closed bins, the first
    closed at the minimum; each spike a bin of its own after the others; empty bins skipped.
    """
    on_spike = np.isin(v, spikes)
    rest = ~on_spike if not on_spike.all() else np.ones(v.size, dtype=bool)
    edges = np.unique(counted_quantile(v[rest], n[rest], np.linspace(0.0, 1.0, bins + 1)))
    index = np.searchsorted(edges[1:-1], v, side="left")  # inner edges below each value
    count = max(edges.size - 1, 1)
    if spikes.size and not on_spike.all():
        index[on_spike] = count + np.searchsorted(spikes, v[on_spike])
        count += spikes.size
    elif spikes.size:
        index = count + np.searchsorted(spikes, v)
        count += spikes.size
    total = np.bincount(index, weights=w, minlength=count)
    sum_error = np.bincount(index, weights=we, minlength=count)
    sum_predicted = np.bincount(index, weights=wp, minlength=count)
    keep = total > 0
    share = total[keep] / float(w.sum())
    error_mean = sum_error[keep] / total[keep]
    predicted_mean = sum_predicted[keep] / total[keep]
    return (float(np.sum(share * np.abs(predicted_mean - error_mean))), edges, share,
            error_mean, predicted_mean)  # eq. (7)


def _along(sums: dict, missing: dict | None) -> tuple[tuple[float, float], float, float]:
    r"""Kuiper's :math:`D/\sigma` and p of the centred cumulative differences along V.

    Paper 003, eq. (1) at the ends of the values' runs of the residuals :math:`R - S - c`,
    :math:`c` the weighted mean residual of every row (V missing or not), eq. (5)'s
    :math:`\sigma`, the Brownian-bridge range's p (the path is pinned at its end). Returns
    them, :math:`\sigma` and :math:`c`.
    """
    w, wr, ws = (np.asarray(sums[k], dtype=float) for k in ("w", "wr", "ws"))
    weight_total = float(w.sum())
    everything = weight_total + (0.0 if missing is None else float(missing["w"]))
    residual = float((wr - ws).sum()) + (0.0 if missing is None else
                                          float(missing["wr"]) - float(missing["ws"]))
    centre = residual / everything
    steps = wr - centre * w - ws
    path = np.concatenate(([0.0], safe_ratio(np.cumsum(steps), weight_total)))  # eq. (1)
    kuiper, ks = path_kuiper_ks(path)  # eq. (2)
    sigma = float(sigma_from_variance(float(np.sum(sums["wwv"])), weight_total))  # eq. (5)
    stats = path_statistics(path, kuiper, ks, sigma, bridge=True)
    return (float(stats["kuiper_z"]), float(stats["p_value"])), sigma, centre


def _rank_knots(v: np.ndarray, n: np.ndarray, spikes: np.ndarray) -> np.ndarray:
    """V at the row quantiles 0%, ..., 100% of the rows off the spikes (order statistics)."""
    rest = ~np.isin(v, spikes)
    if not rest.any():
        return _readonly(np.empty(0))
    cum = np.cumsum(n[rest])
    position = np.floor(np.linspace(0.0, 1.0, 101) * (int(cum[-1]) - 1)).astype(np.int64)
    return _readonly(v[rest][np.searchsorted(cum, position, side="right")])

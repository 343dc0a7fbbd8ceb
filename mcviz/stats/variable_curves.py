r"""Variable-based calibration: error and predicted error along a variable, VCE, VECE, ranking.

For each observation the error is :math:`e_i = \mathbb{1}[y_i \ne \hat y_i]` and the predicted
error :math:`\hat e_i = 1 - s_i`, with :math:`s_i` the top-label probability (Kelly & Smyth [1],
Section 6). For a binary score :math:`p` the predicted class is :math:`\mathbb{1}[p \ge 0.5]` and
:math:`s = \max(p, 1 - p)`; for multi-class predictions ``Predictions.label`` is already
:math:`\mathbb{1}[y = \hat y]` and ``Predictions.score`` the top-label probability, so
:math:`e = 1 - \text{label}` and :math:`\hat e = 1 - \text{score}`.

Curves of :math:`e` and :math:`\hat e` against a numeric variable :math:`V` are LOESS fits
(:mod:`mcviz.stats.smoothing`); the gap curve smooths :math:`r = e - \hat e` with the same weights
(so it equals the difference of the two curves exactly) and has its own band from the
residuals of :math:`r`. The variable-based calibration error at its worst point is

.. math:: \mathrm{VCE}(v^*) = \max_{v} |\hat g_e(v) - \hat g_{\hat e}(v)|, \qquad
          v^* = \arg\max_v \{\mathrm{VCE}(v)\} \qquad \text{(eq. (8) of [1])},

taken over the grid (about 500 points over the whole observed range of V) restricted to the
points with enough support. Honest edges (issue 14): a value holding at least 5% of the weight
(a spike, such as the zeros of a zero-inflated covariate) is estimated from its own rows and left
out of the other windows; a point has *thin support* when its fit rests on fewer than 50
effective rows (:math:`1/\sum_i l_i(v)^2`) or when the rows within a tenth of its window radius
are fewer than 10% of what the window's average density would put there (a tail or a hole in
the data: the fit is carried by rows far away); a *degenerate* local fit (degree lowered for
want of distinct values in the window, no row inside it, an ill-conditioned design) is never
used to extrapolate. Such points stay on the curve, flagged (``thin``, ``degenerate``), are named
in ``warnings`` and are left out of VCE(v*). Nor is v* chosen within reach of them (issue 31:
it used to be the last point before a thin stretch, or an island between two): a LOESS point is
eligible only when no thin point lies within :data:`REACH` (a tenth) of its window radius. Nor
is v* a point where the error or the predicted-error fit leaves [0, 1] (a local quadratic
overshooting at a steep edge): those rates are drawn clipped, and the gap there is not the gap
between the drawn curves (issue 40); such points are named in ``warnings``.
VCE(v*) carries a band, the gap at v* ± z se(v*) with Scheffé's z over the curve's degrees of
freedom (:func:`simultaneous_z`: v* was picked as the largest of many correlated estimates),
and is *within noise* when the band holds 0 (``vce_significant``). Displayed rates and bands
are clipped to [0, 1].
The binned estimate of its expectation is

.. math:: \widehat{\mathrm{VECE}} = \sum_{b=1}^{B} \frac{W_b}{W}
          \bigl|\overline{e}_b - \overline{\hat e}_b\bigr| \qquad \text{(eq. (7) of [1])}

over B = 10 equal-support bins of V: decile edges by linear interpolation, duplicate edges
dropped, bins right-closed with the first one including the minimum, empty bins skipped (the
rule of ``pandas.qcut(v, 10, duplicates="drop")``). A binary or few-valued V therefore gets
fewer bins. Spikes (values holding at least 5% of the weight, such as the zeros of a
zero-inflated covariate) are bins of their own and the deciles are cut from the other rows: a
95%-zero column would otherwise collapse to two bins, and such columns tie. Rows where V is
missing are left out (and counted).

References
----------
.. [1] M. Kelly, P. Smyth, "Variable-Based Calibration for Machine Learning Classifiers",
   AAAI 2023; eqs. (7)-(8), Table 1, Section 6, Appendix B.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy.stats import chi2

from mcviz.core.arrays import readonly as _readonly
from mcviz.core.arrays import sorted_copy
from mcviz.core.conditions import ordinal_values
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.stats.cumulative import cumulative_differences
from mcviz.stats.smoothing import LoessCurve, check_span, sorted_quantile, spiked_fits
from mcviz.stats.smoothing.curves import SPIKE_SHARE
from mcviz.stats.smoothing.loess import MIN_EFFECTIVE_ROWS, NEAR, SPARSE_RATIO
from mcviz.stats.variable_bound import FineBinBound
from mcviz.text import readable_number

__all__ = [
    "VariableCalibration",
    "cross_validated_span",
    "prediction_errors",
    "simultaneous_z",
    "variable_calibration",
    "vece",
]

HISTOGRAM_BINS = 60
SPANS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
"""Spans the cross-validation chooses among (0.9: the paper's 0.8-0.9 upper end)."""
CV_ROWS = 100_000
"""Above this many rows the span is cross-validated on this many, evenly spaced in score order."""
REACH = 0.1
"""v* keeps this share of its window radius away from thin support."""
CLIP_TOLERANCE = 1e-9
"""A fitted rate this far outside [0, 1] is still drawn as fitted (rounding)."""

@dataclass(frozen=True, slots=True, eq=False)
class VariableCalibration:
    r"""Error and predicted error along a numeric variable, with VCE(v*) and VECE.

    Attributes
    ----------
    name : str
    kind : str
        ``"ordinal"`` (the covariate kind of :attr:`Predictions.covariate_kinds`).
    error, predicted, gap : LoessCurve
        Curves of :math:`e`, :math:`\hat e` and :math:`r = e - \hat e` on the same grid over
        the whole observed range of V (spikes, values holding at least 5% of the weight,
        estimated from their own rows), each with its own 95% band and the masks ``thin``,
        ``spike`` and ``degenerate`` (:class:`~mcviz.stats.smoothing.LoessCurve`). Rates and
        their bands are clipped to [0, 1] (the gap to [-1, 1]); where no clipping applies
        ``gap.fit == error.fit - predicted.fit``.
    vce : float
        :math:`\max_v |\mathrm{gap}(v)|` over the grid points with enough support and out of
        reach of thin support (eq. (8); module notes); NaN when no point is.
    vce_at : float
        :math:`v^*` (NaN when ``vce`` is).
    vce_support : float
        Weight within the window at :math:`v^*`: of the rows with positive kernel weight
        (:math:`|x_i - v^*| < h(v^*)`), or of the rows at :math:`v^*` when it is a spike (the
        number of rows when unweighted). NaN when ``vce`` is.
    vece : float
        Eq. (7) over the bins below.
    bin_edges : ndarray
        Unique decile edges of V outside its spikes (each spike is a bin of its own, after
        the others).
    bin_weight, bin_error, bin_predicted : ndarray
        Per non-empty bin: weight share :math:`W_b/W`, mean error, mean predicted error.
    histogram_edges, histogram_counts : ndarray
        Counts of V over its whole range (for the rug/density under the curves).
    n : int
        Rows used (V present).
    n_missing : int
        Rows left out because V is missing.
    span : float
        The LOESS span of the curves: chosen by generalised cross-validation over
        :data:`SPANS` (``span_chosen``) or the caller's.
    warnings : tuple of str
        Thin support, degenerate local fits and a VCE(v*) that cannot be reported, in words.
    vce_ci : tuple of float
        The gap at :math:`v^*` (signed) ± :math:`z\,\mathrm{se}(v^*)`, with Scheffé's
        :math:`z` over the curve's :math:`\lceil\nu_1\rceil` degrees of freedom
        (:func:`simultaneous_z`): a band valid although :math:`v^*` was picked as the largest
        gap. NaN when ``vce`` is.
    vce_significant : bool
        ``vce_ci`` excludes 0; False: VCE(v*) is within noise.
    dates : bool
        V is a datetime covariate: the abscissae above (``x``, edges, ``vce_at``) are
        nanoseconds since 1970-01-01 UTC; :meth:`record` and the figures write them as dates.
    kuiper_z, p_value : float
        The cumulative differences of response − score ordered by V (no bandwidth; paper 003,
        Appendix A, through :func:`~mcviz.stats.cumulative.cumulative_differences` with
        ``order_by``): Kuiper's :math:`D/\sigma` and the Brownian-range p of it. A local
        error a smooth curve averages away (30 points in the top 3% of V) shows here. NaN p
        when the weights depend on the labels.
    span_chosen : bool
        ``span`` was chosen from the data (generalised cross-validation of the gap curve).
    rank_knots : ndarray
        V at the row quantiles 0%, 1%, ..., 100% of the rows outside the spikes (101 order
        statistics; empty when every row is at a spike): the ranks a quantile-spaced axis
        draws V at.
    within : FineBinBound or None
        Drawn from an engine's fine bins of V (more distinct values than it returns): how far
        each drawn point, VCE(v*), VECE and :math:`D/\sigma` can be from those of the rows
        themselves (:mod:`mcviz.stats.variable_bound`). None: drawn from the rows, or from
        their sums per distinct value (exact).
    """

    name: str
    kind: str
    error: LoessCurve
    predicted: LoessCurve
    gap: LoessCurve
    vce: float
    vce_at: float
    vce_support: float
    vece: float
    bin_edges: np.ndarray
    bin_weight: np.ndarray
    bin_error: np.ndarray
    bin_predicted: np.ndarray
    histogram_edges: np.ndarray
    histogram_counts: np.ndarray
    n: int
    n_missing: int
    span: float
    warnings: tuple[str, ...]
    dates: bool = False
    vce_ci: tuple[float, float] = (float("nan"), float("nan"))
    vce_significant: bool = False
    kuiper_z: float = float("nan")
    p_value: float = float("nan")
    span_chosen: bool = False
    rank_knots: np.ndarray = field(default_factory=lambda: np.empty(0))
    within: FineBinBound | None = None

    def record(self) -> dict:
        """Return the JSON-ready summary (the fields of ``mcviz variables --json``)."""
        spikes = self.gap.x[self.gap.spike]
        value = (lambda v: str(pd.Timestamp(round(v)))) if self.dates else float
        return {
            "name": self.name, "kind": self.kind, "vece": json_number(self.vece),
            "vce": json_number(self.vce),
            "vce_at": value(self.vce_at) if np.isfinite(self.vce_at) else None,
            "vce_support": json_number(self.vce_support),
            "vce_ci": [json_number(v) for v in self.vce_ci] if np.isfinite(self.vce) else None,
            "vce_significant": self.vce_significant, "kuiper_z": json_number(self.kuiper_z),
            "p_value": json_number(self.p_value), "span": float(self.span),
            "span_chosen": self.span_chosen, "n": self.n,
            "spikes": [value(v) for v in spikes], "warnings": list(self.warnings),
        } | ({} if self.within is None else {"within": self.within.record()})



def json_number(value: float) -> float | None:
    """Return ``value`` as a float, or None when it is not finite (JSON has no NaN)."""
    return float(value) if np.isfinite(value) else None


def prediction_errors(pred: Predictions) -> tuple[np.ndarray, np.ndarray]:
    r"""Per-row error :math:`e` and predicted error :math:`\hat e` (score order).

    Binary scores: predicted class :math:`\mathbb{1}[p \ge 0.5]`,
    :math:`e = \mathbb{1}[\text{label} \ne \text{class}]`, :math:`\hat e = 1 - \max(p, 1-p)`.
    Multi-class (top label): :math:`e = 1 - \text{label}`, :math:`\hat e = 1 - \text{score}`.

    Raises
    ------
    ValidationError
        For real-valued responses (there is no predicted class).

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.2, 0.7, 0.5], [1, 1, 0])
    >>> e, e_hat = prediction_errors(pred)
    >>> e.tolist(), np.round(e_hat, 10).tolist()
    ([1.0, 1.0, 0.0], [0.2, 0.5, 0.3])
    """
    if pred.response_kind != "binary":
        raise ValidationError(
            f"column {pred.label_column!r}: variable-based calibration needs 0/1 labels or "
            "classes; the response is real-valued.",
            column=pred.label_column,
        )
    if pred.multiclass:
        return 1.0 - pred.label, 1.0 - pred.score
    predicted_class = (pred.score >= 0.5).astype(float)
    error = (pred.label != predicted_class).astype(float)
    predicted_error = 1.0 - np.maximum(pred.score, 1.0 - pred.score)
    return error, predicted_error


def vece(
    variable: np.ndarray,
    error: np.ndarray,
    predicted: np.ndarray,
    weight: np.ndarray | None = None,
    *,
    bins: int = 10,
    sorted_variable: np.ndarray | None = None,
    spikes: np.ndarray | None = None,
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""VECE over equal-support bins of a numeric variable (eq. (7) of [1]).

    Parameters
    ----------
    variable, error, predicted : ndarray of shape (n,)
        V (no missing values), :math:`e` and :math:`\hat e`.
    weight : ndarray, optional
    bins : int, default 10
    sorted_variable : ndarray, optional
        ``np.sort(variable)`` when the caller has it (saves a sort).
    spikes : ndarray, optional
        Values holding a large share of the weight (the zeros of a zero-inflated covariate):
        each is a bin of its own and the ``bins`` equal-support bins are cut from the other
        rows, so a 95%-zero column still gets ``bins + 1`` bins instead of collapsing to two
        (and columns no longer tie on the same two bins).

    Returns
    -------
    value : float
    edges : ndarray
        Unique quantile edges.
    share, error_mean, predicted_mean : ndarray
        Per non-empty bin.

    Examples
    --------
    V = 1..4 with 2 bins (edges 1, 2.5, 4): bin 1 holds e = (1, 0), ê = (0.1, 0.1) → gap 0.4;
    bin 2 holds e = (0, 0), ê = (0.2, 0.4) → gap 0.3; VECE = 0.5·0.4 + 0.5·0.3 = 0.35.

    >>> value, *_ = vece(np.array([1, 2, 3, 4.0]), np.array([1, 0, 0, 0.0]),
    ...                  np.array([0.1, 0.1, 0.2, 0.4]), bins=2)
    >>> round(value, 12)
    0.35

    With a spike at 0 (six of ten rows), the other four rows get the two bins:

    >>> v = np.array([0, 0, 0, 0, 0, 0, 1, 2, 3, 4.0])
    >>> value, edges, share, *_ = vece(v, np.zeros(10), np.full(10, 0.1), bins=2,
    ...                                spikes=np.array([0.0]))
    >>> edges.tolist(), share.tolist()
    ([1.0, 2.5, 4.0], [0.2, 0.2, 0.6])
    """
    v = np.asarray(variable, dtype=float)
    ordered = np.sort(v) if sorted_variable is None else sorted_variable
    spikes = np.empty(0) if spikes is None else np.asarray(spikes, dtype=float)
    on_spike = np.isin(v, spikes) if spikes.size else None
    if on_spike is not None and not on_spike.all():
        ordered = ordered[~np.isin(ordered, spikes)]
    edges = np.unique(sorted_quantile(ordered, np.linspace(0.0, 1.0, bins + 1)))
    # Right-closed bins (e_{k-1}, e_k], the first one closed at the minimum: the bin of v is
    # the number of inner edges below it.
    index = np.zeros(v.size, dtype=np.intp)
    for edge in edges[1:-1]:
        np.add(index, v > edge, out=index)
    count = max(edges.size - 1, 1)
    if on_spike is not None:  # each spike its own bin, after the others
        index[on_spike] = count + np.searchsorted(spikes, v[on_spike])
        count += spikes.size
    if weight is None:
        total = np.bincount(index, minlength=count).astype(float)
        sum_error = np.bincount(index, weights=error, minlength=count)
        sum_predicted = np.bincount(index, weights=predicted, minlength=count)
        weight_total = float(v.size)
    else:
        w = np.asarray(weight, dtype=float)
        total = np.bincount(index, weights=w, minlength=count)
        sum_error = np.bincount(index, weights=w * error, minlength=count)
        sum_predicted = np.bincount(index, weights=w * predicted, minlength=count)
        weight_total = float(w.sum())
    keep = total > 0  # empty bins are skipped
    share = total[keep] / weight_total
    error_mean = sum_error[keep] / total[keep]
    predicted_mean = sum_predicted[keep] / total[keep]
    value = float(np.sum(share * np.abs(predicted_mean - error_mean)))  # eq. (7)
    return value, edges, share, error_mean, predicted_mean


def _numeric_values(pred: Predictions, name: str) -> np.ndarray:
    return ordinal_values(pred.covariates[name])  # one numeric view of a covariate


def is_nominal(pred: Predictions, name: str) -> bool:
    """Whether a covariate is read as levels (nominal kind or a categorical column)."""
    return pred.covariate_kinds.get(name) == "nominal" or isinstance(
        pred.covariates[name].dtype, pd.CategoricalDtype
    )


def _present_values(
    pred: Predictions, variable: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, int]:
    """V, e, ê and the weights on the rows where V is present; refuses infinite values."""
    error, predicted = prediction_errors(pred)
    values = _numeric_values(pred, variable)
    infinite = np.isinf(values)
    if infinite.any():
        rows = ", ".join(str(r) for r in np.sort(pred.row[infinite])[:5])
        more = ", ..." if infinite.sum() > 5 else ""
        raise ValidationError(
            f"column {variable!r}: {int(infinite.sum()):,} of {values.size:,} rows are infinite "
            f"(rows {rows}{more}); a curve along it cannot be drawn.",
            column=variable,
        )
    present = ~np.isnan(values)
    n_missing = int((~present).sum())
    if not present.any():
        raise ValidationError(f"covariate {variable!r} is missing on every row.", column=variable)
    if n_missing:
        values, error, predicted = values[present], error[present], predicted[present]
    weight = pred.weight[present] if pred.weighted else None
    return values, error, predicted, weight, n_missing


def _clipped(curve: LoessCurve, low: float) -> LoessCurve:
    """Clip the fit and band of a curve to [low, 1] (displayed rates)."""
    return replace(
        curve, fit=_readonly(np.clip(curve.fit, low, 1.0)),
        lower=_readonly(np.clip(curve.lower, low, 1.0)),
        upper=_readonly(np.clip(curve.upper, low, 1.0)),
    )


def _drawn_as_fitted(rate: LoessCurve) -> np.ndarray:
    """Grid points where a rate's fit lies in [0, 1], so clipping leaves it as fitted.

    Only there is the gap between the drawn curves the gap of VCE(v*) (issue 40: "VCE(v*)
    2.67% at age = 90" where both drawn rates were 0, the fits -5.3% and -8.0%). A tolerance of
    1e-9 keeps a rate that is 0 or 1 up to rounding.
    """
    return (rate.fit >= -CLIP_TOLERANCE) & (rate.fit <= 1.0 + CLIP_TOLERANCE)


def _eligible(name: str, gap: LoessCurve, rates: list[LoessCurve],
              radius: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Grid points eligible for v* (module notes) and the warnings about the curve's edges."""
    candidates = _candidates(gap, radius)
    overshoot = candidates & ~(_drawn_as_fitted(rates[0]) & _drawn_as_fitted(rates[1]))
    notes = _edge_warnings(name, gap)
    if overshoot.any():
        notes.append(f"{name}: at {int(overshoot.sum())} grid points "
                     f"({_intervals(gap.x, overshoot)}) a fitted rate leaves [0, 1] (the local "
                     "fit overshoots) and is drawn clipped; left out of VCE(v*).")
    return candidates & ~overshoot, notes


def _intervals(x: np.ndarray, mask: np.ndarray) -> str:
    """Describe the runs of ``mask`` over the grid ``x`` in words: "0 to 3.5, 98 to 120"."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.astype(np.int8), [0]))))
    runs = [(x[a], x[b - 1]) for a, b in zip(edges[::2], edges[1::2], strict=True)]
    said = [readable_number(lo, digits=4) if lo == hi else  # no exponent in a warning (#40)
            f"{readable_number(lo, digits=4)} to {readable_number(hi, digits=4)}"
            for lo, hi in runs[:4]]
    text = ", ".join(said)
    return text + (f" and {len(runs) - 4} more" if len(runs) > 4 else "")


def _edge_warnings(name: str, gap: LoessCurve) -> list[str]:
    """Thin support and degenerate fits, in words (the rules of LoessCurve)."""
    notes = []
    smooth = ~gap.spike
    thin = gap.thin & smooth & ~gap.degenerate
    if thin.any():
        notes.append(
            f"{name}: thin support at {int(thin.sum())} of {int(smooth.sum())} grid points "
            f"({_intervals(gap.x, thin)}): fewer than {MIN_EFFECTIVE_ROWS:g} effective rows, or "
            f"rows within {NEAR:g} of the window radius fewer than {SPARSE_RATIO:.0%} of what "
            "the window's average density would put there; drawn lighter and left out of "
            "VCE(v*)."
        )
    if gap.degenerate.any():
        notes.append(
            f"{name}: the local fit degenerates at {int(gap.degenerate.sum())} grid points "
            f"({_intervals(gap.x, gap.degenerate)}): too few distinct values with weight in the "
            "window for the local polynomial, or an ill-conditioned design; not extrapolated "
            "from, left out of VCE(v*)."
        )
    thin_spikes = gap.thin & gap.spike
    if thin_spikes.any():
        notes.append(
            f"{name}: value(s) {_intervals(gap.x, thin_spikes)} hold too few rows "
            f"(under {MIN_EFFECTIVE_ROWS:g} effective rows); left out of VCE(v*)."
        )
    return notes


def _candidates(gap: LoessCurve, radius: np.ndarray) -> np.ndarray:
    """Grid points eligible for v*: supported, and out of reach of thin support (module notes).

    A LOESS point is out of reach when no thin grid point (outside spikes) lies within
    :data:`REACH` times its window radius; spikes are estimated from their own rows.
    """
    barriers = np.sort(gap.x[gap.thin & ~gap.spike])
    if not barriers.size:
        return ~gap.thin
    x = gap.x
    position = np.searchsorted(barriers, x)
    left = barriers[np.maximum(position - 1, 0)]
    right = barriers[np.minimum(position, barriers.size - 1)]
    distance = np.minimum(np.abs(x - left), np.abs(right - x))
    reach = REACH * np.where(np.isfinite(radius), radius, np.inf)
    return ~gap.thin & (gap.spike | (distance >= reach))


def simultaneous_z(df: float) -> float:
    r"""Critical value of the band at v*: Scheffé's, over the curve's degrees of freedom.

    VCE(v*) is the largest of many correlated estimates, so a pointwise 95% band at the selected
    point excludes 0 far more often than 5% of the time on calibrated data (measured: 2 of 12
    calibrated zero-inflated covariates with Bonferroni over 5 windows). The LOESS curve is a
    linear smoother whose fits lie, approximately, in a space of dimension
    :math:`\nu_1 = \operatorname{tr} L` (its equivalent number of parameters, spikes
    included), and for every :math:`v` in it :math:`|\hat g(v) - g(v)|/\mathrm{se}(v) \le
    \sqrt{\chi^2_{p}}` (Cauchy-Schwarz; Scheffé's method), so the band is
    :math:`\hat g(v^*) \pm z\,\mathrm{se}(v^*)` with
    :math:`z = \sqrt{\chi^2_{p,\,0.95}}`, :math:`p = \lceil \nu_1 \rceil`.

    Examples
    --------
    >>> round(simultaneous_z(4.2), 3)
    3.327
    """
    return float(np.sqrt(chi2.ppf(0.95, max(int(np.ceil(df - 1e-9)), 1))))


def _worst_point(
    gap: LoessCurve, radius: np.ndarray, values: np.ndarray, weight: np.ndarray | None,
    candidates: np.ndarray,
) -> tuple[float, float, float]:
    """VCE(v*), v* and the weight within the window at v*, over eligible points (eq. (8))."""
    supported = np.flatnonzero(candidates)
    if not supported.size:
        return float("nan"), float("nan"), float("nan")
    where = int(supported[np.argmax(np.abs(gap.fit[supported]))])  # eq. (8)
    at = float(gap.x[where])
    if gap.spike[where]:
        inside = values == at
    else:  # the window of the non-spike rows
        spikes = gap.x[gap.spike]
        inside = np.abs(values - at) < radius[where]
        if spikes.size:
            inside &= ~np.isin(values, spikes)
    support = float(inside.sum() if weight is None else weight[inside].sum())
    return float(abs(gap.fit[where])), at, support


def variable_calibration(
    pred: Predictions,
    variable: str,
    *,
    index: np.ndarray | None = None,
    span: float | None = None,
    degree: int = 2,
    grid_points: int = 500,
    exact: bool | None = None,
) -> VariableCalibration:
    r"""Error and predicted-error curves along a numeric covariate, with VCE(v*) and VECE.

    Parameters
    ----------
    pred : Predictions
    variable : str
        A numeric (ordinal) covariate.
    index : array of int or bool, optional
        A subpopulation (positions in score order or a mask, as
        :meth:`~mcviz.io.Predictions.subset` takes): the statistic of its rows alone.
    span : float or None, default None
        LOESS span, 0.3 to 1 (a fraction of the rows outside spikes); None: chosen from the
        data by generalised cross-validation over :data:`SPANS` (:func:`cross_validated_span`;
        0.9 is the paper's).
    degree : int, default 2
    grid_points : int, default 500
        About this many points over the whole observed range of V: half equally spaced, half
        at equally spaced quantiles, plus the spikes (:mod:`mcviz.stats.smoothing.curves`).
    exact : bool or None
        Passed to the LOESS evaluation (None: exact sums up to 2,048 distinct values, else
        binned with deviation below 1e-6).

    Returns
    -------
    VariableCalibration

    Raises
    ------
    ValidationError
        Unknown or nominal covariate, V missing everywhere or constant, span out of range,
        real-valued response.

    See Also
    --------
    mcviz.stats.cumulative.cumulative_differences : with ``order_by=variable``, the cumulative view
        along V (no smoothing parameter), shown beside these curves.

    Notes
    -----
    Module notes: :math:`e`, :math:`\hat e`, eq. (8) for VCE(v*) and eq. (7) for VECE. Weights
    multiply the LOESS kernel weights and weight the bin means. Honest edges: a value holding
    at least 5% of the weight is estimated from its own rows (never a window edge); points
    with thin support or a degenerate local fit (the rules of
    :class:`~mcviz.stats.smoothing.LoessCurve`) are kept on the curve, flagged, named in
    ``warnings`` and left out of VCE(v*).
    """
    pred = pred.subset(index)
    values, error, predicted, weight, n_missing, sorted_values = _ordinal_values(
        pred, variable, span)
    chosen = span is None
    if chosen:
        span = cross_validated_span(values, error, predicted, weight, degree=degree,
                                    exact=exact, sorted_values=sorted_values)
    fits = spiked_fits(
        values, [error, predicted], weight, None, span=span, degree=degree, exact=exact,
        sorted_x=sorted_values, grid_points=grid_points, spike_share=SPIKE_SHARE,
    )
    curves = curves_from_fits(variable, fits, span, values, weight)
    spikes = curves[0].x[curves[0].spike]
    binned = vece(values, error, predicted, weight, sorted_variable=sorted_values,
                  spikes=spikes)
    hist_edges = np.linspace(sorted_values[0], sorted_values[-1], HISTOGRAM_BINS + 1)
    counts = np.searchsorted(sorted_values, hist_edges, side="right")
    counts[0] = 0
    along = cumulative_differences(pred, order_by=variable, centred=True)  # no bandwidth
    return assembled(
        variable, curves, binned, hist_edges, np.diff(counts), n=int(values.size),
        n_missing=n_missing, span=span, span_chosen=chosen,
        along=(float(along.kuiper_z), float(along.p_value)),
        rank_knots=_rank_knots(sorted_values, spikes),
        dates=pd.api.types.is_datetime64_any_dtype(pred.covariates[variable]),
    )


def assembled(variable: str, curves: tuple, binned: tuple, hist_edges: np.ndarray,
              hist_counts: np.ndarray, *, n: int, n_missing: int, span: float,
              span_chosen: bool, along: tuple[float, float], rank_knots: np.ndarray,
              dates: bool = False, within: FineBinBound | None = None) -> VariableCalibration:
    r"""Return the :class:`VariableCalibration` of its parts (rows or sums per value alike).

    ``curves``: :func:`curves_from_fits`' tuple; ``binned``: :func:`vece`'s; ``along``:
    Kuiper's :math:`D/\sigma` and p of the cumulative view along V.
    """
    gap, rates, vce, vce_at, vce_support, vce_ci, warnings = curves
    value, edges, share, error_mean, predicted_mean = binned
    return VariableCalibration(
        name=variable, kind="ordinal",
        error=rates[0], predicted=rates[1],
        gap=gap, vce=vce, vce_at=vce_at, vce_support=vce_support, vece=value,
        bin_edges=_readonly(edges), bin_weight=_readonly(share),
        bin_error=_readonly(error_mean), bin_predicted=_readonly(predicted_mean),
        histogram_edges=_readonly(hist_edges), histogram_counts=_readonly(hist_counts),
        n=n, n_missing=n_missing, span=span, warnings=tuple(warnings), dates=dates,
        vce_ci=vce_ci, vce_significant=bool(vce_ci[0] > 0 or vce_ci[1] < 0),
        kuiper_z=along[0], p_value=along[1], span_chosen=span_chosen,
        rank_knots=_readonly(rank_knots), within=within,
    )


def curves_from_fits(variable: str, fits, span: float, values: np.ndarray,
                     weight: np.ndarray | None) -> tuple:
    """Return the gap and rate curves of the fits, VCE(v*) (eq. (8)), v*, support and band.

    ``values`` and ``weight``: the rows (weight None: counted), or distinct values with their
    rows' weights (the support at v* sums them). Returns the gap (clipped), the two rates
    (clipped, as drawn), VCE(v*), v*, its support, its band and the warnings.
    """
    used = int(fits.degree.max(initial=0))
    gap = _clipped(fits.curve(np.array([1.0, -1.0]), span=span, degree=used), -1.0)
    rates = [fits.curve(np.array(c), span=span, degree=used) for c in ([1.0, 0.0], [0.0, 1.0])]
    candidates, warnings = _eligible(variable, gap, rates, fits.radius)
    vce, vce_at, vce_support = _worst_point(gap, fits.radius, values, weight, candidates)
    vce_ci = _vce_band(gap, vce, vce_at)
    if not np.isfinite(vce):
        warnings.append(f"{variable}: no point of the curve has enough support; VCE(v*) is not "
                        "reported.")
    rates = [_clipped(rate, 0.0) for rate in rates]
    return gap, rates, vce, vce_at, vce_support, vce_ci, warnings


def _rank_knots(sorted_values: np.ndarray, spikes: np.ndarray) -> np.ndarray:
    """V at the row quantiles 0%, 1%, ..., 100% of the rows off the spikes: order statistics.

    Values the data hold (R type 1 on the positions 0 .. n - 1), so a tick reads "26", not an
    interpolated "26.4" years.

    >>> _rank_knots(np.array([0.0, 0, 0, 0, 1, 2, 3, 4, 5]), np.array([0.0]))[[0, 25, 100]].tolist()
    [1.0, 2.0, 5.0]
    """
    rest = sorted_values[~np.isin(sorted_values, spikes)] if spikes.size else sorted_values
    if not rest.size:
        return _readonly(np.empty(0))
    return _readonly(rest[np.floor(np.linspace(0.0, 1.0, 101) * (rest.size - 1)).astype(int)])


def _ordinal_values(pred: Predictions, variable: str, span: float | None) -> tuple[
        np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, int, np.ndarray]:
    """Check ``variable`` and ``span``; return :func:`_present_values` and the sorted values.

    Refused (:class:`ValidationError` naming the column): unknown, nominal, or a single value
    where present.
    """
    pred.require_covariate(variable)
    if span is not None:
        check_span(span, 0.3)
    if is_nominal(pred, variable):
        raise ValidationError(
            f"covariate {variable!r} is nominal; use level_calibration for per-level errors.",
            column=variable,
        )
    values, error, predicted, weight, n_missing = _present_values(pred, variable)
    sorted_values = sorted_copy(values)
    if sorted_values[0] == sorted_values[-1]:
        single = (pd.Timestamp(round(sorted_values[0])) if pd.api.types.is_datetime64_any_dtype(
            pred.covariates[variable]) else f"{sorted_values[0]:g}")
        raise ValidationError(
            f"covariate {variable!r} takes a single value ({single}) on the "
            f"{values.size:,} rows where it is present; there is no curve to draw.",
            column=variable,
        )
    return values, error, predicted, weight, n_missing, sorted_values


def _vce_band(gap: LoessCurve, vce: float, vce_at: float) -> tuple[float, float]:
    """Return the signed gap at v* ± Scheffé's z se(v*) (:func:`simultaneous_z`); NaN without v*."""
    if not np.isfinite(vce):
        return float("nan"), float("nan")
    where = int(np.flatnonzero(gap.x == vce_at)[0])
    z = simultaneous_z(gap.df)
    signed = float(gap.fit[where])
    return (max(signed - z * float(gap.se[where]), -1.0),
            min(signed + z * float(gap.se[where]), 1.0))


def cross_validated_span(
    values: np.ndarray, error: np.ndarray, predicted: np.ndarray, weight: np.ndarray | None,
    *, degree: int = 2, exact: bool | None = None, sorted_values: np.ndarray | None = None,
) -> float:
    r"""Return the span of :data:`SPANS` with the smallest generalised cross-validation error.

    The gap curve :math:`\hat g = L r` (:math:`r = e - \hat e`) is a linear smoother, so its
    leave-one-out error has the closed-form approximation of Craven and Wahba [2]

    .. math:: \mathrm{GCV}(\text{span}) = \frac{\sum_i W_i (r_i - \hat g(x_i))^2 / W}
              {(1 - \nu_1 / n)^2}, \qquad \nu_1 = \operatorname{tr} L,

    with the weighted residual sum of squares and :math:`\nu_1` the fit already computes for
    its band (spikes, values holding 5% of the weight, are their own estimates at every span).
    The widest span wins ties. A local error (30 points in the top 3% of V) lowers the
    residuals of narrow windows enough to pick them; on calibrated data the widest spans win.
    Above :data:`CV_ROWS` rows the choice is made on :data:`CV_ROWS` rows evenly spaced in
    the given (score) order, so it costs seven fits of that size whatever the data size (a
    subsample's noise favours wider spans than all rows would: the choice errs on the side of
    the paper's smoothing).

    References
    ----------
    .. [2] P. Craven, G. Wahba, "Smoothing noisy data with spline functions", Numerische
       Mathematik 31, 1979 (generalised cross-validation).

    Examples
    --------
    A straight-line gap: every span fits it, the residuals are the same noise, and the
    widest span has the fewest parameters (0.9):

    >>> rng = np.random.default_rng(0)
    >>> v = rng.random(4000)
    >>> e = (rng.random(4000) < 0.2 + 0.1 * v).astype(float)
    >>> cross_validated_span(v, e, np.full(4000, 0.2) + 0.1 * v, None)
    0.9
    """
    values = np.asarray(values, dtype=float)
    if values.size > CV_ROWS:
        rows = np.linspace(0, values.size - 1, CV_ROWS).round().astype(np.intp)
        values, error, predicted = values[rows], error[rows], predicted[rows]
        weight, sorted_values = None if weight is None else weight[rows], None
    ordered = sorted_copy(values) if sorted_values is None else sorted_values
    return gcv_span(lambda span: spiked_fits(
        values, [error, predicted], weight, np.empty(0), span=span, degree=degree, exact=exact,
        sorted_x=ordered, spike_share=SPIKE_SHARE))


def gcv_span(fits_at) -> float:
    """Return the span of :data:`SPANS` whose gap fit ``fits_at(span)`` has the smallest GCV.

    The rule of :func:`cross_validated_span` (the widest span wins ties), for fits of rows or
    of their sums per value.
    """
    combination = np.array([1.0, -1.0])
    best, best_score = SPANS[-1], np.inf
    for span in reversed(SPANS):
        fits = fits_at(span)
        rss = float(combination @ fits.rss @ combination)
        shrink = 1.0 - fits.trace / fits.n
        score = rss / fits.weight_total / shrink**2 if shrink > 0 else np.inf  # GCV
        if score < best_score * (1 - 1e-9):
            best, best_score = span, score
    return best

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
eligible only when no thin point lies within :data:`REACH` (a tenth) of its window radius.
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

Nominal variables get one bin per level (a missing value is its own level): the error rate
and mean predicted error of each level with 95% intervals, the largest per-level gap among the
levels with enough rows to say something (at least 30 effective rows and a gap interval within
±10 percentage points; reported as VCE, at that level) and VECE over all levels.

References
----------
.. [1] M. Kelly, P. Smyth, "Variable-Based Calibration for Machine Learning Classifiers",
   AAAI 2023; eqs. (7)-(8), Table 1, Section 6, Appendix B.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.special import ndtri
from scipy.stats import chi2

from mcviz.core.arrays import Z95, sorted_copy
from mcviz.core.arrays import readonly as _readonly
from mcviz.core.conditions import ordinal_values
from mcviz.core.sigma import sigma_from_variance
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.stats.smoothing import LoessCurve, check_span, sorted_quantile, spiked_fits
from mcviz.stats.smoothing.curves import SPIKE_SHARE
from mcviz.stats.smoothing.loess import MIN_EFFECTIVE_ROWS, NEAR, SPARSE_RATIO

__all__ = [
    "LevelCalibration",
    "VariableCalibration",
    "level_calibration",
    "prediction_errors",
    "rank_variables",
    "simultaneous_z",
    "variable_calibration",
    "variable_records",
    "vece",
]

MISSING_LEVEL = "(missing)"
HISTOGRAM_BINS = 60
MIN_LEVEL_ROWS = 30
"""Levels with fewer effective rows are left out of VCE(v*)."""
REACH = 0.1
"""v* keeps this share of its window radius away from thin support."""
MAX_LEVEL_HALF_WIDTH = 0.10
"""Levels whose gap has a wider 95% interval (half-width, probability units) are left out."""


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

    def record(self) -> dict:
        """Return the JSON-ready summary (the fields of ``mcviz variables --json``)."""
        spikes = self.gap.x[self.gap.spike]
        value = (lambda v: str(pd.Timestamp(round(v)))) if self.dates else float
        return {
            "name": self.name, "kind": self.kind, "vece": _number(self.vece),
            "vce": _number(self.vce),
            "vce_at": value(self.vce_at) if np.isfinite(self.vce_at) else None,
            "vce_support": _number(self.vce_support),
            "vce_ci": [_number(v) for v in self.vce_ci] if np.isfinite(self.vce) else None,
            "vce_significant": self.vce_significant, "n": self.n,
            "spikes": [value(v) for v in spikes], "warnings": list(self.warnings),
        }


@dataclass(frozen=True, slots=True, eq=False)
class LevelCalibration:
    r"""Error rate and mean predicted error per level of a nominal variable.

    Attributes
    ----------
    name : str
    kind : str
        ``"nominal"`` (the covariate kind of :attr:`Predictions.covariate_kinds`).
    levels : tuple of str
        Levels in their category order (``"(missing)"`` last when present).
    count : ndarray
        Rows per level.
    effective_size : ndarray
        Kish's effective number of rows per level, :math:`(\sum W_i)^2 / \sum W_i^2` (the
        count when unweighted).
    weight_share : ndarray
        :math:`W_l / W`.
    error, predicted, gap : ndarray
        Per-level (weighted) mean of :math:`e`, :math:`\hat e` and :math:`e - \hat e`.
    error_lower, error_upper, predicted_lower, predicted_upper, gap_lower, gap_upper : ndarray
        95% normal intervals: mean ± 1.96 · sqrt(Σ W_i² (x_i − mean)²) / Σ W_i (the binomial
        interval sqrt(p(1−p)/n) when unweighted); rates clipped to [0, 1].
    eligible : ndarray of bool
        Levels with enough rows to say something: an effective size of at least
        ``MIN_LEVEL_ROWS`` (30) and a 95% interval of the gap no wider than
        ± ``MAX_LEVEL_HALF_WIDTH`` (10 percentage points).
    vce : float
        The largest |gap| among eligible levels (NaN when none is).
    vce_at : str or None
        Its level.
    vce_support : float
        The weight of that level (its rows when unweighted).
    vece : float
        Eq. (7) with one bin per level (every level, weighted by its share).
    n : int
    warnings : tuple of str
        Levels left out of VCE, in words.
    vce_ci : tuple of float
        The gap at that level ± :math:`z\,\mathrm{se}`, with :math:`z` Bonferroni's over the
        eligible levels it was picked from (:math:`\Phi^{-1}(1 - 0.025/m)`); NaN when VCE is.
    vce_significant : bool
        ``vce_ci`` excludes 0; False: VCE(v*) is within noise.
    """

    name: str
    kind: str
    levels: tuple[str, ...]
    count: np.ndarray
    effective_size: np.ndarray
    weight_share: np.ndarray
    error: np.ndarray
    predicted: np.ndarray
    gap: np.ndarray
    error_lower: np.ndarray
    error_upper: np.ndarray
    predicted_lower: np.ndarray
    predicted_upper: np.ndarray
    gap_lower: np.ndarray
    gap_upper: np.ndarray
    eligible: np.ndarray
    vce: float
    vce_at: str | None
    vce_support: float
    vece: float
    n: int
    warnings: tuple[str, ...]
    vce_ci: tuple[float, float] = (float("nan"), float("nan"))
    vce_significant: bool = False

    def record(self) -> dict:
        """Return the JSON-ready summary (the fields of ``mcviz variables --json``)."""
        return {
            "name": self.name, "kind": self.kind, "vece": _number(self.vece),
            "vce": _number(self.vce), "vce_at": self.vce_at,
            "vce_support": _number(self.vce_support),
            "vce_ci": [_number(v) for v in self.vce_ci] if self.vce_at is not None else None,
            "vce_significant": self.vce_significant, "n": self.n, "spikes": [],
            "warnings": list(self.warnings),
        }


def _number(value: float) -> float | None:
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


def _is_nominal(pred: Predictions, name: str) -> bool:
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


def _intervals(x: np.ndarray, mask: np.ndarray) -> str:
    """Describe the runs of ``mask`` over the grid ``x`` in words: "[0, 3.5], [98, 120]"."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.astype(np.int8), [0]))))
    runs = [(x[a], x[b - 1]) for a, b in zip(edges[::2], edges[1::2], strict=True)]
    text = ", ".join(f"{lo:.4g}" if lo == hi else f"[{lo:.4g}, {hi:.4g}]" for lo, hi in runs[:4])
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
    span: float = 0.9,
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
    span : float, default 0.9
        LOESS span, 0.3 to 1 (a fraction of the rows outside spikes).
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
    pred.require_covariate(variable)
    check_span(span, 0.3)
    if _is_nominal(pred, variable):
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
    fits = spiked_fits(
        values, [error, predicted], weight, None, span=span, degree=degree, exact=exact,
        sorted_x=sorted_values, grid_points=grid_points, spike_share=SPIKE_SHARE,
    )
    used = int(fits.degree.max(initial=0))
    gap = _clipped(fits.curve(np.array([1.0, -1.0]), span=span, degree=used), -1.0)
    candidates = _candidates(gap, fits.radius)
    vce, vce_at, vce_support = _worst_point(gap, fits.radius, values, weight, candidates)
    vce_ci, significant = (float("nan"), float("nan")), False
    if np.isfinite(vce):
        where = int(np.flatnonzero(gap.x == vce_at)[0])
        z = simultaneous_z(gap.df)
        signed = float(gap.fit[where])
        vce_ci = (max(signed - z * float(gap.se[where]), -1.0),
                  min(signed + z * float(gap.se[where]), 1.0))
        significant = bool(vce_ci[0] > 0 or vce_ci[1] < 0)
    warnings = _edge_warnings(variable, gap)
    if not np.isfinite(vce):
        warnings.append(f"{variable}: no point of the curve has enough support; VCE(v*) is not "
                        "reported.")
    value, edges, share, error_mean, predicted_mean = vece(
        values, error, predicted, weight, sorted_variable=sorted_values,
        spikes=gap.x[gap.spike],
    )
    hist_edges = np.linspace(sorted_values[0], sorted_values[-1], HISTOGRAM_BINS + 1)
    cumulative = np.searchsorted(sorted_values, hist_edges, side="right")
    cumulative[0] = 0
    return VariableCalibration(
        name=variable, kind="ordinal",
        error=_clipped(fits.curve(np.array([1.0, 0.0]), span=span, degree=used), 0.0),
        predicted=_clipped(fits.curve(np.array([0.0, 1.0]), span=span, degree=used), 0.0),
        gap=gap, vce=vce, vce_at=vce_at, vce_support=vce_support, vece=value,
        bin_edges=_readonly(edges), bin_weight=_readonly(share),
        bin_error=_readonly(error_mean), bin_predicted=_readonly(predicted_mean),
        histogram_edges=_readonly(hist_edges), histogram_counts=_readonly(np.diff(cumulative)),
        n=int(values.size), n_missing=n_missing, span=span, warnings=tuple(warnings),
        dates=pd.api.types.is_datetime64_any_dtype(pred.covariates[variable]),
        vce_ci=vce_ci, vce_significant=significant,
    )


def _level_codes(series: pd.Series) -> tuple[np.ndarray, tuple[str, ...]]:
    categorical = series.astype("category") if not isinstance(
        series.dtype, pd.CategoricalDtype
    ) else series
    codes = categorical.cat.codes.to_numpy().astype(np.int64)
    levels = [str(c) for c in categorical.cat.categories]
    if (codes < 0).any():
        codes = np.where(codes < 0, len(levels), codes)
        levels.append(MISSING_LEVEL)
    return codes, tuple(levels)


def level_calibration(
    pred: Predictions, variable: str, *, index: np.ndarray | None = None
) -> LevelCalibration:
    r"""Per-level error rate and mean predicted error of a covariate, with 95% intervals.

    Parameters
    ----------
    pred : Predictions
    variable : str
        Any covariate (nominal ones are the intended use; numeric values become levels).
    index : array of int or bool, optional
        A subpopulation (positions in score order or a mask): its rows alone.

    Returns
    -------
    LevelCalibration

    Notes
    -----
    VCE(v*) is the largest |gap| among the levels with enough rows to say something: an
    effective size :math:`(\sum W_i)^2 / \sum W_i^2` of at least 30 and a gap interval of at
    most ±10 percentage points (1.96 times its standard error). Other levels keep their
    estimates and intervals and count in VECE; ``warnings`` names them.

    Examples
    --------
    Two rows per level are too few for VCE(v*), which is then not reported:

    >>> pred = Predictions.from_arrays([0.9, 0.8, 0.2, 0.3], [1, 0, 0, 0],
    ...                                covariates={"g": ["a", "a", "b", "b"]})
    >>> result = level_calibration(pred, "g")
    >>> result.levels, np.round(result.gap, 10).tolist(), result.vce_at
    (('a', 'b'), [0.35, -0.25], None)
    """
    pred = pred.subset(index)
    pred.require_covariate(variable)
    error, predicted = prediction_errors(pred)
    codes, levels = _level_codes(pred.covariates[variable])
    size = len(levels)
    w = pred.weight
    total = np.bincount(codes, weights=w, minlength=size)
    present = total > 0
    safe = np.where(present, total, 1.0)

    def mean_and_interval(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mean = np.bincount(codes, weights=w * values, minlength=size) / safe
        deviation = values - mean[codes]
        variance = np.bincount(codes, weights=(w * deviation) ** 2, minlength=size)
        return mean, sigma_from_variance(variance, total)  # sqrt(sum W^2 (x - mean)^2) / sum W

    error_mean, error_se = mean_and_interval(error)
    predicted_mean, predicted_se = mean_and_interval(predicted)
    gap, gap_se = mean_and_interval(error - predicted)
    keep = np.flatnonzero(present)
    share = total / total.sum()
    effective = total**2 / np.maximum(np.bincount(codes, weights=w * w, minlength=size), 1e-300)
    eligible = (effective >= MIN_LEVEL_ROWS) & (Z95 * gap_se <= MAX_LEVEL_HALF_WIDTH) & present
    vce, vce_at, vce_support, warnings = _level_vce(variable, levels, gap, eligible, total, keep)
    vce_ci, significant = (float("nan"), float("nan")), False
    if vce_at is not None:  # Bonferroni over the eligible levels the largest gap was picked from
        at = levels.index(vce_at)
        z = float(ndtri(1.0 - 0.025 / max(int(eligible.sum()), 1)))
        vce_ci = (max(float(gap[at] - z * gap_se[at]), -1.0),
                  min(float(gap[at] + z * gap_se[at]), 1.0))
        significant = bool(vce_ci[0] > 0 or vce_ci[1] < 0)

    def pick(array: np.ndarray) -> np.ndarray:
        return _readonly(array[keep])

    return LevelCalibration(
        name=variable,
        kind="nominal",
        levels=tuple(levels[i] for i in keep),
        count=pick(np.bincount(codes, minlength=size)),
        effective_size=pick(effective),
        weight_share=pick(share),
        error=pick(error_mean),
        predicted=pick(predicted_mean),
        gap=pick(gap),
        error_lower=pick(np.clip(error_mean - Z95 * error_se, 0, 1)),
        error_upper=pick(np.clip(error_mean + Z95 * error_se, 0, 1)),
        predicted_lower=pick(np.clip(predicted_mean - Z95 * predicted_se, 0, 1)),
        predicted_upper=pick(np.clip(predicted_mean + Z95 * predicted_se, 0, 1)),
        gap_lower=pick(np.clip(gap - Z95 * gap_se, -1, 1)),
        gap_upper=pick(np.clip(gap + Z95 * gap_se, -1, 1)),
        eligible=pick(eligible),
        vce=vce,
        vce_at=vce_at,
        vce_support=vce_support,
        vece=float(np.sum(share[keep] * np.abs(gap[keep]))),  # eq. (7), one bin per level
        n=pred.n,
        warnings=tuple(warnings),
        vce_ci=vce_ci,
        vce_significant=significant,
    )


def _level_vce(
    variable: str, levels: tuple[str, ...], gap: np.ndarray, eligible: np.ndarray,
    total: np.ndarray, keep: np.ndarray,
) -> tuple[float, str | None, float, list[str]]:
    """Largest |gap| among eligible levels, its level and weight, and what was left out."""
    warnings = []
    left_out = keep[~eligible[keep]]
    if left_out.size:
        names = ", ".join(repr(levels[i]) for i in left_out[:5])
        more = f" and {left_out.size - 5} more" if left_out.size > 5 else ""
        warnings.append(
            f"{variable}: {left_out.size} of {keep.size} levels ({names}{more}) have fewer than "
            f"{MIN_LEVEL_ROWS} effective rows or a gap interval wider than "
            f"±{100 * MAX_LEVEL_HALF_WIDTH:g} pp; left out of VCE(v*)."
        )
    chosen = keep[eligible[keep]]
    if not chosen.size:
        warnings.append(f"{variable}: no level has enough rows; VCE(v*) is not reported.")
        return float("nan"), None, float("nan"), warnings
    where = int(chosen[np.argmax(np.abs(gap[chosen]))])
    return float(abs(gap[where])), levels[where], float(total[where]), warnings


_CACHE: dict[str, object] = {"pred": None, "results": {}}


def _summary(pred: Predictions, name: str, span: float) -> dict:
    """Return the JSON-ready record of one covariate, cached for the most recent Predictions."""
    if _CACHE["pred"] is not pred:
        _CACHE["pred"] = pred
        _CACHE["results"] = {}
    results: dict = _CACHE["results"]  # type: ignore[assignment]
    key = (name, span)
    if key not in results:
        if _is_nominal(pred, name):
            row = level_calibration(pred, name).record()
        else:
            present = _numeric_values(pred, name)
            present = present[~np.isnan(present)]
            if present.size == 0 or present.min() == present.max():
                # Constant (or all-missing) variable: no curve, and VECE over a single bin would
                # only repeat the overall gap, so it is not ranked (NaN sorts last). Any other
                # problem (infinite values) is raised, not hidden in the table.
                row = {"name": name, "kind": "ordinal", "vece": None, "vce": None,
                       "vce_at": None, "vce_support": None, "vce_ci": None,
                       "vce_significant": False, "n": int(present.size),
                       "spikes": [], "warnings": [
                           f"{name}: constant where present; no curve, not ranked."]}
            else:
                row = variable_calibration(pred, name, span=span).record()
        results[key] = row
    return results[key]


RANK_COLUMNS = ("name", "kind", "vece", "vce", "vce_at", "vce_support", "vce_significant",
                "warnings")


def variable_records(pred: Predictions, *, span: float = 0.9) -> list[dict]:
    """One JSON-ready record per covariate, ranked by VECE (the rows of ``mcviz variables``).

    Each record holds ``name``, ``kind`` (``"ordinal"`` or ``"nominal"``, the words of
    :attr:`Predictions.covariate_kinds`), ``vece``,
    ``vce``, ``vce_at`` (v*: a number, an ISO timestamp for dates, the level for nominal
    variables), ``vce_support`` (weight within the window at v*, or of the level; rows when
    unweighted), ``vce_ci`` ([low, high] of the signed gap at v*, a band valid for the chosen
    v*) and ``vce_significant`` (the band excludes 0; False: within noise), ``n`` (rows used),
    ``spikes`` (values estimated from their own rows) and
    ``warnings`` (a list of sentences). Missing values are ``None``; every value is a plain
    Python ``str``, ``float``, ``int``, ``list`` or ``None``.
    """
    check_span(span, 0.3)
    prediction_errors(pred)  # validates the response kind once
    rows = [dict(_summary(pred, name, span)) for name in pred.covariates.columns]
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["vece"] is None,
                                                    -(rows[i]["vece"] or 0.0), rows[i]["name"]))
    return [rows[i] | {"spikes": list(rows[i]["spikes"]),
                       "warnings": list(rows[i]["warnings"])} for i in order]


def rank_variables(
    pred: Predictions, *, index: np.ndarray | None = None, span: float = 0.9
) -> pd.DataFrame:
    """Rank every covariate by VECE (eq. (7)), with VCE(v*) and v* (eq. (8)) beside it.

    Parameters
    ----------
    pred : Predictions
    index : array of int or bool, optional
        A subpopulation (positions in score order or a mask, as
        :meth:`~mcviz.io.Predictions.subset` takes): the statistic of its rows alone.
    span : float, default 0.9
        LOESS span for the VCE curves (0.3 to 1).

    Returns
    -------
    DataFrame
        Columns ``name``, ``kind`` (``"ordinal"`` or ``"nominal"``, the words of
        :attr:`Predictions.covariate_kinds`), ``vece``, ``vce``,
        ``vce_at`` (v* for numeric variables — an ISO timestamp for dates — the level for
        nominal ones), ``vce_support`` (weight within the window at v*), ``vce_significant``
        (the band of VCE(v*) excludes 0) and ``warnings``
        (a tuple of sentences), sorted by ``vece`` descending. Values are probabilities (0 to
        1). VCE is NaN where no point or level has enough support; a variable that is
        constant where present has no curve: NaN, listed last. Results are cached per
        variable for the most recent ``pred``. :func:`variable_records` gives the same rows
        ready for JSON.
    """
    pred = pred.subset(index)
    records = variable_records(pred, span=span)
    frame = pd.DataFrame(
        [[record[c] for c in RANK_COLUMNS] for record in records], columns=list(RANK_COLUMNS)
    )
    for column in ("vece", "vce", "vce_support"):
        frame[column] = frame[column].astype(float)
    frame["vce_at"] = frame["vce_at"].astype(object)
    frame["warnings"] = [tuple(record["warnings"]) for record in records]
    return frame

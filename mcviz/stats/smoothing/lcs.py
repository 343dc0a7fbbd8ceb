r"""The Local Calibration Score and its curve (paper 004, eq. (6)).

:math:`\hat g(l)` is the mean label of the :math:`k` observations whose scores are nearest to
:math:`l` (every observation tied at the boundary distance included), computed from sums over
stretches of the sorted scores (not differences of prefix sums);
:math:`\mathrm{LCS} = \sum_j w_j (\hat g(l_j) - l_j)^2` (eq. (6) of [2]) with
:math:`w_j \propto \hat f(l_j)`, a Gaussian kernel density of the scores reflected at
0 and 1 (:mod:`mcviz.stats.smoothing.density`).

References
----------
.. [2] A. Fernandes Machado, A. Charpentier, E. Flachaire, E. Gallic, F. Hu, "From Uncertainty
   to Precision: Enhancing Binary Classifier Performance through Calibration", 2024; eq. (6).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcviz.core.arrays import readonly as _readonly
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.rules import check_lcs_response
from mcviz.stats.smoothing._common import Z95, _checked_weight
from mcviz.stats.smoothing.density import _reflected
from mcviz.stats.smoothing.neighbours import knn_mean

__all__ = ["LocalCalibrationScore", "local_calibration_score"]


@dataclass(frozen=True, slots=True, eq=False)
class LocalCalibrationScore:
    r"""The Local Calibration Score and its curve (paper 004, eq. (6)).

    Attributes
    ----------
    lcs : float
        :math:`\sum_j w_j (\hat g(l_j) - l_j)^2`.
    grid : ndarray of shape (J,)
        :math:`l_j = (j-1)/(J_0-1)` inside [min score, max score].
    fit : ndarray of shape (J,)
        :math:`\hat g(l_j)`, the mean label of the k nearest scores (clipped to [0, 1]).
    lower, upper : ndarray of shape (J,)
        95% band per grid point on the probit scale (see :func:`local_calibration_score`).
    weights : ndarray of shape (J,)
        :math:`w_j = \hat f(l_j) / \sum_j \hat f(l_j)`.
    count : ndarray of shape (J,)
        Observations in each window (k, or more with ties at the boundary).
    events : ndarray of shape (J,)
        Labels equal to 1 in each window (weighted when weighted).
    k : int
        :math:`\lfloor \mathrm{span} \cdot n \rfloor`.
    span : float
    n : int
    density_x, density_y : ndarray
        The reflected density of the scores on [0, 1] (integrates to 1 there), for drawing.
    bandwidth : float
        Bandwidth of the density (bw.nrd0 of the reflected sample).
    boundary : ndarray of bool, shape (J,)
        The window of :math:`l_j` holds the smallest or the largest score: it cannot extend
        past the end of the score range, so it is one-sided and :math:`\hat g` is the mean of
        the same :math:`k` extreme rows at every such point (flat). Flattening there is the
        window reaching the end of the score range, not over- or under-prediction.
    boundary_below, boundary_above : float
        The windows of every :math:`l \le` ``boundary_below`` hold the smallest score and
        those of every :math:`l \ge` ``boundary_above`` the largest (``boundary`` is
        :math:`l_j \le` ``boundary_below`` or :math:`l_j \ge` ``boundary_above``):
        :math:`(s_{(1)} + s_{(t + k)})/2` with :math:`t` the rows tied at the smallest score,
        and symmetrically at the top.
    jitter : bool
        Whether the authors' jitter was added to the scores.
    """

    lcs: float
    grid: np.ndarray
    fit: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    weights: np.ndarray
    count: np.ndarray
    events: np.ndarray
    k: int
    span: float
    n: int
    density_x: np.ndarray
    density_y: np.ndarray
    bandwidth: float
    boundary: np.ndarray
    boundary_below: float
    boundary_above: float
    jitter: bool


def _probit_band(mean: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """95% band per window on the probit scale; exact one-sided bounds at 0 and 1 events."""
    from scipy.special import ndtr, ndtri  # per window; imported here, not for mcviz metrics

    p = np.clip(mean, 0.0, 1.0)
    inner = (p > 0) & (p < 1)
    safe = np.where(inner, p, 0.5)
    eta = ndtri(safe)
    density = np.exp(-0.5 * eta**2) / np.sqrt(2.0 * np.pi)
    sd = np.sqrt(safe * (1.0 - safe) / count) / density
    lower = ndtr(eta - Z95 * sd)
    upper = ndtr(eta + Z95 * sd)
    edge = 0.025 ** (1.0 / count)
    lower = np.where(p <= 0, 0.0, np.where(p >= 1, edge, lower))
    upper = np.where(p <= 0, 1.0 - edge, np.where(p >= 1, 1.0, upper))
    return lower, upper


def _validated(
    score: np.ndarray, label: np.ndarray, weight: np.ndarray | None, span: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Scores, labels and weights as float arrays, refused with a message when invalid."""
    s = np.asarray(score, dtype=float)
    y = np.asarray(label, dtype=float)
    w = None if weight is None else np.asarray(weight, dtype=float)
    if not (0 < span <= 1):
        raise ValidationError(f"span must lie in (0, 1], not {span!r}.")
    if s.shape != y.shape or s.ndim != 1 or s.size == 0:
        raise ValidationError(
            f"score and label must be 1-d of equal, non-zero length ({s.shape}, {y.shape})."
        )
    outside = ~(np.isfinite(s) & (s >= 0) & (s <= 1))
    if outside.any():
        raise ValidationError(
            f"score: {int(outside.sum()):,} of {s.size:,} values are not in [0, 1].",
            column="score",
        )
    bad_label = ~np.isfinite(y)
    if bad_label.any():
        raise ValidationError(
            f"label: {int(bad_label.sum()):,} of {y.size:,} values are NaN or infinite.",
            column="label",
        )
    return s, y, _checked_weight(w, s.shape)


def _boundary(sorted_score: np.ndarray, k: int) -> tuple[float, float]:
    """Scores below (above) which every window holds the smallest (largest) score.

    The window of l >= s_(1) holds s_(1) when fewer than k rows lie strictly closer to l,
    i.e. in the open interval (s_(1), 2l - s_(1)); with t rows tied at s_(1) that is
    s_(t + k) >= 2l - s_(1) (1-based order statistics).
    """
    s = sorted_score
    n = s.size
    tied_low = int(np.searchsorted(s, s[0], side="right"))
    tied_high = n - int(np.searchsorted(s, s[-1], side="left"))
    below = 0.5 * (s[0] + s[tied_low + k - 1]) if tied_low + k - 1 < n else float(s[-1])
    above = 0.5 * (s[-1] + s[n - tied_high - k]) if n - tied_high - k >= 0 else float(s[0])
    return float(below), float(above)


def _arrays(score, label, weight, index) -> tuple:
    """Return (score, label, weight) from Predictions or arrays, restricted to ``index``."""
    if isinstance(score, Predictions):
        if label is not None or weight is not None:
            raise ValidationError("pass Predictions alone, or score and label arrays; not both.")
        pred = score.subset(index)
        check_lcs_response(pred.response_kind)
        return pred.score, pred.label, pred.weight if pred.weighted else None
    if label is None:
        raise ValidationError("local_calibration_score needs Predictions, or score and label.")
    if index is None:
        return score, label, weight
    score, label = np.asarray(score), np.asarray(label)
    rows = np.flatnonzero(index) if np.asarray(index).dtype == bool else np.sort(index)
    return score[rows], label[rows], None if weight is None else np.asarray(weight)[rows]


def _prepared(arrays: tuple, span: float, grid_points: int, jitter: bool,
              rng: np.random.Generator | int | None) -> tuple:
    """Return the scores, labels, weights (ascending, jittered if asked) and neighbours k.

    Raises ValidationError for invalid arrays, ``grid_points`` or a span of no neighbour.
    """
    s, y, w = _validated(*arrays, span)
    if grid_points < 2:
        raise ValidationError(f"grid_points must be at least 2, not {grid_points!r}.")
    if jitter:
        generator = np.random.default_rng(rng)
        s = s + generator.normal(0.0, 0.001, s.size)
    if jitter or np.any(s[1:] < s[:-1]):
        order = np.argsort(s, kind="stable")
        s, y = s[order], y[order]
        w = None if w is None else w[order]
    k = int(np.floor(span * s.size))
    if k < 1:
        raise ValidationError(
            f"the LCS needs at least one neighbour: span {span:g} × n {s.size:,} < 1."
        )
    return s, y, w, k


def _grid(s: np.ndarray, grid_points: int) -> np.ndarray:
    """Return the :math:`l_j = (j-1)/(J-1)` inside [min score, max score] (or their midpoint)."""
    full = np.arange(grid_points) / (grid_points - 1)
    grid = full[(full >= s[0]) & (full <= s[-1])]
    return grid if grid.size else np.array([0.5 * (s[0] + s[-1])])


def _r_density(s: np.ndarray, w: np.ndarray | None, grid_points: int) -> tuple:
    """Return R's ``density(c(-s, s, 2 - s), from = 0, to = 1, n = grid_points)``.

    Its grid, values and bandwidth (:func:`_reflected`, on R's internal grid of at least 512
    points, a power of two), to be read at the :math:`l_j`.
    """
    internal = max(grid_points, 512)
    internal = internal if internal == 512 else int(2 ** np.ceil(np.log2(internal)))
    return _reflected(s, w, internal)


def local_calibration_score(
    score: Predictions | np.ndarray,
    label: np.ndarray | None = None,
    weight: np.ndarray | None = None,
    *,
    index: np.ndarray | None = None,
    span: float = 0.15,
    grid_points: int = 100,
    jitter: bool = False,
    rng: np.random.Generator | int | None = None,
) -> LocalCalibrationScore:
    r"""Compute the Local Calibration Score and its curve (paper 004, eq. (6)).

    Parameters
    ----------
    score : Predictions, or ndarray of shape (n,)
        Predictions with 0/1 responses, or scores in [0, 1] (sorted here if not ascending).
    label, weight : ndarray of shape (n,), optional
        With score arrays only: 0/1 labels and the weights of the window means and density.
    index : array of int or bool, optional
        A subpopulation (positions in score order or a mask): its own LCS.
    span : float, default 0.15
        :math:`k = \lfloor \mathrm{span} \cdot n \rfloor` nearest neighbours per grid point.
    grid_points : int, default 100
        :math:`l_j = (j-1)/(J-1)`, kept inside [min score, max score] (when none is, the single
        point halfway between the smallest and largest score).
    jitter : bool, default False
        The authors' jitter: add N(0, 0.001²) noise to every score (seeded by ``rng``) before
        everything else, as their R code does (``scores + rnorm(length(scores), 0, .001)`` in
        ``local_calib_score``, "to avoid crashing R" on ties; the slides do not mention it).
        As in R the jittered scores are not clipped (they may leave [0, 1] by a few
        thousandths) and the grid is restricted to their range.
    rng : Generator or int, optional

    Returns
    -------
    LocalCalibrationScore

    Notes
    -----
    .. math:: \mathrm{LCS} = \sum_j w_j \bigl(\hat g(l_j) - l_j\bigr)^2, \qquad
              w_j = \hat f(l_j) / \textstyle\sum_j \hat f(l_j) \qquad \text{(eq. (6))}

    Band: with :math:`k_j` observations and :math:`x_j` events in the window,
    :math:`\hat p = x_j/k_j`, :math:`\eta = \Phi^{-1}(\hat p)`,
    :math:`\mathrm{sd} = \sqrt{\hat p(1-\hat p)/k_j}/\varphi(\eta)`, band
    :math:`[\Phi(\eta - 1.96\,\mathrm{sd}), \Phi(\eta + 1.96\,\mathrm{sd})]`; for
    :math:`x_j = 0` it is :math:`[0, 1 - 0.025^{1/k_j}]` and for :math:`x_j = k_j`,
    :math:`[0.025^{1/k_j}, 1]`.

    Ends. With the slides' fixed span the window of a point near 0 or 1 cannot be centred:
    it holds the :math:`k` lowest (highest) scores, so :math:`\hat g` is flat there and
    above (below) the diagonal for a calibrated model. ``boundary`` marks those points;
    the definition is kept, and figures say why the curve flattens.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> s = np.sort(rng.random(20_000))
    >>> result = local_calibration_score(s, (rng.random(20_000) < s).astype(float))
    >>> result.k, result.grid.size, result.lcs < 1e-3
    (3000, 98, True)
    >>> pred = Predictions.from_arrays(s, (rng.random(20_000) < s).astype(float))
    >>> local_calibration_score(pred, index=np.arange(10_000)).k   # the lower half alone
    1500
    """
    s, y, w, k = _prepared(_arrays(score, label, weight, index), span, grid_points, jitter, rng)
    n = s.size
    grid = _grid(s, grid_points)
    mean, count, events = knn_mean(s, y, grid, k, w)
    fit = np.clip(mean, 0.0, 1.0)
    density_grid, density_values, bandwidth = _r_density(s, w, grid_points)
    density = np.interp(grid, density_grid, density_values)
    weights = density / density.sum() if density.sum() > 0 else np.full(grid.size, 1 / grid.size)
    lcs = float(np.sum(weights * (fit - grid) ** 2))  # eq. (6)
    lower, upper = _probit_band(fit, count)
    below, above = _boundary(s, k)
    density_x = np.linspace(0.0, 1.0, 201)
    density_y = np.interp(density_x, density_grid, density_values)
    return LocalCalibrationScore(
        lcs=lcs,
        grid=_readonly(grid),
        fit=_readonly(fit),
        lower=_readonly(lower),
        upper=_readonly(upper),
        weights=_readonly(weights),
        count=_readonly(count),
        events=_readonly(events),
        k=k,
        span=span,
        n=n,
        density_x=_readonly(density_x),
        density_y=_readonly(3.0 * density_y),
        bandwidth=bandwidth,
        boundary=_readonly((grid <= below) | (grid >= above)),
        boundary_below=below,
        boundary_above=above,
        jitter=jitter,
    )

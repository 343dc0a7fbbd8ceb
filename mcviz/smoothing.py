r"""Local regression: LOESS curves with pointwise bands, k-NN means, reflected densities, LCS.

LOESS (Cleveland & Devlin 1988) as used for variable-based calibration [1]: at each evaluation
point :math:`v` a polynomial of degree :math:`p` (2 by default) is fitted by weighted least squares
with tricube weights

.. math:: K_i(v) = W_i \, \bigl(1 - |x_i - v|^3 / h(v)^3\bigr)^3_+ ,

where :math:`h(v)` is the distance from :math:`v` to its :math:`q`-th nearest observation,
:math:`q = \lfloor n \cdot \mathrm{span} + 10^{-5} \rfloor`, and :math:`W_i` the optional
observation weights. There are no robustness iterations (plain weighted least squares: the
"symmetric" reweighting is harmful on 0/1 data). With :math:`X_i = (1, z_i, \dots, z_i^p)`,
:math:`z_i = (x_i - v)/h(v)` and :math:`M = \sum_i K_i X_i X_i^\top` the fit is
:math:`\hat g(v) = e_1^\top M^{-1} \sum_i K_i X_i y_i = \sum_i l_i(v) y_i`, and its pointwise
95% band (eq. (B.1) below)

.. math::
    \hat g(v) \pm 1.96\, \hat\sigma \sqrt{\textstyle\sum_i l_i(v)^2}, \qquad
    \sum_i l_i(v)^2 = e_1^\top M^{-1} \Bigl(\sum_i K_i^2 X_i X_i^\top\Bigr) M^{-1} e_1 .

Degrees of freedom. :math:`\hat\sigma^2 = \frac{\sum_i W_i r_i^2}{\sum_i W_i}
\cdot \frac{n}{n - \nu_1}` with residuals :math:`r_i = y_i - \hat g(x_i)` and
:math:`\nu_1 = \operatorname{tr} L = \sum_i W_i [M(x_i)^{-1}]_{11}` (the "one-delta" of Cleveland
& Grosse 1991 approximated by :math:`n - \operatorname{tr} L`; the two differ by
:math:`\operatorname{tr}(L^\top L) - \operatorname{tr} L = O(\nu_1)`, negligible for the
spans 0.3–1 used here, where :math:`\nu_1` is a handful). The residuals use the fit at up to 128
nodes (observations at equally spaced ranks), linearly interpolated in between (with the
within-bin slope when binned); :math:`[M(x_i)^{-1}]_{11}` in :math:`\nu_1` is interpolated from
the same nodes. Both are exact when the variable has at most 128 distinct values; otherwise
:math:`\nu_1` is approximate in sparse tails (log-normal V, n = 3,000, span 0.3: 18.0 against
14.2 exact), which moves :math:`\hat\sigma` by under 0.1%.

Exact-statistics binning. Evaluation is a sum over observations, so observations are
aggregated into bins :math:`b` with centre :math:`c_b` and power sums
:math:`S_{jb} = \sum_{i \in b} W_i (x_i - c_b)^j`, :math:`j = 0, 1, 2` (also with :math:`W_i y_i`
and :math:`W_i^2`). When the variable has at most 2,048 distinct values the bins are the
distinct values and every sum is exact. Otherwise every bin inside an evaluation window of
radius :math:`h` has width :math:`\delta \le h/100` (window ends are bin edges; between them the
width is set by the narrowest window covering that stretch, so dense regions get fine bins and
sparse tails coarse ones, and skewed variables need no direct fits), values tied on many rows
keep bins of their own, and each term
:math:`\varphi(z) = K(z) z^m` is expanded to second order about the bin centre,
:math:`\sum_{i\in b} W_i \varphi(z_i) \approx \varphi(t_b) S_{0b} + \varphi'(t_b) S_{1b}/h
+ \tfrac12\varphi''(t_b) S_{2b}/h^2`, :math:`t_b = (c_b - v)/h`. The tricube is
:math:`C^2`, so the error per observation is :math:`O((\delta/2h)^3) \le 1.25\cdot 10^{-7}`
times a bounded derivative. A window whose q nearest rows lie mostly on its boundary (a value
tied on many rows sitting exactly at the radius) holds only a few rows strictly inside; its local
fit is ill-conditioned, so when fewer than min(q/2, 5,000) rows lie inside it is fitted directly
from its rows. Verified bound: for uniform, normal, exponential, log-normal, Pareto and spiked
(20% or 50% of rows at one value) variables with n = 6,000 to 1,000,000 and spans 0.3 and 0.9,
the binned fit deviates from the exact fit by at most :math:`1.3\cdot 10^{-8}` and the band
half-width by a relative :math:`2.5\cdot 10^{-6}`; ``tests/test_smoothing.py`` asserts
:math:`10^{-6}`.

Guards. A window whose observations are all tied at :math:`v` (:math:`h(v) = 0`) gives the
weighted mean of those observations, and so does a window whose neighbours all sit exactly on
its radius (tricube weight 0); a window with fewer than :math:`p + 1` distinct values with
positive weight is fitted with degree (distinct values − 1) (so a variable with fewer than
three distinct values gets local lines or means); a constant variable is refused with a
:class:`~mcviz.errors.ValidationError`.

Local Calibration Score [2]. :math:`\hat g(l)` is the mean label of the :math:`k` observations
whose scores are nearest to :math:`l` (every observation tied at the boundary distance included),
computed from prefix sums over the sorted scores;
:math:`\mathrm{LCS} = \sum_j w_j (\hat g(l_j) - l_j)^2` (eq. (6) of [2]) with
:math:`w_j \propto \hat f(l_j)`, a Gaussian kernel density of the scores reflected at 0 and 1,
computed as the authors' code does, R's ``density(c(-s, s, 2 - s), from = 0, to = 1, n = J)``
(the 512-point binning grid then spans :math:`[-4\,\mathrm{bw}, 1 + 4\,\mathrm{bw}]`; reflected
points beyond it are dropped, as R does).

References
----------
.. [1] M. Kelly, P. Smyth, "Variable-Based Calibration for Machine Learning Classifiers",
   AAAI 2023; Section 6 and Appendix B (LOESS with quadratic local fit, spans 0.8–0.9).
.. [2] A. Fernandes Machado, A. Charpentier, E. Flachaire, E. Gallic, F. Hu, "From Uncertainty
   to Precision: Enhancing Binary Classifier Performance through Calibration", 2024; eq. (6).
.. [3] W. S. Cleveland, E. Grosse, "Computational methods for local regression", Statistics
   and Computing 1, 1991 (the linear-smoother weights and the one-delta approximation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from mcviz.errors import ValidationError

__all__ = [
    "LocalCalibration",
    "LoessCurve",
    "knn_mean",
    "local_calibration_score",
    "loess_curve",
    "neighbour_radius",
    "reflected_density",
    "sorted_quantile",
]

Z95 = 1.959963984540054
DISTINCT_LIMIT = 2048
"""Variables with at most this many distinct values are binned on their values (exact)."""
BIN_FRACTION = 1.0 / 100.0
"""Bin width as a fraction of the smallest neighbourhood radius (Taylor-binned evaluation)."""
MAX_BINS = 1 << 18
RESIDUAL_NODES = 128
HEAVY_TIES = 20
FEW_ROWS = 5_000
"""Binned windows with fewer rows strictly inside (and half their q on the boundary) are fitted
directly: their local fits are ill-conditioned."""
_CHUNK_ELEMENTS = 1_500_000


# --------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True, slots=True, eq=False)
class LoessCurve:
    r"""A LOESS curve on a grid with its pointwise 95% band.

    Attributes
    ----------
    x : ndarray of shape (G,)
        Evaluation grid.
    fit : ndarray of shape (G,)
        :math:`\hat g(x)`.
    lower, upper : ndarray of shape (G,)
        :math:`\hat g \pm 1.96\,\hat\sigma\sqrt{\sum_i l_i^2}`.
    se : ndarray of shape (G,)
        :math:`\hat\sigma\sqrt{\sum_i l_i(x)^2}`.
    sigma : float
        Residual scale :math:`\hat\sigma`.
    df : float
        :math:`\nu_1 = \operatorname{tr} L` (equivalent number of parameters).
    span : float
    degree : int
    n : int
    binned : bool
        True when the Taylor-binned evaluation was used (deviation below 1e-6).
    """

    x: np.ndarray
    fit: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    se: np.ndarray
    sigma: float
    df: float
    span: float
    degree: int
    n: int
    binned: bool


@dataclass(frozen=True, slots=True, eq=False)
class LocalCalibration:
    r"""Compute the Local Calibration Score and its curve (paper 004, eq. (6)).

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


@dataclass(frozen=True, slots=True, eq=False)
class _Fits:
    """Fits of several responses with shared weights (private; see :func:`_loess_fits`)."""

    at: np.ndarray  # (G,)
    fit: np.ndarray  # (G, m)
    l2: np.ndarray  # (G,) sum of squared smoother weights
    rss: np.ndarray  # (m, m) weighted residual cross-products
    trace: float
    n: int
    weight_total: float
    degree: np.ndarray  # (G,) degree used at each point
    binned: bool

    def sigma(self, combination: np.ndarray) -> float:
        """Residual scale of a linear combination of the responses."""
        c = np.asarray(combination, dtype=float)
        rss = float(c @ self.rss @ c)
        denominator = self.n - self.trace
        if denominator <= 0 or self.weight_total <= 0:
            return float("nan")
        return float(np.sqrt(max(rss, 0.0) / self.weight_total * self.n / denominator))

    def curve(self, combination: np.ndarray, *, span: float, degree: int) -> LoessCurve:
        """Return the curve of a linear combination of the responses, with its band."""
        c = np.asarray(combination, dtype=float)
        fit = self.fit @ c
        sigma = self.sigma(c)
        se = sigma * np.sqrt(np.maximum(self.l2, 0.0))
        return LoessCurve(
            x=_readonly(self.at.copy()),
            fit=_readonly(fit),
            lower=_readonly(fit - Z95 * se),
            upper=_readonly(fit + Z95 * se),
            se=_readonly(se),
            sigma=sigma,
            df=self.trace,
            span=span,
            degree=degree,
            n=self.n,
            binned=self.binned,
        )


def _readonly(array: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(array)
    array.flags.writeable = False
    return array


# --------------------------------------------------------------------------------------------
# Neighbourhoods


def neighbour_radius(sorted_x: np.ndarray, at: np.ndarray, q: int) -> np.ndarray:
    """Distance from each point of ``at`` to its ``q``-th nearest value of ``sorted_x``.

    The ``q`` nearest values form a contiguous block ``sorted_x[i:i+q]``; the block minimising
    ``max(v - x_i, x_{i+q-1} - v)`` starts where ``x_i + x_{i+q-1}`` first reaches ``2v``.

    Examples
    --------
    >>> neighbour_radius(np.array([0.0, 1.0, 2.0, 10.0]), np.array([1.0, 9.0]), 2).tolist()
    [1.0, 7.0]
    """
    x = np.asarray(sorted_x, dtype=float)
    at = np.asarray(at, dtype=float)
    n = x.size
    q = int(min(max(q, 1), n))
    pair_sum = x[: n - q + 1] + x[q - 1 :]
    start = np.searchsorted(pair_sum, 2.0 * at, side="left")
    best = np.full(at.shape, np.inf)
    for offset in (-2, -1, 0, 1):
        i = np.clip(start + offset, 0, n - q)
        radius = np.maximum(at - x[i], x[i + q - 1] - at)
        best = np.minimum(best, radius)
    return best


def _window_bounds(
    sorted_x: np.ndarray, at: np.ndarray, radius: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Index range [lo, hi) of the values with ``|x - v| <= radius`` (ties included)."""
    x = sorted_x
    n = x.size
    lo = np.searchsorted(x, at - radius, side="left")
    hi = np.searchsorted(x, at + radius, side="right")
    for _ in range(2):
        # Rounding of at ± radius can misplace the boundary by one distinct value: correct it
        # with the distances themselves, moving over whole runs of ties.
        prev = np.clip(lo - 1, 0, n - 1)
        grow = (lo > 0) & (np.abs(x[prev] - at) <= radius)
        lo = np.where(grow, np.searchsorted(x, x[prev], side="left"), lo)
        cur = np.clip(lo, 0, n - 1)
        shrink = (lo < n) & (np.abs(x[cur] - at) > radius) & (x[cur] < at)
        lo = np.where(shrink, np.searchsorted(x, x[cur], side="right"), lo)
        nxt = np.clip(hi, 0, n - 1)
        grow = (hi < n) & (np.abs(x[nxt] - at) <= radius)
        hi = np.where(grow, np.searchsorted(x, x[nxt], side="right"), hi)
        last = np.clip(hi - 1, 0, n - 1)
        shrink = (hi > 0) & (np.abs(x[last] - at) > radius) & (x[last] > at)
        hi = np.where(shrink, np.searchsorted(x, x[last], side="left"), hi)
    return lo, hi


# --------------------------------------------------------------------------------------------
# Tricube and its derivatives


def _tricube_both(
    t: np.ndarray,
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(K, K', K'') and (K², (K²)', (K²)'') from shared intermediate terms."""
    a = np.minimum(np.abs(t), 1.0)
    a2 = a * a
    a4 = a2 * a2
    one = 1.0 - a2 * a
    one2 = one * one
    ta = t * a
    kernel = (one2 * one, -9.0 * ta * one2, 54.0 * a4 * one - 18.0 * a * one2)
    one4 = one2 * one2
    one5 = one4 * one
    squared = (one5 * one, -18.0 * ta * one5, 270.0 * a4 * one4 - 36.0 * a * one5)
    return kernel, squared


def _moments(
    kernel: tuple[np.ndarray, ...],
    t: np.ndarray,
    h: np.ndarray,
    sums: np.ndarray,
    top: int,
) -> np.ndarray:
    r"""Return :math:`\sum_b \sum_{i \in b} c_i \varphi_m(z_i)` for :math:`\varphi_m = K z^m`.

    ``kernel`` is :math:`(K)` (bins are distinct values) or :math:`(K, K', K'')` (second-order
    expansion about the bin centres); ``sums`` is (B, c·J): the per-bin power sums of the
    c weighted columns for j = 0..J-1, J = len(kernel). The result has shape (top + 1, G, c).
    """
    orders = len(kernel)
    powers = [np.ones_like(t)]
    for _ in range(top):
        powers.append(powers[-1] * t)
    stack = np.empty((orders, top + 1, *t.shape))
    for a in range(orders):
        for j in range(top + 1):
            np.multiply(kernel[a], powers[j], out=stack[a, j])
    products = stack.reshape(orders * (top + 1) * t.shape[0], t.shape[1]) @ sums
    products = products.reshape(orders, top + 1, t.shape[0], sums.shape[1])
    c = sums.shape[1] // orders
    out = np.empty((top + 1, t.shape[0], c))
    for m in range(top + 1):
        value = products[0, m, :, :c].copy()
        if orders == 3:
            d1 = products[1, m, :, c : 2 * c].copy()
            d2 = products[2, m, :, 2 * c :].copy()
            if m >= 1:
                d1 += m * products[0, m - 1, :, c : 2 * c]
                d2 += 2.0 * m * products[1, m - 1, :, 2 * c :]
            if m >= 2:
                d2 += m * (m - 1) * products[0, m - 2, :, 2 * c :]
            value += d1 / h[:, None] + 0.5 * d2 / h[:, None] ** 2
        out[m] = value
    return out


# --------------------------------------------------------------------------------------------
# LOESS core


def _span_size(n: int, span: float) -> int:
    return int(min(max(np.floor(n * span + 1e-5), 1), n))


def _solve_points(
    moments: np.ndarray, squared: np.ndarray, degree: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Solve the local normal equations of each point with its own degree (batched)."""
    g = moments.shape[1]
    m = moments.shape[2] - 1
    fit = np.zeros((g, m))
    l2 = np.zeros(g)
    inverse11 = np.zeros(g)
    for d in np.unique(degree):
        rows = np.flatnonzero(degree == d)
        idx = np.add.outer(np.arange(d + 1), np.arange(d + 1))
        matrix = np.moveaxis(moments[idx][:, :, rows, 0], 2, 0)  # (r, d+1, d+1)
        rhs = np.moveaxis(moments[: d + 1][:, rows, 1:], 1, 0)  # (r, d+1, m)
        q = np.moveaxis(squared[idx][:, :, rows, 0], 2, 0)
        unit = np.zeros((rows.size, d + 1, 1))
        unit[:, 0, 0] = 1.0
        try:
            v = np.linalg.solve(matrix, unit)[:, :, 0]
        except np.linalg.LinAlgError:
            v = np.stack([np.linalg.lstsq(a, u, rcond=None)[0][:, 0] for a, u in zip(
                matrix, unit, strict=True)])
        fit[rows] = np.einsum("rd,rdm->rm", v, rhs)
        l2[rows] = np.einsum("rd,rde,re->r", v, q, v)
        inverse11[rows] = v[:, 0]
    return fit, l2, inverse11


def _exact_point(
    x: np.ndarray, ys: list[np.ndarray], w: np.ndarray, point: float, radius: float, degree: int
) -> tuple[np.ndarray, float, float]:
    """Direct weighted least squares at one point (used where bins would be too coarse)."""
    if radius <= 0:
        sel = x == point
        ws = w[sel]
        total = ws.sum()
        y = np.column_stack([column[sel] for column in ys])
        return (ws @ y) / total, float((ws * ws).sum() / total**2), 1.0 / total
    sel = np.abs(x - point) < radius
    if not sel.any():
        # Every neighbour sits exactly at the radius (tricube weight 0): their plain mean.
        sel = np.abs(x - point) <= radius
        ws = w[sel]
        total = ws.sum()
        y = np.column_stack([column[sel] for column in ys])
        return (ws @ y) / total, float((ws * ws).sum() / total**2), 1.0 / total
    y = np.column_stack([column[sel] for column in ys])
    z = (x[sel] - point) / radius
    kernel = (1.0 - np.abs(z) ** 3) ** 3 * w[sel]
    d = int(min(degree, np.unique(x[sel]).size - 1))
    design = np.vander(z, d + 1, increasing=True)
    matrix = design.T @ (kernel[:, None] * design)
    v = np.linalg.lstsq(matrix, np.eye(d + 1)[:, 0], rcond=None)[0]
    smoother = kernel * (design @ v)
    return smoother @ y, float(smoother @ smoother), float(v[0])


def _window_edges(
    low: float, high: float, points: np.ndarray, radius: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Bin edges on [low, high] no wider than ``BIN_FRACTION`` of any window's radius.

    Every evaluation window [v - h, v + h] needs bins of width at most ``BIN_FRACTION * h``
    inside it (the bound of the module notes). Between consecutive window ends the required
    width is the smallest ``BIN_FRACTION * h`` of the windows covering that stretch; outside
    every window one bin suffices (the kernel is zero there). Window ends are edges, so no bin
    straddles a window's boundary. Dense regions (small radii) thus get fine bins and sparse
    tails coarse ones, and no point has to be fitted directly, unless more than ``MAX_BINS``
    bins would be needed: then all widths grow by a common factor and the points whose
    windows hold a bin too wide for them are flagged (second array) to be fitted directly.
    """
    live = radius > 0
    centre, reach = points[live], radius[live]
    breaks = np.unique(np.clip(np.concatenate(([low, high], centre - reach, centre + reach)),
                               low, high))
    if breaks.size < 2:
        return np.array([low, high]), np.zeros(points.size, dtype=bool)
    left, right = breaks[:-1], breaks[1:]
    covering = np.abs(0.5 * (left + right)[:, None] - centre[None, :]) < reach[None, :]
    need = np.where(covering, reach[None, :] * BIN_FRACTION, np.inf).min(axis=1)
    counts = np.where(np.isfinite(need), np.ceil((right - left) / need - 1e-9), 1.0)
    counts = np.maximum(counts, 1.0)
    if counts.sum() > MAX_BINS:
        counts = np.maximum(np.floor(counts * (MAX_BINS / counts.sum())), 1.0)
    counts = counts.astype(np.int64)
    width = (right - left) / counts
    coarse = np.zeros(points.size, dtype=bool)
    coarse[live] = (
        np.where(covering, width[:, None], 0.0).max(axis=0) > reach * BIN_FRACTION * (1 + 1e-9)
    )
    segment = np.repeat(np.arange(left.size), counts)
    step = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    edges = np.append(left[segment] + width[segment] * step, high)
    return edges, coarse


def _loess_fits(
    x: np.ndarray,
    responses: np.ndarray,
    weight: np.ndarray | None,
    at: np.ndarray,
    *,
    span: float,
    degree: int,
    exact: bool | None = None,
    sorted_x: np.ndarray | None = None,
) -> _Fits:
    """LOESS fits of the columns of ``responses`` (n, m) at ``at``; see the module notes."""
    x = np.asarray(x, dtype=float)
    ys = [np.ascontiguousarray(column, dtype=float) for column in responses]
    n, m = x.size, len(ys)
    weighted = weight is not None
    w = np.ones(n) if weight is None else np.ascontiguousarray(weight, dtype=float)
    xs = np.sort(x) if sorted_x is None else sorted_x
    q = _span_size(n, span)
    starts = np.flatnonzero(np.concatenate(([True], xs[1:] != xs[:-1])))
    distinct = xs[starts]
    degree = int(min(degree, distinct.size - 1))

    if distinct.size <= RESIDUAL_NODES:
        nodes = distinct
    else:
        node_index = np.linspace(0, n - 1, RESIDUAL_NODES).round().astype(int)
        nodes = np.unique(xs[node_index])
    points = np.concatenate((np.asarray(at, dtype=float), nodes))
    radius = neighbour_radius(xs, points, q)
    g = points.size
    grid_count = g - nodes.size

    taylor = not (exact or (exact is None and distinct.size <= DISTINCT_LIMIT))
    direct = radius <= 0  # tied windows: the mean of the tied observations
    if not taylor:
        centres = distinct
        bins = centres.size
        low, extent = distinct[0], distinct[-1] - distinct[0]
        if extent <= 8 * bins and np.all(distinct == np.round(distinct)):
            # Integer values in a short range: a lookup table instead of a binary search.
            table = np.zeros(int(extent) + 1, dtype=np.intp)
            table[(distinct - low).astype(np.intp)] = np.arange(bins)
            index = table[(x - low).astype(np.intp)]
        else:
            index = np.searchsorted(distinct, x)
    else:
        # Heavily tied values get bins of their own (exact sums, no expansion): a large mass
        # sitting on a window's edge would otherwise dominate the expansion error.
        runs = np.diff(np.append(starts, n))
        heavy = distinct[runs >= max(HEAVY_TIES, n // 2000)]
        edges, too_coarse = _window_edges(xs[0], xs[-1], points, radius)
        direct |= too_coarse  # (only when MAX_BINS bins cannot be fine enough everywhere)
        # A window whose q nearest rows are mostly tied on its boundary (kernel weight 0) may
        # fit a handful of rows: ill-conditioned, so it is fitted from the observations.
        inside = np.searchsorted(xs, points + radius, side="left") - np.searchsorted(
            xs, points - radius, side="right")
        direct |= inside < min(q // 2, FEW_ROWS)
        bins = edges.size - 1
        index = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, bins - 1)
        middles = 0.5 * (edges[:-1] + edges[1:])
        offset = x - middles[index]
        if heavy.size:
            slot = np.clip(np.searchsorted(heavy, x), 0, heavy.size - 1)
            tied_rows = heavy[slot] == x
            index[tied_rows] = bins + slot[tied_rows]
            offset[tied_rows] = 0.0
        bin_centres = np.concatenate((middles, heavy))
        bins += heavy.size

    def per_bin(values: np.ndarray | None) -> np.ndarray:
        return np.bincount(index, weights=values, minlength=bins).astype(float)

    wys = [w * column for column in ys] if weighted else ys
    w2 = w * w if weighted else w
    columns = [per_bin(w if weighted else None)] + [per_bin(column) for column in wys]
    squares = [per_bin(w2)] if weighted else [columns[0]]
    cross = np.empty((bins, m, m))
    for a in range(m):
        for b in range(a, m):
            cross[:, a, b] = cross[:, b, a] = per_bin(wys[a] * ys[b])
    if taylor:
        wu = w * offset if weighted else offset
        wu2 = wu * offset
        first = [per_bin(wu)] + [per_bin(wu * column) for column in ys]
        second = [per_bin(wu2)] + [per_bin(wu2 * column) for column in ys]
        columns += first + second
        if weighted:
            squares += [per_bin(w2 * offset), per_bin(w2 * offset * offset)]
        else:
            squares += [first[0], second[0]]
        keep = np.flatnonzero(columns[0] > 0)
        keep = keep[np.argsort(bin_centres[keep], kind="stable")]
        centres = bin_centres[keep]
        sums = np.column_stack(columns)[keep]
        qsums = np.column_stack(squares)[keep]
        cross = cross[keep]
    else:
        sums = np.column_stack(columns)
        qsums = np.column_stack(squares)

    lo_d = np.searchsorted(distinct, points - radius, side="right")
    hi_d = np.searchsorted(distinct, points + radius, side="left")
    direct |= hi_d <= lo_d  # no value strictly inside the window
    local_degree = np.minimum(degree, np.maximum(hi_d - lo_d, 1) - 1)
    moments = np.zeros((2 * degree + 1, g, m + 1))
    squared = np.zeros((2 * degree + 1, g, 1))
    todo = np.flatnonzero(~direct)
    todo = todo[np.argsort(points[todo], kind="stable")]  # chunks of nearby points
    per_point = centres.size * (3 if taylor else 1) * (2 * degree + 1)
    chunk = max(1, _CHUNK_ELEMENTS // max(per_point, 1))
    for begin in range(0, todo.size, chunk):
        rows = todo[begin : begin + chunk]
        h = radius[rows]
        # Only bins inside the union of these windows contribute.
        first = np.searchsorted(centres, (points[rows] - h).min(), side="left")
        last = np.searchsorted(centres, (points[rows] + h).max(), side="right")
        cols = slice(max(first - 1, 0), last + 1)
        t = (centres[None, cols] - points[rows, None]) / h[:, None]
        k, ksq = _tricube_both(t)
        if not taylor:
            k, ksq = k[:1], ksq[:1]
        moments[:, rows] = _moments(k, t, h, sums[cols], 2 * degree)
        on_grid = rows < grid_count  # the band is needed on the grid only
        if on_grid.any():
            squared[:, rows[on_grid]] = _moments(
                tuple(part[on_grid] for part in ksq), t[on_grid], h[on_grid], qsums[cols],
                2 * degree,
            )

    fit = np.zeros((g, m))
    l2 = np.zeros(g)
    inverse11 = np.zeros(g)
    if todo.size:
        fit[todo], l2[todo], inverse11[todo] = _solve_points(
            moments[:, todo], squared[:, todo], local_degree[todo]
        )
    direct_rows = np.flatnonzero(direct)
    if direct_rows.size:
        # Each direct fit reads only its window's rows: one sort, then a slice per point.
        order = np.argsort(x, kind="stable")
        low = np.searchsorted(xs, points - radius, side="left")
        high = np.searchsorted(xs, points + radius, side="right")
        # Rows on the boundary carry kernel weight 0: only needed when none lies inside.
        inner_low = np.searchsorted(xs, points - radius, side="right")
        inner_high = np.searchsorted(xs, points + radius, side="left")
        use_inner = (radius > 0) & (inner_high > inner_low)
        low = np.where(use_inner, inner_low, low)
        high = np.where(use_inner, inner_high, high)
    for i in direct_rows:
        rows = order[low[i]:high[i]]
        fit[i], l2[i], inverse11[i] = _exact_point(
            x[rows], [column[rows] for column in ys], w[rows], points[i], radius[i], degree
        )
        local_degree[i] = 0 if radius[i] <= 0 or hi_d[i] <= lo_d[i] else local_degree[i]

    # Residual cross-products and tr L from the fit at the nodes, interpolated to bin centres.
    node_rows = slice(g - nodes.size, g)
    node_fit = np.column_stack([np.interp(centres, nodes, fit[node_rows, j]) for j in range(m)])
    node_inverse = np.interp(centres, nodes, inverse11[node_rows])
    weight_bins = sums[:, 0]
    sum_y = sums[:, 1 : m + 1]
    rss = (
        cross.sum(axis=0)
        - node_fit.T @ sum_y
        - sum_y.T @ node_fit
        + (node_fit * weight_bins[:, None]).T @ node_fit
    )
    if taylor and nodes.size > 1:
        # Within a bin the fit moves by slope · u: residuals y - f - f'u, with f' the slope
        # of the interpolated node fits and the sums of W u, W u², W y u.
        slopes = np.diff(fit[node_rows], axis=0) / np.diff(nodes)[:, None]
        piece = np.clip(np.searchsorted(nodes, centres, side="right") - 1, 0, nodes.size - 2)
        slope = slopes[piece]
        sum_u, sum_u2 = sums[:, m + 1], sums[:, 2 * (m + 1)]
        sum_yu = sums[:, m + 2 : 2 * (m + 1)]
        rss += (
            -slope.T @ sum_yu - sum_yu.T @ slope
            + (node_fit * sum_u[:, None]).T @ slope + (slope * sum_u[:, None]).T @ node_fit
            + (slope * sum_u2[:, None]).T @ slope
        )
    trace = float(weight_bins @ node_inverse)  # tr L = sum_i W_i [M(x_i)^-1]_11
    return _Fits(
        at=points[:grid_count],
        fit=fit[:grid_count],
        l2=l2[:grid_count],
        rss=rss,
        trace=trace,
        n=n,
        weight_total=float(w.sum()),
        degree=local_degree[:grid_count],
        binned=taylor,
    )


def _check_span(span: float, low: float = 0.0) -> None:
    valid = np.isfinite(span) and (low <= span if low > 0 else span > 0) and span <= 1.0
    if not valid:
        bound = f"[{low:g}, 1]" if low > 0 else "(0, 1]"
        raise ValidationError(f"span must lie in {bound}, not {span!r}.")


def sorted_quantile(sorted_x: np.ndarray, probabilities: np.ndarray | list[float]) -> np.ndarray:
    """Quantiles of an ascending array with linear interpolation (R type 7, numpy default).

    Examples
    --------
    >>> sorted_quantile(np.array([1.0, 2.0, 4.0]), [0.25, 0.5]).tolist()
    [1.5, 2.0]
    """
    p = np.asarray(probabilities, dtype=float)
    position = p * (sorted_x.size - 1)
    below = np.floor(position).astype(np.int64)
    above = np.minimum(below + 1, sorted_x.size - 1)
    fraction = position - below
    low, high = sorted_x[below], sorted_x[above]
    return np.where(fraction > 0, low + fraction * (high - low), low)


def _grid(sorted_x: np.ndarray, points: int) -> np.ndarray:
    """``points`` equally spaced values from the 5% to the 95% quantile (min–max if equal)."""
    low, high = sorted_quantile(sorted_x, [0.05, 0.95])
    if high <= low:
        low, high = sorted_x[0], sorted_x[-1]
    return np.linspace(low, high, points)


def loess_curve(
    x: np.ndarray,
    y: np.ndarray,
    weight: np.ndarray | None = None,
    *,
    span: float = 0.9,
    degree: int = 2,
    at: np.ndarray | None = None,
    grid_points: int = 500,
    exact: bool | None = None,
    name: str = "x",
) -> LoessCurve:
    r"""LOESS curve of ``y`` against ``x`` with its pointwise 95% band.

    Parameters
    ----------
    x, y : ndarray of shape (n,)
        Finite values.
    weight : ndarray of shape (n,), optional
        Positive observation weights; they multiply the tricube weights.
    span : float, default 0.9
        Fraction of observations in each neighbourhood, :math:`q = \lfloor n\,\mathrm{span} +
        10^{-5}\rfloor`.
    degree : {0, 1, 2}, default 2
        Local polynomial degree (lowered where fewer distinct values are available).
    at : ndarray, optional
        Evaluation points; default ``grid_points`` points from the 5% to the 95% quantile of x.
    grid_points : int, default 500
    exact : bool or None
        True: sum over distinct values (exact, O(grid × distinct values)); False: force the
        Taylor-binned evaluation; None: binned only when x has more than 2,048 distinct values.
    name : str
        Name of x for messages.

    Returns
    -------
    LoessCurve

    Raises
    ------
    ValidationError
        When x is constant, values are not finite, or the span is out of range.

    Notes
    -----
    See the module notes: fit, band (eq. (B.1)), degrees of freedom, binning and its bound.

    Examples
    --------
    A straight line is returned unchanged:

    >>> x = np.linspace(0, 1, 50)
    >>> curve = loess_curve(x, 2 * x + 1, at=np.array([0.25, 0.5]))
    >>> np.round(curve.fit, 10).tolist()
    [1.5, 2.0]
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    _check_span(span)
    if degree not in (0, 1, 2):
        raise ValidationError(f"degree must be 0, 1 or 2, not {degree!r}.")
    if x.shape != y.shape or x.ndim != 1:
        raise ValidationError(f"x and y must be 1-d of equal length ({x.shape} and {y.shape}).")
    bad = ~(np.isfinite(x) & np.isfinite(y))
    if bad.any():
        raise ValidationError(
            f"{name!r}: {int(bad.sum()):,} of {x.size:,} values are NaN or infinite.",
            column=name,
        )
    if weight is not None:
        w = np.asarray(weight, dtype=float)
        bad_weight = ~(np.isfinite(w) & (w > 0)) if w.shape == x.shape else np.ones(1, bool)
        if bad_weight.any():
            raise ValidationError(
                f"weights: {int(bad_weight.sum()):,} of {x.size:,} are not positive finite "
                f"numbers (or the shape {w.shape} differs from {x.shape}).", column="weight"
            )
    xs = np.sort(x)
    if xs.size == 0 or xs[0] == xs[-1]:
        raise ValidationError(
            f"{name!r} is constant; a curve against it cannot be drawn.", column=name
        )
    points = _grid(xs, grid_points) if at is None else np.asarray(at, dtype=float)
    fits = _loess_fits(
        x, [y], weight, points, span=span, degree=degree, exact=exact, sorted_x=xs
    )
    return fits.curve(np.ones(1), span=span, degree=int(fits.degree.max(initial=0)))


# --------------------------------------------------------------------------------------------
# k-NN means and reflected densities (the Local Calibration Score)


def knn_mean(
    sorted_score: np.ndarray,
    label: np.ndarray,
    at: np.ndarray,
    k: int,
    weight: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean label of the ``k`` nearest scores to each point, ties at the boundary included.

    Parameters
    ----------
    sorted_score : ndarray of shape (n,)
        Ascending scores.
    label : ndarray of shape (n,)
        Labels in the same order.
    at : ndarray of shape (J,)
    k : int
    weight : ndarray of shape (n,), optional
        The mean is weighted; counts are not.

    Returns
    -------
    mean, count, events : ndarray of shape (J,)
        The (weighted) mean, the number of observations in the window and the (weighted)
        count of labels equal to 1, scaled to the window size.

    Examples
    --------
    Scores 0, 1, 1, 2 with labels 0, 1, 0, 1; the two nearest to 0.9 are both tied at 1:

    >>> mean, count, _ = knn_mean(np.array([0.0, 1.0, 1.0, 2.0]), np.array([0, 1, 0, 1.0]),
    ...                           np.array([0.9, 0.1]), 2)
    >>> mean.tolist(), count.tolist()
    ([0.5, 0.3333333333333333], [2, 3])
    """
    s = np.asarray(sorted_score, dtype=float)
    at = np.asarray(at, dtype=float)
    radius = neighbour_radius(s, at, k)  # the k-th smallest distance
    lo, hi = _window_bounds(s, at, radius)
    label = np.asarray(label, dtype=float)
    count = hi - lo
    if weight is None:
        cum = np.concatenate(([0.0], np.cumsum(label)))
        events = cum[hi] - cum[lo]
        mean = events / count
    else:
        w = np.asarray(weight, dtype=float)
        cum_w = np.concatenate(([0.0], np.cumsum(w)))
        cum_y = np.concatenate(([0.0], np.cumsum(w * label)))
        mean = (cum_y[hi] - cum_y[lo]) / (cum_w[hi] - cum_w[lo])
        events = mean * count
    return mean, count, events


def _reflected_bandwidth(s: np.ndarray) -> float:
    """R's ``bw.nrd0`` of the reflected sample (-s, s, 2 - s), without building it.

    For ascending ``s`` the reflected sample in ascending order is
    ``(-s[::-1], s, 2 - s[::-1])``, so its quantiles are read off by index and its variance
    follows from the sums of s and s².
    """
    n = s.size
    size = 3 * n
    first, second = float(s.sum()), float(s @ s)
    mean = (2.0 * n - first) / size
    total_square = 3.0 * second - 4.0 * first + 4.0 * n
    sd = float(np.sqrt(max(total_square - size * mean * mean, 0.0) / (size - 1)))

    def element(k: np.ndarray) -> np.ndarray:
        return np.where(k < n, -s[np.clip(n - 1 - k, 0, n - 1)], np.where(
            k < 2 * n, s[np.clip(k - n, 0, n - 1)], 2.0 - s[np.clip(size - 1 - k, 0, n - 1)]
        ))

    position = np.array([0.25, 0.75]) * (size - 1)
    below = np.floor(position).astype(np.int64)
    fraction = position - below
    low, high = element(below), element(np.minimum(below + 1, size - 1))
    q25, q75 = low + fraction * (high - low)
    lo = min(sd, (q75 - q25) / 1.34)
    if not lo > 0:
        lo = sd or abs(float(-s[-1])) or 1.0
    return 0.9 * lo * size ** (-0.2)


def _r_density(
    copies: list[tuple[np.ndarray, float, float]],
    weight: np.ndarray | None,
    low_value: float,
    high_value: float,
    bandwidth: float,
    points: int = 512,
) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian kernel density as R's ``density(x, bw, from, to)`` computes it.

    ``copies`` are affine images ``a + b·s`` of one sample (the reflections), each binned
    separately (R's ``BinDist``: linear binning onto ``points`` cells spanning
    [from - 4·bw, to + 4·bw]; values beyond that range are dropped, the edge cells keep their
    share, the total mass is not renormalised), then convolved by FFT. Returns R's internal
    grid ``xords`` and density ``kords``; R's ``approx(xords, kords, x)`` is ``np.interp``.
    """
    lo = low_value - 4.0 * bandwidth
    up = high_value + 4.0 * bandwidth
    delta = (up - lo) / (points - 1)
    binned = np.zeros(2 * points)
    for sample, shift, scale in copies:
        size = sample.size * len(copies)
        w = np.full(sample.size, 1.0 / size) if weight is None else (
            weight / (weight.sum() * len(copies))
        )
        position = (shift + scale * sample - lo) / delta
        cell = np.floor(position)
        upper_part = w * (position - cell)
        # Slots 0..points+3 stand for cells -2..points+1: cell c takes w(1 - f) and cell c + 1
        # takes w f; whatever lands outside cells 0..points-1 is dropped (BinDist's edge rules).
        slot = np.clip(cell, -2, points).astype(np.int64) + 2
        spread = np.bincount(slot, weights=w - upper_part, minlength=points + 4)
        spread[1:] += np.bincount(slot, weights=upper_part, minlength=points + 4)[:-1]
        binned[:points] += spread[2 : points + 2]
    kords = np.linspace(0.0, 2.0 * (up - lo), 2 * points)
    kords[points + 1 :] = -kords[points - 1 : 0 : -1]
    kernel = np.exp(-0.5 * (kords / bandwidth) ** 2) / (bandwidth * np.sqrt(2.0 * np.pi))
    convolved = np.fft.ifft(np.fft.fft(binned) * np.conj(np.fft.fft(kernel))).real
    density = np.maximum(convolved[:points], 0.0)
    return np.linspace(lo, up, points), density


def reflected_density(
    sorted_score: np.ndarray, at: np.ndarray, weight: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    r"""Density of scores reflected at 0 and 1, evaluated at ``at`` (R's ``density()``).

    The sample is the 3n points :math:`-s, s, 2 - s`; the bandwidth is ``bw.nrd0`` of that
    sample, :math:`0.9 \min(\mathrm{sd}, \mathrm{IQR}/1.34)(3n)^{-1/5}`; the density is
    R's ``density(c(-s, s, 2 - s), from = 0, to = 1)`` (as in the authors' code [2]): linear
    binning onto 512 points spanning :math:`[-4\,\mathrm{bw}, 1 + 4\,\mathrm{bw}]` and FFT
    convolution, then linear interpolation at ``at``. The returned values are those of the
    3n-point density (integrating to about 1/3 over [0, 1]).

    Returns
    -------
    values : ndarray
    bandwidth : float
    """
    grid, values, bandwidth = _reflected(sorted_score, weight)
    return np.interp(np.asarray(at, dtype=float), grid, values), bandwidth


def _reflected(
    sorted_score: np.ndarray, weight: np.ndarray | None, points: int = 512
) -> tuple[np.ndarray, np.ndarray, float]:
    s = np.asarray(sorted_score, dtype=float)
    w = None if weight is None else np.asarray(weight, dtype=float)
    bandwidth = _reflected_bandwidth(s)
    copies = [(s, 0.0, -1.0), (s, 0.0, 1.0), (s, 2.0, -1.0)]
    grid, values = _r_density(copies, w, 0.0, 1.0, bandwidth, points)
    return grid, values, bandwidth


def _probit_band(mean: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """95% band per window on the probit scale; exact one-sided bounds at 0 and 1 events."""
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


def local_calibration_score(
    score: np.ndarray,
    label: np.ndarray,
    weight: np.ndarray | None = None,
    *,
    span: float = 0.15,
    grid_points: int = 100,
    jitter: bool = False,
    rng: np.random.Generator | int | None = None,
) -> LocalCalibration:
    r"""Compute the Local Calibration Score and its curve (paper 004, eq. (6)).

    Parameters
    ----------
    score : ndarray of shape (n,)
        Scores in [0, 1], ascending (as in :class:`~mcviz.io.Predictions`; sorted here if not).
    label : ndarray of shape (n,)
        0/1 labels in the same order.
    weight : ndarray, optional
        Weights of the window means and of the density.
    span : float, default 0.15
        :math:`k = \lfloor \mathrm{span} \cdot n \rfloor` nearest neighbours per grid point.
    grid_points : int, default 100
        :math:`l_j = (j-1)/(J-1)`, kept inside [min score, max score] (when none is, the single
        point halfway between the smallest and largest score).
    jitter : bool, default False
        Add N(0, 0.001²) noise to the scores (seeded by ``rng``) before everything else.
    rng : Generator or int, optional

    Returns
    -------
    LocalCalibration

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

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> s = np.sort(rng.random(20_000))
    >>> result = local_calibration_score(s, (rng.random(20_000) < s).astype(float))
    >>> result.k, result.grid.size, result.lcs < 1e-3
    (3000, 98, True)
    """
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
    if w is not None:
        bad_weight = ~(np.isfinite(w) & (w > 0)) if w.shape == s.shape else np.ones(1, bool)
        if bad_weight.any():
            raise ValidationError(
                f"weights: {int(bad_weight.sum()):,} of {s.size:,} are not positive finite "
                f"numbers (or the shape {w.shape} differs from {s.shape}).", column="weight"
            )
    if grid_points < 2:
        raise ValidationError(f"grid_points must be at least 2, not {grid_points!r}.")
    if jitter:
        generator = np.random.default_rng(rng)
        s = s + generator.normal(0.0, 0.001, s.size)
    if jitter or np.any(s[1:] < s[:-1]):
        order = np.argsort(s, kind="stable")
        s, y = s[order], y[order]
        w = None if w is None else w[order]
    n = s.size
    k = int(np.floor(span * n))
    if k < 1:
        raise ValidationError(
            f"the LCS needs at least one neighbour: span {span:g} × n {n:,} < 1."
        )
    full = np.arange(grid_points) / (grid_points - 1)
    grid = full[(full >= s[0]) & (full <= s[-1])]
    if grid.size == 0:
        grid = np.array([0.5 * (s[0] + s[-1])])
    mean, count, events = knn_mean(s, y, grid, k, w)
    fit = np.clip(mean, 0.0, 1.0)
    # R's density(c(-s, s, 2 - s), from = 0, to = 1, n = grid_points), read at the l_j.
    internal = max(grid_points, 512)
    internal = internal if internal == 512 else int(2 ** np.ceil(np.log2(internal)))
    density_grid, density_values, bandwidth = _reflected(s, w, internal)
    density = np.interp(grid, density_grid, density_values)
    weights = density / density.sum() if density.sum() > 0 else np.full(grid.size, 1 / grid.size)
    lcs = float(np.sum(weights * (fit - grid) ** 2))  # eq. (6)
    lower, upper = _probit_band(fit, count)
    density_x = np.linspace(0.0, 1.0, 201)
    density_y = np.interp(density_x, density_grid, density_values)
    return LocalCalibration(
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
    )

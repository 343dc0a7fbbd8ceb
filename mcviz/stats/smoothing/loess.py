r"""LOESS curves with pointwise 95% bands (variable-based calibration, paper 001).

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
half-width by a relative :math:`2.5\cdot 10^{-6}`; ``tests/stats/smoothing/test_smoothing.py`` asserts
:math:`10^{-6}`.

Guards. A window whose observations are all tied at :math:`v` (:math:`h(v) = 0`) gives the
weighted mean of those observations, and so does a window whose neighbours all sit exactly on
its radius (tricube weight 0); a window with fewer than :math:`p + 1` distinct values with
positive weight is fitted with degree (distinct values − 1) (so a variable with fewer than
three distinct values gets local lines or means); a constant variable is refused with a
:class:`~mcviz.errors.ValidationError`.

References
----------
.. [1] M. Kelly, P. Smyth, "Variable-Based Calibration for Machine Learning Classifiers",
   AAAI 2023; Section 6 and Appendix B (LOESS with quadratic local fit, spans 0.8–0.9).
.. [3] W. S. Cleveland, E. Grosse, "Computational methods for local regression", Statistics
   and Computing 1, 1991 (the linear-smoother weights and the one-delta approximation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcviz.core.arrays import readonly as _readonly
from mcviz.stats.smoothing._common import Z95, locate
from mcviz.stats.smoothing._kernel import _moments, _tricube_both, _tricube_only
from mcviz.stats.smoothing.neighbours import neighbour_radius

__all__ = ["LoessCurve"]

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
_CHUNK_ELEMENTS = 400_000
"""Elements of the kernel-moment stack per chunk of points (a few MB: smaller chunks stay in
cache and avoid the page faults of large temporaries)."""
MIN_EFFECTIVE_ROWS = 50.0
"""Points with fewer effective rows (1 / sum of squared smoother weights) have thin support."""
NEAR = 0.1
"""Rows within ``NEAR`` times the window radius of a point are the rows *near* it."""
SPARSE_RATIO = 0.1
"""A LOESS point is sparse when the rows near it are fewer than this share of what the window's
average density would put there."""
ILL_CONDITIONED = 1e10
"""Local designs with a larger condition number are reported as degenerate."""


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
    support : ndarray of shape (G,)
        Effective rows behind each point, :math:`1 / \sum_i l_i(x)^2` (with weights, Kish's
        effective size of the smoother weights; the rows themselves for a plain mean).
    thin : ndarray of bool, shape (G,)
        Thin support: fewer than ``MIN_EFFECTIVE_ROWS`` (50) effective rows; or, for a LOESS
        point :math:`v` with radius :math:`h`, fewer rows within :math:`r = h/10` of
        :math:`v` than 10% of what the window's average density would put there,
        :math:`q \cdot |[v \pm r] \cap R| / |[v \pm h] \cap R|` with :math:`R` the range
        of x (the fit there is carried by rows far away: a tail or a hole in the data;
        between two neighbouring values less than :math:`0.4 h` apart, the spacing of a
        discrete variable, :math:`r` reaches both); or a degenerate local fit.
    spike : ndarray of bool, shape (G,)
        Points estimated from their own rows (a value holding at least 5% of the weight;
        see :func:`mcviz.stats.smoothing.loess_curve`).
    degenerate : ndarray of bool, shape (G,)
        The local fit degenerated: fewer distinct values with positive kernel weight than
        the degree needs (the degree was lowered), no row strictly inside the window (the
        plain mean of the rows on its boundary), or an ill-conditioned design.
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
    support: np.ndarray
    thin: np.ndarray
    spike: np.ndarray
    degenerate: np.ndarray


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
    radius: np.ndarray  # (G,) window radius h(v) (0 at spikes)
    degenerate: np.ndarray  # (G,) bool
    sparse: np.ndarray  # (G,) bool: few rows near the point (the rule of LoessCurve)
    spike: np.ndarray  # (G,) bool: estimated from the rows at that value

    def support(self) -> np.ndarray:
        """Effective rows behind each point, 1 / sum_i l_i^2."""
        with np.errstate(divide="ignore"):
            return np.where(self.l2 > 0, 1.0 / np.maximum(self.l2, 1e-300), np.inf)

    def thin(self) -> np.ndarray:
        """Thin support (the rule of :class:`LoessCurve`)."""
        return self.degenerate | self.sparse | (self.support() < MIN_EFFECTIVE_ROWS)

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
            support=_readonly(self.support()),
            thin=_readonly(self.thin()),
            spike=_readonly(self.spike.copy()),
            degenerate=_readonly(self.degenerate.copy()),
        )


# --------------------------------------------------------------------------------------------
# LOESS core


def _span_size(n: int, span: float) -> int:
    return int(min(max(np.floor(n * span + 1e-5), 1), n))


def _solve_points(
    moments: np.ndarray, squared: np.ndarray, degree: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Solve the local normal equations of each point with its own degree (batched).

    Returns the fits, the sums of squared smoother weights, :math:`[M^{-1}]_{11}` and whether
    each design is ill-conditioned (condition number above ``ILL_CONDITIONED``).
    """
    g = moments.shape[1]
    m = moments.shape[2] - 1
    fit = np.zeros((g, m))
    l2 = np.zeros(g)
    inverse11 = np.zeros(g)
    ill = np.zeros(g, dtype=bool)
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
        if d > 0:
            with np.errstate(divide="ignore", invalid="ignore"):
                # The designs are symmetric: singular values are the |eigenvalues|.
                singular = np.abs(np.linalg.eigvalsh(matrix))
            ill[rows] = ~(singular.min(axis=1) * ILL_CONDITIONED > singular.max(axis=1))
        fit[rows] = np.einsum("rd,rdm->rm", v, rhs)
        l2[rows] = np.einsum("rd,rde,re->r", v, q, v)
        inverse11[rows] = v[:, 0]
    return fit, l2, inverse11, ill


def _exact_point(
    x: np.ndarray, ys: list[np.ndarray], w: np.ndarray, point: float, radius: float, degree: int,
    w2: np.ndarray | None = None,
) -> tuple[np.ndarray, float, float]:
    """Direct weighted least squares at one point (used where bins would be too coarse).

    ``w2``: the observations' sums of :math:`W^2` when each stands for several rows (counts);
    None: :math:`W^2` itself.
    """
    squares = w * w if w2 is None else w2
    if radius <= 0:
        sel = x == point
        ws = w[sel]
        total = ws.sum()
        y = np.column_stack([column[sel] for column in ys])
        return (ws @ y) / total, float(squares[sel].sum() / total**2), 1.0 / total
    sel = np.abs(x - point) < radius
    if not sel.any():
        # Every neighbour sits exactly at the radius (tricube weight 0): their plain mean.
        sel = np.abs(x - point) <= radius
        ws = w[sel]
        total = ws.sum()
        y = np.column_stack([column[sel] for column in ys])
        return (ws @ y) / total, float(squares[sel].sum() / total**2), 1.0 / total
    y = np.column_stack([column[sel] for column in ys])
    z = (x[sel] - point) / radius
    kernel = (1.0 - np.abs(z) ** 3) ** 3 * w[sel]
    d = int(min(degree, np.unique(x[sel]).size - 1))
    design = np.vander(z, d + 1, increasing=True)
    matrix = design.T @ (kernel[:, None] * design)
    v = np.linalg.lstsq(matrix, np.eye(d + 1)[:, 0], rcond=None)[0]
    smoother = kernel * (design @ v)
    if w2 is None:
        return smoother @ y, float(smoother @ smoother), float(v[0])
    unit = smoother / w[sel]  # l / W: each of a value's rows has smoother weight W_i times it
    return smoother @ y, float((unit * unit) @ w2[sel]), float(v[0])


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


@dataclass(frozen=True, slots=True, eq=False)
class _Bins:
    """Per-bin power sums of the observations (private; see :func:`_bin_observations`)."""

    taylor: bool  # second-order expansion about the bin centres (else bins = distinct values)
    centres: np.ndarray  # (B,) ascending
    sums: np.ndarray  # (B, (m + 1) J): S_j of W, W y_1 .. W y_m for j = 0..J-1
    qsums: np.ndarray  # (B, J): S_j of W²
    cross: np.ndarray  # (m, m): sums of W y_a y_b over all rows
    direct: np.ndarray  # (G,) points to fit from their rows (bins too coarse for them)


class _RowCounts:
    """Row positions over sorted observations, each standing for ``counts`` rows (None: one).

    With counts the observations are the distinct values of a column and their row counts
    (sufficient statistics an engine computed by one ``GROUP BY``): the span's :math:`q`, the
    neighbour radii, the residual nodes and the thin-support rule count rows, as they do in
    memory, while the sums run over the observations (a value's rows share their kernel weight).
    """

    def __init__(self, xs: np.ndarray, counts: np.ndarray | None) -> None:
        self.xs = xs
        self.cum = None if counts is None else np.concatenate(([0], np.cumsum(counts)))
        self.n = xs.size if self.cum is None else int(self.cum[-1])

    def position(self, values: np.ndarray, side: str) -> np.ndarray:
        """Rows below ``values`` (side "left") or at or below them ("right")."""
        index = np.searchsorted(self.xs, values, side=side)
        return index if self.cum is None else self.cum[index]

    def value_at(self, position: np.ndarray) -> np.ndarray:
        """The value of the rows at ``position`` in the sorted rows."""
        if self.cum is None:
            return self.xs[position]
        return self.xs[np.searchsorted(self.cum, position, side="right") - 1]

    def run_lengths(self, starts: np.ndarray) -> np.ndarray:
        """Rows per distinct value (``starts``: first observation of each)."""
        if self.cum is None:
            return np.diff(np.append(starts, self.xs.size))
        return np.add.reduceat(np.diff(self.cum), starts)

    def radius(self, points: np.ndarray, q: int) -> np.ndarray:
        """Distance from each point to its ``q``-th nearest row.

        The rule of :func:`~mcviz.stats.smoothing.neighbours.neighbour_radius` over the rows
        the counts stand for: the first block start ``i`` with ``x[i+q-1] - v >= v - x[i]``,
        found by bisection (O(log n) lookups per point), then ``min(b(i), a(i-1))``.
        """
        if self.cum is None:
            return neighbour_radius(self.xs, points, q)
        q = int(min(max(q, 1), self.n))
        blocks = self.n - q + 1
        lo = np.zeros(points.size, dtype=np.int64)
        hi = np.full(points.size, blocks, dtype=np.int64)
        active = np.flatnonzero(lo < hi)
        while active.size:
            mid = (lo[active] + hi[active]) // 2
            v = points[active]
            after = self.value_at(mid + q - 1) - v >= v - self.value_at(mid)
            hi[active] = np.where(after, mid, hi[active])
            lo[active] = np.where(after, lo[active], mid + 1)
            active = active[lo[active] < hi[active]]
        b = np.where(lo < blocks, self.value_at(np.minimum(lo, blocks - 1) + q - 1) - points,
                     np.inf)
        a = np.where(lo > 0, points - self.value_at(np.maximum(lo - 1, 0)), np.inf)
        return np.minimum(a, b)


def _bin_index(
    x: np.ndarray, xs: np.ndarray, starts: np.ndarray, points: np.ndarray, radius: np.ndarray,
    q: int, taylor: bool, rows: _RowCounts,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """Bin of each observation, the bin centres, offsets from them and the direct points."""
    n = rows.n
    distinct = xs[starts]
    direct = np.zeros(points.size, dtype=bool)
    if not taylor:
        bins = distinct.size
        low, extent = distinct[0], distinct[-1] - distinct[0]
        if extent <= 8 * bins and np.all(distinct == np.round(distinct)):
            # Integer values in a short range: a lookup table instead of a binary search.
            table = np.zeros(int(extent) + 1, dtype=np.intp)
            table[(distinct - low).astype(np.intp)] = np.arange(bins)
            return table[(x - low).astype(np.intp)], distinct, None, direct
        return locate(distinct, x, bins - 1), distinct, None, direct
    # Heavily tied values get bins of their own (exact sums, no expansion): a large mass
    # sitting on a window's edge would otherwise dominate the expansion error.
    runs = rows.run_lengths(starts)
    heavy = distinct[runs >= max(HEAVY_TIES, n // 2000)]
    edges, too_coarse = _window_edges(xs[0], xs[-1], points, radius)
    direct |= too_coarse  # (only when MAX_BINS bins cannot be fine enough everywhere)
    # A window whose q nearest rows are mostly tied on its boundary (kernel weight 0) may
    # fit a handful of rows: ill-conditioned, so it is fitted from the observations.
    inside = rows.position(points + radius, "left") - rows.position(points - radius, "right")
    direct |= inside < min(q // 2, FEW_ROWS)
    bins = edges.size - 1
    index = locate(edges, x, bins - 1)
    middles = 0.5 * (edges[:-1] + edges[1:])
    offset = x - middles[index]
    if heavy.size:
        slot = locate(heavy, x, heavy.size - 1)
        tied_rows = heavy[slot] == x
        index[tied_rows] = bins + slot[tied_rows]
        offset[tied_rows] = 0.0
    return index, np.concatenate((middles, heavy)), offset, direct


def _bin_observations(
    x: np.ndarray, ys: list[np.ndarray], weight: np.ndarray | None, xs: np.ndarray,
    starts: np.ndarray, points: np.ndarray, radius: np.ndarray, q: int, taylor: bool,
    rows: _RowCounts, squares: np.ndarray | None = None, cross: np.ndarray | None = None,
) -> _Bins:
    r"""Aggregate the observations into bins: the power sums of the module notes.

    ``squares`` and ``cross``: with counts, each observation's sum of :math:`W^2` and the
    rows' total :math:`\sum W y_a y_b` (the observations' means cannot give them).
    """
    m = len(ys)
    weighted = weight is not None
    index, bin_centres, offset, direct = _bin_index(x, xs, starts, points, radius, q, taylor,
                                                    rows)
    bins = bin_centres.size

    # rows in ascending order (score-sorted arrays) fall into bins in runs: sums per run, then
    # per bin (a bin may hold several runs, around a heavily tied value's own bin)
    runs = None
    if x.size > 4 * bins and not (x[1:] < x[:-1]).any():
        runs = np.flatnonzero(np.concatenate(([True], index[1:] != index[:-1])))
        run_bin = index[runs]
        run_length = np.diff(np.append(runs, x.size)).astype(float)

    def per_bin(values: np.ndarray | None) -> np.ndarray:
        if runs is None:
            return np.bincount(index, weights=values, minlength=bins).astype(float)
        sums = run_length if values is None else np.add.reduceat(values, runs)
        return np.bincount(run_bin, weights=sums, minlength=bins)

    w = weight  # (None when unweighted: every use below is for weighted rows only)
    wys = [w * column for column in ys] if weighted else ys
    w2 = (w * w if squares is None else squares) if weighted else None
    columns = [per_bin(w if weighted else None)] + [per_bin(column) for column in wys]
    squared = [per_bin(w2)] if weighted else [columns[0]]
    if cross is None:
        cross = np.empty((m, m))  # only their totals enter the residual sums
        for a in range(m):
            for b in range(a, m):
                cross[a, b] = cross[b, a] = float(np.dot(wys[a], ys[b]))
    if not taylor:
        return _Bins(False, bin_centres, np.column_stack(columns), np.column_stack(squared),
                     cross, direct)
    wu = w * offset if weighted else offset
    wu2 = wu * offset
    first = [per_bin(wu)] + [per_bin(wu * column) for column in ys]
    second = [per_bin(wu2)] + [per_bin(wu2 * column) for column in ys]
    columns += first + second
    if weighted:
        squared += [per_bin(w2 * offset), per_bin(w2 * offset * offset)]
    else:
        squared += [first[0], second[0]]
    keep = np.flatnonzero(columns[0] > 0)
    keep = keep[np.argsort(bin_centres[keep], kind="stable")]
    return _Bins(True, bin_centres[keep], np.column_stack(columns)[keep],
                 np.column_stack(squared)[keep], cross, direct)


def _binned_moments(
    bins: _Bins, points: np.ndarray, radius: np.ndarray, todo: np.ndarray, degree: int,
    grid_count: int, m: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Kernel moments of the points ``todo`` from the bins, in chunks of nearby points."""
    g = points.size
    moments = np.zeros((2 * degree + 1, g, m + 1))
    squared = np.zeros((2 * degree + 1, g, 1))
    centres = bins.centres
    per_point = centres.size * (3 if bins.taylor else 1) * (2 * degree + 1)
    chunk = max(1, _CHUNK_ELEMENTS // max(per_point, 1))
    for begin in range(0, todo.size, chunk):
        rows = todo[begin : begin + chunk]
        h = radius[rows]
        # Only bins inside the union of these windows contribute.
        first = np.searchsorted(centres, (points[rows] - h).min(), side="left")
        last = np.searchsorted(centres, (points[rows] + h).max(), side="right")
        cols = slice(max(first - 1, 0), last + 1)
        t = (centres[None, cols] - points[rows, None]) / h[:, None]
        k, ksq = _tricube_both(t) if bins.taylor else _tricube_only(t)
        moments[:, rows] = _moments(k, t, h, bins.sums[cols], 2 * degree)
        on_grid = rows < grid_count  # the band is needed on the grid only
        if on_grid.any():
            squared[:, rows[on_grid]] = _moments(
                tuple(part[on_grid] for part in ksq), t[on_grid], h[on_grid],
                bins.qsums[cols], 2 * degree,
            )
    return moments, squared


def _direct_fits(
    x: np.ndarray, ys: list[np.ndarray], w: np.ndarray, xs: np.ndarray, points: np.ndarray,
    radius: np.ndarray, rows: np.ndarray, degree: int, w2: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fit the points ``rows`` directly from their windows' observations (one sort)."""
    fit = np.zeros((rows.size, len(ys)))
    l2 = np.zeros(rows.size)
    inverse11 = np.zeros(rows.size)
    if not rows.size:
        return fit, l2, inverse11
    order = np.argsort(x)  # the tie order is irrelevant: sums over whole windows
    low = np.searchsorted(xs, points - radius, side="left")
    high = np.searchsorted(xs, points + radius, side="right")
    # Rows on the boundary carry kernel weight 0: only needed when none lies inside.
    inner_low = np.searchsorted(xs, points - radius, side="right")
    inner_high = np.searchsorted(xs, points + radius, side="left")
    use_inner = (radius > 0) & (inner_high > inner_low)
    low = np.where(use_inner, inner_low, low)
    high = np.where(use_inner, inner_high, high)
    for j, i in enumerate(rows):
        sel = order[low[i]:high[i]]
        fit[j], l2[j], inverse11[j] = _exact_point(
            x[sel], [column[sel] for column in ys], w[sel], points[i], radius[i], degree,
            None if w2 is None else w2[sel],
        )
    return fit, l2, inverse11


def _residual_sums(
    bins: _Bins, nodes: np.ndarray, node_fit: np.ndarray, node_inverse: np.ndarray, m: int
) -> tuple[np.ndarray, float]:
    """Residual cross-products and tr L from the fits at the nodes (module notes)."""
    centres, sums = bins.centres, bins.sums
    fitted = np.column_stack([np.interp(centres, nodes, node_fit[:, j]) for j in range(m)])
    weight_bins = sums[:, 0]
    sum_y = sums[:, 1 : m + 1]
    rss = (
        bins.cross
        - fitted.T @ sum_y
        - sum_y.T @ fitted
        + (fitted * weight_bins[:, None]).T @ fitted
    )
    if bins.taylor and nodes.size > 1:
        # Within a bin the fit moves by slope · u: residuals y - f - f'u, with f' the slope
        # of the interpolated node fits and the sums of W u, W u², W y u.
        slopes = np.diff(node_fit, axis=0) / np.diff(nodes)[:, None]
        piece = np.clip(np.searchsorted(nodes, centres, side="right") - 1, 0, nodes.size - 2)
        slope = slopes[piece]
        sum_u, sum_u2 = sums[:, m + 1], sums[:, 2 * (m + 1)]
        sum_yu = sums[:, m + 2 : 2 * (m + 1)]
        rss += (
            -slope.T @ sum_yu - sum_yu.T @ slope
            + (fitted * sum_u[:, None]).T @ slope + (slope * sum_u[:, None]).T @ fitted
            + (slope * sum_u2[:, None]).T @ slope
        )
    trace = float(weight_bins @ np.interp(centres, nodes, node_inverse))  # sum W_i [M^-1]_11
    return rss, trace


def _sparse(sorted_x: np.ndarray, points: np.ndarray, radius: np.ndarray, q: int,
            rows: _RowCounts) -> np.ndarray:
    """Points with few rows near them (the thin-support rule of :class:`LoessCurve`)."""
    low, high = sorted_x[0], sorted_x[-1]
    n = sorted_x.size
    # Between two neighbouring values closer than 4 NEAR h (the spacing of a discrete
    # variable, not a hole), "near" reaches both of them.
    below = sorted_x[np.clip(np.searchsorted(sorted_x, points, side="right") - 1, 0, n - 1)]
    above = sorted_x[np.clip(np.searchsorted(sorted_x, points, side="left"), 0, n - 1)]
    spacing = above - below
    reach = np.where(spacing <= 4 * NEAR * radius,
                     np.maximum(NEAR * radius, 0.5 * spacing * (1 + 1e-9)), NEAR * radius)
    near = rows.position(points + reach, "right") - rows.position(points - reach, "left")

    def covered(reach: np.ndarray) -> np.ndarray:
        return np.minimum(points + reach, high) - np.maximum(points - reach, low)

    with np.errstate(divide="ignore", invalid="ignore"):
        expected = q * covered(reach) / covered(radius)
    return (radius > 0) & (near < SPARSE_RATIO * expected)


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
    counts: np.ndarray | None = None,
    squares: np.ndarray | None = None,
    cross: np.ndarray | None = None,
) -> _Fits:
    r"""LOESS fits of the columns of ``responses`` (n, m) at ``at``; see the module notes.

    ``counts``: ``x`` holds distinct values in ascending order, each standing for that many
    rows (:class:`_RowCounts`); ``weight`` and the responses are then the rows' sums of
    :math:`W` and their weighted means, which gives the fits of the rows themselves; with
    ``squares`` (the rows' :math:`\sum W^2` per value) and ``cross`` (their total
    :math:`\sum W y_a y_b`, shape (m, m)) also the bands, :math:`\nu_1` and the residual
    sums.
    """
    x = np.asarray(x, dtype=float)
    ys = [np.ascontiguousarray(column, dtype=float) for column in responses]
    m = len(ys)
    w = np.ones(x.size) if weight is None else np.ascontiguousarray(weight, dtype=float)
    xs = np.sort(x) if sorted_x is None else sorted_x
    rows = _RowCounts(xs, counts)
    n = rows.n
    q = _span_size(n, span)
    starts = np.flatnonzero(np.concatenate(([True], xs[1:] != xs[:-1])))
    distinct = xs[starts]
    degree = int(min(degree, distinct.size - 1))
    if distinct.size <= RESIDUAL_NODES:
        nodes = distinct
    else:
        nodes = np.unique(rows.value_at(np.linspace(0, n - 1, RESIDUAL_NODES).round()
                                        .astype(np.int64)))
    points = np.concatenate((np.asarray(at, dtype=float), nodes))
    radius = rows.radius(points, q)
    grid_count = points.size - nodes.size

    taylor = not (exact or (exact is None and distinct.size <= DISTINCT_LIMIT))
    bins = _bin_observations(
        x, ys, None if weight is None else w, xs, starts, points, radius, q, taylor, rows,
        squares, cross,
    )
    lo_d = np.searchsorted(distinct, points - radius, side="right")
    hi_d = np.searchsorted(distinct, points + radius, side="left")
    # Direct fits: tied windows (the mean of the tied rows), windows with no value strictly
    # inside, and windows the bins are too coarse for.
    direct = bins.direct | (radius <= 0) | (hi_d <= lo_d)
    local_degree = np.minimum(degree, np.maximum(hi_d - lo_d, 1) - 1)
    todo = np.flatnonzero(~direct)
    todo = todo[np.argsort(points[todo], kind="stable")]  # chunks of nearby points
    moments, squared = _binned_moments(bins, points, radius, todo, degree, grid_count, m)

    fit = np.zeros((points.size, m))
    l2 = np.zeros(points.size)
    inverse11 = np.zeros(points.size)
    ill = np.zeros(points.size, dtype=bool)
    if todo.size:
        fit[todo], l2[todo], inverse11[todo], ill[todo] = _solve_points(
            moments[:, todo], squared[:, todo], local_degree[todo]
        )
    direct_rows = np.flatnonzero(direct)
    fit[direct_rows], l2[direct_rows], inverse11[direct_rows] = _direct_fits(
        x, ys, w, xs, points, radius, direct_rows, degree, squares
    )
    flat = (radius <= 0) | (hi_d <= lo_d)  # plain means of tied or boundary rows
    degenerate = ill | ((radius > 0) & ((local_degree < degree) | (hi_d <= lo_d)))
    local_degree[flat] = 0

    node_rows = slice(grid_count, points.size)
    rss, trace = _residual_sums(bins, nodes, fit[node_rows], inverse11[node_rows], m)
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
        radius=radius[:grid_count],
        degenerate=degenerate[:grid_count],
        sparse=_sparse(xs, points[:grid_count], radius[:grid_count], q, rows),
        spike=np.zeros(grid_count, dtype=bool),
    )

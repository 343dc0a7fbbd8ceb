r"""The alarm rule: a scan of standardised windows of the cumulative path over time.

Its family-wise false-alarm rate is controlled by simulation over all segments and the whole
horizon.

Notation. Series :math:`k = 0, \dots, K` (0 is the full population, 1..K the segments), periods
:math:`p = 0, \dots, P-1`, the first :math:`r` of them the reference. For the rows of series
:math:`k` in period :math:`p`,

.. math::
    n_{kp} = \sum W_j, \qquad x_{kp} = \sum W_j (R_j - S_j), \qquad
    v_{kp} = \sum W_j^2 S_j (1 - S_j),

so that :math:`x_{k0} + \dots + x_{kp}` divided by the series' total weight is Tygert's
cumulative difference along time (eq. (1) of [1], with the period as the ordered variable and
the rows of one period tied), and :math:`\sqrt{\sum_p v_{kp}} / \sum_p n_{kp}` is its scale
(eq. (5) of [1]).

Null hypothesis: *calibrated as in the reference*. In every series the expected gap
:math:`E(R - S)` per unit weight after the reference equals the reference gap
:math:`\delta_k`, estimated by :math:`\hat\delta_k = X_k / N_k` with :math:`X_k, N_k, V_k`
the sums of :math:`x, n, v` over the reference periods. (A series with no reference rows is
compared with :math:`\delta_k = 0`, perfect calibration.)

Window statistic. For a window of monitored periods :math:`a \le p < b` (:math:`r \le a`),
with :math:`\Delta x, \Delta n, \Delta v` the window's sums,

.. math::
    z_k(a, b) = \frac{\Delta x - \hat\delta_k \Delta n}
                     {\sqrt{\Delta v + \Delta n^2 \, V_k / N_k^2}}
    \qquad (1)

is the window's increment of the cumulative path relative to the reference, standardised:
under the null its numerator has mean 0 and, rows being independent and :math:`\hat\delta_k`
depending on reference rows only, variance :math:`\Delta v + \Delta n^2 V_k/N_k^2` when the
responses are Bernoulli(:math:`S`) (to first order when the gap is a small :math:`\delta_k`).
Since the Kuiper range of a path is the largest increment over all windows,
:math:`D = \max_{a<b} |C(b) - C(a)|` (eq. (2) of [1]), (1) is a Kuiper statistic in which every
window is measured against its own noise: a shift confined to a few recent periods stands out
instead of being diluted by the whole horizon. At period :math:`b - 1` the series' statistic is

.. math:: T_k(b) = \max_{r \le a < b} |z_k(a, b)| \qquad (2)

(the generalised likelihood ratio for a change of mean starting at an unknown period, in the
Gaussian approximation [2]); it uses only the data up to period :math:`b - 1`, so an alarm at
:math:`b - 1` could have been raised then. Over the horizon,

.. math:: M = \max_{k} \max_{r < b \le P} T_k(b). \qquad (3)

Threshold. Let :math:`c_\alpha` be the :math:`(1-\alpha)` quantile of :math:`M` under the null.
Series :math:`k` alarms at the first period :math:`b-1` with :math:`T_k(b) > c_\alpha`. Any
false alarm anywhere (some :math:`T_k(b) > c_\alpha` while the null holds for every series)
implies :math:`M > c_\alpha`, which has probability :math:`\alpha`: the family-wise false-alarm
rate over all series and all periods is at most :math:`\alpha`. The distribution of :math:`M`
is simulated with the design (scores, weights, memberships, periods) fixed and the responses
redrawn, :math:`R^*_j \sim \text{Bernoulli}(S_j)`:

* ``"bernoulli"``: exactly so, row by row (used when rows x draws <= 2e7);
* ``"normal"``: the sums over the *cells* (the rows of one period sharing one membership pattern
  across the series, which partition the rows) are independent with mean 0 and variance the
  cell's :math:`\sum W^2 S(1-S)`; they are drawn as normal variables with exactly that variance,
  and every series' :math:`x_{kp}` is the sum of its cells. The first two moments (and every
  covariance between overlapping series) are those of the row-level redraw, and the third
  cumulant of each cell, :math:`\sum W^3 S(1-S)(1-2S)`, is matched to first order by the
  Cornish-Fisher draw :math:`\sigma (Z + g(Z^2 - 1))/\sqrt{1 + 2g^2}`, skewness :math:`6g`
  (:math:`|g| \le 0.25`). The squared skewness of sums of a few hundred Bernoulli rows makes
  the tails at 4.5 standard deviations heavier than normal ones by several percent; without
  the correction the family-wise rate of the benchmark's design was 5.5% (5,000 streams).

With :math:`B` draws :math:`M^*_1, \dots, M^*_B`, segment :math:`k`'s adjusted p-value is the
single-step max-T value of Westfall and Young [3],

.. math:: p_k = \frac{1 + \#\{i : M^*_i \ge \max_b T_k(b)\}}{B + 1}, \qquad (4)

and :math:`c_\alpha` is the :math:`j`-th largest :math:`M^*_i`, :math:`j = \lfloor \alpha (B+1)
\rfloor`, so that :math:`T_k(b) > c_\alpha` exactly when (4) computed at :math:`b` is
:math:`\le \alpha`. With ``"bernoulli"`` draws and a null of perfect calibration the test is
exact for any :math:`B` (Monte Carlo test); otherwise it is as good as the approximations above,
which ``benchmarks/bench_monitor.py`` measures.

Windows. With :math:`Q = P - r` monitored periods, every window is scanned when
:math:`Q \le 64`; beyond, windows of lengths on a geometric grid (ratio 1.25) ending at every
period: any window then lies within a factor 1.25 of a scanned one, and the work is
:math:`O(Q \log Q)` per series and draw.

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eqs. (1), (2), (5).
.. [2] D. Siegmund, E. S. Venkatraman, "Using the generalized likelihood ratio statistic for
   sequential detection of a change-point", Ann. Statist. 23(1), 1995.
.. [3] P. H. Westfall, S. S. Young, "Resampling-Based Multiple Testing", Wiley, 1993; Section
   2.6 (single-step max-T adjusted p-values).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcviz.core.ratio import safe_ratio

__all__ = ["CellSums", "NullDraws", "Scanner", "WindowPlan", "adjusted_p", "null_maxima", "scan",
           "threshold", "window_plan"]

EXACT_ROW_DRAWS = 20_000_000
"""Row-level Bernoulli redraws when rows x draws is at most this; cell-level normal otherwise."""
_ALL_WINDOWS = 64
_BATCH_VALUES = 4_000_000
_MAX_G = 0.25  # skewness at most 1.5 per cell in the normal draws (tiny cells: use "bernoulli")


@dataclass(frozen=True, slots=True, eq=False)
class WindowPlan:
    """Windows ``[start, end)`` of monitored periods, sorted by ``end`` (cumsum indices)."""

    start: np.ndarray
    end: np.ndarray
    first: np.ndarray  # position of the first window of each end, for np.maximum.reduceat
    n_monitored: int


def window_plan(n_monitored: int) -> WindowPlan:
    """Every window when ``n_monitored <= 64``; geometric lengths beyond (module docstring).

    Examples
    --------
    >>> plan = window_plan(3)
    >>> list(zip(plan.start.tolist(), plan.end.tolist()))
    [(0, 1), (1, 2), (0, 2), (2, 3), (1, 3), (0, 3)]
    """
    q = int(n_monitored)
    if q <= _ALL_WINDOWS:
        lengths = np.arange(1, q + 1)
    else:
        grid = np.unique(np.round(1.25 ** np.arange(0, np.log(q) / np.log(1.25) + 1)))
        lengths = np.unique(np.concatenate((grid[grid <= q], [q]))).astype(np.int64)
    end = np.repeat(np.arange(1, q + 1), lengths.size)
    length = np.tile(lengths, q)
    keep = length <= end
    end, length = end[keep], length[keep]
    first = np.flatnonzero(np.r_[True, end[1:] != end[:-1]])
    return WindowPlan(end - length, end, first, q)


@dataclass(frozen=True, slots=True, eq=False)
class CellSums:
    r"""Sums over the cells (membership pattern x period) and the series' incidence.

    Attributes
    ----------
    n, x, v : ndarray, shape (A, P)
        :math:`\sum W`, :math:`\sum W(R-S)`, :math:`\sum W^2 S(1-S)` per atom and period.
    incidence : ndarray of float, shape (K + 1, A)
        1 where atom ``a`` belongs to series ``k``.
    atom, period : ndarray of int, shape (n,)
        Each row's atom and period (for the row-level redraws).
    score, weight : ndarray, shape (n,)
    """

    n: np.ndarray
    x: np.ndarray
    v: np.ndarray
    incidence: np.ndarray
    atom: np.ndarray
    period: np.ndarray
    score: np.ndarray
    weight: np.ndarray
    k3: np.ndarray | None = None  # (A, P): sum of W^3 S(1-S)(1-2S), the third cumulant


class Scanner:
    r"""Eq. (1)-(2) for one design (weights, variances, windows), for observed or drawn sums.

    The windows' denominators depend only on the design and are computed once. Windows are
    visited by length: for a length :math:`L` the increments :math:`C(s+L) - C(s)` of every
    start are one subtraction of two contiguous slices of the path (no gather, no BLAS), and a
    length's block of draws fits in cache.

    Parameters
    ----------
    n, v : ndarray, shape (K + 1, P)
    n_reference : int
        :math:`r`.
    plan : WindowPlan
    """

    def __init__(self, n: np.ndarray, v: np.ndarray, n_reference: int, plan: WindowPlan) -> None:
        r = n_reference
        self.r, self.q = r, plan.n_monitored
        self.n_ref = n[:, :r].sum(axis=-1)
        ref_var = safe_ratio(v[:, :r].sum(axis=-1), self.n_ref**2)  # V_k / N_k^2
        self.cn = np.concatenate((np.zeros((n.shape[0], 1)), np.cumsum(n[:, r:], axis=-1)),
                                 axis=-1)
        cv = np.concatenate((np.zeros((v.shape[0], 1)), np.cumsum(v[:, r:], axis=-1)), axis=-1)
        self.inverse = {}  # length -> (K + 1, Q + 1 - L): 1 / the denominator of eq. (1)
        for length in np.unique(plan.end - plan.start).tolist():
            dn = self.cn[:, length:] - self.cn[:, :-length]
            scale = np.sqrt(np.maximum(cv[:, length:] - cv[:, :-length], 0.0)
                            + dn**2 * ref_var[:, None])
            inverse = safe_ratio(1.0, scale)  # an empty window (scale 0) has z = 0
            inverse[~np.isfinite(inverse)] = 0.0
            self.inverse[length] = inverse

    def _path(self, x: np.ndarray) -> np.ndarray:
        """Return the post-reference path relative to the reference gap, (..., K + 1, Q + 1)."""
        r = self.r
        delta = safe_ratio(x[..., :r].sum(axis=-1), self.n_ref)  # \hat\delta_k (0: no ref.)
        cx = np.concatenate((np.zeros((*x.shape[:-1], 1)), np.cumsum(x[..., r:], axis=-1)),
                            axis=-1)
        cx -= delta[..., None] * self.cn
        return cx

    def statistic(self, x: np.ndarray) -> np.ndarray:
        """Eq. (2): :math:`T_k(b)` for ``b = r+1..P``, shape (K + 1, Q), for x of (K + 1, P)."""
        cx = self._path(x)
        out = np.zeros((x.shape[0], self.q))
        for length, inverse in self.inverse.items():
            z = np.abs(cx[:, length:] - cx[:, :-length]) * inverse  # eq. (1), windows [s, s+L)
            np.maximum(out[:, length - 1:], z, out=out[:, length - 1:])  # end s + L
        return out

    def maxima(self, x: np.ndarray) -> np.ndarray:
        """Eq. (3): :math:`M` of each draw, shape (draws,), for x of shape (draws, K + 1, P)."""
        cx = self._path(x)
        best = np.zeros(x.shape[0])
        for length, inverse in self.inverse.items():
            z = cx[..., length:] - cx[..., :-length]
            np.abs(z, out=z)
            z *= inverse
            np.maximum(best, z.max(axis=(1, 2)), out=best)
        return best


def scan(x: np.ndarray, n: np.ndarray, v: np.ndarray, n_reference: int,
         plan: WindowPlan) -> np.ndarray:
    r"""Return :math:`T_k(b)`, eq. (2), for ``b = r+1..P``: shape (K + 1, Q).

    Parameters
    ----------
    x, n, v : ndarray, shape (K + 1, P)
        :math:`x_{kp}`, :math:`n_{kp}`, :math:`v_{kp}`.
    n_reference : int
        :math:`r`.
    plan : WindowPlan

    Examples
    --------
    A gap of 0.1 on 100 rows per period after a calibrated reference (v = 25 per period): one
    period gives 10 / sqrt(25 + 100**2 * 25 / 100**2) = 1.4142, both 20 / sqrt(50 + 100).

    >>> n = np.full((1, 3), 100.0); v = np.full((1, 3), 25.0)
    >>> x = np.array([[0.0, 10.0, 10.0]])
    >>> scan(x, n, v, 1, window_plan(2)).round(4).tolist()
    [[1.4142, 1.633]]
    """
    return Scanner(n, v, n_reference, plan).statistic(x)


@dataclass(frozen=True, slots=True, eq=False)
class NullDraws:
    """Simulated maxima :math:`M^*` (eq. (3)) and how they were drawn."""

    maxima: np.ndarray
    method: str


def null_maxima(cells: CellSums, n_reference: int, plan: WindowPlan, *, n_draws: int,
                method: str, rng: np.random.Generator, progress=None) -> NullDraws:
    """Draw :math:`M^*` under the null (module docstring), in batches of bounded memory.

    ``method`` is ``"auto"``, ``"bernoulli"`` or ``"normal"``; ``progress(fraction)`` is called
    after each batch.
    """
    n_rows = cells.score.size
    if method == "auto":
        method = "bernoulli" if n_rows * n_draws <= EXACT_ROW_DRAWS else "normal"
    atoms, periods = cells.n.shape
    scanner = Scanner(cells.incidence @ cells.n, cells.incidence @ cells.v, n_reference, plan)
    per_draw = max(atoms * periods, plan.start.size * cells.incidence.shape[0],
                   n_rows if method == "bernoulli" else 0)
    batch = int(max(1, min(n_draws, _BATCH_VALUES // max(per_draw, 1))))
    sd = np.sqrt(np.maximum(cells.v, 0.0))
    skew_g = np.zeros_like(sd)  # Z + g (Z^2 - 1) has skewness 6g (to first order)
    if cells.k3 is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            skew = np.where(cells.v > 0, cells.k3 / np.maximum(cells.v, 1e-300) ** 1.5, 0.0)
        skew_g = np.clip(skew / 6.0, -_MAX_G, _MAX_G)
        sd = sd / np.sqrt(1.0 + 2.0 * skew_g**2)  # Var(Z + g(Z^2 - 1)) = 1 + 2 g^2
    cell_code = (cells.atom.astype(np.int64) * periods + cells.period) if (
        method == "bernoulli") else None
    maxima = np.empty(n_draws)
    done = 0
    while done < n_draws:
        b = min(batch, n_draws - done)
        if method == "bernoulli":
            draws = rng.random((b, n_rows)) < cells.score
            residual = (draws - cells.score) * cells.weight
            codes = cell_code + (np.arange(b, dtype=np.int64) * (atoms * periods))[:, None]
            cell_x = np.bincount(codes.ravel(), weights=residual.ravel(),
                                 minlength=b * atoms * periods).reshape(b, atoms, periods)
        else:
            z = rng.standard_normal((b, atoms, periods))
            z += skew_g * (z * z - 1.0)  # Cornish-Fisher: the cells' third cumulant
            cell_x = z * sd
        series_x = np.matmul(cells.incidence, cell_x)  # (b, K + 1, P)
        maxima[done:done + b] = scanner.maxima(series_x)
        done += b
        if progress is not None:
            progress(done / n_draws)
    return NullDraws(maxima, method)


def threshold(maxima: np.ndarray, alpha: float) -> float:
    r"""Return :math:`c_\alpha`: the :math:`\lfloor\alpha(B+1)\rfloor`-th largest maximum.

    ``inf`` when :math:`\alpha (B+1) < 1` (too few draws for that level).

    Examples
    --------
    >>> threshold(np.arange(1.0, 20.0), 0.1)  # B = 19: the 2nd largest
    18.0
    """
    j = int(np.floor(alpha * (maxima.size + 1) + 1e-9))
    if j < 1:
        return float("inf")
    return float(np.sort(maxima)[::-1][j - 1])


def adjusted_p(statistic: np.ndarray, maxima: np.ndarray) -> np.ndarray:
    """Eq. (4): ``(1 + #{M* >= T}) / (B + 1)`` for each statistic.

    Examples
    --------
    >>> adjusted_p(np.array([18.5, 0.0]), np.arange(1.0, 20.0)).tolist()
    [0.1, 1.0]
    """
    ordered = np.sort(maxima)
    at_least = ordered.size - np.searchsorted(ordered, statistic, side="left")
    return (1.0 + at_least) / (ordered.size + 1.0)

r"""How far the curves along a variable drawn from fine bins can be from those of the rows.

An engine that meets more distinct values of V than it returns sums the rows in equal-width
bins :math:`b` (:func:`~mcviz.engines.calibration.value_sums_table`) and places each bin at its
rows' mean value :math:`c_b`; it also returns each bin's smallest and largest value,
:math:`[\ell_b, u_b]`. The curves of
:func:`~mcviz.stats.variable_sums.variable_calibration_from_sums` are then exactly those
of the rows moved to :math:`c_b`. :func:`fine_bin_bound` bounds, per drawn grid point
:math:`v`, how far each drawn value can be from the in-memory curve of the *original* rows at
the same :math:`v` and span (:func:`~mcviz.stats.variable_curves.variable_calibration` with
that span), from nothing but the bins' sums and ranges:

1. **Spikes.** A bin holding at least 5% of the weight is a spike from the sums. When its
   range is one value (:math:`\ell_b = u_b`) it is that value's rows, the spike of the rows
   too, and its estimate (their weighted mean) is exact (bound :data:`ROUNDING`, the order of
   the additions). When such a bin spans several values the rows may or may not hold a spike
   there, so the windows and :math:`q = \lfloor n' \mathrm{span}\rfloor` may differ: no bound
   (infinite everywhere). A bin under 5% holds no spike. So otherwise both fits leave the
   same rows out and share :math:`q`.
2. **Window radius.** :math:`h(v)` is the :math:`q`-th smallest :math:`|x_i - v|`; moving row
   :math:`i` of bin :math:`b` by :math:`|x_i - c_b| \le \Delta_b = \max(c_b - \ell_b, u_b -
   c_b) \le \Delta = \max_b \Delta_b` moves every distance, hence every order statistic, by
   at most :math:`\Delta`: :math:`h \in [h' - \Delta, h' + \Delta] = [h_-, h_+]`, :math:`h'`
   the drawn window's radius.
3. **The local fit as a perturbation.** With :math:`z(x) = (x - v)/h'` (one basis scale for
   both: the intercept does not depend on it), :math:`X(z) = (1, z, \dots, z^p)`, the
   tricube :math:`K`, the rows' fit (eq. (B.1) of Kelly & Smyth, Appendix B; module
   :mod:`mcviz.stats.smoothing.loess`) solves :math:`S\beta = T`, :math:`S = \sum_i W_i
   K(|x_i - v|/h) X X^\top`, :math:`T = \sum_i W_i y_i K X`, and the drawn one
   :math:`S'\beta' = T'` at :math:`c_i, h'`. From :math:`\delta = \beta - \beta' =
   S'^{-1}(S'\beta - T')` and :math:`T - S\beta = 0`, with :math:`q_k(z) = e_k^\top S'^{-1}
   X(z)` (known polynomials), :math:`P'(z) = X(z)^\top\beta'` and
   :math:`F_p(x, h) = K(|x - v|/h)\, p(z(x))`,

   .. math:: \delta_k = \sum_i W_i y_i \bigl[F_{q_k}(x_i, h) - F_{q_k}(c_i, h')\bigr]
             - \sum_i W_i \bigl[F_{q_k P'}(x_i, h) - F_{q_k P'}(c_i, h')\bigr]
             - \sum_j \delta_j \sum_i W_i \bigl[F_{q_k z^j}(x_i, h) - F_{q_k z^j}(c_i, h')\bigr].

   By the mean value theorem (:math:`K` is :math:`C^1`), each bracket is at most
   :math:`\sup|\partial_x F|\,\Delta_b + \sup|\partial_h F|\,\Delta` over the bin and
   :math:`[h_-, h_+]`, with :math:`|\partial_x F| \le |K'|\,|p|/h_- + K\,|p'|/h'`,
   :math:`|\partial_h F| \le |K'|\,|x - v|\,|p|/h_-^2`, :math:`|K'(u)| = 9u^2(1 - u^3)^2`
   bounded from the range of :math:`u = |x - v|/h`, and :math:`\sup|p|`, :math:`\sup|p'|`
   over the bin's :math:`z` from :math:`p`'s Taylor series about its middle. The rows'
   :math:`\sum W |y|` per bin are known: :math:`\sum W e`, :math:`\sum W \hat e`, and for the
   gap :math:`r = e - \hat e` (:math:`e^2 = e`) :math:`\sum W e + \sum W \hat e - 2\sum W
   e\hat e`. Above :data:`CELLS` bins in a window the sups are taken over that many runs of
   neighbouring bins (covering theirs) and the sums of :math:`W\Delta_b` added.
4. **The solve.** So :math:`|\delta_k| \le a_k + \sum_j M_{kj} |\delta_j|` (the first two sums
   bounded into :math:`a`, the third's brackets into :math:`M \ge 0`); when the spectral radius
   of :math:`M` is below 1, :math:`|\delta| \le (I - M)^{-1} a` (the Neumann series), and
   :math:`|\delta_0|` bounds the fit's move at :math:`v`. Clipping the drawn rates to
   [0, 1] (the gap to [-1, 1]) moves nothing further (it is 1-Lipschitz).
5. **Where no bound is derived** (infinite): a degenerate window (degree lowered, no row
   inside), fewer than degree + 1 bins wholly inside :math:`(v - h_-, v + h_-)` (the rows'
   window could then lower its degree), :math:`h_- \le 0`, or :math:`\rho(M) \ge 1` (bins too
   wide for the window: equal-width bins where a skewed variable is dense).

The bound is a worst case over where the rows sit within their bins: of order
:math:`\Delta/h` times a few, while real rows' moves mostly cancel (measured distances are
1% to 30% of it: ``tests/engines/test_variable_bound_engines.py``).

Both evaluations may use the Taylor-binned LOESS sums (above 2,048 distinct values), whose
deviation from the exact sums is verified below :math:`10^{-6}`
(``tests/stats/smoothing/test_smoothing.py``), not derived: :data:`TAYLOR_SLACK` adds it for
each. What else differs, and is not bounded here: the grid (half of it at quantiles of the
moved rows; the rows' quantiles lie in the same bins), the span when it is chosen (on the bins),
the bands and the thin-support flags.

The summaries:

* **VCE(v*)** (eq. (8) of [1], the largest gap over the eligible points of the drawn grid):
  within the largest gap bound over the points with enough support, compared with the rows'
  largest gap over the same points, when the same points are eligible.
* **VECE** (eq. (7) of [1]) is :math:`\frac1W\sum_B |\sum_{i\in B} W_i(\hat e_i - e_i)|` over
  the decile bins :math:`B`. The decile edges sit at row positions; each lies in the fine bin(s)
  holding its two positions for the rows and the moved rows alike, and a row of any other fine
  bin falls on the same side of every edge in both. So the two partitions differ only on the
  rows :math:`U` of those fine bins, and the two VECE differ by at most
  :math:`\frac2W \sum_{i\in U} W_i |e_i - \hat e_i|` (each block's sum moves by the rows it
  gains or loses).
* **D/σ along V** (paper 003, eq. (1)): the path at each bin's end is the same partial sum for
  both; within a bin the rows' path moves by at most :math:`m_b = \sum_{i\in b} W_i |R_i - S_i -
  c| / W \le W_b (1 + |c|)/W`, so Kuiper's range grows by at most :math:`2\max_b m_b` over the
  bins spanning several values, and :math:`D/\sigma` (the same :math:`\sigma`) by that over
  :math:`\sigma`.

References
----------
.. [1] M. Kelly, P. Smyth, "Variable-Based Calibration for Machine Learning Classifiers",
   AAAI 2023; eqs. (7)-(8), Appendix B.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np

from mcviz.core.arrays import readonly as _readonly
from mcviz.stats.smoothing.curves import SPIKE_SHARE

__all__ = ["ROUNDING", "TAYLOR_SLACK", "FineBinBound", "fine_bin_bound", "vece_bound"]

ROUNDING = 1e-12
"""A spike's estimate: the same rows' weighted mean, summed in another order."""
TAYLOR_SLACK = 1e-6
"""The Taylor-binned LOESS evaluation's verified deviation (module notes), per evaluation."""


@dataclass(frozen=True, slots=True, eq=False)
class FineBinBound:
    r"""How far the curves drawn from fine bins can be from the curves of the rows.

    Attributes
    ----------
    bins : int
        Bins the rows were summed in.
    largest_move : float
        :math:`\Delta`: the largest distance from a row to its bin's mean value.
    error, predicted, gap : ndarray of shape (G,)
        Per grid point of the curves: the largest distance from the drawn fit to the fit of
        the rows themselves at the same point and span (inf where none is derived).
    supported : ndarray of bool, shape (G,)
        The points with enough support (not ``thin``: drawn solid, eligible for VCE(v*)).
    vce : float
        VCE(v*) within this of the rows' largest gap over the same eligible points.
    vece : float
        VECE within this of the rows' VECE.
    kuiper_z : float
        :math:`D/\sigma` along V within this (above) of the rows'.
    """

    bins: int
    largest_move: float
    error: np.ndarray
    predicted: np.ndarray
    gap: np.ndarray
    supported: np.ndarray
    vce: float
    vece: float
    kuiper_z: float

    def rates_within(self) -> tuple[float, int]:
        """Over the supported points: the two rate curves' largest bound where one is
        derived, and the supported points without one."""
        both = np.maximum(self.error, self.predicted)[self.supported]
        finite = np.isfinite(both)
        return (float(both[finite].max()) if finite.any() else float("inf"),
                int((~finite).sum()))

    def words(self) -> str:
        """The bound in plain words (the report's notice, the slide's note)."""
        rates, without = self.rates_within()
        if not np.isfinite(rates):
            return "no bound on the difference from every row could be derived"
        text = (f"each point of the curves is within {100 * rates:.2g} percentage points of "
                "the curve from every row at the same span")
        if without:
            text += f" ({without} points without a bound)"
        if np.isfinite(self.vece):
            text += f"; VECE within {100 * self.vece:.2g} percentage points"
        return text

    def record(self) -> dict:
        """JSON-ready: the largest bounds (None where none is derived)."""
        rates, without = self.rates_within()

        def number(value: float) -> float | None:
            return float(value) if np.isfinite(value) else None

        return {"bins": self.bins, "largest_move": float(self.largest_move),
                "rates_within": number(rates), "points_without_bound": without,
                "gap_within": number(float(np.max(self.gap[self.supported], initial=0.0))),
                "vce_within": number(self.vce), "vece_within": number(self.vece),
                "kuiper_z_within": number(self.kuiper_z)}


CELLS = 512
"""Bins in a window beyond this many are taken in this many runs of neighbours (module notes)."""


def _tricube(u: np.ndarray) -> np.ndarray:
    a = np.minimum(np.abs(u), 1.0)
    return (1.0 - a * a * a) ** 3


def _taylor_sizes(coef: np.ndarray, low: np.ndarray, high: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`\sup |p|` and :math:`\sup |p'|` over each :math:`[a, b]`, for each polynomial.

    ``coef`` (P, D + 1) ascending powers. A polynomial is its Taylor series about the middle
    :math:`m`: :math:`|p(m + t)| \le \sum_k |p^{(k)}(m)/k!|\, r^k` for :math:`|t| \le r =
    (b - a)/2` (and :math:`p'` likewise): upper bounds, tight on narrow intervals.
    """
    top = coef.shape[1]
    middle, reach = 0.5 * (low + high), 0.5 * (high - low)
    powers = middle[None, :] ** np.arange(top)[:, None]  # (j, cells)
    size, rise = np.zeros((coef.shape[0], low.size)), np.zeros((coef.shape[0], low.size))
    for k in range(top):  # p^(k)(m) / k! = sum_j c_j C(j, k) m^(j - k)
        scaled = coef[:, k:] * np.array([comb(j, k) for j in range(k, top)], dtype=float)
        taylor = np.abs(scaled @ powers[: top - k])
        size += taylor * reach**k
        if k:
            rise += k * taylor * reach ** (k - 1)
    return size, rise


def _cells(bins: dict, first: int, last: int, limit: int) -> dict:
    """Bins ``first:last``, or that many runs of neighbouring bins when more than ``limit``
    (their sums from the prefix sums ``bins["cum_*"]``)."""
    size = last - first
    if size <= limit:
        return {name: bins[name][..., first:last] for name in ("lo", "hi", "w", "w_move", "y",
                                                                "y_move")}
    starts = first + np.linspace(0, size, limit + 1).astype(np.int64)
    out = {"lo": bins["lo"][starts[:-1]], "hi": bins["hi"][starts[1:] - 1]}
    for name in ("w", "w_move", "y", "y_move"):
        cum = bins[f"cum_{name}"]
        out[name] = cum[..., starts[1:]] - cum[..., starts[:-1]]
    return out


def _spreads(coef: np.ndarray, cells: dict, v: float, h: float, low_h: float,
             delta: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Per polynomial :math:`p` (rows of ``coef``), the bound :math:`\sum_b \omega_b D_b` on
    :math:`\sum_i \omega_i |f(x_i, h) - f(c_i, h')|`, :math:`f = K(|x - v|/h)\,p((x - v)/h')`,
    for the weights :math:`\omega = W` and :math:`\omega = W|y|` (module notes, step 3):
    :math:`D \le \sup|\partial_x f|\,|x_i - c_i| + \sup|\partial_h f|\,\Delta` over the cell
    and :math:`h \in [h_-, h_+]` (the mean value theorem; the tricube is :math:`C^1`)."""
    high_h = 2.0 * h - low_h
    z_low, z_high = (cells["lo"] - v) / h, (cells["hi"] - v) / h
    near = np.maximum(0.0, np.maximum(cells["lo"] - v, v - cells["hi"]))
    far = np.maximum(np.abs(cells["lo"] - v), np.abs(cells["hi"] - v))
    u_low, u_high = np.minimum(near / high_h, 1.0), np.minimum(far / low_h, 1.0)
    kernel = _tricube(u_low)  # the largest K over the cell
    slope = 9.0 * u_high**2 * (1.0 - u_low**3) ** 2  # |dK/du| at most
    size, rise = _taylor_sizes(coef, z_low, z_high)
    along_x = slope / low_h * size + kernel * rise / h
    along_h = slope * far / low_h**2 * size * delta
    by_weight = along_x @ cells["w_move"] + along_h @ cells["w"]
    by_response = along_x @ cells["y_move"].T + along_h @ cells["y"].T
    return by_weight, by_response


def _point_bound(v: float, h: float, delta: float, degree: int, bins: dict) -> np.ndarray:
    """The bound on each response's fit at one LOESS point (module notes, steps 2-5)."""
    low_h = h - delta
    count = bins["y"].shape[0]
    inf = np.full(count, np.inf)
    if low_h <= 0:
        return inf
    lo, hi, c = bins["lo"], bins["hi"], bins["c"]
    inside = (np.searchsorted(hi, v + low_h, side="left")
              - np.searchsorted(lo, v - low_h, side="right"))  # bins wholly inside
    if inside < degree + 1:
        return inf
    first = int(np.searchsorted(hi, v - h - delta, side="right"))
    last = int(np.searchsorted(lo, v + h + delta, side="left"))
    near = slice(int(np.searchsorted(c, v - h, side="right")),
                 int(np.searchsorted(c, v + h, side="left")))  # the moved rows' window
    z_moved = (c[near] - v) / h
    kernel = 1.0 - np.abs(z_moved) ** 3
    kernel = kernel * kernel * kernel
    powers = np.empty((2 * degree + 1, z_moved.size))
    powers[0] = kernel
    for j in range(1, 2 * degree + 1):
        np.multiply(powers[j - 1], z_moved, out=powers[j])  # K z^j
    moments = np.einsum("ji,i->j", powers, bins["w"][near])  # (einsum: no threaded BLAS)
    index = np.add.outer(np.arange(degree + 1), np.arange(degree + 1))
    try:
        inverse = np.linalg.inv(moments[index])
    except np.linalg.LinAlgError:
        return inf
    ratio = np.einsum("ri,ji->jr", bins["y_signed"][:, near], powers[: degree + 1])
    beta = inverse @ ratio  # (d + 1, responses): sum (W y) K z^j per bin
    rows = degree + 1
    multipliers = [np.eye(rows)[j] for j in range(rows)] + [beta[:, r] for r in range(count)]
    coef = np.zeros((rows + rows * len(multipliers), 2 * degree + 1))
    coef[:rows, :rows] = inverse
    for k in range(rows):  # q_k z^j (j = 0..d), then q_k P'_r (r = each response)
        for m, other in enumerate(multipliers):
            coef[rows + k * len(multipliers) + m] = np.convolve(inverse[k], other)
    by_weight, by_response = _spreads(coef, _cells(bins, first, last, CELLS), v, h, low_h,
                                      delta)
    by_weight = by_weight[rows:].reshape(rows, len(multipliers))
    mixing = by_weight[:, :rows]
    if not np.max(np.abs(np.linalg.eigvals(mixing))) < 1.0:
        return inf
    amplify = np.linalg.inv(np.eye(rows) - mixing)
    start = by_response[:rows] + by_weight[:, rows:]
    return (amplify @ start)[0]


def fine_bin_bound(fits, sums: dict, *, degree: int, thin: np.ndarray, sigma: float,
                   centre: float) -> FineBinBound:
    r"""Return the bound of the module notes for curves drawn from fine bins.

    Parameters
    ----------
    fits : _Fits
        The fits of the moved rows at the drawn grid
        (:func:`~mcviz.stats.smoothing.curves.spiked_fits_from_sums`).
    sums : dict
        The bins' sums (:data:`~mcviz.stats.variable_sums.VALUE_SUMS`) with ``lo`` and ``hi``,
        each bin's smallest and largest value.
    degree : int
        The local polynomial's degree asked for.
    thin : ndarray of bool
        The gap curve's thin-support points (left out of VCE(v*)).
    sigma, centre : float
        The cumulative view's :math:`\sigma` and centring residual :math:`c`.
    """
    c = np.asarray(sums["v"], dtype=float)
    lo, hi = np.asarray(sums["lo"], dtype=float), np.asarray(sums["hi"], dtype=float)
    n = np.asarray(sums["n"], dtype=np.int64)
    w, we, wp, wep = (np.asarray(sums[k], dtype=float) for k in ("w", "we", "wp", "wep"))
    total = float(w.sum())
    spike_bins = w >= SPIKE_SHARE * total * (1 - 1e-12)
    spikes = fits.at[fits.spike]
    rest = ~np.isin(c, spikes)
    wide = hi > lo
    delta = float(np.max(np.maximum(c - lo, hi - c)[rest], initial=0.0))
    size = fits.at.size
    bounds = np.full((3, size), np.inf)
    if not (spike_bins & wide).any() and not (wide & ~rest).any():
        bounds[:, fits.spike] = ROUNDING
        absolute = np.stack((we, wp, np.maximum(we + wp - 2.0 * wep, 0.0)))[:, rest]
        move = np.maximum(c - lo, hi - c)[rest]
        bins = {"lo": lo[rest], "hi": hi[rest], "c": c[rest], "w": w[rest],
                "w_move": w[rest] * move, "y": absolute, "y_move": absolute * move,
                "y_signed": np.stack((we, wp, we - wp))[:, rest]}
        for name in ("w", "w_move", "y", "y_move"):  # prefix sums: runs of bins (_cells)
            values = bins[name]
            bins[f"cum_{name}"] = np.concatenate(
                (np.zeros((*values.shape[:-1], 1)), np.cumsum(values, axis=-1)), axis=-1)
        regular = ~fits.spike & ~fits.degenerate & (fits.radius > 0) & (fits.degree == degree)
        for g in np.flatnonzero(regular):
            bounds[:, g] = _point_bound(float(fits.at[g]), float(fits.radius[g]), delta, degree,
                                        bins) + 2.0 * TAYLOR_SLACK
    supported = ~np.asarray(thin, dtype=bool)
    excursion = float(np.max(w[wide], initial=0.0)) * (1.0 + abs(centre)) / total
    return FineBinBound(
        bins=int(c.size), largest_move=delta, error=_readonly(bounds[0]),
        predicted=_readonly(bounds[1]), gap=_readonly(bounds[2]),
        supported=_readonly(supported),
        vce=float(np.max(bounds[2][supported], initial=0.0)),
        vece=vece_bound(c, n, lo, hi, w, we + wp - 2.0 * wep, spikes, total),
        kuiper_z=2.0 * excursion / sigma if sigma > 0 else float("inf"))


def vece_bound(c: np.ndarray, n: np.ndarray, lo: np.ndarray, hi: np.ndarray, w: np.ndarray,
               absolute_gap: np.ndarray, spikes: np.ndarray, total: float,
               bins: int = 10) -> float:
    r""":math:`\frac2W \sum_{i \in U} W_i |e_i - \hat e_i|` over the fine bins holding an edge.

    Module notes: the decile edges' row positions :math:`p (n' - 1)` (floor and the next) over
    the rows off the spikes, as :func:`~mcviz.stats.smoothing.counted_quantile` cuts them.
    """
    if (np.isin(c, spikes) & (hi > lo)).any():
        return float("inf")
    rest = ~np.isin(c, spikes)
    if not rest.any():
        return 0.0
    cum = np.cumsum(n[rest])
    rows = int(cum[-1])
    position = np.linspace(0.0, 1.0, bins + 1) * (rows - 1)
    below = np.floor(position).astype(np.int64)
    above = np.minimum(below + 1, rows - 1)
    held = np.unique(np.searchsorted(cum, np.concatenate((below, above)), side="right"))
    return float(2.0 * absolute_gap[rest][held].sum() / total)

r"""The Local Calibration Score (paper 004, eq. (6)) from sums per distinct score: no rows.

:func:`~mcviz.stats.smoothing.lcs.local_calibration_score` depends on the rows only through
their distinct scores, the rows at each (:math:`n_j`) and their sums :math:`\sum W`,
:math:`\sum W R` -- what an engine's ``GROUP BY score`` returns
(:func:`mcviz.engines.calibration.score_runs_table`):

- the window of :math:`l` holds the :math:`k = \lfloor \mathrm{span}\, n \rfloor` rows nearest
  to it and every row tied at the boundary distance, so it is a stretch of whole runs; its
  radius is the :math:`k`-th smallest distance, found here by the same comparisons as
  :func:`~mcviz.stats.smoothing.neighbours.neighbour_radius` on the virtual sorted rows
  (row :math:`i` stands at the score of the run holding it: the cumulative counts locate it);
- :math:`\hat g(l)` is the window's :math:`\sum W R / \sum W` (unweighted: events over rows),
  and its band reads the window's row count;
- the density is a linear binning of the scores (tied rows share a position, so a run bins as
  its weight) and ``bw.nrd0`` reads the rows' order statistics (located by the cumulative
  counts) and :math:`\sum n_j s_j`, :math:`\sum n_j s_j^2`.

So from runs of one distinct score each the result is the in-memory one, up to the order of
floating-point additions.

Fine score bins (width :math:`h`, each at its rows' weighted mean score, an engine's answer
above its limit of distinct scores): every score moves by less than :math:`h`, so every
distance to :math:`l` by less than :math:`h` and the radius (the :math:`k`-th smallest) too.
Both the in-memory window :math:`T = \{|s - l| \le r\}` and the binned one then contain the
core :math:`C = \{|s - l| \le r - 2h\}` and lie in :math:`C \cup S` with the shell
:math:`S = \{r - 2h < |s - l| \le r + 2h\}`. For labels in [0, 1],
:math:`|\mathrm{mean}(C \cup B) - \mathrm{mean}(C)| \le W_B / (W_C + W_B) \le W_S / (W_C +
W_S)`, hence

.. math:: |\hat g_{\text{bins}}(l) - \hat g(l)| \le 2 W_S / (W_C + W_S),

and from the bins (score :math:`s'`, :math:`|s - s'| < h`, radius :math:`r'`):
:math:`C \supseteq \{|s' - l| \le r' - 4h\}` and :math:`S \subseteq \{r' - 4h < |s' - l| \le
r' + 4h\}`, which gives the bound per grid point returned with the result (clipping to
[0, 1] does not widen it). The band, the density weights and the LCS itself are those of the
binned rows (measured: ``tests/stats/smoothing/test_lcs_runs.py``).
"""

from __future__ import annotations

import numpy as np

from mcviz.core.arrays import readonly as _readonly
from mcviz.errors import ValidationError
from mcviz.stats.smoothing.density import _r_density, _reflected_bandwidth
from mcviz.stats.smoothing.lcs import LocalCalibrationScore, _grid, _probit_band
from mcviz.stats.smoothing.neighbours import _window_bounds, _window_sums, bisected_radius

__all__ = ["lcs_from_runs"]


DENSITY_PIECE = 1 << 18
"""Runs binned at a time for the density (:func:`~mcviz.stats.smoothing.density._r_density`'s
``piece``): its working arrays are a few of this size (about 12 MB), not of the runs'. The
numbers are those of one piece while no cell of the density's 512 holds more runs (the cells
of a piece are summed whole; a larger cell is summed piece by piece)."""


class _Rows:
    """The sorted rows of runs, read by position without building them."""

    def __init__(self, score: np.ndarray, count: np.ndarray) -> None:
        self.score = score
        self.ends = np.cumsum(count)  # rows through each run
        self.n = int(self.ends[-1])

    def __getitem__(self, i):
        return self.score[np.searchsorted(self.ends, i, side="right")]

    def before(self, run: np.ndarray) -> np.ndarray:
        """Rows before each run (the rows through run - 1; 0 before the first)."""
        return np.where(run > 0, self.ends[np.maximum(run - 1, 0)], 0)


def _radius(rows: _Rows, at: np.ndarray, q: int) -> np.ndarray:
    """:func:`~mcviz.stats.smoothing.neighbours.neighbour_radius` on the virtual rows.

    The first block start ``i`` with ``x[i+q-1] - v >= v - x[i]`` bisected over all starts
    (the condition is monotone in ``i``, as there), then the same minimum.
    """
    q = int(min(max(q, 1), rows.n))
    lo, hi = np.zeros(at.size, dtype=np.int64), np.full(at.size, rows.n - q + 1, dtype=np.int64)
    return bisected_radius(rows, at, q, lo, hi)


def _boundary(rows: _Rows, count: np.ndarray, k: int) -> tuple[float, float]:
    """``lcs._boundary`` on the virtual rows: the tied rows at each end are the end runs."""
    n = rows.n
    tied_low, tied_high = int(count[0]), int(count[-1])
    below = (0.5 * (rows.score[0] + rows[tied_low + k - 1]) if tied_low + k - 1 < n
             else float(rows.score[-1]))
    above = (0.5 * (rows.score[-1] + rows[n - tied_high - k]) if n - tied_high - k >= 0
             else float(rows.score[0]))
    return float(below), float(above)


def _bin_bound(score: np.ndarray, weight: np.ndarray, grid: np.ndarray, radius: np.ndarray,
               width: float) -> np.ndarray:
    """Per grid point, :math:`2 W_S / (W_C + W_S)` from the bins (module notes)."""
    cumulative = np.concatenate(([0.0], np.cumsum(weight)))

    def within(reach: np.ndarray) -> np.ndarray:  # weight of the runs with |s - l| <= reach
        left = np.searchsorted(score, grid - reach, side="left")
        right = np.searchsorted(score, grid + reach, side="right")
        return np.where(reach >= 0, cumulative[right] - cumulative[np.minimum(left, right)], 0.0)

    w_core = within(radius - 4.0 * width)
    w_shell = within(radius + 4.0 * width) - w_core
    total = w_core + w_shell
    return np.where(total > 0, 2.0 * w_shell / np.where(total > 0, total, 1.0), 1.0)


def lcs_from_runs(score: np.ndarray, count: np.ndarray, weight: np.ndarray,
                  positive: np.ndarray, *, weighted: bool, bin_width: float | None = None,
                  span: float = 0.15, grid_points: int = 100,
                  ) -> tuple[LocalCalibrationScore, np.ndarray | None]:
    r"""Return :func:`~mcviz.stats.smoothing.local_calibration_score` of runs, and its bound.

    ``score`` ascending (distinct, or fine bins of width ``bin_width``), per run its rows
    ``count``, :math:`\sum W` and :math:`\sum W R` (unweighted: ``weight`` equals ``count``,
    as float, and stands for it). Beside the runs it holds their cumulative rows and a few
    arrays of :data:`DENSITY_PIECE` runs (the density binned piece by piece).
    The bound is None for distinct scores (the in-memory result up to rounding), else
    :math:`|\hat g_{\text{bins}}(l_j) - \hat g(l_j)|` at most, per grid point (module notes).
    LCS :math:`= \sum_j w_j (\hat g(l_j) - l_j)^2` (eq. (6) of paper 004).
    """
    s = np.asarray(score, dtype=float)
    count = np.asarray(count, dtype=np.int64)
    w, wr = np.asarray(weight, dtype=float), np.asarray(positive, dtype=float)
    if not (0 < span <= 1):
        raise ValidationError(f"span must lie in (0, 1], not {span!r}.")
    if s.size == 0 or grid_points < 2:
        raise ValidationError("the LCS needs rows and at least two grid points.")
    # the bandwidth first: its sums' working arrays never stand beside the cumulative rows
    # (unweighted, w is the rows as float and stands for them)
    bandwidth = _reflected_bandwidth(s, count, rows=w if not weighted else None)
    rows = _Rows(score=s, count=count)
    n = rows.n
    k = int(np.floor(span * n))
    if k < 1:
        raise ValidationError(
            f"the LCS needs at least one neighbour: span {span:g} × n {n:,} < 1.")
    grid = _grid(s, grid_points)
    radius = _radius(rows, grid, k)
    lo, hi = _window_bounds(s, grid, radius)  # whole runs: every tied row is in or out
    window = rows.before(hi) - rows.before(lo)  # rows in each window
    total, labelled = _window_sums([w, wr], lo, hi)
    mean = labelled / total
    events = mean * window if weighted else labelled
    fit = np.clip(mean, 0.0, 1.0)
    internal = max(grid_points, 512)
    internal = internal if internal == 512 else int(2 ** np.ceil(np.log2(internal)))
    density_grid, density_values = _r_density([(s, 0.0, -1.0), (s, 0.0, 1.0), (s, 2.0, -1.0)],
                                              w, 0.0, 1.0, bandwidth, internal,
                                              piece=DENSITY_PIECE)
    density = np.interp(grid, density_grid, density_values)
    weights = density / density.sum() if density.sum() > 0 else np.full(grid.size, 1 / grid.size)
    lower, upper = _probit_band(fit, window)
    below, above = _boundary(rows, count, k)
    density_x = np.linspace(0.0, 1.0, 201)
    result = LocalCalibrationScore(
        lcs=float(np.sum(weights * (fit - grid) ** 2)),  # eq. (6)
        grid=_readonly(grid), fit=_readonly(fit), lower=_readonly(lower),
        upper=_readonly(upper), weights=_readonly(weights), count=_readonly(window),
        events=_readonly(events), k=k, span=span, n=n, density_x=_readonly(density_x),
        density_y=_readonly(3.0 * np.interp(density_x, density_grid, density_values)),
        bandwidth=bandwidth, boundary=_readonly((grid <= below) | (grid >= above)),
        boundary_below=below, boundary_above=above, jitter=False)
    bound = None if bin_width is None else _bin_bound(s, w, grid, radius, float(bin_width))
    return result, bound

r"""The smooth ECE (smECE) and its smoothed reliability diagram (Błasiok & Nakkiran 2023).

With residuals :math:`r_i = S_i - R_i` and a Gaussian kernel :math:`K_\sigma` reflected at 0 and 1,
the kernel-smoothed residual and the (unnormalised) density of the scores are

.. math::
    \hat r_\sigma(t) = \frac{\sum_i W_i K_\sigma(t, S_i)\, r_i}{\hat\delta_\sigma(t)}, \qquad
    \hat\delta_\sigma(t) = \sum_i W_i K_\sigma(t, S_i),

and the smooth ECE at width :math:`\sigma` is ([1], the definition of :math:`\mathrm{smECE}_\sigma`)

.. math:: \mathrm{smECE}_\sigma = \int_0^1 |\hat r_\sigma(t)|\, \hat\delta_\sigma(t)\, dt
          \Big/ \int_0^1 \hat\delta_\sigma(t)\, dt .

The width is chosen automatically as the fixed point :math:`\sigma^*` with
:math:`\mathrm{smECE}_{\sigma^*} = \sigma^*` (which exists and is unique because
:math:`\mathrm{smECE}_\sigma` does not increase with :math:`\sigma`; [1]), and
:math:`\mathrm{smECE} = \mathrm{smECE}_{\sigma^*}`.

Computation, exactly as the authors' package ``relplot`` (1.0.3) does it, so that the numbers
agree with it: each score is rounded to a grid of :math:`E = \lfloor\max(2000, [20/\sigma])/2\rfloor
+ 1` points by splitting its mass linearly between the two neighbouring nodes; the grid is
reflected at both ends and convolved with the Gaussian density sampled on :math:`E` points of
:math:`[-1/2, 1/2]` (so the kernel is cut at :math:`\pm 1/2`); the smoothed sums are linearly
interpolated to :math:`\max([10/\sigma], 200)` equally spaced points of :math:`[0, 1]`, where the
integrals are sums; :math:`10^{-4}` is added to :math:`\hat\delta` (relplot's guard against 0/0).
:math:`\sigma^*` is found by bisection: :math:`\sigma = 1` if
:math:`\mathrm{smECE}_1 \ge 1`, otherwise ten halvings of :math:`[0, 1]` keeping the upper end
:math:`\sigma` with :math:`\mathrm{smECE}_\sigma \le \sigma` (:math:`\sigma^*` to within
:math:`2^{-10}`). Weights multiply each row's mass (frequency weights: an integer weight gives the
same result as repeating the row). The grid rounding of the scores is computed once per grid size
and shared by every :math:`\sigma` (at most a few sizes), so the search costs :math:`O(n)` plus
ten convolutions of the grid.

The smoothed reliability diagram ([1]; relplot's ``prepare_rel_diagram``) draws
:math:`\hat\mu(t) = \sum_i W_i K_{\sigma^*}(t, S_i) R_i / (\hat\delta_{\sigma^*}(t) + 10^{-4})` on
200 points of :math:`[0, 1]` with a pointwise bootstrap band: rows are resampled with
replacement (weights kept), the curve is recomputed at the same :math:`\sigma^*`, and the band is
the :math:`(1-c)/2` and :math:`(1+c)/2` quantiles of the replicates at each point. relplot draws
the mean of the replicates as the main line; here the main line is the fit to the data themselves
(deterministic), and the band is relplot's.

References
----------
.. [1] J. Błasiok, P. Nakkiran, "Smooth ECE: Principled reliability diagrams via kernel
   smoothing", arXiv:2309.12236, 2023 (the equation numbers differ between versions, so
   the definitions are cited by name: smECE at width sigma, the fixed point sigma*, the
   smoothed reliability diagram).
.. [2] relplot 1.0.3, ``relplot.metrics.smECE`` and ``relplot.diagrams.prepare_rel_diagram``
   (Apple, 2023), https://github.com/apple/ml-calibration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mcviz.core.arrays import readonly as _readonly
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.stats.measures._data import _Rows, _rows

__all__ = ["SmoothEce", "SmoothReliability", "smooth_ece", "smooth_reliability"]

DENSITY_GUARD = 1e-4
"""Added to the smoothed density (relplot's ``eps``)."""
SEARCH_HALVINGS = 10
"""Bisection steps for the fixed point sigma* (relplot's ``refine``)."""
SEARCH_FLOOR = 1e-3
"""Widths below this count as fixed points (relplot's ``eps``)."""


@dataclass(frozen=True, slots=True, eq=False)
class SmoothEce:
    r"""The smooth ECE at its automatically chosen width.

    Attributes
    ----------
    smece : float
        :math:`\mathrm{smECE}_{\sigma^*}`.
    sigma : float
        The width :math:`\sigma^*` (fixed point of :math:`\sigma \mapsto \mathrm{smECE}_\sigma`).
    n : int
    weight_total : float
    weighted : bool
    """

    smece: float
    sigma: float
    n: int
    weight_total: float
    weighted: bool


@dataclass(frozen=True, slots=True, eq=False)
class SmoothReliability:
    r"""A smoothed reliability diagram with its bootstrap band.

    Attributes
    ----------
    x : ndarray of shape (M,)
        Equally spaced points of [0, 1].
    fit : ndarray of shape (M,)
        Kernel-smoothed mean response :math:`\hat\mu(x)`.
    lower, upper : ndarray of shape (M,)
        Pointwise bootstrap band (NaN when ``n_bootstrap`` is 0).
    density : ndarray of shape (M,)
        Reflected-Gaussian density of the scores at width :math:`\sigma^*` (integrates to 1).
    smece, sigma : float
    confidence : float
    n_bootstrap : int
    n : int
    weighted : bool
    """

    x: np.ndarray
    fit: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    density: np.ndarray
    smece: float
    sigma: float
    confidence: float
    n_bootstrap: int
    n: int
    weighted: bool


def smooth_ece(pred: Predictions, *, index: np.ndarray | None = None) -> SmoothEce:
    r"""Compute the smooth ECE at its automatically chosen kernel width (module Notes).

    Parameters
    ----------
    pred : Predictions
    index : array of int or bool mask, optional
        Sorted positions (score order) of a subpopulation; default the full population.

    Returns
    -------
    SmoothEce

    Raises
    ------
    ValidationError
        For an empty or invalid subpopulation, or responses outside [0, 1].

    Examples
    --------
    Perfectly calibrated in every grid cell, so the smoothed residual is 0 everywhere:

    >>> pred = Predictions.from_arrays([0.25, 0.25, 0.75, 0.75], [0, 0.5, 1, 0.5],
    ...                                response="continuous")
    >>> round(smooth_ece(pred).smece, 12)
    0.0
    """
    rows = _rows(pred, index, what="the smooth ECE")
    smece, sigma = _smece(rows)
    return SmoothEce(smece, sigma, rows.n, rows.total, rows.weighted)


def smooth_reliability(
    pred: Predictions,
    *,
    index: np.ndarray | None = None,
    points: int = 200,
    n_bootstrap: int = 200,
    confidence: float = 0.95,
    rng: int | np.random.Generator = 0,
) -> SmoothReliability:
    r"""Compute the smoothed reliability diagram at width :math:`\sigma^*` with a bootstrap band.

    Parameters
    ----------
    pred : Predictions
    index : array of int or bool mask, optional
        A subpopulation (sorted positions); default the full population.
    points : int, default 200
        Number of equally spaced points of [0, 1] (relplot's mesh).
    n_bootstrap : int, default 200
        Bootstrap replicates for the band (0: no band). Each costs :math:`O(n)`: about 50 ms
        of CPU at :math:`10^6` rows (measured on a loaded machine), so pass fewer for large
        data in an interactive view.
    confidence : float, default 0.95
    rng : int or Generator, default 0

    Returns
    -------
    SmoothReliability

    Notes
    -----
    See the module Notes (relplot's ``prepare_rel_diagram``, with the main line fitted to the
    data rather than averaged over the replicates).
    """
    if not 0 < confidence < 1:
        raise ValidationError(f"confidence must lie in (0, 1), not {confidence!r}.")
    if int(points) < 2 or int(n_bootstrap) < 0:
        raise ValidationError(
            f"points must be at least 2 and n_bootstrap at least 0 (got {points!r}, "
            f"{n_bootstrap!r})."
        )
    rows = _rows(pred, index, what="the smoothed reliability diagram")
    smece, sigma = _smece(rows)
    mesh = np.linspace(0.0, 1.0, int(points))
    size = _grid_size(sigma)
    kernel = _kernel(size, sigma)
    weight = rows.weight

    def curve(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        key = "weight" if w is weight else None
        mass = _smoothed(rows, w, size, kernel, mesh, key=key)
        response = _smoothed(rows, w * rows.label, size, kernel, mesh, key=key and "response")
        return response / (mass + DENSITY_GUARD), mass

    fit, mass = curve(weight)
    lower = upper = np.full(mesh.size, np.nan)
    if n_bootstrap:
        generator = np.random.default_rng(rng)
        replicates = np.empty((int(n_bootstrap), mesh.size))
        for b in range(int(n_bootstrap)):
            counts = np.bincount(generator.integers(0, rows.n, rows.n), minlength=rows.n)
            replicates[b] = curve(weight * counts)[0]
        tail = (1.0 - confidence) / 2.0
        lower, upper = np.quantile(replicates, [tail, 1.0 - tail], axis=0)
    return SmoothReliability(
        x=_readonly(mesh),
        fit=_readonly(fit),
        lower=_readonly(lower),
        upper=_readonly(upper),
        density=_readonly(mass / rows.total),
        smece=smece,
        sigma=sigma,
        confidence=float(confidence),
        n_bootstrap=int(n_bootstrap),
        n=rows.n,
        weighted=rows.weighted,
    )


# --------------------------------------------------------------------------------------------
# Private helpers (inputs are trusted)


def _smece(rows: _Rows) -> tuple[float, float]:
    """Return (smECE at sigma*, sigma*) by relplot's bisection."""

    def too_narrow(sigma: float) -> bool:
        return sigma < SEARCH_FLOOR or sigma < _smece_at(rows, sigma)

    if too_narrow(1.0):
        return _smece_at(rows, 1.0), 1.0
    high, low = 1.0, 0.0
    for _ in range(SEARCH_HALVINGS):
        middle = (high + low) / 2.0
        if too_narrow(middle):
            low = middle
        else:
            high = middle
    return _smece_at(rows, high), high


def _smece_at(rows: _Rows, sigma: float) -> float:
    r"""Return smECE_sigma: :math:`\sum_t |\hat r(t)|\hat\delta(t) / \sum_t \hat\delta(t)`."""
    key = ("smece", sigma)
    if key not in rows._cache:
        mesh = np.linspace(0.0, 1.0, max(round(10.0 / sigma), 200))
        size = _grid_size(sigma)
        kernel = _kernel(size, sigma)
        residual = _smoothed(rows, lambda: _residual_mass(rows), size, kernel, mesh,
                             key="residual")
        density = _smoothed(rows, rows.weight, size, kernel, mesh, key="weight") + DENSITY_GUARD
        # |r/δ|·δ summed over the mesh, over Σδ: the integrals of smECE_sigma as sums
        rows._cache[key] = float(np.sum(np.abs(residual / density) * density) / np.sum(density))
    return rows._cache[key]


def _residual_mass(rows: _Rows) -> np.ndarray:
    """Return the residual mass ``w (S - R)`` per row, computed once for every grid size."""
    return rows.cached("residual mass", lambda: rows.times_weight(rows.score - rows.label))


def _grid_size(sigma: float) -> int:
    return max(2000, round(20.0 / sigma)) // 2 + 1


def _kernel(size: int, sigma: float) -> np.ndarray:
    """Gaussian density with standard deviation sigma on ``size`` points of [-1/2, 1/2]."""
    t = np.linspace(0.0, 1.0, size) - 0.5
    return np.exp(-t * t / (2.0 * sigma * sigma)) / (np.sqrt(2.0 * np.pi) * sigma)


def _smoothed(
    rows: _Rows,
    mass: np.ndarray | Callable[[], np.ndarray],
    size: int,
    kernel: np.ndarray,
    mesh: np.ndarray,
    key: str | None = None,
) -> np.ndarray:
    r""":math:`\sum_i m_i K_\sigma(t, S_i)` on the mesh: grid rounding, reflection, convolution.

    The rounded grid does not depend on sigma: with a ``key`` it is computed once per grid size
    (and ``mass`` may then be a function, called only when the grid is not yet known).
    """

    def rounding() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # node = clip(floor(score (size - 1)), 0, size - 2): the scores ascend, so the rows of
        # each node are one range, cut where score (size - 1) reaches 1, 2, ..., size - 2
        scaled = rows.score * (size - 1)
        starts = np.concatenate(([0], np.searchsorted(scaled, np.arange(1.0, size - 1.0))))
        counts = np.diff(np.append(starts, scaled.size))
        fraction = scaled - np.repeat(np.arange(size - 1.0), counts)
        nodes = np.flatnonzero(counts)
        return fraction, starts[nodes], nodes

    def round_to_grid() -> np.ndarray:
        fraction, starts, nodes = rows.cached(("grid", size), rounding)
        values = mass() if callable(mass) else mass
        unit = values is rows.weight and rows.unit_weights  # m = 1: f m = f, exactly
        split = fraction if unit else fraction * values
        # per node: the mass (1 - f) m stays on it, f m goes to the next node (sums per range)
        grid = np.zeros(size)
        grid[nodes] = np.add.reduceat((1.0 if unit else values) - split, starts)
        grid[nodes + 1] += np.add.reduceat(split, starts)
        return grid

    grid = round_to_grid() if key is None else rows.cached(("mass", size, key), round_to_grid)
    reflected = np.concatenate((grid[::-1][:-1], grid, grid[::-1][1:]))
    convolved = _convolve_valid(reflected, kernel)[size // 2 : size // 2 + size]
    # linear interpolation of node j/(size-1) -> convolved[j] at the mesh (relplot's interpolate)
    scaled = mesh * (size - 1)
    node_at = scaled.astype(np.int64).clip(0, size - 2)
    fraction_at = (mesh - node_at / (size - 1)) * (size - 1)
    return convolved[node_at] * (1.0 - fraction_at) + convolved[node_at + 1] * fraction_at


def _convolve_valid(signal: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """``scipy.signal.fftconvolve(signal, kernel, mode="valid")`` with numpy's FFT.

    The full linear convolution through real FFTs of a length of at least
    ``len(signal) + len(kernel) - 1`` (no wrap-around), then its "valid" part: the
    ``len(signal) - len(kernel) + 1`` positions where the kernel lies inside the signal.

    Examples
    --------
    >>> _convolve_valid(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 1.0])).round(12).tolist()
    [3.0, 5.0, 7.0]
    """
    size = signal.size + kernel.size - 1
    length = 1 << max(size - 1, 1).bit_length()
    full = np.fft.irfft(np.fft.rfft(signal, length) * np.fft.rfft(kernel, length), length)
    return full[kernel.size - 1 : signal.size]

r"""Gaussian kernel densities of scores reflected at 0 and 1, as R's ``density()`` computes them.

The Local Calibration Score [2] weights its grid points by the density of the scores; the
authors compute it as R's ``density(c(-s, s, 2 - s), from = 0, to = 1, n = J)`` (the 512-point
binning grid then spans :math:`[-4\,\mathrm{bw}, 1 + 4\,\mathrm{bw}]`; reflected points beyond it
are dropped, as R does).

References
----------
.. [2] A. Fernandes Machado, A. Charpentier, E. Flachaire, E. Gallic, F. Hu, "From Uncertainty
   to Precision: Enhancing Binary Classifier Performance through Calibration", 2024; eq. (6).
"""

from __future__ import annotations

import numpy as np

__all__ = ["reflected_density"]


def _reflected_bandwidth(s: np.ndarray, count: np.ndarray | None = None, *,
                         rows: np.ndarray | None = None) -> float:
    """R's ``bw.nrd0`` of the reflected sample (-s, s, 2 - s), without building it.

    For ascending ``s`` the reflected sample in ascending order is
    ``(-s[::-1], s, 2 - s[::-1])``, so its quantiles are read off by index and its variance
    follows from the sums of s and s². With ``count`` the values ``s`` are distinct and
    ``count`` rows stand at each (sums per distinct score): row ``i`` is read at the value
    whose cumulative count first exceeds ``i``; ``rows`` is the count as float when held (no
    converted copy for the sums).
    """
    if count is None:
        n, first, second = s.size, float(s.sum()), float(s @ s)

        def row(i: np.ndarray) -> np.ndarray:
            return s[i]
    else:
        rows = count if rows is None else rows  # int64 @ float converts it: the same values
        first, second = float(rows @ s), float(rows @ (s * s))
        ends = np.cumsum(count)  # after the sums' working arrays are let go
        n = int(ends[-1])

        def row(i: np.ndarray) -> np.ndarray:
            return s[np.searchsorted(ends, i, side="right")]
    size = 3 * n
    mean = (2.0 * n - first) / size
    total_square = 3.0 * second - 4.0 * first + 4.0 * n
    sd = float(np.sqrt(max(total_square - size * mean * mean, 0.0) / (size - 1)))

    def element(k: np.ndarray) -> np.ndarray:
        return np.where(k < n, -row(np.clip(n - 1 - k, 0, n - 1)), np.where(
            k < 2 * n, row(np.clip(k - n, 0, n - 1)), 2.0 - row(np.clip(size - 1 - k, 0, n - 1))
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


def _linear_binning(position: np.ndarray, w: np.ndarray | float, points: int) -> np.ndarray:
    """R's ``BinDist`` of ascending positions (in cell units) onto cells 0..points-1.

    The row at position p in cell c = floor(p) gives w(1 - (p - c)) to cell c and w(p - c) to
    cell c + 1; whatever lands outside cells 0..points-1 is dropped (BinDist's edge rules).
    The positions are ascending, so each cell's rows are one run, summed by ``reduceat``.
    """
    sums = _CellSums(points)
    sums.add(position, w)
    return sums.binned()


class _CellSums:
    """Each cell's two sums of :func:`_linear_binning`, gathered from ascending pieces.

    A cell's rows summed in one piece give the sums of the whole; only a cell cut between
    pieces (more rows than a piece) is summed piece by piece (the order of additions).
    """

    def __init__(self, points: int) -> None:
        self.points = points
        # cells -1..points-1 (a position in [-1, 0) still gives cell 0 its upper share)
        self.lower, self.upper = np.zeros(points + 1), np.zeros(points + 1)
        self.filled = np.zeros(points + 1, dtype=bool)

    def add(self, position: np.ndarray, w: np.ndarray | float) -> bool:
        """Add the rows at ``position`` (ascending); True when one lies beyond the last cell."""
        begin = int(np.searchsorted(position, -1.0, side="left"))
        end = int(np.searchsorted(position, float(self.points), side="left"))
        if begin < end:
            position = position[begin:end]
            cell = np.floor(position)
            upper = np.multiply(position - cell, w if np.isscalar(w) else w[begin:end])
            lower = (w if np.isscalar(w) else w[begin:end]) - upper
            first = int(cell[0])
            runs = np.searchsorted(position, np.arange(first, int(cell[-1]) + 1, dtype=float))
            full = np.diff(np.append(runs, position.size)) > 0  # reduceat repeats at empties
            at = np.arange(first, first + runs.size)[full] + 1
            self.lower[at] += np.add.reduceat(lower, runs)[full]
            self.upper[at] += np.add.reduceat(upper, runs)[full]
            self.filled[at] = True
        return end < position.size

    def binned(self) -> np.ndarray:
        """Return cells 0..points-1: each its rows' lower shares, then the cell below's upper."""
        binned = np.zeros(self.points)
        cells = np.arange(-1, self.points)
        for values, target in ((self.lower, cells), (self.upper, cells + 1)):
            keep = self.filled & (target >= 0) & (target < self.points)
            binned[target[keep]] += values[keep]
        return binned


def _binned_copy(sample: np.ndarray, shift: float, scale: float, weight: np.ndarray | None,
                 share: float, grid: tuple[float, float, int], piece: int | None) -> np.ndarray:
    """:func:`_linear_binning` of the copy ``shift + scale·s`` in pieces of ``piece`` rows.

    A row weighs ``share`` (without ``weight``), else its weight over ``share``; ``grid`` is
    (from, cell width, cells). Each piece's positions and weights are the whole copy's,
    element by element (the same operations on the same values); a piece
    ends where its last cell begins (that cell goes whole into the next piece) unless the
    piece is that one cell. None: one piece.
    """
    lo, delta, points = grid
    n = sample.size
    piece = n if piece is None else max(int(piece), 1)
    sums = _CellSums(points)
    start = 0
    while start < n:
        stop = min(start + piece, n)
        w: np.ndarray | float = share
        if scale == 1.0:
            position = (sample[start:stop] + shift) - lo
            if weight is not None:
                w = weight[start:stop] / share
        else:  # shift - s, ascending once reversed
            position = ((shift - sample[n - stop:n - start]) - lo)[::-1]
            if weight is not None:
                w = (weight[n - stop:n - start] / share)[::-1]
        position /= delta
        if stop < n:  # the last cell goes whole into the next piece when another is there
            cut = int(np.searchsorted(position, np.floor(position[-1]), side="left"))
            if cut > 0:
                position, stop = position[:cut], start + cut
                w = w if np.isscalar(w) else w[:cut]
        if sums.add(position, w):
            break
        start = stop
    return sums.binned()


def _r_density(
    copies: list[tuple[np.ndarray, float, float]],
    weight: np.ndarray | None,
    low_value: float,
    high_value: float,
    bandwidth: float,
    points: int = 512,
    *,
    piece: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian kernel density as R's ``density(x, bw, from, to)`` computes it.

    ``copies`` are affine images ``a + b·s`` (b = ±1) of one ascending sample (the
    reflections), each binned separately (R's ``BinDist``: linear binning onto ``points``
    cells spanning [from - 4·bw, to + 4·bw]; values beyond that range are dropped, the edge
    cells keep their share, the total mass is not renormalised), then convolved by FFT.
    Returns R's internal grid ``xords`` and density ``kords``; R's ``approx(xords, kords, x)``
    is ``np.interp``. ``piece``: bin ``piece`` rows at a time (:func:`_binned_copy`: a few
    arrays of that size, not of the sample's; the same numbers while no cell holds more rows).
    """
    lo = low_value - 4.0 * bandwidth
    up = high_value + 4.0 * bandwidth
    delta = (up - lo) / (points - 1)
    binned = np.zeros(2 * points)
    for sample, shift, scale in copies:
        share = (1.0 / (sample.size * len(copies)) if weight is None
                 else weight.sum() * len(copies))
        binned[:points] += _binned_copy(sample, shift, scale, weight, share,
                                        (lo, delta, points), piece)
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

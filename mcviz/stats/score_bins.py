r"""The score bins: tie-aware sums over bins of score-sorted rows and the three bin rules.

:class:`BinArrays` holds a population's score-sorted arrays and sums any per-row quantity over
bins of rows, each bin summed over its own rows (differences of prefix sums lose a light bin
after a heavy one). :func:`bin_bounds` draws the bins of :mod:`mcviz.stats.binning`: equal
width on [0, 1] (right-closed), equal count (:func:`equal_count_runs`, the one rule shared
with the score-bin groupings and the Hosmer-Lemeshow groups) or similar ratio (paper 003
Remark 5, eqs. (38)-(40)); a run of tied scores never straddles two bins.

References
----------
.. [1] M. Tygert, "Cumulative deviation of a subpopulation from the full population", Journal of
   Big Data 10, 2023; eqs. (38)-(40), Remark 5.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcviz.core.path import run_ends
from mcviz.io import Predictions

__all__ = ["BinArrays", "bin_arrays", "bin_bounds", "equal_count_runs"]


@dataclass(frozen=True, slots=True)
class BinArrays:
    """A population's score-sorted arrays and its per-bin sums (inputs trusted)."""

    score: np.ndarray
    label: np.ndarray
    weight: np.ndarray
    ends: np.ndarray  # last index of each run of tied scores
    cache: dict  # name -> values (and "w@ends"), computed once and shared by every binning
    unit: bool = False  # every weight is 1 (W x = x: the same numbers without the products)

    def values(self, name: str) -> np.ndarray:
        """Return the named per-row quantity (weight, weight × score, ...), computed once."""
        if name not in self.cache:
            unit = self.unit
            self.cache[name] = {
                "w": lambda: self.weight,
                "ws": lambda: self.score if unit else self.weight * self.score,
                "wr": lambda: self.label if unit else self.weight * self.label,
                "wrr": lambda: self.label**2 if unit else self.weight * self.label**2,
                "ww": lambda: self.weight if unit else self.weight**2,
                "wd": lambda: (self.score - self.label) if unit
                else self.weight * (self.score - self.label),
            }[name]()
        return self.cache[name]

    def sums(self, name: str, bounds: np.ndarray) -> np.ndarray:
        """Bin sums over ``bounds[k]:bounds[k+1]`` (0 if empty), each bin summed over its rows.

        Differences of prefix sums lost a light bin after a heavy one (1e9 then 1e-9: weight 0).
        """
        starts = bounds[:-1]
        if self.unit and name == "w":  # sums of ones: the counts, exactly
            return np.diff(bounds).astype(float)
        nonempty = starts < bounds[1:]
        sums = np.zeros(starts.size)
        if nonempty.any():  # each non-empty bin runs to the next one's start (or bounds[-1])
            sums[nonempty] = np.add.reduceat(self.values(name)[: bounds[-1]], starts[nonempty])
        return sums

    def run_sums(self, name: str) -> np.ndarray:
        """Return the sums of the named quantity over each run of tied scores (each directly)."""
        key, values = name + "@runs", self.values(name)
        if key not in self.cache:
            tied = self.ends.size < values.size
            starts = np.concatenate(([0], self.ends[:-1] + 1))
            self.cache[key] = np.add.reduceat(values, starts) if tied else values
        return self.cache[key]

    def at_run_ends(self, name: str) -> np.ndarray:
        """Prefix sums of the named quantity at 0 and after each run of tied scores."""
        key = name + "@ends"
        if key not in self.cache:
            values = self.values(name)
            # unit weights: the prefix sums of ones are the integers 1..n, exactly
            prefix = np.arange(1.0, values.size + 1.0) if self.unit and name == "w" else (
                np.cumsum(values))
            self.cache[key] = np.concatenate(([0.0], prefix[self.ends]))
        return self.cache[key]


def bin_arrays(pred: Predictions, members: np.ndarray | None) -> BinArrays:
    """Return the arrays of the whole population (None) or of ``members`` (sorted positions)."""
    if members is None:
        return BinArrays(pred.score, pred.label, pred.weight, np.flatnonzero(pred.run_end), {},
                       unit=not pred.weighted)
    score = pred.score[members]
    return BinArrays(
        score, pred.label[members], pred.weight[members], np.flatnonzero(run_ends(score)), {},
        unit=not pred.weighted,
    )


def bin_bounds(
    arrays: BinArrays, n_bins: int, kind: str, generator: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bin boundaries as positions into the sorted arrays, plus lower and upper edges."""
    score = arrays.score
    if kind == "equal_width":
        edges = np.arange(n_bins + 1) / n_bins
        inner = np.searchsorted(score, edges[1:-1], side="right")  # right-closed bins
        bounds = np.concatenate(([0], inner, [score.size]))
        return bounds, edges[:-1].copy(), edges[1:].copy()
    if kind == "equal_count":
        bounds = _equal_count_bounds(arrays, n_bins)
    else:
        bounds = _similar_ratio_bounds(arrays, n_bins, generator)
    return bounds, *_data_edges(score, bounds)


def _equal_count_bounds(arrays: BinArrays, n_bins: int) -> np.ndarray:
    runs_through = equal_count_runs(arrays.at_run_ends("w")[1:], n_bins)
    ends_plus = np.concatenate(([0], arrays.ends + 1))
    return np.concatenate(([0], ends_plus[runs_through]))


def equal_count_runs(cumulative: np.ndarray, n_bins: int) -> np.ndarray:
    r"""Return, for each equal-count bin, the number of tie runs up to its end.

    The one equal-count rule (reliability diagrams, ECE, score-bin groupings, the
    Hosmer-Lemeshow groups): a run of tied scores goes to bin
    :math:`\lceil K \cdot \text{cumulative weight} / \text{total} \rceil - 1` (with a 1e-9
    tolerance for rounding), so bin k holds runs ``runs[k-1]:runs[k]`` (``runs[-1]`` = 0) and
    may be empty.

    Parameters
    ----------
    cumulative : ndarray, shape (q,)
        Cumulative weight at the end of each tie run, in score order.
    n_bins : int

    Examples
    --------
    >>> equal_count_runs(np.array([1.0, 2.0, 3.0, 4.0]), 2).tolist()
    [2, 4]
    """
    thresholds = (np.arange(1, n_bins + 1) + 1e-9) * (cumulative[-1] / n_bins)
    runs_through = np.searchsorted(cumulative, thresholds, side="right")
    runs_through[-1] = cumulative.size
    return runs_through


def _similar_ratio_bounds(
    arrays: BinArrays, n_bins: int, generator: np.random.Generator
) -> np.ndarray:
    """Paper 003 Remark 5 with U from eq. (40); returns boundary positions."""
    weight = arrays.weight
    n = weight.size
    size = max(n // n_bins, 1)
    # The first `size` entries of a uniformly random permutation: a sample without replacement.
    # With tied scores the weights are permuted from a canonical (sorted) order, so that U does
    # not depend on the order of tied rows.
    pool = np.sort(weight) if arrays.ends.size < n else weight
    sample = pool[generator.choice(n, size, replace=False)]
    target = np.sqrt(np.sum(sample**2)) / np.sum(sample)  # eq. (40)
    # Bins grow one run of tied scores at a time, their sums accumulated from their own first
    # run (prefix-sum differences lose a light bin after a heavy one, and the weights' scale).
    first, second = arrays.run_sums("w"), arrays.run_sums("ww")
    runs, cuts, start = arrays.ends.size, [0], 0
    chunk = size + size // 4 + 1  # bins hold about `size` observations
    bound = target * (1 + 1e-12)
    while start < runs:
        stop = None
        low, sum1, sum2 = start + 1, 0.0, 0.0  # stops low..high-1 tried; sums of start..low-2
        while low <= runs:
            high = min(low + chunk, runs + 1)
            part1 = first[low - 1 : high - 1].cumsum()
            part2 = second[low - 1 : high - 1].cumsum()
            part1 += sum1
            part2 += sum2
            hit = (np.sqrt(part2) / part1 <= bound).nonzero()[0]  # eq. (38): U_k <= U
            if hit.size:
                stop = low + int(hit[0])
                break
            sum1, sum2 = part1[-1], part2[-1]
            low = high
        if stop is None:
            stop = runs  # the remainder forms the last bin
        cuts.append(stop)
        start = stop
    ends_plus = np.concatenate(([0], arrays.ends + 1))
    bounds = ends_plus[np.array(cuts)]
    counts = np.diff(bounds)
    if counts.size >= 2 and counts[-1] < counts[-2] / 2:  # Remark 5: merge a small last bin
        bounds = np.delete(bounds, -2)
    return bounds


def _data_edges(score: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    starts, stops = bounds[:-1], bounds[1:]
    empty = stops <= starts
    low = np.where(empty, np.nan, score[np.minimum(starts, score.size - 1)])
    high = np.where(empty, np.nan, score[np.maximum(stops - 1, 0)])
    return low, high

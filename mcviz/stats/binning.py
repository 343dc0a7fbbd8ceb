r"""Reliability diagrams at several bin counts, and the classical binned calibration metrics.

A reliability diagram partitions the scores into bins and plots, for each non-empty bin, the
(weighted) average score against the (weighted) average response,

.. math::
    X_k = \frac{\sum_{j \in \text{bin } k} W_j S_j}{\sum_{j \in \text{bin } k} W_j}, \qquad
    Y_k = \frac{\sum_{j \in \text{bin } k} W_j R_j}{\sum_{j \in \text{bin } k} W_j}

(paper 003 eqs. (1)-(4), weighted (34)-(37)). Bins are right-closed,
:math:`B_{k-1} < S \le B_k`, and never split tied scores. Three kinds of bins:

``"equal_width"``
    Edges :math:`0, 1/\ell, 2/\ell, \dots, 1` along the score (the first bin also holds 0).
``"equal_count"``
    About the same number of observations per bin (the same total weight when weighted): a run of
    tied scores goes to the bin in which its last member's cumulative weight falls.
``"similar_ratio"``
    Paper 003 Remark 5: bins with a similar :math:`U_k = \|W\|_2/\|W\|_1` (eq. (38)). The target
    :math:`U` is eq. (40), computed from the first :math:`\lfloor n/\bar\ell\rfloor` weights of a
    seeded uniformly random permutation; each bin grows from the left, one run of tied scores at a
    time, until :math:`U_k \le U`; the remainder forms the last bin, which is merged into the one
    before when it holds fewer than half as many observations. Unweighted, this gives bins of
    :math:`\lfloor n/\bar\ell\rfloor` observations. With tied scores the permutation is applied
    to the weights in sorted order, so that no bin depends on the order of tied rows.

Uncertainty. Each bin has a Wilson score interval for :math:`Y_k` computed with the effective
sample size :math:`n_\text{eff} = (\sum W)^2/\sum W^2` (Kish), which is the count when unweighted;
for non-binary responses a normal interval :math:`Y_k \pm z\,\hat s/\sqrt{n_\text{eff}}` with the
weighted standard deviation :math:`\hat s`. Optionally, seeded bootstrap replicates (rows resampled
with replacement, bins kept fixed) give the light-gray curves of the figures.

Classical metrics (:func:`calibration_metrics`), with the signed group error
:math:`c(I) = \sum_{i \in I} W_i (S_i - R_i) / \sum_{i\in I} W_i` (paper 002 eq. (6), weighted):

.. math::
    \mathrm{ECE} = \sum_k \frac{W(I_k)}{W} |c(I_k)|, \qquad
    \mathrm{ACE} = \frac{1}{K'} \sum_{k} |c(I_k)|, \qquad
    \mathrm{MCE} = \max_k |c(I_k)|

(paper 002 Appendix A eqs. (14)-(16)), the sums and maximum running over the :math:`K'` non-empty
bins; the Brier score :math:`\sum W (S-R)^2/W`; the log loss
:math:`-\sum W [R \log S_c + (1-R)\log(1-S_c)]/W` with the score clipped to
:math:`S_c \in [\varepsilon, 1-\varepsilon]`, :math:`\varepsilon = 10^{-15}`, so that a confident
wrong score costs :math:`-\log 10^{-15} \approx 34.5` rather than infinity; calibration-in-the-large
(mean score minus mean response); and Spiegelhalter's

.. math:: Z = \frac{\sum_i W_i (R_i - S_i)(1 - 2S_i)}
                   {\sqrt{\sum_i W_i^2 (1-2S_i)^2 S_i (1-S_i)}}

with the two-sided normal p-value.

References
----------
.. [1] M. Tygert, "Cumulative deviation of a subpopulation from the full population", Journal of
   Big Data 10, 2023; eqs. (1)-(4), (34)-(40), Remarks 4-5.
.. [2] S. Höltgen, R. C. Williamson, "On the richness of calibration", 2023; eq. (6) and
   Appendix A eqs. (14)-(16).
.. [3] D. J. Spiegelhalter, "Probabilistic prediction in patient management and clinical
   trials", Statistics in Medicine 5, 1986.
.. [4] E. B. Wilson, "Probable inference, the law of succession, and statistical inference",
   JASA 22, 1927.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from mcviz.core.arrays import readonly as _readonly
from mcviz.core.ratio import safe_ratio
from mcviz.core.special import ndtr, ndtri
from mcviz.errors import ValidationError
from mcviz.io import (
    Predictions,
    validate_index,  # one rule for indices
)
from mcviz.stats.score_bins import BinArrays, bin_arrays, bin_bounds, equal_count_runs

if TYPE_CHECKING:  # pandas is imported by the tables (to_frame), not by the metrics
    import pandas as pd

__all__ = [
    "BIN_KINDS",
    "LOG_LOSS_CLIP",
    "CalibrationMetrics",
    "ReliabilityBins",
    "ReliabilityResult",
    "calibration_metrics",
    "equal_count_runs",
    "reliability_bins",
    "reliability_diagrams",
    "reliability_from_runs",
    "score_bin_bounds",
]

BinKind = Literal["equal_width", "equal_count", "similar_ratio"]
BIN_KINDS = ("equal_width", "equal_count", "similar_ratio")
LOG_LOSS_CLIP = 1e-15
"""Scores are clipped to [1e-15, 1 - 1e-15] in the log loss."""

_KIND_TITLES = {
    "equal_width": "reliability diagram",
    "equal_count": "reliability diagram (equal number of scores per bin)",
    "similar_ratio": "reliability diagram (‖W‖₂/‖W‖₁ is similar for every bin)",
}


@dataclass(frozen=True, slots=True, eq=False)
class ReliabilityBins:
    r"""One reliability diagram: per-bin averages, intervals and bootstrap replicates.

    Arrays hold one entry per bin, empty bins included (their averages are NaN and their count
    0; figures never draw them).

    Attributes
    ----------
    kind : str
        ``"equal_width"``, ``"equal_count"`` or ``"similar_ratio"``.
    n_bins : int
        The requested number of bins :math:`\bar\ell` (the actual number is ``count.size``).
    lower_edge, upper_edge : ndarray
        Equal-width: the nominal edges; otherwise the smallest and largest score in the bin.
    count : ndarray of int
        Observations per bin.
    weight : ndarray
        Total weight per bin (the count when unweighted).
    effective_size : ndarray
        :math:`(\sum W)^2 / \sum W^2`.
    mean_score, mean_response : ndarray
        :math:`X_k` and :math:`Y_k` (eqs. (3)/(1), weighted (36)/(34)).
    interval_low, interval_high : ndarray
        The Wilson (binary) or normal (other responses) interval for :math:`Y_k`.
    bootstrap_score, bootstrap_response : ndarray of shape (n_bootstrap, n_bins_actual)
        :math:`X_k` and :math:`Y_k` of each bootstrap replicate (NaN where a bin is empty).
    n : int
    weight_total : float
    """

    kind: str
    n_bins: int
    lower_edge: np.ndarray
    upper_edge: np.ndarray
    count: np.ndarray
    weight: np.ndarray
    effective_size: np.ndarray
    mean_score: np.ndarray
    mean_response: np.ndarray
    interval_low: np.ndarray
    interval_high: np.ndarray
    bootstrap_score: np.ndarray
    bootstrap_response: np.ndarray
    n: int
    weight_total: float

    @property
    def nonempty(self) -> np.ndarray:
        """Boolean mask of the bins that hold at least one observation."""
        return self.count > 0

    @property
    def title(self) -> str:
        """The paper's title for this kind of diagram."""
        return _KIND_TITLES[self.kind]

    def to_frame(self) -> pd.DataFrame:
        """One row per non-empty bin."""
        import pandas as pd
        keep = self.nonempty
        return pd.DataFrame(
            {
                "bins": self.n_bins,
                "bin": np.flatnonzero(keep),
                "lower_edge": self.lower_edge[keep],
                "upper_edge": self.upper_edge[keep],
                "count": self.count[keep],
                "weight": self.weight[keep],
                "effective_size": self.effective_size[keep],
                "mean_score": self.mean_score[keep],
                "mean_response": self.mean_response[keep],
                "interval_low": self.interval_low[keep],
                "interval_high": self.interval_high[keep],
            }
        )


@dataclass(frozen=True, slots=True, eq=False)
class ReliabilityResult:
    """Reliability diagrams at several bin counts, for the full population and a subpopulation.

    Attributes
    ----------
    kind : str
    n_bins : tuple of int
    full : tuple of ReliabilityBins
        One diagram per bin count, for the full population.
    subpopulation : tuple of ReliabilityBins
        One diagram per bin count for the subpopulation (empty when none was given).
    histogram_edges : ndarray
        Equal-width edges over [0, 1] of the score histogram.
    histogram_full, histogram_subpopulation : ndarray
        Total weight (the count when unweighted) per histogram bin; the subpopulation's is empty
        when none was given.
    weighted : bool
    response_kind : str
    confidence : float
    n_bootstrap : int
        Bootstrap replicates (of the subpopulation when one is given, else of the full
        population).
    subpopulation_description : str or None
    """

    kind: str
    n_bins: tuple[int, ...]
    full: tuple[ReliabilityBins, ...]
    subpopulation: tuple[ReliabilityBins, ...]
    histogram_edges: np.ndarray
    histogram_full: np.ndarray
    histogram_subpopulation: np.ndarray
    weighted: bool
    response_kind: str
    confidence: float
    n_bootstrap: int
    subpopulation_description: str | None

    @property
    def has_subpopulation(self) -> bool:
        """True when a subpopulation was given."""
        return bool(self.subpopulation)

    def to_frame(self) -> pd.DataFrame:
        """One row per non-empty bin of every diagram, with a ``population`` column."""
        import pandas as pd
        frames = [d.to_frame().assign(population="full") for d in self.full]
        frames += [d.to_frame().assign(population="subpopulation") for d in self.subpopulation]
        frame = pd.concat(frames, ignore_index=True)
        return frame[["population", *[c for c in frame.columns if c != "population"]]]


@dataclass(frozen=True, slots=True, eq=False)
class CalibrationMetrics:
    """The classical calibration metrics (weighted where weights are given).

    Attributes
    ----------
    ece_equal_width, ece_equal_count : float
        Expected calibration error with ``n_bins`` equal-width / equal-count bins (eq. (14)).
    mce, ace : float
        Maximum and average calibration error over the non-empty equal-width bins
        (eqs. (16), (15)).
    brier : float
    log_loss : float
        Scores clipped to ``[clip, 1 - clip]``.
    calibration_in_the_large : float
        Mean score minus mean response.
    spiegelhalter_z, spiegelhalter_p : float
        Spiegelhalter's Z and its two-sided p-value.
    n : int
    weight_total : float
    n_bins : int
    clip : float
    weighted : bool
    """

    ece_equal_width: float
    ece_equal_count: float
    mce: float
    ace: float
    brier: float
    log_loss: float
    calibration_in_the_large: float
    spiegelhalter_z: float
    spiegelhalter_p: float
    n: int
    weight_total: float
    n_bins: int
    clip: float
    weighted: bool

    def to_frame(self) -> pd.DataFrame:
        """Return a table with one row per metric: ``metric``, ``value``, ``meaning``."""
        import pandas as pd
        k = self.n_bins
        rows = [
            ("ECE (equal-width)", self.ece_equal_width, f"{k} equal-width bins, weighted by size"),
            ("ECE (equal-count)", self.ece_equal_count, f"{k} equal-count bins, weighted by size"),
            ("MCE", self.mce, f"largest |score - response| over {k} equal-width bins"),
            ("ACE", self.ace, f"average |score - response| over {k} equal-width bins"),
            ("Brier score", self.brier, "mean (score - response)²"),
            ("log loss", self.log_loss, f"scores clipped to [{self.clip:g}, 1 - {self.clip:g}]"),
            ("calibration-in-the-large", self.calibration_in_the_large,
             "mean score - mean response"),
            ("Spiegelhalter Z", self.spiegelhalter_z, "≈ N(0, 1) under perfect calibration"),
            ("Spiegelhalter p", self.spiegelhalter_p, "two-sided"),
        ]
        return pd.DataFrame(rows, columns=["metric", "value", "meaning"])


# --------------------------------------------------------------------------------------------
# Public functions


def reliability_bins(
    pred: Predictions,
    *,
    n_bins: int = 10,
    kind: BinKind = "equal_width",
    index: np.ndarray | None = None,
    confidence: float = 0.95,
    n_bootstrap: int = 0,
    rng: int | np.random.Generator = 0,
) -> ReliabilityBins:
    """One reliability diagram of the full population (or of the rows ``index``).

    Parameters
    ----------
    pred : Predictions
    n_bins : int, default 10
    kind : {"equal_width", "equal_count", "similar_ratio"}
    index : array of int, optional
        Sorted positions (score order) of a subpopulation; default the full population.
    confidence : float, default 0.95
        Coverage of the per-bin intervals.
    n_bootstrap : int, default 0
        Bootstrap replicates (rows resampled with replacement, bins fixed).
    rng : int or numpy Generator, default 0
        Seeds the permutation of eq. (40) and the bootstrap.

    Returns
    -------
    ReliabilityBins

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.1, 0.2, 0.6, 0.7], [0, 1, 1, 1])
    >>> bins = reliability_bins(pred, n_bins=2)
    >>> bins.count.tolist(), bins.mean_score.round(6).tolist(), bins.mean_response.tolist()
    ([2, 2], [0.15, 0.65], [0.5, 1.0])
    """
    _check_options(kind, confidence, n_bootstrap)
    n_bins = _check_bin_count(n_bins)
    generator = np.random.default_rng(rng)
    members = None if index is None else validate_index(pred, index)
    arrays = bin_arrays(pred, members)
    bounds, low, high = bin_bounds(arrays, n_bins, kind, generator)
    (diagram,) = _diagrams(
        arrays, [(n_bins, bounds, low, high)], kind, confidence, n_bootstrap, generator,
        binary=pred.response_kind == "binary",
    )
    return diagram


def reliability_diagrams(
    pred: Predictions,
    *,
    n_bins: Sequence[int] = (10, 20, 50),
    kind: BinKind = "equal_width",
    index: np.ndarray | None = None,
    description: str | None = None,
    confidence: float = 0.95,
    n_bootstrap: int = 20,
    rng: int | np.random.Generator = 0,
    histogram_bins: int = 50,
) -> ReliabilityResult:
    """Reliability diagrams at several bin counts, optionally a subpopulation against the full one.

    Parameters
    ----------
    pred : Predictions
    n_bins : sequence of int, default (10, 20, 50)
    kind : {"equal_width", "equal_count", "similar_ratio"}
        The subpopulation and the full population each get their own bins of this kind
        (the bins B and B~ of paper 003 Remark 4); equal-width bins coincide.
    index : array of int, optional
        Sorted positions (score order) of a subpopulation.
    description : str, optional
        The subpopulation in words.
    confidence : float, default 0.95
    n_bootstrap : int, default 20
        Bootstrap replicates of the subpopulation when one is given, else of the full population
        (0 for none).
    rng : int or numpy Generator, default 0
    histogram_bins : int, default 50
        Equal-width bins of the score histogram drawn beneath the diagrams.

    Returns
    -------
    ReliabilityResult

    Raises
    ------
    ValidationError
        Unknown kind, bin counts below 1, a bad confidence level or subpopulation index.
    """
    _check_options(kind, confidence, n_bootstrap)
    counts = tuple(_check_bin_count(k) for k in n_bins)
    if not counts:
        raise ValidationError("n_bins: give at least one bin count.")
    histogram_bins = _check_bin_count(histogram_bins)
    generator = np.random.default_rng(rng)
    binary = pred.response_kind == "binary"
    full_arrays = bin_arrays(pred, None)
    full_specs = [(k, *bin_bounds(full_arrays, k, kind, generator)) for k in counts]
    edges = np.arange(histogram_bins + 1) / histogram_bins
    histogram_full = _histogram(full_arrays, edges)
    if index is None:
        full = _diagrams(full_arrays, full_specs, kind, confidence, n_bootstrap, generator,
                         binary=binary)
        sub: tuple[ReliabilityBins, ...] = ()
        histogram_sub = np.empty(0)
    else:
        members = validate_index(pred, index)
        sub_arrays = bin_arrays(pred, members)
        sub_specs = [(k, *bin_bounds(sub_arrays, k, kind, generator)) for k in counts]
        full = _diagrams(full_arrays, full_specs, kind, confidence, 0, generator, binary=binary)
        sub = _diagrams(sub_arrays, sub_specs, kind, confidence, n_bootstrap, generator,
                        binary=binary)
        histogram_sub = _histogram(sub_arrays, edges)
    return ReliabilityResult(
        kind=kind,
        n_bins=counts,
        full=full,
        subpopulation=sub,
        histogram_edges=_readonly(edges),
        histogram_full=_readonly(histogram_full),
        histogram_subpopulation=_readonly(histogram_sub),
        weighted=pred.weighted,
        response_kind=pred.response_kind,
        confidence=confidence,
        n_bootstrap=n_bootstrap,
        subpopulation_description=description,
    )


def calibration_metrics(
    pred: Predictions,
    *,
    index: np.ndarray | None = None,
    n_bins: int = 10,
    clip: float = LOG_LOSS_CLIP,
) -> CalibrationMetrics:
    r"""ECE (equal-width, equal-count), MCE, ACE, Brier, log loss, calibration-in-the-large, Z.

    Parameters
    ----------
    pred : Predictions
    index : array of int, optional
        Sorted positions (score order) of a subpopulation; default the full population.
    n_bins : int, default 10
    clip : float, default 1e-15
        The log loss uses scores clipped to ``[clip, 1 - clip]``.

    Returns
    -------
    CalibrationMetrics

    Notes
    -----
    See the module docstring; ECE, ACE and MCE are eqs. (14)-(16) of [2] with weighted group
    errors, Spiegelhalter's Z is from [3].

    Examples
    --------
    Bins (0, 0.5] and (0.5, 1] with scores {0.2, 0.4} / {0.6, 0.8} and responses {0, 1} /
    {1, 1}: group errors -0.2 and -0.3, so ECE = (2·0.2 + 2·0.3)/4 = 0.25, MCE = 0.3,
    ACE = 0.25; calibration-in-the-large = 0.5 - 0.75 = -0.25.

    >>> pred = Predictions.from_arrays([0.2, 0.4, 0.6, 0.8], [0, 1, 1, 1])
    >>> m = calibration_metrics(pred, n_bins=2)
    >>> [round(v, 12) for v in (m.ece_equal_width, m.mce, m.ace, m.calibration_in_the_large)]
    [0.25, 0.3, 0.25, -0.25]
    """
    n_bins = _check_bin_count(n_bins)
    if not 0 <= clip < 0.5:
        raise ValidationError(f"clip must lie in [0, 0.5), not {clip!r}.")
    members = None if index is None else validate_index(pred, index)
    arrays = bin_arrays(pred, members)
    score, label, weight = arrays.score, arrays.label, arrays.weight
    total = float(weight.sum())
    generator = np.random.default_rng(0)  # unused by these two kinds

    def group_errors(kind: str) -> tuple[np.ndarray, np.ndarray]:
        bounds, _, _ = bin_bounds(arrays, n_bins, kind, generator)
        bin_weight = arrays.sums("w", bounds)
        error = arrays.sums("wd", bounds)
        keep = bin_weight > 0
        return bin_weight[keep], np.abs(error[keep] / bin_weight[keep])  # paper 002 eq. (6)

    width_weight, width_error = group_errors("equal_width")
    count_weight, count_error = group_errors("equal_count")
    clipped = np.clip(score, clip, 1.0 - clip)
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = -(label * np.log(clipped) + (1.0 - label) * np.log1p(-clipped))
    slope = 1.0 - 2.0 * score
    unit = not pred.weighted  # every weight 1: W x = x, the same numbers without the products
    numerator = float(np.sum((label - score if unit else weight * (label - score)) * slope))
    squares = slope**2 if unit else weight**2 * slope**2
    variance = float(np.sum(squares * score * (1.0 - score)))
    z = safe_ratio(numerator, np.sqrt(variance))  # 0/0 = 0, d/0 = +-inf
    error = score - label
    if not unit:
        loss *= weight
    return CalibrationMetrics(
        ece_equal_width=float(np.sum(width_weight * width_error) / total),  # eq. (14)
        ece_equal_count=float(np.sum(count_weight * count_error) / total),  # eq. (14)
        mce=float(width_error.max()),  # eq. (16)
        ace=float(width_error.mean()),  # eq. (15)
        brier=float(np.sum(error**2 if unit else weight * error**2) / total),
        log_loss=float(np.sum(loss) / total),
        calibration_in_the_large=float(np.sum(error if unit else weight * error) / total),
        spiegelhalter_z=float(z),
        spiegelhalter_p=float(2.0 * ndtr(-abs(z))),
        n=int(score.size),
        weight_total=total,
        n_bins=n_bins,
        clip=float(clip),
        weighted=pred.weighted,
    )


def score_bin_bounds(
    pred: Predictions, *, n_bins: int = 10, kind: BinKind = "equal_width",
    rng: np.random.Generator | int | None = 0,
) -> np.ndarray:
    r"""Bin boundaries as positions into ``pred``'s score order: bin k is rows ``b[k]:b[k+1]``.

    The one rule for score bins (reliability diagrams, ECE/ACE/MCE, and the score-bin
    groupings): ``"equal_width"`` bins are right-closed :math:`[0, 1/K], (1/K, 2/K], \ldots`;
    ``"equal_count"`` bins hold about :math:`1/K` of the weight each, a run of tied scores going
    to bin :math:`\lceil K \cdot \text{cumulative weight}/\text{total} \rceil - 1` (so tied
    scores share a bin and bins may be empty); ``"similar_ratio"`` is paper 003's Remark 5.

    Returns
    -------
    ndarray of int, shape (n_bins + 1,) for the first two kinds (non-decreasing, from 0 to n)

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.05, 0.15, 0.55, 0.65], [0, 1, 1, 1])
    >>> score_bin_bounds(pred, n_bins=2).tolist()
    [0, 2, 4]
    """
    n_bins = _check_bin_count(n_bins)
    _check_options(kind, 0.95, 0)
    bounds, _, _ = bin_bounds(bin_arrays(pred, None), n_bins, kind, np.random.default_rng(rng))
    return _readonly(bounds)


# --------------------------------------------------------------------------------------------
# Private helpers (inputs are trusted)


def reliability_from_runs(
    score: np.ndarray,
    count: np.ndarray,
    weight: np.ndarray,
    positive: np.ndarray,
    square_weight: np.ndarray,
    *,
    n_bins: Sequence[int] = (10, 20, 50),
    kind: BinKind = "equal_width",
    weighted: bool = False,
    confidence: float = 0.95,
    histogram_bins: int = 50,
) -> ReliabilityResult:
    r"""The full population's reliability diagrams from sums per distinct score (no rows).

    For binary responses given by an engine's ``GROUP BY`` of the score
    (:func:`mcviz.engines.calibration.score_runs_table`): ``score`` ascending, and per score
    the rows, :math:`\sum W`, :math:`\sum W R` and :math:`\sum W^2`. Bins never split tied
    scores, so every bin's sums, its count, its effective size (Kish) and its interval are those
    of :func:`reliability_diagrams` on the rows (``"equal_width"`` and ``"equal_count"``;
    ``tests/stats/test_binning_runs.py``); no bootstrap (it resamples rows).
    """
    if kind not in ("equal_width", "equal_count"):
        raise ValidationError(f"kind {kind!r}: the diagrams from sums per score take "
                              "'equal_width' or 'equal_count' bins.")
    _check_options(kind, confidence, 0)
    counts = tuple(_check_bin_count(k) for k in n_bins)
    weight = np.asarray(weight, dtype=float)
    score = np.asarray(score, dtype=float)
    positive = np.asarray(positive, dtype=float)
    # no bootstrap: the labels are never read (the bins' sums are given); the runs' ends
    # only by equal-count bins
    arrays = BinArrays(score, np.empty(0), weight, np.arange(score.size if kind ==
                                                             "equal_count" else 0),
                       {"ws": weight * score, "wr": positive, "wrr": positive,
                        "ww": np.asarray(square_weight, dtype=float)})
    generator = np.random.default_rng(0)  # unused by these two kinds
    specs = [(k, *bin_bounds(arrays, k, kind, generator)) for k in counts]
    edges = np.arange(_check_bin_count(histogram_bins) + 1) / histogram_bins
    return ReliabilityResult(
        kind=kind, n_bins=counts,
        full=_diagrams(arrays, specs, kind, confidence, 0, generator, binary=True,
                       rows=np.asarray(count, dtype=np.int64)),
        subpopulation=(), histogram_edges=_readonly(edges),
        histogram_full=_readonly(_histogram(arrays, edges)),
        histogram_subpopulation=_readonly(np.empty(0)), weighted=weighted,
        response_kind="binary", confidence=confidence, n_bootstrap=0,
        subpopulation_description=None,
    )


def _diagrams(
    arrays: BinArrays,
    specs: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]],
    kind: str,
    confidence: float,
    n_bootstrap: int,
    generator: np.random.Generator,
    *,
    binary: bool,
    rows: np.ndarray | None = None,
) -> tuple[ReliabilityBins, ...]:
    """The diagrams of ``specs``; ``rows``: each entry of ``arrays`` is a run of that many rows."""
    score, label, weight = arrays.score, arrays.label, arrays.weight
    n = score.size if rows is None else int(rows.sum())
    through = None if rows is None else np.cumsum(rows)  # rows through each entry
    z = float(ndtri(0.5 + confidence / 2.0))
    boot_score = [np.full((n_bootstrap, b.size - 1), np.nan) for _, b, _, _ in specs]
    boot_response = [np.full((n_bootstrap, b.size - 1), np.nan) for _, b, _, _ in specs]
    for r in range(n_bootstrap):
        times = np.bincount(generator.integers(0, n, n), minlength=n)
        resampled = weight * times
        replicate = BinArrays(score, label, resampled, arrays.ends, {})
        for i, (_, bounds, _, _) in enumerate(specs):
            total = replicate.sums("w", bounds)
            with np.errstate(divide="ignore", invalid="ignore"):
                boot_score[i][r] = replicate.sums("ws", bounds) / total
                boot_response[i][r] = replicate.sums("wr", bounds) / total
    diagrams = []
    for i, (n_bins, bounds, low, high) in enumerate(specs):
        count = np.diff(bounds if through is None else np.where(
            bounds > 0, through[np.maximum(bounds - 1, 0)], 0))
        total = arrays.sums("w", bounds)
        squares = arrays.sums("ww", bounds)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean_score = arrays.sums("ws", bounds) / total  # eq. (3) / (36)
            mean_response = arrays.sums("wr", bounds) / total  # eq. (1) / (34)
            size = total**2 / squares
            if binary:
                interval = _wilson(mean_response, size, z)
            else:
                second = arrays.sums("wrr", bounds) / total
                spread = np.sqrt(np.maximum(second - mean_response**2, 0.0) / size)
                interval = (mean_response - z * spread, mean_response + z * spread)
        empty = count == 0
        values = [mean_score, mean_response, size, *interval]
        for value in values:
            value[empty] = np.nan
        diagrams.append(
            ReliabilityBins(
                kind=kind,
                n_bins=n_bins,
                lower_edge=_readonly(low),
                upper_edge=_readonly(high),
                count=_readonly(count),
                weight=_readonly(total),
                effective_size=_readonly(size),
                mean_score=_readonly(mean_score),
                mean_response=_readonly(mean_response),
                interval_low=_readonly(interval[0]),
                interval_high=_readonly(interval[1]),
                bootstrap_score=_readonly(boot_score[i]),
                bootstrap_response=_readonly(boot_response[i]),
                n=int(n),
                weight_total=float(weight.sum()),
            )
        )
    return tuple(diagrams)


def _wilson(p: np.ndarray, size: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Wilson score interval with the effective sample size :math:`n_\text{eff}` [4]."""
    z2 = z * z
    denominator = 1.0 + z2 / size
    center = (p + z2 / (2.0 * size)) / denominator
    half = z / denominator * np.sqrt(p * (1.0 - p) / size + z2 / (4.0 * size**2))
    return np.clip(center - half, 0.0, 1.0), np.clip(center + half, 0.0, 1.0)


def _histogram(arrays: BinArrays, edges: np.ndarray) -> np.ndarray:
    inner = np.searchsorted(arrays.score, edges[1:-1], side="right")
    bounds = np.concatenate(([0], inner, [arrays.score.size]))
    return arrays.sums("w", bounds)


def _check_options(kind: str, confidence: float, n_bootstrap: int) -> None:
    if kind not in BIN_KINDS:
        raise ValidationError(f"kind must be one of {', '.join(BIN_KINDS)}, not {kind!r}.")
    if not 0 < confidence < 1:
        raise ValidationError(f"confidence must lie strictly between 0 and 1, not {confidence!r}.")
    if int(n_bootstrap) != n_bootstrap or n_bootstrap < 0:
        raise ValidationError(f"n_bootstrap must be a non-negative integer, not {n_bootstrap!r}.")


def _check_bin_count(n_bins: int) -> int:
    if isinstance(n_bins, bool) or int(n_bins) != n_bins or n_bins < 1:
        raise ValidationError(f"bin counts must be positive integers, not {n_bins!r}.")
    return int(n_bins)

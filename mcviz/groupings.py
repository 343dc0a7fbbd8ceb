r"""Groupings: which observations are compared when calibration is measured.

Höltgen & Williamson [1] split every calibration score into a *grouping* (a family of groups
:math:`\{I_j\}_{j \in J}`) and an *agglomeration* of the groups' errors (see
:mod:`mcviz.agglomeration`). This module builds groupings as explicit objects and returns, for
every group, the signed calibration error of eq. (6) of [1], weighted when the predictions are:

.. math:: c(I) = \frac{\sum_{i \in I} W_i (S_i - R_i)}{\sum_{i \in I} W_i},

positive where the scores over-predict. (The cumulative statistics of :mod:`mcviz.cumulative`
use the opposite sign, :math:`R - S`; eq. (6) of [1] is kept here so that the paper's
fairness measures read as printed.)

Groupings
---------
* :func:`score_bins` - prediction-based bins, equal width on [0, 1] or equal count (the ECE
  family, Appendix A eqs. (14)-(16) of [1]). Tied scores are never split across bins.
* :func:`covariate_bins` - input-based partitions: bins of one or two covariates (nominal
  covariates give one group per level; a missing value is one more group, "missing").
* :func:`index_groups` - any list of index arrays (or objects with ``.index`` and
  ``.description``, such as the subpopulations of :mod:`mcviz.subpopulations`).
* :func:`local_calibration` - overlapping k-nearest-neighbour groups around every point in input
  space (Section 3.3; Proposition 5: the k-NN errors estimate each point's individual calibration
  error :math:`\hat p(x) - \mathbb{E}[Y \mid X = x]` consistently when :math:`k \to \infty` and
  :math:`k/N \to 0`). A group holds every observation within the distance of the k-th nearest
  one, so observations tied there (and all those sharing an input) are in or out together and
  results never depend on the order of the rows.
* :func:`kernel_calibration` - kernel groups with a bandwidth (eq. (9), Proposition 6).
* :func:`neighbourhood_tradeoff` - how the k-NN errors change with k: larger groups have
  smaller variance (Proposition 3, eq. (8): variance :math:`\propto 1/k`) but reach further in
  input space and so average away local miscalibration (Proposition 2).

The input space (documented rule)
---------------------------------
Distances are Euclidean in a standardised copy of the chosen covariates (:func:`input_space`):

* numeric (ordinal) covariates - booleans as 0/1, datetimes as nanoseconds - are centred at the
  median and divided by a robust standard deviation, IQR/1.349 (``scaling="robust"``, the
  default; for normal data this equals the standard deviation), or centred at the mean and
  divided by the standard deviation (``scaling="standard"``). A scale of 0 falls back to the
  standard deviation, then to 1. Missing values are set to the centre (0) and flagged by an
  extra 0/1 column "<name> missing", so missing and observed values lie 1 apart;
* nominal covariates are one-hot encoded, every level (a missing value is one more level) scaled
  by :math:`1/\sqrt 2`, so two different levels lie exactly 1 apart - one standard deviation of
  a numeric covariate.

Standard errors (documented rule)
---------------------------------
For binary responses a group's standard error is its spread under perfect calibration, the
group version of eq. (5) of [2] and of eq. (8) of [1] with :math:`p = S`:
:math:`\sqrt{\sum_I W_i^2 S_i (1 - S_i)} / \sum_I W_i`. For real-valued responses it is the
empirical :math:`\sqrt{m/(m-1)}\,\sqrt{\sum_I W_i^2 (d_i - c)^2} / \sum_I W_i` with
:math:`d_i = S_i - R_i` (NaN for a single observation).

References
----------
.. [1] B. Höltgen, R. C. Williamson, "On the Richness of Calibration", FAccT 2023; Sections 2-5,
   eqs. (6), (8)-(10), Propositions 2-6, Appendix A eqs. (14)-(16).
.. [2] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eq. (5).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.spatial import cKDTree

from mcviz.errors import ValidationError
from mcviz.io import Predictions

__all__ = [
    "GroupErrors",
    "InputSpace",
    "LocalCalibration",
    "LocalErrorDistribution",
    "LocalMap",
    "NeighbourhoodTradeoff",
    "covariate_bins",
    "group_errors",
    "index_groups",
    "input_space",
    "kernel_calibration",
    "local_calibration",
    "local_calibration_map",
    "local_error_distribution",
    "neighbourhood_tradeoff",
    "score_bins",
]

Scaling = Literal["robust", "standard"]
Strategy = Literal["width", "count"]

ROBUST_SCALE = 1.349
"""IQR / 1.349 is the standard deviation of a normal distribution."""

MAX_MAP_POINTS = 10_000
"""The local-calibration map carries at most this many points (a seeded sample)."""

MAX_CELLS = 64
"""Nearest-neighbour search splits rows by nominal levels when there are at most this many
combinations of levels (see ``_Searcher``)."""

CHUNK_NEIGHBOURS = 5_000_000
"""Neighbours searched per chunk by :func:`local_calibration` (bounds its memory)."""

MAX_PAIRS = 30_000_000
"""Kernel groups and the k trade-off refuse to hold more (centre, neighbour) pairs than this."""

GAUSSIAN_CUTOFF = 4.0
"""Gaussian kernels are truncated at this many bandwidths (the dropped mass is below 1e-3)."""


# --------------------------------------------------------------------------------------------
# Result objects


@dataclass(frozen=True, slots=True, eq=False)
class GroupErrors:
    r"""The signed calibration error of every group of a grouping.

    Attributes
    ----------
    kind : str
        ``"score bins"``, ``"covariate bins"``, ``"index groups"``, ``"k-NN"`` or ``"kernel"``.
    description : str
        The grouping in words (bins, columns, k or bandwidth, input-space rule).
    labels : tuple of str
        One label per group.
    error : ndarray of shape (m,)
        :math:`c(I_j)`, eq. (6) of [1]: weighted mean of score minus response.
    size : ndarray of int, shape (m,)
        Observations in each group (with positive kernel weight for kernel groups; at least k
        for k-NN groups, which keep every observation tied at the k-th distance).
    effective_size : ndarray of shape (m,)
        Kish's :math:`(\sum v)^2 / \sum v^2` of the group's weights (W times the kernel); equals
        ``size`` for unweighted, unkernelled groups.
    weight_total : ndarray of shape (m,)
        Sum of the group's weights (times the kernel).
    mass : ndarray of shape (m,)
        Probability mass of each group when errors are agglomerated (sums to 1): the group's
        share of the weight for partitions and index groups; the centre's share of the weight
        for local groups (the empirical distribution over points, [1] Section 4).
    standard_error : ndarray of shape (m,)
        See the module notes.
    mean_score, mean_label : ndarray of shape (m,)
        Weighted mean score and response of each group.
    centre : ndarray of int or None
        Local groups only: the centre of each group (index in score order).
    overlapping : bool
        True when an observation can belong to several groups.
    n : int
        Observations in the predictions.
    weighted : bool
    standard_error_method : str
        ``"null (eq. 5)"`` or ``"empirical"``.
    notice : str or None
        Decisions taken for the caller (bins merged by ties, empty groups dropped, sampling).
    """

    kind: str
    description: str
    labels: tuple[str, ...]
    error: np.ndarray
    size: np.ndarray
    effective_size: np.ndarray
    weight_total: np.ndarray
    mass: np.ndarray
    standard_error: np.ndarray
    mean_score: np.ndarray
    mean_label: np.ndarray
    centre: np.ndarray | None
    overlapping: bool
    n: int
    weighted: bool
    standard_error_method: str
    notice: str | None = None

    @property
    def n_groups(self) -> int:
        """Number of groups."""
        return int(self.error.size)

    def table(self) -> pd.DataFrame:
        """One row per group: label, size, weight, mass, error, standard error, z, means."""
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(self.standard_error > 0, self.error / self.standard_error, np.nan)
        return pd.DataFrame(
            {
                "group": list(self.labels),
                "size": self.size,
                "effective_size": self.effective_size,
                "weight_total": self.weight_total,
                "mass": self.mass,
                "error": self.error,
                "standard_error": self.standard_error,
                "z": z,
                "mean_score": self.mean_score,
                "mean_label": self.mean_label,
            }
        )


@dataclass(frozen=True, slots=True, eq=False)
class InputSpace:
    """Standardised covariates: the space in which local groups are formed.

    Attributes
    ----------
    matrix : ndarray of shape (n, d)
        One row per observation (score order), read-only.
    covariates : tuple of str
        The covariates used.
    columns : tuple of str
        Name of each matrix column ("age", "sex=Male", "age missing").
    scaling : str
    rule : str
        The standardisation in words (shown next to every local chart).
    nominal : ndarray of bool, shape (d,)
        True for the one-hot columns of nominal covariates.
    """

    matrix: np.ndarray
    covariates: tuple[str, ...]
    columns: tuple[str, ...]
    scaling: str
    rule: str
    nominal: np.ndarray | None = None


@dataclass(frozen=True, slots=True, eq=False)
class LocalCalibration:
    """Local (individual) calibration errors: one overlapping group around each centre.

    Attributes
    ----------
    groups : GroupErrors
        The groups (``groups.centre`` holds each group's centre); agglomerate these.
    method : str
        ``"k-NN"`` or ``"kernel"``.
    k : int or None
        Neighbours per group (k-NN): every group holds at least k observations, more when
        observations tie at the k-th distance.
    bandwidth : float or None
        Kernel bandwidth in standardised units.
    kernel : str or None
    radius : ndarray of shape (m,)
        Distance from each centre to its farthest neighbour (k-NN) or the kernel's reach.
    membership : ndarray of int, shape (n,)
        How many groups each observation belongs to (Proposition 4 of [1]: some points can
        belong to many groups while others belong to one).
    space : InputSpace
    sampled : bool
        True when the centres are a seeded sample of the observations.
    seed : int
    """

    groups: GroupErrors
    method: str
    k: int | None
    bandwidth: float | None
    kernel: str | None
    radius: np.ndarray
    membership: np.ndarray
    space: InputSpace
    sampled: bool
    seed: int


@dataclass(frozen=True, slots=True, eq=False)
class LocalMap:
    """Points of the local-calibration scatter over two covariates (at most 10,000).

    Attributes
    ----------
    x, y : ndarray
        Covariate values of the drawn centres (nominal covariates as their level names).
    error : ndarray
        Local calibration error of each drawn centre.
    x_name, y_name : str
    n_total : int
        Centres available; ``n_shown`` of them are drawn.
    n_shown : int
    note : str
        What the map shows (method, k or bandwidth, sampling), for the figure's subtitle.
    """

    x: np.ndarray
    y: np.ndarray
    error: np.ndarray
    x_name: str
    y_name: str
    n_total: int
    n_shown: int
    note: str


@dataclass(frozen=True, slots=True, eq=False)
class LocalErrorDistribution:
    """Histogram (by probability mass) and quantiles of the local calibration errors.

    Attributes
    ----------
    edges : ndarray of shape (bins + 1,)
    mass : ndarray of shape (bins,)
        Mass of the centres in each bin (sums to 1).
    quantiles : dict
        Weighted 5%, 25%, 50%, 75% and 95% quantiles.
    mean : float
    note : str
    """

    edges: np.ndarray
    mass: np.ndarray
    quantiles: dict[float, float]
    mean: float
    note: str


@dataclass(frozen=True, slots=True, eq=False)
class NeighbourhoodTradeoff:
    r"""How the k-NN calibration errors change with k (Propositions 2 and 3 of [1]).

    Attributes
    ----------
    k : ndarray of int
    median_radius : ndarray
        Median distance to the k-th neighbour: how far groups reach (resolution, Prop. 2).
    mean_standard_error : ndarray
        Mean standard error of the local errors (variance, Prop. 3: about :math:`1/\sqrt{k}`).
    mean_absolute_error : ndarray
        Mass-weighted mean of :math:`|c(I_x)|`.
    max_absolute_error : ndarray
        Largest :math:`|c(I_x)|`.
    error_sd : ndarray
        Mass-weighted standard deviation of the signed local errors.
    n_centres : int
    note : str
    """

    k: np.ndarray
    median_radius: np.ndarray
    mean_standard_error: np.ndarray
    mean_absolute_error: np.ndarray
    max_absolute_error: np.ndarray
    error_sd: np.ndarray
    n_centres: int
    note: str

    def table(self) -> pd.DataFrame:
        """One row per k."""
        return pd.DataFrame(
            {
                "k": self.k,
                "median_radius": self.median_radius,
                "mean_standard_error": self.mean_standard_error,
                "mean_absolute_error": self.mean_absolute_error,
                "max_absolute_error": self.max_absolute_error,
                "error_sd": self.error_sd,
            }
        )


# --------------------------------------------------------------------------------------------
# Group errors from memberships


def _readonly(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array)
    array.flags.writeable = False
    return array


def _se_method(pred: Predictions) -> str:
    return "null (eq. 5)" if pred.response_kind == "binary" else "empirical"


def _from_sums(
    *,
    pred: Predictions,
    kind: str,
    description: str,
    labels: Sequence[str],
    size: np.ndarray,
    v_sum: np.ndarray,
    v2_sum: np.ndarray,
    vd_sum: np.ndarray,
    vd2_sum: np.ndarray,
    var_sum: np.ndarray,
    vs_sum: np.ndarray,
    mass: np.ndarray,
    centre: np.ndarray | None,
    overlapping: bool,
    notice: str | None,
) -> GroupErrors:
    """Assemble :class:`GroupErrors` from per-group sums of v, v², v·d, v²·d², v²·S(1-S), v·S."""
    error, standard_error = _error_and_se(
        pred.response_kind, size, v_sum, v2_sum, vd_sum, vd2_sum, var_sum
    )
    mean_score = vs_sum / v_sum
    return GroupErrors(
        kind=kind,
        description=description,
        labels=tuple(labels),
        error=_readonly(error),
        size=_readonly(np.asarray(size, dtype=np.int64)),
        effective_size=_readonly(v_sum**2 / v2_sum),
        weight_total=_readonly(v_sum),
        mass=_readonly(mass / mass.sum()),
        standard_error=_readonly(standard_error),
        mean_score=_readonly(mean_score),
        mean_label=_readonly(mean_score - error),
        centre=None if centre is None else _readonly(centre),
        overlapping=overlapping,
        n=pred.n,
        weighted=pred.weighted,
        standard_error_method=_se_method(pred),
        notice=notice,
    )


def _error_and_se(
    response_kind: str,
    size: np.ndarray,
    v_sum: np.ndarray,
    v2_sum: np.ndarray,
    vd_sum: np.ndarray,
    vd2_sum: np.ndarray,
    var_sum: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Group errors (eq. (6) of [1]) and their standard errors from per-group sums."""
    error = vd_sum / v_sum  # eq. (6) of [1]
    if response_kind == "binary":
        return error, np.sqrt(var_sum) / v_sum  # eq. (5) of [2] for the group
    # sum v² (d - c)² = sum v² d² - 2 c sum v² d + c² sum v²; var_sum holds sum v² d here.
    centred = np.maximum(vd2_sum - 2.0 * error * var_sum + error**2 * v2_sum, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        correction = np.where(size > 1, np.sqrt(size / np.maximum(size - 1, 1)), np.nan)
    return error, correction * np.sqrt(centred) / v_sum


def _per_point(pred: Predictions) -> dict[str, np.ndarray]:
    """Per-observation terms whose (weighted) sums give every group statistic."""
    w = pred.weight
    d = pred.score - pred.label
    # Binary: S(1 - S) for the null standard error; otherwise d, to centre the empirical one.
    spread = pred.score * (1.0 - pred.score) if pred.response_kind == "binary" else d
    return {"w": w, "d": d, "spread": spread, "s": pred.score}


def _partition(
    pred: Predictions,
    assignment: np.ndarray,
    labels: Sequence[str],
    *,
    kind: str,
    description: str,
    notice: str | None = None,
) -> GroupErrors:
    """Group errors of a partition given each observation's group id (-1: in no group)."""
    terms = _per_point(pred)
    keep = assignment >= 0
    groups = assignment[keep]
    m = len(labels)

    def total(values: np.ndarray) -> np.ndarray:
        return np.bincount(groups, weights=values[keep], minlength=m)

    w, d = terms["w"], terms["d"]
    size = np.bincount(groups, minlength=m)
    nonempty = size > 0
    dropped = int((~nonempty).sum())
    if dropped:
        extra = f"{dropped} empty group{'s' if dropped > 1 else ''} dropped."
        notice = f"{notice} {extra}" if notice else extra
    sums = {
        "v_sum": total(w),
        "v2_sum": total(w**2),
        "vd_sum": total(w * d),
        "vd2_sum": total(w**2 * d**2),
        "var_sum": total(w**2 * terms["spread"]),
        "vs_sum": total(w * terms["s"]),
    }
    sums = {key: value[nonempty] for key, value in sums.items()}
    return _from_sums(
        pred=pred,
        kind=kind,
        description=description,
        labels=[label for label, ok in zip(labels, nonempty, strict=True) if ok],
        size=size[nonempty],
        mass=sums["v_sum"].copy(),
        centre=None,
        overlapping=False,
        notice=notice,
        **sums,
    )


def group_errors(
    pred: Predictions,
    assignment: np.ndarray | Sequence[int],
    labels: Sequence[str] | None = None,
    *,
    description: str = "user partition",
) -> GroupErrors:
    """Group errors of a partition given each observation's group number.

    Parameters
    ----------
    pred : Predictions
    assignment : array of int, shape (n,)
        Group number of each observation in score order, 0..m-1; -1 leaves it out.
    labels : sequence of str, optional
        Label of each group (default "group 0", "group 1", ...).
    description : str

    Returns
    -------
    GroupErrors

    Examples
    --------
    Two groups of two: errors (0.2 - 0 + 0.4 - 1)/2 = -0.2 and (0.6 - 0 + 0.8 - 1)/2 = 0.2.

    >>> pred = Predictions.from_arrays([0.2, 0.4, 0.6, 0.8], [0, 1, 0, 1])
    >>> group_errors(pred, [0, 0, 1, 1]).error.round(12).tolist()
    [-0.2, 0.2]
    """
    assignment = np.asarray(assignment)
    if assignment.shape != (pred.n,) or not np.issubdtype(assignment.dtype, np.integer):
        raise ValidationError(
            f"assignment must hold one integer group number per observation ({pred.n:,}); "
            f"got shape {assignment.shape} of dtype {assignment.dtype}."
        )
    m = int(assignment.max()) + 1 if assignment.size else 0
    if labels is None:
        labels = [f"group {j}" for j in range(m)]
    if len(labels) < m:
        raise ValidationError(f"{m} groups but only {len(labels)} labels.")
    return _partition(
        pred, assignment.astype(np.int64), list(labels), kind="index groups",
        description=description,
    )


# --------------------------------------------------------------------------------------------
# Prediction-based bins


def score_bins(pred: Predictions, *, n_bins: int = 10, strategy: Strategy = "width") -> GroupErrors:
    r"""Prediction-based bins: the groups of the ECE, ACE and MCE (eqs. (14)-(16) of [1]).

    Parameters
    ----------
    pred : Predictions
    n_bins : int, default 10
    strategy : {"width", "count"}
        ``"width"``: right-closed bins :math:`[0, 1/K], (1/K, 2/K], \ldots` ``"count"``: about
        :math:`1/K` of the weight each, in score order; a run of tied scores goes to the bin
        where its cumulative weight ends, so tied scores share a bin (and bins may empty).
        Both follow :mod:`mcviz.binning`, so the ECE, ACE and MCE agree with it.

    Returns
    -------
    GroupErrors
        Empty bins are dropped (and counted in ``notice``).

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.05, 0.15, 0.55, 0.65], [0, 1, 1, 1])
    >>> result = score_bins(pred, n_bins=2)
    >>> result.labels, result.error.round(12).tolist()
    (('[0, 0.5]', '(0.5, 1]'), [-0.4, -0.4])
    """
    if not isinstance(n_bins, int | np.integer) or n_bins < 1:
        raise ValidationError(f"n_bins must be a positive integer, not {n_bins!r}.")
    if strategy == "width":
        edges = np.arange(n_bins + 1) / n_bins
        assignment = np.searchsorted(edges[1:-1], pred.score, side="left")  # right-closed
        labels = [
            f"{'[' if j == 0 else '('}{_fmt(edges[j])}, {_fmt(edges[j + 1])}]"
            for j in range(n_bins)
        ]
    elif strategy == "count":
        # A run of tied scores goes to bin ceil(K * cumulative weight / total) - 1 (with a 1e-9
        # tolerance), the rule of mcviz.binning, so tied scores always share a bin.
        ends = np.flatnonzero(pred.run_end)
        cumulative = np.cumsum(pred.weight)[ends]
        thresholds = (np.arange(1, n_bins + 1) + 1e-9) * (cumulative[-1] / n_bins)
        runs_through = np.searchsorted(cumulative, thresholds, side="right")
        runs_through[-1] = ends.size
        run_bin = np.searchsorted(runs_through, np.arange(ends.size), side="right")
        assignment = run_bin[np.searchsorted(ends, np.arange(pred.n), side="left")]
        first = np.searchsorted(assignment, np.arange(n_bins), side="left")
        last = np.searchsorted(assignment, np.arange(n_bins), side="right") - 1
        labels = [
            f"[{_fmt(pred.score[a])}, {_fmt(pred.score[b])}]" if b >= a else "empty"
            for a, b in zip(first, last, strict=True)
        ]
    else:
        raise ValidationError(f"strategy must be 'width' or 'count', not {strategy!r}.")
    return _partition(
        pred, assignment, labels, kind="score bins",
        description=f"{n_bins} equal-{strategy} score bins",
    )


def _fmt(value: float) -> str:
    return f"{value:.4g}"


# --------------------------------------------------------------------------------------------
# Input-based partitions


def _check_columns(pred: Predictions, columns: Sequence[str]) -> list[str]:
    columns = [columns] if isinstance(columns, str) else list(columns)
    for column in columns:
        pred.require_covariate(column)
    return columns


def _numeric_values(series: pd.Series) -> np.ndarray:
    if np.issubdtype(series.dtype, np.datetime64):
        values = series.to_numpy().astype("datetime64[ns]")
        out = values.astype(np.int64).astype(float)
        out[np.isnat(values)] = np.nan
        return out
    return series.to_numpy(dtype=float, na_value=np.nan)


def _bin_column(
    series: pd.Series, name: str, n_bins: int, strategy: Strategy
) -> tuple[np.ndarray, list[str]]:
    """Codes 0..m-1 and labels for one covariate (missing is the last group when present)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy().astype(np.int64)
        labels = [f"{name} = {level}" for level in series.cat.categories]
    else:
        values = _numeric_values(series)
        present = ~np.isnan(values)
        observed = values[present]
        if observed.size == 0:
            raise ValidationError(f"covariate {name!r} is missing on every row.", column=name)
        if strategy == "count":
            edges = np.unique(np.quantile(observed, np.linspace(0, 1, n_bins + 1)))
        elif strategy == "width":
            edges = np.unique(np.linspace(observed.min(), observed.max(), n_bins + 1))
        else:
            raise ValidationError(f"strategy must be 'width' or 'count', not {strategy!r}.")
        if edges.size == 1:
            edges = np.array([edges[0], edges[0]])
        codes = np.full(values.size, -1, dtype=np.int64)
        codes[present] = np.clip(
            np.searchsorted(edges, observed, side="right") - 1, 0, edges.size - 2
        )
        labels = [
            f"{name} ∈ [{_fmt(edges[j])}, {_fmt(edges[j + 1])}"
            f"{']' if j == edges.size - 2 else ')'}"
            for j in range(edges.size - 1)
        ]
    missing = codes < 0
    if missing.any():
        codes[missing] = len(labels)
        labels.append(f"{name} missing")
    return codes, labels


def covariate_bins(
    pred: Predictions,
    columns: str | Sequence[str],
    *,
    n_bins: int = 5,
    strategy: Strategy = "count",
) -> GroupErrors:
    """Input-based partition: bins of one covariate or the grid of two.

    Parameters
    ----------
    pred : Predictions
    columns : str or sequence of one or two str
        Numeric covariates are cut into ``n_bins`` bins (equal count by quantiles, or equal width
        between the observed extremes; duplicate edges merge bins); nominal covariates give one
        group per level. A missing value is its own group ("<name> missing").
    n_bins : int, default 5
    strategy : {"count", "width"}

    Returns
    -------
    GroupErrors
        With two columns, one group per non-empty cell of the grid.

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.5] * 4, [0, 0, 1, 1],
    ...                                covariates={"sex": ["f", "f", "m", "m"]})
    >>> covariate_bins(pred, "sex").error.tolist()
    [0.5, -0.5]
    """
    columns = _check_columns(pred, columns)
    if not 1 <= len(columns) <= 2:
        raise ValidationError(f"choose one or two covariates to bin, not {len(columns)}.")
    if not isinstance(n_bins, int | np.integer) or n_bins < 1:
        raise ValidationError(f"n_bins must be a positive integer, not {n_bins!r}.")
    codes, labels = _bin_column(pred.covariates[columns[0]], columns[0], n_bins, strategy)
    if len(columns) == 2:
        codes2, labels2 = _bin_column(pred.covariates[columns[1]], columns[1], n_bins, strategy)
        codes = codes * len(labels2) + codes2
        labels = [f"{a} and {b}" for a in labels for b in labels2]
    return _partition(
        pred, codes, labels, kind="covariate bins",
        description=f"bins of {' × '.join(columns)} ({n_bins} equal-{strategy} bins per "
        "numeric covariate, one group per level of a nominal one)",
    )


def index_groups(
    pred: Predictions,
    groups: Sequence[np.ndarray] | Sequence[object],
    labels: Sequence[str] | None = None,
    *,
    description: str = "user groups",
) -> GroupErrors:
    """Group errors of any list of groups (index arrays, or subpopulations).

    Parameters
    ----------
    pred : Predictions
    groups : sequence
        Each an array of indices in score order, or an object with ``.index`` (and
        ``.description``), such as :class:`mcviz.subpopulations.Subpopulation`.
    labels : sequence of str, optional
        Default: each group's ``description``, else "group j".
    description : str

    Returns
    -------
    GroupErrors
        ``mass`` is each group's weight over the total of all groups' weights (for a partition,
        its share of the population); ``overlapping`` says whether any observation is in two.

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.2, 0.4, 0.6, 0.8], [0, 1, 0, 1])
    >>> index_groups(pred, [np.array([0, 1, 2, 3]), np.array([2, 3])]).error.round(12).tolist()
    [0.0, 0.2]
    """
    if len(groups) == 0:
        raise ValidationError("no groups given.")
    indices = []
    names = []
    for j, group in enumerate(groups):
        index = np.asarray(getattr(group, "index", group))
        if index.ndim != 1 or (index.size and not np.issubdtype(index.dtype, np.integer)):
            raise ValidationError(f"group {j} is not a one-dimensional array of integer indices.")
        if index.size == 0:
            raise ValidationError(f"group {j} is empty.")
        if index.min() < 0 or index.max() >= pred.n:
            raise ValidationError(
                f"group {j} holds indices outside 0..{pred.n - 1} (the predictions' rows)."
            )
        indices.append(index.astype(np.int64))
        names.append(str(getattr(group, "description", f"group {j}")))
    if labels is not None:
        if len(labels) != len(indices):
            raise ValidationError(f"{len(indices)} groups but {len(labels)} labels.")
        names = [str(label) for label in labels]
    terms = _per_point(pred)
    w, d = terms["w"], terms["d"]
    per_point = {
        "v_sum": w, "v2_sum": w**2, "vd_sum": w * d, "vd2_sum": w**2 * d**2,
        "var_sum": w**2 * terms["spread"], "vs_sum": w * terms["s"],
    }
    # One pass per statistic over the concatenated memberships.
    flat = np.concatenate(indices)
    owner = np.repeat(np.arange(len(indices)), [i.size for i in indices])
    sums = {
        key: np.bincount(owner, weights=values[flat], minlength=len(indices))
        for key, values in per_point.items()
    }
    counts = np.bincount(flat, minlength=pred.n)
    return _from_sums(
        pred=pred,
        kind="index groups",
        description=description,
        labels=names,
        size=np.array([i.size for i in indices]),
        mass=sums["v_sum"].copy(),
        centre=None,
        overlapping=bool(counts.max() > 1),
        notice=None,
        **sums,
    )


# --------------------------------------------------------------------------------------------
# The input space


def input_space(
    pred: Predictions,
    covariates: Sequence[str] | None = None,
    *,
    scaling: Scaling = "robust",
) -> InputSpace:
    r"""Standardise covariates into a matrix for nearest-neighbour and kernel groups.

    Parameters
    ----------
    pred : Predictions
    covariates : sequence of str, optional
        Default: every covariate.
    scaling : {"robust", "standard"}
        Numeric covariates: (x - median) / (IQR/1.349), or (x - mean) / sd. Nominal covariates
        are one-hot encoded with every level scaled by :math:`1/\sqrt 2`. See the module notes.

    Returns
    -------
    InputSpace

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.1, 0.2, 0.3], [0, 1, 0],
    ...                                covariates={"c": ["a", "b", "a"]})
    >>> space = input_space(pred)
    >>> space.columns, round(float(np.linalg.norm(space.matrix[0] - space.matrix[1])), 12)
    (('c=a', 'c=b'), 1.0)
    """
    names = list(pred.covariates.columns) if covariates is None else _check_columns(
        pred, covariates
    )
    if not names:
        raise ValidationError("no covariates to form an input space; choose at least one.")
    if scaling not in ("robust", "standard"):
        raise ValidationError(f"scaling must be 'robust' or 'standard', not {scaling!r}.")
    blocks: list[np.ndarray] = []
    columns: list[str] = []
    nominal: list[bool] = []
    for name in names:
        series = pred.covariates[name]
        if isinstance(series.dtype, pd.CategoricalDtype):
            codes = series.cat.codes.to_numpy().astype(np.int64)
            levels = [str(level) for level in series.cat.categories]
            if (codes < 0).any():
                codes = np.where(codes < 0, len(levels), codes)
                levels.append("missing")
            block = np.zeros((pred.n, len(levels)))
            block[np.arange(pred.n), codes] = 1.0 / np.sqrt(2.0)
            blocks.append(block)
            columns.extend(f"{name}={level}" for level in levels)
            nominal.extend([True] * len(levels))
            continue
        values = _numeric_values(series)
        present = ~np.isnan(values)
        observed = values[present]
        if observed.size == 0:
            raise ValidationError(f"covariate {name!r} is missing on every row.", column=name)
        if scaling == "robust":
            centre = float(np.median(observed))
            q1, q3 = np.quantile(observed, [0.25, 0.75])
            scale = float(q3 - q1) / ROBUST_SCALE
        else:
            centre = float(observed.mean())
            scale = 0.0
        if scale <= 0:
            scale = float(observed.std())
        if scale <= 0:
            scale = 1.0
        standardised = np.where(present, (values - centre) / scale, 0.0)
        blocks.append(standardised[:, None])
        columns.append(name)
        nominal.append(False)
        if not present.all():
            blocks.append((~present).astype(float)[:, None])
            columns.append(f"{name} missing")
            nominal.append(False)
    rule = (
        ("numeric covariates: (x − median)/(IQR/1.349)" if scaling == "robust"
         else "numeric covariates: (x − mean)/sd")
        + "; missing numeric values at the centre plus a 0/1 missing flag; nominal covariates "
        "one-hot with levels 1 apart (scaled 1/√2); Euclidean distance"
    )
    return InputSpace(
        matrix=_readonly(np.ascontiguousarray(np.hstack(blocks))),
        covariates=tuple(names),
        columns=tuple(columns),
        scaling=scaling,
        rule=rule,
        nominal=_readonly(np.array(nominal, dtype=bool)),
    )


def _centres(n: int, max_centres: int | None, seed: int) -> tuple[np.ndarray, bool]:
    if max_centres is None or max_centres >= n:
        return np.arange(n), False
    if max_centres < 1:
        raise ValidationError(f"max_centres must be positive, not {max_centres}.")
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n, size=max_centres, replace=False)), True


def _check_k(k: int, n: int) -> int:
    if not isinstance(k, int | np.integer) or k < 1:
        raise ValidationError(f"k must be a positive integer, not {k!r}.")
    if k > n:
        raise ValidationError(f"k = {k:,} exceeds the number of observations ({n:,}).")
    return int(k)


TIE_TOLERANCE = 1e-12
"""Relative tolerance under which two distances count as tied."""


@dataclass(frozen=True, slots=True, eq=False)
class _Inputs:
    """The distinct inputs of an input space, with counts and summed per-observation terms."""

    matrix: np.ndarray  # (u, d) distinct rows
    of_row: np.ndarray  # (n,) distinct input of each observation
    count: np.ndarray  # (u,) observations per distinct input
    terms: np.ndarray  # (u, 6) sums of w, w², w d, w² d², w² spread, w s


_SUM_KEYS = ("v_sum", "v2_sum", "vd_sum", "vd2_sum", "var_sum", "vs_sum")


def _distinct_inputs(pred: Predictions, space: InputSpace) -> _Inputs:
    matrix, of_row = np.unique(space.matrix, axis=0, return_inverse=True)
    of_row = of_row.ravel()
    terms = _per_point(pred)
    w, d = terms["w"], terms["d"]
    per_point = (w, w**2, w * d, w**2 * d**2, w**2 * terms["spread"], w * terms["s"])
    u = matrix.shape[0]
    summed = np.column_stack([np.bincount(of_row, weights=t, minlength=u) for t in per_point])
    return _Inputs(matrix, of_row, np.bincount(of_row, minlength=u), summed)


class _Searcher:
    """Exact nearest-neighbour search among the distinct inputs of an input space.

    Without nominal covariates (or with more than ``MAX_CELLS`` combinations of their levels)
    this is one k-d tree. Otherwise the inputs are split into *cells* (one per combination of
    nominal levels), each with a k-d tree over the numeric columns only: the squared distance
    between inputs of cells c and c' is the numeric squared distance plus the number of nominal
    covariates in which they differ (levels lie 1 apart), so a cell is searched only while that
    gap is below the current k-th squared distance. Whichever search is faster on 256 queries spread
    over the first batch is used; both give the same neighbours up to the order of exact ties (which
    :func:`_covering_query` makes irrelevant).
    """

    def __init__(self, matrix: np.ndarray, nominal: np.ndarray | None) -> None:
        self.matrix = matrix
        self.tree: cKDTree | None = None
        self.cells = False
        nominal = np.zeros(matrix.shape[1], bool) if nominal is None else nominal
        if nominal.any() and (~nominal).any():
            keys, cell_of = np.unique(matrix[:, nominal], axis=0, return_inverse=True)
            if keys.shape[0] <= MAX_CELLS:
                cell_of = cell_of.ravel()
                self.cells = True
                self.nominal = nominal
                self.lookup = {key.tobytes(): c for c, key in enumerate(keys)}
                self.members = [np.flatnonzero(cell_of == c) for c in range(keys.shape[0])]
                numeric = matrix[:, ~nominal]
                self.trees = [cKDTree(numeric[m]) for m in self.members]
                gap = ((keys[:, None, :] - keys[None, :, :]) ** 2).sum(axis=2)
                self.gap = np.rint(gap * 1e9) / 1e9  # whole numbers of differing levels
                self.decided: dict[int, bool] = {}

    def _one_tree(self, points: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if self.tree is None:
            self.tree = cKDTree(self.matrix)
        distance, index = self.tree.query(points, k=k, workers=-1)
        if k == 1:
            distance, index = distance[:, None], index[:, None]
        return distance, index

    def query(self, points: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Return distances and indices of the k nearest distinct inputs, shape (m, k)."""
        if not self.cells:
            return self._one_tree(points, k)
        if k not in self.decided:
            # Probe: time both searches on the first queries and keep the faster one (they give
            # the same neighbours, so the choice changes the speed, never the result).
            probe = points[:: max(1, points.shape[0] // 256)][:256]  # spread over the input
            start = time.perf_counter()
            self._one_tree(probe, k)
            middle = time.perf_counter()
            self._cell_query(probe, k)
            self.decided[k] = time.perf_counter() - middle < middle - start
        if not self.decided[k]:
            return self._one_tree(points, k)
        return self._cell_query(points, k)

    def _cells_of(self, points: np.ndarray) -> np.ndarray:
        keys = np.ascontiguousarray(points[:, self.nominal])
        return np.array([self.lookup[row.tobytes()] for row in keys], dtype=np.int64)

    def _cell_query(self, points: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        m = points.shape[0]
        cell = self._cells_of(points)
        numeric = points[:, ~self.nominal]
        out_d2 = np.empty((m, k))
        out_i = np.empty((m, k), dtype=np.int64)
        for c in np.unique(cell):
            rows = np.flatnonzero(cell == c)
            best_d2 = np.full((rows.size, k), np.inf)
            best_i = np.zeros((rows.size, k), dtype=np.int64)
            for other in np.argsort(self.gap[c], kind="stable"):
                gap = self.gap[c, other]
                active = np.flatnonzero(gap < best_d2[:, -1])
                if active.size == 0:
                    break
                size = self.members[other].size
                kk = min(k, size)
                bound2 = float(best_d2[active, -1].max()) - gap
                bound = np.sqrt(bound2) * (1 + 1e-9) if np.isfinite(bound2) else np.inf
                d, i = self.trees[other].query(
                    numeric[rows[active]], k=kk, distance_upper_bound=bound, workers=-1
                )
                if kk == 1:
                    d, i = d[:, None], i[:, None]
                found = i < size
                d2 = np.where(found, d**2 + gap, np.inf)
                global_i = np.where(found, self.members[other][np.minimum(i, size - 1)], 0)
                merged_d2 = np.hstack((best_d2[active], d2))
                merged_i = np.hstack((best_i[active], global_i))
                order = np.argsort(merged_d2, axis=1, kind="stable")[:, :k]
                best_d2[active] = np.take_along_axis(merged_d2, order, axis=1)
                best_i[active] = np.take_along_axis(merged_i, order, axis=1)
            out_d2[rows] = best_d2
            out_i[rows] = best_i
        return np.sqrt(out_d2), out_i


def _covering_query(
    searcher: _Searcher, points: np.ndarray, k: int, count: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nearest distinct inputs of each point, enough to hold every input within its radius.

    The radius of a point is the distance of its k-th nearest *observation* (distinct inputs
    weighted by their counts). Returns ``distance`` and ``index`` of shape (m, width), sorted by
    distance and padded with inf (index 0), and the radius of each point. Every distinct input
    within the radius (ties included, up to ``TIE_TOLERANCE``) is among the columns.
    """
    m, u = points.shape[0], count.size
    width = min(k + 1, u)  # one more than needed, to see whether ties continue past the radius
    distance = np.full((m, width), np.inf)
    index = np.zeros((m, width), dtype=np.int64)
    radius = np.empty(m)
    rows = np.arange(m)
    kq = width
    while rows.size:
        d, i = searcher.query(points[rows], kq)
        if kq > distance.shape[1]:
            extra = kq - distance.shape[1]
            distance = np.hstack((distance, np.full((m, extra), np.inf)))
            index = np.hstack((index, np.zeros((m, extra), dtype=np.int64)))
        distance[rows, :kq] = d
        index[rows, :kq] = i
        reach = np.argmax(np.cumsum(count[i], axis=1) >= k, axis=1)
        r = d[np.arange(rows.size), reach]
        radius[rows] = r
        incomplete = (d[:, -1] <= r * (1 + TIE_TOLERANCE)) & (kq < u)
        rows = rows[incomplete]
        kq = min(2 * kq, u)
    return distance, index, radius


def _group_matrix(distance: np.ndarray, index: np.ndarray, radius: np.ndarray, u: int):
    """Sparse (m, u) 0/1 matrix: which distinct inputs lie within each point's radius."""
    m, width = index.shape
    inside = distance <= (radius * (1 + TIE_TOLERANCE))[:, None]
    return sparse.csr_matrix(
        (inside.ravel().astype(float), index.ravel(), np.arange(0, m * width + 1, width)),
        shape=(m, u),
    )


def local_calibration(
    pred: Predictions,
    covariates: Sequence[str] | None = None,
    *,
    k: int = 100,
    scaling: Scaling = "robust",
    max_centres: int | None = None,
    seed: int = 0,
) -> LocalCalibration:
    r"""Local calibration error of every point from its k nearest neighbours in input space.

    Parameters
    ----------
    pred : Predictions
    covariates : sequence of str, optional
        Covariates spanning the input space (default: all); see :func:`input_space`.
    k : int, default 100
        Group size. Larger k: smaller variance (Proposition 3 of [1], standard error about
        :math:`\sqrt{\bar S(1-\bar S)/k}`) but groups reaching further (Proposition 2: local
        miscalibration of opposite signs averages away). See :func:`neighbourhood_tradeoff`.
    scaling : {"robust", "standard"}
    max_centres : int, optional
        Estimate at a seeded random sample of this many centres (neighbours are always searched
        among all observations). Default: every observation.
    seed : int, default 0

    Returns
    -------
    LocalCalibration

    Notes
    -----
    For each centre :math:`x`, let :math:`r_k(x)` be the distance of its k-th nearest
    observation (the centre included; Euclidean distance in the standardised space, found with
    scipy's ``cKDTree``). The group is every observation within that distance,

    .. math:: I_x = \{ i : \|x_i - x\| \le r_k(x) \}, \qquad |I_x| \ge k,

    so observations tied at the k-th distance - in particular all observations sharing an
    input - are all in or all out (footnotes 3 and 11 of [1]) and no result depends on the
    order of the rows. The local error is :math:`c(I_x)` of eq. (6) of [1], the estimator of
    :math:`\hat p(x) - \mathbb{E}[Y \mid X = x]` of Proposition 5. ``groups.size`` holds
    :math:`|I_x|`; ``radius`` holds :math:`r_k(x)` (0 when k observations share the input).

    Cost: the k-d tree search grows quickly with the number of numeric dimensions; nominal
    covariates with at most ``MAX_CELLS`` level combinations are searched cell by cell. With
    k = 100 and 10^5 rows it takes about 2-3 CPU seconds with two or three numeric covariates
    and about 17 with four numeric covariates and a 12-level nominal one
    (``benchmarks/bench_groupings.py``); for wide spaces estimate at a sample of centres
    (``max_centres``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=200)
    >>> pred = Predictions.from_arrays(np.full(200, 0.5), (x > 0).astype(int),
    ...                                covariates={"x": x})
    >>> local = local_calibration(pred, k=20)
    >>> bool(local.groups.error[np.argmin(x[pred.row])] > 0.4)
    True
    """
    k = _check_k(k, pred.n)
    space = input_space(pred, covariates, scaling=scaling)
    centres, sampled = _centres(pred.n, max_centres, seed)
    inputs = _distinct_inputs(pred, space)
    queries, inverse, multiplicity = np.unique(
        inputs.of_row[centres], return_inverse=True, return_counts=True
    )
    searcher = _Searcher(inputs.matrix, space.nominal)
    u = inputs.count.size
    # Search in chunks of about CHUNK_NEIGHBOURS neighbours, so memory stays bounded for any k.
    step = max(1, CHUNK_NEIGHBOURS // k)
    totals, sizes, radii = [], [], []
    covered = np.zeros(u)  # groups containing each distinct input (Proposition 4)
    for start in range(0, queries.size, step):
        chunk = queries[start : start + step]
        distance, index, radius = _covering_query(searcher, inputs.matrix[chunk], k, inputs.count)
        groups_of = _group_matrix(distance, index, radius, u)
        totals.append(groups_of @ inputs.terms)
        sizes.append(groups_of @ inputs.count)
        radii.append(radius)
        covered += groups_of.T @ multiplicity[start : start + step].astype(float)
    total = np.vstack(totals)[inverse.ravel()]
    sums = {key: np.ascontiguousarray(total[:, j]) for j, key in enumerate(_SUM_KEYS)}
    size = np.rint(np.concatenate(sizes)[inverse.ravel()]).astype(np.int64)
    radius = np.concatenate(radii)[inverse.ravel()]
    membership = np.rint(covered[inputs.of_row]).astype(np.int64)
    labels = [f"row {r}" for r in pred.row[centres]]
    note = f", {centres.size:,} sampled centres (seed {seed})" if sampled else ""
    groups = _from_sums(
        pred=pred,
        kind="k-NN",
        description=(
            f"{k} nearest neighbours (ties at the k-th distance included) in "
            f"({', '.join(space.covariates)}){note}"
        ),
        labels=labels,
        size=size,
        mass=pred.weight[centres].astype(float),
        centre=centres,
        overlapping=True,
        notice=None,
        **sums,
    )
    return LocalCalibration(
        groups=groups,
        method="k-NN",
        k=k,
        bandwidth=None,
        kernel=None,
        radius=_readonly(radius),
        membership=_readonly(membership),
        space=space,
        sampled=sampled,
        seed=seed,
    )


def kernel_calibration(
    pred: Predictions,
    covariates: Sequence[str] | None = None,
    *,
    bandwidth: float = 0.5,
    kernel: Literal["epanechnikov", "gaussian"] = "epanechnikov",
    scaling: Scaling = "robust",
    max_centres: int | None = 10_000,
    seed: int = 0,
) -> LocalCalibration:
    r"""Kernel-weighted local calibration errors around each centre (eq. (9), Prop. 6 of [1]).

    Parameters
    ----------
    pred : Predictions
    covariates : sequence of str, optional
    bandwidth : float, default 0.5
        :math:`\gamma` in standardised units (1 = one robust standard deviation of a numeric
        covariate, or the distance between two levels of a nominal one).
    kernel : {"epanechnikov", "gaussian"}
        :math:`K(u) = 1 - u^2` for :math:`u < 1`, or :math:`e^{-u^2/2}` truncated at
        :math:`u = 4`; :math:`u = \|x - x'\| / \gamma`.
    scaling : {"robust", "standard"}
    max_centres : int or None, default 10,000
        Estimate at a seeded sample of this many centres (None: every observation; the cost
        grows with the number of pairs within reach).
    seed : int, default 0

    Returns
    -------
    LocalCalibration
        ``groups.size`` counts observations with positive kernel weight, ``effective_size``
        Kish's effective number; ``radius`` is the kernel's reach.

    Notes
    -----
    .. math:: C(q_x) = \frac{\sum_i W_i K(\|x - x_i\|/\gamma)(S_i - R_i)}
                            {\sum_i W_i K(\|x - x_i\|/\gamma)}

    is eq. (9) of [1] with the kernel distribution :math:`q_x` of Proposition 6. Every centre
    lies in its own group, so no group is empty.
    """
    if not np.isfinite(bandwidth) or bandwidth <= 0:
        raise ValidationError(f"bandwidth must be a positive number, not {bandwidth!r}.")
    if kernel not in ("epanechnikov", "gaussian"):
        raise ValidationError(f"kernel must be 'epanechnikov' or 'gaussian', not {kernel!r}.")
    space = input_space(pred, covariates, scaling=scaling)
    centres, sampled = _centres(pred.n, max_centres, seed)
    reach = bandwidth * (1.0 if kernel == "epanechnikov" else GAUSSIAN_CUTOFF)
    tree = cKDTree(space.matrix)
    centre_tree = cKDTree(space.matrix[centres])
    n_pairs = int(centre_tree.count_neighbors(tree, reach))
    if n_pairs > MAX_PAIRS:
        raise ValidationError(
            f"bandwidth {bandwidth:g} puts {n_pairs:,} observations in the {centres.size:,} "
            f"kernel groups (limit {MAX_PAIRS:,}); choose a smaller bandwidth or fewer centres "
            "(max_centres)."
        )
    pairs = centre_tree.sparse_distance_matrix(tree, reach, output_type="ndarray")
    rows = pairs["i"].astype(np.int64)
    cols = pairs["j"].astype(np.int64)
    u = pairs["v"] / bandwidth
    # The 'ndarray' output keeps pairs at distance 0 (the centre itself, duplicates).
    kernel_weight = 1.0 - u**2 if kernel == "epanechnikov" else np.exp(-0.5 * u**2)
    positive = kernel_weight > 0
    rows, cols, kernel_weight = rows[positive], cols[positive], kernel_weight[positive]
    terms = _per_point(pred)
    v = terms["w"][cols] * kernel_weight
    d = terms["d"][cols]
    m = centres.size

    def total(values: np.ndarray) -> np.ndarray:
        return np.bincount(rows, weights=values, minlength=m)

    sums = {
        "v_sum": total(v),
        "v2_sum": total(v * v),
        "vd_sum": total(v * d),
        "vd2_sum": total(v * v * d * d),
        "var_sum": total(v * v * terms["spread"][cols]),
        "vs_sum": total(v * terms["s"][cols]),
    }
    size = np.bincount(rows, minlength=m)
    membership = np.bincount(cols, minlength=pred.n)
    note = f", {m:,} sampled centres (seed {seed})" if sampled else ""
    groups = _from_sums(
        pred=pred,
        kind="kernel",
        description=(
            f"{kernel} kernel, bandwidth {bandwidth:g}, in ({', '.join(space.covariates)}){note}"
        ),
        labels=[f"row {r}" for r in pred.row[centres]],
        size=size,
        mass=pred.weight[centres].astype(float),
        centre=centres,
        overlapping=True,
        notice=None,
        **sums,
    )
    return LocalCalibration(
        groups=groups,
        method="kernel",
        k=None,
        bandwidth=float(bandwidth),
        kernel=kernel,
        radius=_readonly(np.full(m, reach)),
        membership=_readonly(membership),
        space=space,
        sampled=sampled,
        seed=seed,
    )


# --------------------------------------------------------------------------------------------
# Views of local errors


def local_calibration_map(
    local: LocalCalibration,
    pred: Predictions,
    x: str,
    y: str,
    *,
    max_points: int = MAX_MAP_POINTS,
    seed: int = 0,
) -> LocalMap:
    """Points for a scatter of the local errors over two covariates (a seeded sample).

    Parameters
    ----------
    local : LocalCalibration
    pred : Predictions
        The predictions ``local`` was computed from.
    x, y : str
        Covariates for the axes (any covariates, not only those spanning the input space).
    max_points : int, default 10,000
        At most this many centres are drawn, a seeded uniform sample when there are more.
    seed : int, default 0

    Returns
    -------
    LocalMap
    """
    _check_columns(pred, [x, y])
    centres = local.groups.centre
    total = centres.size
    if total > max_points:
        pick = np.sort(np.random.default_rng(seed).choice(total, size=max_points, replace=False))
    else:
        pick = np.arange(total)

    def values(name: str) -> np.ndarray:
        series = pred.covariates[name].iloc[centres[pick]]
        if isinstance(series.dtype, pd.CategoricalDtype):
            return series.astype(object).where(series.notna(), "missing").to_numpy()
        return series.to_numpy()

    what = (
        f"k-NN, k = {local.k}" if local.method == "k-NN"
        else f"{local.kernel} kernel, bandwidth {local.bandwidth:g}"
    )
    shown = (
        f"a seeded sample (seed {seed}) of {pick.size:,} of {total:,} points"
        if pick.size < total else f"all {total:,} points"
    )
    return LocalMap(
        x=_readonly(values(x)),
        y=_readonly(values(y)),
        error=_readonly(local.groups.error[pick].copy()),
        x_name=x,
        y_name=y,
        n_total=total,
        n_shown=int(pick.size),
        note=f"local error c(I) = mean(score − label), {what}; {shown}",
    )


def _weighted_quantiles(values: np.ndarray, mass: np.ndarray, q: Sequence[float]) -> np.ndarray:
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(mass[order])
    cumulative /= cumulative[-1]
    position = np.searchsorted(cumulative, np.asarray(q) - 1e-12, side="left")
    return values[order][np.minimum(position, values.size - 1)]


def local_error_distribution(local: LocalCalibration, *, bins: int = 60) -> LocalErrorDistribution:
    """Histogram by probability mass and quantiles of the local errors.

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.5] * 4, [0, 1, 0, 1], covariates={"x": [0, 1, 2, 3]})
    >>> dist = local_error_distribution(local_calibration(pred, k=4), bins=3)
    >>> float(dist.mass.sum()), dist.mean
    (1.0, 0.0)
    """
    groups = local.groups
    error, mass = groups.error, groups.mass
    low, high = float(error.min()), float(error.max())
    if high <= low:
        low, high = low - 0.005, high + 0.005
    edges = np.linspace(low, high, bins + 1)
    histogram, _ = np.histogram(error, bins=edges, weights=mass)
    levels = (0.05, 0.25, 0.5, 0.75, 0.95)
    quantiles = dict(zip(levels, _weighted_quantiles(error, mass, levels).tolist(), strict=True))
    return LocalErrorDistribution(
        edges=_readonly(edges),
        mass=_readonly(histogram / histogram.sum()),
        quantiles=quantiles,
        mean=float(np.sum(error * mass)),
        note=groups.description,
    )


def neighbourhood_tradeoff(
    pred: Predictions,
    covariates: Sequence[str] | None = None,
    *,
    ks: Sequence[int] = (10, 30, 100, 300, 1000),
    scaling: Scaling = "robust",
    max_centres: int | None = 2_000,
    seed: int = 0,
) -> NeighbourhoodTradeoff:
    """Tabulate the group-size trade-off of k-NN groups over several k (Props. 2-3 of [1]).

    One neighbour search with the largest k serves every k (the k-NN of a point are the first k
    of its ``max(ks)`` nearest neighbours).

    Parameters
    ----------
    pred : Predictions
    covariates : sequence of str, optional
    ks : sequence of int
        Values of k (those above the number of observations are dropped).
    scaling : {"robust", "standard"}
    max_centres : int or None, default 2,000
        Seeded sample of centres (time and memory grow as centres × max(ks)).
    seed : int, default 0

    Returns
    -------
    NeighbourhoodTradeoff
    """
    ks_array = np.unique(np.asarray([k for k in ks if 1 <= k <= pred.n], dtype=np.int64))
    if ks_array.size == 0:
        raise ValidationError(f"no k in {list(ks)} lies between 1 and n = {pred.n:,}.")
    space = input_space(pred, covariates, scaling=scaling)
    centres, sampled = _centres(pred.n, max_centres, seed)
    if centres.size * int(ks_array[-1]) > MAX_PAIRS:
        raise ValidationError(
            f"{centres.size:,} centres × k = {int(ks_array[-1]):,} neighbours exceed "
            f"{MAX_PAIRS:,} pairs; lower max_centres or the largest k."
        )
    kmax = int(ks_array[-1])
    inputs = _distinct_inputs(pred, space)
    queries, inverse = np.unique(inputs.of_row[centres], return_inverse=True)
    inverse = inverse.ravel()
    searcher = _Searcher(inputs.matrix, space.nominal)
    distance, index, _ = _covering_query(searcher, inputs.matrix[queries], kmax, inputs.count)
    distance, index = distance[inverse], index[inverse]
    present = np.isfinite(distance)
    rows = np.arange(centres.size)[:, None]
    cumulative_count = np.cumsum(np.where(present, inputs.count[index], 0), axis=1)
    # For each k: the radius r_k and the last column within it (ties included).
    reach = np.stack([np.argmax(cumulative_count >= k, axis=1) for k in ks_array], axis=1)
    radius = distance[rows, reach]
    last = np.stack(
        [(distance <= radius[:, [j]] * (1 + TIE_TOLERANCE)).sum(axis=1) - 1
         for j in range(ks_array.size)],
        axis=1,
    )

    def at_k(column: int) -> np.ndarray:
        values = np.where(present, inputs.terms[index, column], 0.0)
        return np.take_along_axis(np.cumsum(values, axis=1), last, axis=1)

    size = np.take_along_axis(cumulative_count, last, axis=1)
    v_sum = at_k(0)
    error, se = _error_and_se(
        pred.response_kind, size, v_sum, at_k(1), at_k(2), at_k(3), at_k(4)
    )
    mass = pred.weight[centres] / pred.weight[centres].sum()
    mean_error = mass @ error
    sd = np.sqrt(np.maximum(mass @ (error - mean_error) ** 2, 0.0))
    note = (
        f"{centres.size:,} {'sampled ' if sampled else ''}centres"
        f"{f' (seed {seed})' if sampled else ''}; input space ({', '.join(space.covariates)})"
    )
    return NeighbourhoodTradeoff(
        k=_readonly(ks_array),
        median_radius=_readonly(np.median(radius, axis=0)),
        mean_standard_error=_readonly(mass @ se),
        mean_absolute_error=_readonly(mass @ np.abs(error)),
        max_absolute_error=_readonly(np.abs(error).max(axis=0)),
        error_sd=_readonly(sd),
        n_centres=int(centres.size),
        note=note,
    )

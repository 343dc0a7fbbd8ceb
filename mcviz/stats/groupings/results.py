"""Result objects of the groupings: group errors, input space, local calibration views."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from mcviz.core.ratio import safe_ratio

Scaling = Literal["robust", "standard"]
Strategy = Literal["width", "count"]

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
        :math:`e(I_j) = -c(I_j)`, eq. (6) of [1] with the sign reversed: weighted mean of
        response minus score (positive where the scores under-predict).
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
        r"""One row per group: label, size, weight, mass, error, standard error, z, means.

        ``z`` is error / standard error by the one safe-ratio rule (:func:`mcviz.core.safe_ratio`,
        the rule after eq. (4) of paper 000): 0 when both are 0 (the responses agree with the
        scores exactly: scores 0 or 1 only), :math:`\pm\infty` when only the standard error is
        0 (an outcome impossible under perfect calibration). It is NaN only where the standard
        error itself is undefined (NaN: a one-observation group of a real-valued response).
        """
        z = np.where(np.isnan(self.standard_error), np.nan,
                     safe_ratio(self.error, np.nan_to_num(self.standard_error)))
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
    r"""Standardised covariates: the space in which local groups are formed.

    Held in O(n) memory whatever the number of category levels: numeric columns as floats and
    each nominal covariate as one integer code per row (never a one-hot matrix).

    Attributes
    ----------
    numeric : ndarray of shape (n, p)
        Standardised numeric covariates and their 0/1 missing flags, one row per observation
        (score order), read-only.
    codes : ndarray of int32, shape (n, q)
        Level code of each nominal covariate (a missing value is one more level), read-only.
    covariates : tuple of str
        The covariates used.
    columns : tuple of str
        Name of each numeric column ("age", "age missing").
    nominal_columns : tuple of str
        Name of each nominal covariate (one per column of ``codes``).
    levels : tuple of tuple of str
        The levels of each nominal covariate, in code order ("missing" last when present).
    scaling : str
    rule : str
        The standardisation in words (shown next to every local chart).

    Notes
    -----
    The squared distance between observations i and j is

    .. math:: \|u_i - u_j\|^2 + \#\{l : c_{il} \ne c_{jl}\},

    with :math:`u` the numeric columns and :math:`c` the nominal codes: exactly the squared
    Euclidean distance of a one-hot encoding whose entries are :math:`1/\sqrt 2` (two different
    levels lie 1 apart), without building it.
    """

    numeric: np.ndarray
    codes: np.ndarray
    covariates: tuple[str, ...]
    columns: tuple[str, ...]
    nominal_columns: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...]
    scaling: str
    rule: str

    def squared_distances(self, rows: np.ndarray, others: np.ndarray) -> np.ndarray:
        """Squared distances between two small sets of observations, shape (len(rows), len(others)).

        For checks and small examples: it allocates ``len(rows) * len(others)`` floats.
        """
        rows, others = np.asarray(rows), np.asarray(others)
        a, b = self.numeric[rows], self.numeric[others]
        d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2)
        if self.codes.shape[1]:
            d2 += (self.codes[rows][:, None, :] != self.codes[others][None, :, :]).sum(axis=2)
        return d2


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

r"""Agglomerations: one number from the calibration errors of a grouping.

Höltgen & Williamson [1] turn group errors into a global score with an *agglomeration function*
on the groups' index set :math:`J`, which carries a probability measure - here each group's
``mass`` (:class:`mcviz.stats.groupings.GroupErrors`), or uniform mass.

Quality scores (Section 4) take the *absolute* errors :math:`|c(I_j)|` and are law-invariant
coherent risk measures (axioms A1-A5): the mean, the maximum, and the conditional value at risk
that interpolates between them,

.. math:: \mathrm{CVaR}_\alpha(C) = \frac{1}{1-\alpha}\int_\alpha^1 Q_C(t)\,dt,
          \qquad \mathrm{CVaR}_0 = \mathbb{E}[C], \quad \mathrm{CVaR}_1 = \max C,

with the quantile function :math:`Q_C(t) = \inf\{c : P(C \le c) \ge t\}` - the finite-sample
definition after Definition 9 of [1], exact for discrete distributions (an atom straddling
:math:`\alpha` contributes only its mass above :math:`\alpha`).

Fairness deviation measures (Section 5.1, Definition 10, Example 12) take the *signed* errors
and satisfy A3-A6 (normalisation: :math:`D(C) \ge 0`, zero exactly for constant C): the range
:math:`\sup C - \inf C`, the standard deviation :math:`\sigma(C)`, and the superquantile
deviation :math:`\mathrm{CVaR}_\alpha(C - \mathbb{E}[C])` for :math:`\alpha > 0`.

Sign: group errors in mcviz are response minus score, :math:`e = -c` with the paper's
:math:`c = \text{mean}(S - R)` of eq. (6). Absolute errors, the range and the standard deviation
do not depend on the sign. The superquantile deviation does (it weighs the upper tail), so it is
computed as the paper defines it, on :math:`c = -e` (the tail of over-prediction), and labelled
"c = score − label (paper 002's sign)".

The ECE, ACE and MCE are special cases (Appendix A eqs. (14)-(16) of [1]): equal-width score
bins with the mean weighted by the bins' mass, the mean with uniform mass, and the maximum.

References
----------
.. [1] B. Höltgen, R. C. Williamson, "On the Richness of Calibration", FAccT 2023; Sections 4-5,
   Definitions 7-10, eq. (11), Proposition 11, Example 12, Appendix A eqs. (14)-(16).
.. [2] R. T. Rockafellar, S. Uryasev, "The fundamental risk quadrangle in risk management,
   optimization and statistical estimation", Surveys in OR and Management Science, 2013.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from mcviz.errors import ValidationError
from mcviz.stats.groupings import GroupErrors, LocalCalibration, score_bins
from mcviz.io import Predictions

__all__ = [
    "AGGLOMERATIONS",
    "Agglomeration",
    "CVaRCurve",
    "CalibrationScore",
    "average_calibration_error",
    "calibration_score",
    "cvar",
    "cvar_curve",
    "expected_calibration_error",
    "maximum_calibration_error",
    "parse_agglomeration",
    "range_deviation",
    "standard_deviation",
    "superquantile_deviation",
]

Name = Literal["mean", "max", "cvar", "range", "std", "superquantile"]
AGGLOMERATIONS: tuple[str, ...] = ("mean", "max", "cvar", "range", "std", "superquantile")
"""Names accepted by :class:`Agglomeration` (the first three are quality scores)."""

_QUALITY = ("mean", "max", "cvar")
_TEXT = {
    "mean": "mean |c|",
    "max": "max |c|",
    "cvar": "CVaR_{alpha} of |c|",
    "range": "range of c (max − min)",
    "std": "standard deviation of c",
    "superquantile": (
        "superquantile deviation CVaR_{alpha}(c − E c), c = score − label (paper 002's sign)"
    ),
}


# --------------------------------------------------------------------------------------------
# The measures on (values, mass)


def _check(values: np.ndarray | Sequence[float], mass: np.ndarray | Sequence[float] | None):
    values = np.asarray(values, dtype=float).ravel()
    if values.size == 0:
        raise ValidationError("no group errors to agglomerate.")
    if not np.isfinite(values).all():
        bad = int((~np.isfinite(values)).sum())
        raise ValidationError(f"{bad:,} of {values.size:,} group errors are NaN or infinite.")
    if mass is None:
        mass = np.full(values.size, 1.0 / values.size)
    else:
        mass = np.asarray(mass, dtype=float).ravel()
        if mass.shape != values.shape:
            raise ValidationError(
                f"mass has {mass.size:,} entries but there are {values.size:,} group errors."
            )
        if not np.isfinite(mass).all() or (mass < 0).any() or mass.sum() <= 0:
            raise ValidationError("mass must be finite, non-negative and not all zero.")
        mass = mass / mass.sum()
    return values, mass


def _check_alpha(alpha: float, *, positive: bool = False) -> float:
    alpha = float(alpha)
    low_ok = alpha > 0 if positive else alpha >= 0
    if not (low_ok and alpha <= 1):
        interval = "(0, 1]" if positive else "[0, 1]"
        raise ValidationError(f"alpha must lie in {interval}, not {alpha!r}.")
    return alpha


def _tail_integrals(values: np.ndarray, mass: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    r"""Return :math:`\int_\alpha^1 Q(t)\,dt` for each alpha (values sorted internally)."""
    order = np.argsort(values, kind="stable")
    v = values[order]
    p = mass[order]
    upper = np.cumsum(p)
    upper[-1] = 1.0  # F at the largest value, exactly
    # tail[j] = sum_{i > j} v_i p_i: the integral over (F_j, 1].
    tail = np.concatenate((np.cumsum((v * p)[::-1])[::-1][1:], [0.0]))
    j = np.minimum(np.searchsorted(upper, alphas, side="right"), v.size - 1)
    # alpha lies in [F_{j-1}, F_j): Q = v_j on (alpha, F_j].
    return v[j] * (upper[j] - alphas) + tail[j]


def cvar(
    values: np.ndarray | Sequence[float],
    alpha: float,
    mass: np.ndarray | Sequence[float] | None = None,
) -> float:
    r"""Return the conditional value at risk of a discrete law.

    .. math:: \mathrm{CVaR}_\alpha(C) = \frac{1}{1-\alpha}\int_\alpha^1 Q_C(t)\,dt

    Parameters
    ----------
    values : array of shape (m,)
    alpha : float in [0, 1]
        0 gives the (mass-weighted) mean, 1 the largest value with positive mass.
    mass : array of shape (m,), optional
        Probability of each value (normalised; default uniform).

    Returns
    -------
    float

    Examples
    --------
    Four equally likely values: the top half averages 3 and 4; at alpha = 0.6 the atom 3
    contributes mass 0.15 and the atom 4 mass 0.25, so (0.45 + 1.0)/0.4 = 3.625.

    >>> [round(cvar([1, 2, 3, 4], alpha), 12) for alpha in (0.0, 0.5, 0.6, 1.0)]
    [2.5, 3.5, 3.625, 4.0]
    """
    values, mass = _check(values, mass)
    alpha = _check_alpha(alpha)
    if alpha >= 1.0:
        return float(values[mass > 0].max())
    return float(_tail_integrals(values, mass, np.array([alpha]))[0] / (1.0 - alpha))


@dataclass(frozen=True, slots=True, eq=False)
class CVaRCurve:
    r"""CVaR_alpha of the absolute group errors against alpha.

    Attributes
    ----------
    alpha : ndarray
        From 0 (the mean) to 1 (the maximum).
    value : ndarray
        :math:`\mathrm{CVaR}_\alpha(|C|)`, non-decreasing in alpha.
    mean, maximum : float
    description : str
        The grouping (for the chart's subtitle).
    """

    alpha: np.ndarray
    value: np.ndarray
    mean: float
    maximum: float
    description: str


def cvar_curve(
    groups: GroupErrors | LocalCalibration | np.ndarray | Sequence[float],
    *,
    alphas: np.ndarray | Sequence[float] | None = None,
    uniform: bool = False,
) -> CVaRCurve:
    """CVaR of the absolute group errors over a grid of alpha (Section 4 of [1]).

    Parameters
    ----------
    groups : GroupErrors, LocalCalibration or array of group errors
        With an array the mass is uniform.
    alphas : array, optional
        Default: 201 points from 0 to 1.
    uniform : bool, default False
        Give every group the same mass instead of ``groups.mass``.

    Returns
    -------
    CVaRCurve

    Examples
    --------
    >>> curve = cvar_curve(np.array([-1.0, 2.0, 3.0, -4.0]), alphas=[0, 0.5, 1])
    >>> curve.value.tolist()
    [2.5, 3.5, 4.0]
    """
    values, mass, description = _values_and_mass(groups, uniform)
    values = np.abs(values)
    grid = np.linspace(0.0, 1.0, 201) if alphas is None else np.asarray(alphas, dtype=float)
    if grid.size == 0 or (grid < 0).any() or (grid > 1).any():
        raise ValidationError("alphas must lie in [0, 1].")
    out = np.empty(grid.size)
    inner = grid < 1.0
    out[inner] = _tail_integrals(values, mass, grid[inner]) / (1.0 - grid[inner])
    maximum = float(values[mass > 0].max())
    out[~inner] = maximum
    out = np.minimum(np.maximum.accumulate(out) if np.all(np.diff(grid) >= 0) else out, maximum)
    out.flags.writeable = False
    grid = grid.copy()
    grid.flags.writeable = False
    return CVaRCurve(
        alpha=grid, value=out, mean=float(np.sum(values * mass)), maximum=maximum,
        description=description,
    )


def range_deviation(values: np.ndarray | Sequence[float],
                    mass: np.ndarray | Sequence[float] | None = None) -> float:
    """Return the range deviation sup C - inf C over groups with positive mass (Example 12.3).

    Examples
    --------
    >>> range_deviation([-0.1, 0.05, 0.2])
    0.30000000000000004
    """
    values, mass = _check(values, mass)
    present = values[mass > 0]
    return float(present.max() - present.min())


def standard_deviation(values: np.ndarray | Sequence[float],
                       mass: np.ndarray | Sequence[float] | None = None) -> float:
    r"""Return the standard deviation :math:`\sqrt{\mathbb{E}[(C - \mathbb{E}C)^2]}` (Ex. 12.2).

    Examples
    --------
    >>> standard_deviation([-1.0, 1.0])
    1.0
    """
    values, mass = _check(values, mass)
    mean = np.sum(values * mass)
    return float(np.sqrt(max(np.sum(mass * (values - mean) ** 2), 0.0)))


def superquantile_deviation(values: np.ndarray | Sequence[float], alpha: float,
                            mass: np.ndarray | Sequence[float] | None = None) -> float:
    r"""Return the superquantile deviation :math:`\mathrm{CVaR}_\alpha(C - \mathbb{E}C)` (Ex. 12.1).

    Examples
    --------
    >>> superquantile_deviation([-1.0, 1.0], 0.5)
    1.0
    """
    values, mass = _check(values, mass)
    alpha = _check_alpha(alpha, positive=True)
    centred = values - np.sum(values * mass)
    return max(cvar(centred, alpha, mass), 0.0)


# --------------------------------------------------------------------------------------------
# Agglomeration objects and scores


@dataclass(frozen=True, slots=True)
class Agglomeration:
    """A choice of agglomeration function.

    Parameters
    ----------
    name : {"mean", "max", "cvar", "range", "std", "superquantile"}
        The first three are quality scores over absolute errors; the last three fairness
        deviation measures over signed errors.
    alpha : float, optional
        Needed by ``"cvar"`` (in [0, 1]) and ``"superquantile"`` (in (0, 1]).

    Examples
    --------
    >>> Agglomeration("cvar", 0.9).description
    'CVaR_0.9 of |c|'
    >>> Agglomeration("std")([0.1, -0.1])
    0.1
    """

    name: Name
    alpha: float | None = None

    def __post_init__(self) -> None:
        if self.name not in AGGLOMERATIONS:
            raise ValidationError(
                f"agglomeration must be one of {', '.join(AGGLOMERATIONS)}, not {self.name!r}."
            )
        if self.name in ("cvar", "superquantile"):
            if self.alpha is None:
                raise ValidationError(f"agglomeration {self.name!r} needs alpha.")
            _check_alpha(self.alpha, positive=self.name == "superquantile")
        elif self.alpha is not None:
            raise ValidationError(f"agglomeration {self.name!r} takes no alpha.")

    @property
    def kind(self) -> str:
        """``"quality"`` (over absolute errors) or ``"fairness"`` (over signed errors)."""
        return "quality" if self.name in _QUALITY else "fairness"

    @property
    def description(self) -> str:
        """The agglomeration in words."""
        alpha = "" if self.alpha is None else f"{self.alpha:g}"
        return _TEXT[self.name].replace("{alpha}", alpha)

    def __call__(self, values: np.ndarray | Sequence[float],
                 mass: np.ndarray | Sequence[float] | None = None) -> float:
        """Agglomerate signed group errors, response minus score (absolute for quality scores).

        The superquantile deviation is taken of the paper's :math:`c = -e` (see the module
        notes); every other measure is the same for either sign.
        """
        values, mass = _check(values, mass)
        if self.name == "mean":
            return float(np.sum(np.abs(values) * mass))
        if self.name == "max":
            return float(np.abs(values[mass > 0]).max())
        if self.name == "cvar":
            return cvar(np.abs(values), self.alpha, mass)
        if self.name == "range":
            return range_deviation(values, mass)
        if self.name == "std":
            return standard_deviation(values, mass)
        return superquantile_deviation(-values, self.alpha, mass)  # paper 002's c = S - R


def parse_agglomeration(text: str) -> Agglomeration:
    """Read "mean", "max", "cvar:0.9", "range", "std" or "superquantile:0.5".

    Examples
    --------
    >>> parse_agglomeration("cvar:0.9")
    Agglomeration(name='cvar', alpha=0.9)
    """
    name, _, alpha = text.strip().partition(":")
    if alpha:
        try:
            value = float(alpha)
        except ValueError:
            raise ValidationError(f"alpha in {text!r} is not a number.") from None
        return Agglomeration(name.strip(), value)  # type: ignore[arg-type]
    return Agglomeration(name.strip())  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True, eq=False)
class CalibrationScore:
    """A global calibration score: one grouping agglomerated one way.

    Attributes
    ----------
    value : float
    agglomeration : Agglomeration
    kind : str
        ``"quality"`` or ``"fairness"``.
    grouping : str
        The grouping's kind and description.
    n_groups : int
    uniform : bool
        True when every group had the same mass.
    worst_group : str
        Label of the group with the largest absolute error (quality) or the largest distance
        from the mean error (fairness).
    worst_error : float
        Its signed error.
    """

    value: float
    agglomeration: Agglomeration
    kind: str
    grouping: str
    n_groups: int
    uniform: bool
    worst_group: str
    worst_error: float


def _values_and_mass(
    groups: GroupErrors | LocalCalibration | np.ndarray | Sequence[float], uniform: bool
) -> tuple[np.ndarray, np.ndarray, str]:
    if isinstance(groups, LocalCalibration):
        groups = groups.groups
    if isinstance(groups, GroupErrors):
        values, mass = _check(groups.error, None if uniform else groups.mass)
        return values, mass, f"{groups.kind}: {groups.description}"
    values, mass = _check(groups, None)
    return values, mass, f"{values.size} group errors"


def calibration_score(
    groups: GroupErrors | LocalCalibration,
    agglomeration: Agglomeration | str,
    *,
    uniform: bool = False,
) -> CalibrationScore:
    """Agglomerate a grouping's errors into one score (Sections 4-5 of [1]).

    Parameters
    ----------
    groups : GroupErrors or LocalCalibration
        From :mod:`mcviz.stats.groupings` (a LocalCalibration stands for its ``groups``).
    agglomeration : Agglomeration or str
        An object or text such as ``"cvar:0.9"`` (see :func:`parse_agglomeration`).
    uniform : bool, default False
        Give every group the same mass (as the ACE does) instead of ``groups.mass``.

    Returns
    -------
    CalibrationScore

    Examples
    --------
    Bins [0, 0.5] and (0.5, 1] have errors mean(label - score) (1 - 0.2 - 0.4)/2 = 0.2 and
    -(0.6 + 0.8)/2 = -0.7.

    >>> pred = Predictions.from_arrays([0.2, 0.4, 0.6, 0.8], [0, 1, 0, 0])
    >>> score = calibration_score(score_bins(pred, n_bins=2), "max")
    >>> round(score.value, 12), score.worst_group
    (0.7, '(0.5, 1]')
    """
    if isinstance(agglomeration, str):
        agglomeration = parse_agglomeration(agglomeration)
    values, mass, description = _values_and_mass(groups, uniform)
    value = agglomeration(values, mass)
    if agglomeration.kind == "quality":
        distance = np.where(mass > 0, np.abs(values), -np.inf)
    else:
        distance = np.where(mass > 0, np.abs(values - np.sum(values * mass)), -np.inf)
    worst = int(np.argmax(distance))
    labels = groups.groups.labels if isinstance(groups, LocalCalibration) else groups.labels
    return CalibrationScore(
        value=value,
        agglomeration=agglomeration,
        kind=agglomeration.kind,
        grouping=description,
        n_groups=int(values.size),
        uniform=uniform,
        worst_group=labels[worst],
        worst_error=float(values[worst]),
    )


# --------------------------------------------------------------------------------------------
# Established scores as special cases (Appendix A of [1])


def expected_calibration_error(
    pred: Predictions, *, n_bins: int = 10, strategy: Literal["width", "count"] = "width"
) -> float:
    r"""ECE, eq. (14) of [1]: score bins, mean of :math:`|c(I)|` weighted by the bins' mass.

    .. math:: \mathrm{ECE} = \sum_k \frac{W(B_k)}{W} |c(B_k)|

    Examples
    --------
    Bins [0, 0.5] and (0.5, 1] with errors 0.4 and 0.4: ECE = 0.4.

    >>> pred = Predictions.from_arrays([0.05, 0.15, 0.55, 0.65], [0, 1, 1, 1])
    >>> round(expected_calibration_error(pred, n_bins=2), 12)
    0.4

    Notes
    -----
    The value is :func:`mcviz.stats.binning.calibration_metrics`' (the one ECE implementation);
    :func:`calibration_score` of :func:`mcviz.stats.groupings.score_bins` with ``"mean"`` gives the
    same number as grouping × agglomeration (Appendix A of [1]).
    """
    from mcviz.stats.binning import calibration_metrics

    if strategy not in ("width", "count"):
        raise ValidationError(f"strategy must be 'width' or 'count', not {strategy!r}.")
    metrics = calibration_metrics(pred, n_bins=n_bins)
    return metrics.ece_equal_width if strategy == "width" else metrics.ece_equal_count


def average_calibration_error(
    pred: Predictions, *, n_bins: int = 10, strategy: Literal["width", "count"] = "width"
) -> float:
    r"""ACE, eq. (15) of [1]: the non-empty score bins' :math:`|c(I)|` averaged with equal mass.

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.05, 0.15, 0.55], [0, 1, 1])
    >>> round(average_calibration_error(pred, n_bins=2), 12)
    0.425
    """
    return calibration_score(
        score_bins(pred, n_bins=n_bins, strategy=strategy), "mean", uniform=True
    ).value


def maximum_calibration_error(
    pred: Predictions, *, n_bins: int = 10, strategy: Literal["width", "count"] = "width"
) -> float:
    r"""MCE, eq. (16) of [1]: the largest :math:`|c(I)|` over the non-empty score bins.

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.05, 0.15, 0.55], [0, 1, 1])
    >>> round(maximum_calibration_error(pred, n_bins=2), 12)
    0.45
    """
    return calibration_score(score_bins(pred, n_bins=n_bins, strategy=strategy), "max").value

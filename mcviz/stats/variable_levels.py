r"""Variable-based calibration of a nominal variable: error and predicted error per level.

Nominal variables get one bin per level (a missing value is its own level): the error rate
and mean predicted error of each level with 95% intervals, the largest per-level gap among the
levels with enough rows to say something (at least 30 effective rows and a gap interval within
±10 percentage points; reported as VCE, at that level) and VECE over all levels.

The error :math:`e` and predicted error :math:`\hat e` are those of
:mod:`mcviz.stats.variable_curves` (top label, Kelly & Smyth [1], Section 6).

References
----------
.. [1] M. Kelly, P. Smyth, "Variable-Based Calibration for Machine Learning Classifiers",
   AAAI 2023; eqs. (7)-(8), Table 1, Section 6, Appendix B.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import ndtri

from mcviz.core.arrays import Z95
from mcviz.core.arrays import readonly as _readonly
from mcviz.core.sigma import sigma_from_variance
from mcviz.io import Predictions
from mcviz.stats.variable_curves import json_number, prediction_errors

__all__ = ["LevelCalibration", "level_calibration", "level_calibration_from_sums"]

MISSING_LEVEL = "(missing)"
MIN_LEVEL_ROWS = 30
"""Levels with fewer effective rows are left out of VCE(v*)."""
MAX_LEVEL_HALF_WIDTH = 0.10
"""Levels whose gap has a wider 95% interval (half-width, probability units) are left out."""


@dataclass(frozen=True, slots=True, eq=False)
class LevelCalibration:
    r"""Error rate and mean predicted error per level of a nominal variable.

    Attributes
    ----------
    name : str
    kind : str
        ``"nominal"`` (the covariate kind of :attr:`Predictions.covariate_kinds`).
    levels : tuple of str
        Levels in their category order (``"(missing)"`` last when present).
    count : ndarray
        Rows per level.
    effective_size : ndarray
        Kish's effective number of rows per level, :math:`(\sum W_i)^2 / \sum W_i^2` (the
        count when unweighted).
    weight_share : ndarray
        :math:`W_l / W`.
    error, predicted, gap : ndarray
        Per-level (weighted) mean of :math:`e`, :math:`\hat e` and :math:`e - \hat e`.
    error_lower, error_upper, predicted_lower, predicted_upper, gap_lower, gap_upper : ndarray
        95% normal intervals: mean ± 1.96 · sqrt(Σ W_i² (x_i − mean)²) / Σ W_i (the binomial
        interval sqrt(p(1−p)/n) when unweighted); rates clipped to [0, 1].
    eligible : ndarray of bool
        Levels with enough rows to say something: an effective size of at least
        ``MIN_LEVEL_ROWS`` (30) and a 95% interval of the gap no wider than
        ± ``MAX_LEVEL_HALF_WIDTH`` (10 percentage points).
    vce : float
        The largest |gap| among eligible levels (NaN when none is).
    vce_at : str or None
        Its level.
    vce_support : float
        The weight of that level (its rows when unweighted).
    vece : float
        Eq. (7) with one bin per level (every level, weighted by its share).
    n : int
    warnings : tuple of str
        Levels left out of VCE, in words.
    vce_ci : tuple of float
        The gap at that level ± :math:`z\,\mathrm{se}`, with :math:`z` Bonferroni's over the
        eligible levels it was picked from (:math:`\Phi^{-1}(1 - 0.025/m)`); NaN when VCE is.
    vce_significant : bool
        ``vce_ci`` excludes 0; False: VCE(v*) is within noise.
    """

    name: str
    kind: str
    levels: tuple[str, ...]
    count: np.ndarray
    effective_size: np.ndarray
    weight_share: np.ndarray
    error: np.ndarray
    predicted: np.ndarray
    gap: np.ndarray
    error_lower: np.ndarray
    error_upper: np.ndarray
    predicted_lower: np.ndarray
    predicted_upper: np.ndarray
    gap_lower: np.ndarray
    gap_upper: np.ndarray
    eligible: np.ndarray
    vce: float
    vce_at: str | None
    vce_support: float
    vece: float
    n: int
    warnings: tuple[str, ...]
    vce_ci: tuple[float, float] = (float("nan"), float("nan"))
    vce_significant: bool = False

    def record(self) -> dict:
        """Return the JSON-ready summary (the fields of ``mcviz variables --json``)."""
        return {
            "name": self.name, "kind": self.kind, "vece": json_number(self.vece),
            "vce": json_number(self.vce), "vce_at": self.vce_at,
            "vce_support": json_number(self.vce_support),
            "vce_ci": [json_number(v) for v in self.vce_ci] if self.vce_at is not None else None,
            "vce_significant": self.vce_significant, "kuiper_z": None, "p_value": None,
            "span": None, "span_chosen": False, "n": self.n, "spikes": [],
            "warnings": list(self.warnings),
        }


def _level_codes(series: pd.Series) -> tuple[np.ndarray, tuple[str, ...]]:
    categorical = series.astype("category") if not isinstance(
        series.dtype, pd.CategoricalDtype
    ) else series
    codes = categorical.cat.codes.to_numpy().astype(np.int64)
    levels = [str(c) for c in categorical.cat.categories]
    if (codes < 0).any():
        codes = np.where(codes < 0, len(levels), codes)
        levels.append(MISSING_LEVEL)
    return codes, tuple(levels)


def level_calibration(
    pred: Predictions, variable: str, *, index: np.ndarray | None = None
) -> LevelCalibration:
    r"""Per-level error rate and mean predicted error of a covariate, with 95% intervals.

    Parameters
    ----------
    pred : Predictions
    variable : str
        Any covariate (nominal ones are the intended use; numeric values become levels).
    index : array of int or bool, optional
        A subpopulation (positions in score order or a mask): its rows alone.

    Returns
    -------
    LevelCalibration

    Notes
    -----
    VCE(v*) is the largest |gap| among the levels with enough rows to say something: an
    effective size :math:`(\sum W_i)^2 / \sum W_i^2` of at least 30 and a gap interval of at
    most ±10 percentage points (1.96 times its standard error). Other levels keep their
    estimates and intervals and count in VECE; ``warnings`` names them.

    Examples
    --------
    Two rows per level are too few for VCE(v*), which is then not reported:

    >>> pred = Predictions.from_arrays([0.9, 0.8, 0.2, 0.3], [1, 0, 0, 0],
    ...                                covariates={"g": ["a", "a", "b", "b"]})
    >>> result = level_calibration(pred, "g")
    >>> result.levels, np.round(result.gap, 10).tolist(), result.vce_at
    (('a', 'b'), [0.35, -0.25], None)
    """
    pred = pred.subset(index)
    pred.require_covariate(variable)
    error, predicted = prediction_errors(pred)
    codes, levels = _level_codes(pred.covariates[variable])
    size = len(levels)
    w = pred.weight
    total = np.bincount(codes, weights=w, minlength=size)
    present = total > 0
    safe = np.where(present, total, 1.0)

    def mean_and_interval(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mean = np.bincount(codes, weights=w * values, minlength=size) / safe
        deviation = values - mean[codes]
        variance = np.bincount(codes, weights=(w * deviation) ** 2, minlength=size)
        return mean, sigma_from_variance(variance, total)  # sqrt(sum W^2 (x - mean)^2) / sum W

    error_mean, error_se = mean_and_interval(error)
    predicted_mean, predicted_se = mean_and_interval(predicted)
    gap, gap_se = mean_and_interval(error - predicted)
    square = np.bincount(codes, weights=w * w, minlength=size)
    return _assembled(variable, levels, np.bincount(codes, minlength=size), total, square,
                      (error_mean, error_se), (predicted_mean, predicted_se), (gap, gap_se),
                      pred.n)


def level_calibration_from_sums(variable: str, levels: tuple[str, ...], sums: dict
                                ) -> LevelCalibration:
    r"""Return :func:`level_calibration` of binary rows given as sums per level (a GROUP BY).

    ``sums`` holds one array per level (in ``levels``' order): ``n`` rows, ``w``
    :math:`\sum W`, ``ww`` :math:`\sum W^2`, ``we`` :math:`\sum W e`, ``wp``
    :math:`\sum W \hat e`, ``wwe`` :math:`\sum W^2 e` (:math:`e^2 = e`), ``wwp``
    :math:`\sum W^2 \hat e`, ``wwpp`` :math:`\sum W^2 \hat e^2` and ``wwep``
    :math:`\sum W^2 e \hat e`. The means are the sums' ratios and
    :math:`\sum W^2 (x - m)^2 = \sum W^2 x^2 - 2 m \sum W^2 x + m^2 \sum W^2`, so every
    field is the in-memory one up to rounding (the intervals' variances by this expansion).
    """
    total = np.asarray(sums["w"], dtype=float)
    square = np.asarray(sums["ww"], dtype=float)
    safe = np.where(total > 0, total, 1.0)

    def mean_and_interval(first: np.ndarray, weighted_first: np.ndarray,
                          weighted_second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mean = first / safe
        variance = weighted_second - 2.0 * mean * weighted_first + mean * mean * square
        return mean, sigma_from_variance(variance, total)

    we, wp, wwe, wwp = (np.asarray(sums[k], dtype=float) for k in ("we", "wp", "wwe", "wwp"))
    wwpp, wwep = np.asarray(sums["wwpp"], dtype=float), np.asarray(sums["wwep"], dtype=float)
    return _assembled(variable, tuple(levels), np.asarray(sums["n"], dtype=np.int64), total,
                      square, mean_and_interval(we, wwe, wwe),
                      mean_and_interval(wp, wwp, wwpp),
                      mean_and_interval(we - wp, wwe - wwp, wwe - 2.0 * wwep + wwpp),
                      int(np.sum(sums["n"])))


def _assembled(variable: str, levels: tuple[str, ...], count: np.ndarray, total: np.ndarray,
               square: np.ndarray, error: tuple, predicted: tuple, gap_pair: tuple,
               n: int) -> LevelCalibration:
    """Assemble the result from each level's rows, weights and (mean, se) of e, ê, e - ê."""
    (error_mean, error_se), (predicted_mean, predicted_se) = error, predicted
    gap, gap_se = gap_pair
    present = total > 0
    keep = np.flatnonzero(present)
    share = total / total.sum()
    effective = total**2 / np.maximum(square, 1e-300)
    eligible = (effective >= MIN_LEVEL_ROWS) & (Z95 * gap_se <= MAX_LEVEL_HALF_WIDTH) & present
    vce, vce_at, vce_support, warnings = _level_vce(variable, levels, gap, eligible, total, keep)
    vce_ci, significant = (float("nan"), float("nan")), False
    if vce_at is not None:  # Bonferroni over the eligible levels the largest gap was picked from
        at = levels.index(vce_at)
        z = float(ndtri(1.0 - 0.025 / max(int(eligible.sum()), 1)))
        vce_ci = (max(float(gap[at] - z * gap_se[at]), -1.0),
                  min(float(gap[at] + z * gap_se[at]), 1.0))
        significant = bool(vce_ci[0] > 0 or vce_ci[1] < 0)

    def pick(array: np.ndarray) -> np.ndarray:
        return _readonly(array[keep])

    return LevelCalibration(
        name=variable,
        kind="nominal",
        levels=tuple(levels[i] for i in keep),
        count=pick(count),
        effective_size=pick(effective),
        weight_share=pick(share),
        error=pick(error_mean),
        predicted=pick(predicted_mean),
        gap=pick(gap),
        error_lower=pick(np.clip(error_mean - Z95 * error_se, 0, 1)),
        error_upper=pick(np.clip(error_mean + Z95 * error_se, 0, 1)),
        predicted_lower=pick(np.clip(predicted_mean - Z95 * predicted_se, 0, 1)),
        predicted_upper=pick(np.clip(predicted_mean + Z95 * predicted_se, 0, 1)),
        gap_lower=pick(np.clip(gap - Z95 * gap_se, -1, 1)),
        gap_upper=pick(np.clip(gap + Z95 * gap_se, -1, 1)),
        eligible=pick(eligible),
        vce=vce,
        vce_at=vce_at,
        vce_support=vce_support,
        vece=float(np.sum(share[keep] * np.abs(gap[keep]))),  # eq. (7), one bin per level
        n=n,
        warnings=tuple(warnings),
        vce_ci=vce_ci,
        vce_significant=significant,
    )


def _level_vce(
    variable: str, levels: tuple[str, ...], gap: np.ndarray, eligible: np.ndarray,
    total: np.ndarray, keep: np.ndarray,
) -> tuple[float, str | None, float, list[str]]:
    """Largest |gap| among eligible levels, its level and weight, and what was left out."""
    warnings = []
    left_out = keep[~eligible[keep]]
    if left_out.size:
        names = ", ".join(repr(levels[i]) for i in left_out[:5])
        more = f" and {left_out.size - 5} more" if left_out.size > 5 else ""
        warnings.append(
            f"{variable}: {left_out.size} of {keep.size} levels ({names}{more}) have fewer than "
            f"{MIN_LEVEL_ROWS} effective rows or a gap interval wider than "
            f"±{100 * MAX_LEVEL_HALF_WIDTH:g} pp; left out of VCE(v*)."
        )
    chosen = keep[eligible[keep]]
    if not chosen.size:
        warnings.append(f"{variable}: no level has enough rows; VCE(v*) is not reported.")
        return float("nan"), None, float("nan"), warnings
    where = int(chosen[np.argmax(np.abs(gap[chosen]))])
    return float(abs(gap[where])), levels[where], float(total[where]), warnings

"""Group errors and standard errors from per-group sums (shared by every grouping)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from mcviz.core.arrays import readonly as _readonly
from mcviz.core.conditions import ordinal_values
from mcviz.core.sigma import sigma_from_variance
from mcviz.errors import ValidationError
from mcviz.stats.groupings.results import GroupErrors
from mcviz.io import Predictions

SUM_KEYS = ("v_sum", "v2_sum", "vd_sum", "vd2_sum", "var_sum", "vs_sum")
"""The per-group sums every grouping computes (see :func:`_per_point`)."""


def _se_method(pred: Predictions) -> str:
    return "null (eq. 5)" if pred.response_kind == "binary" else "empirical"


def _from_sums(
    *,
    pred: Predictions,
    kind: str,
    description: str,
    labels: Sequence[str],
    size: np.ndarray,
    sums: Mapping[str, np.ndarray],
    mass: np.ndarray,
    centre: np.ndarray | None,
    overlapping: bool,
    notice: str | None,
) -> GroupErrors:
    """Assemble :class:`GroupErrors` from per-group sums (``sums``: :data:`SUM_KEYS`)."""
    v_sum, v2_sum = sums["v_sum"], sums["v2_sum"]
    error, standard_error = _error_and_se(
        pred.response_kind, size, *(sums[key] for key in SUM_KEYS[:5])
    )
    mean_score = sums["vs_sum"] / v_sum
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
        mean_label=_readonly(mean_score + error),
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
    """Group errors (eq. (6) of [1], sign reversed) and their standard errors from sums."""
    error = vd_sum / v_sum  # -c(I), eq. (6) of [1]: weighted mean of R - S
    if response_kind == "binary":
        return error, sigma_from_variance(var_sum, v_sum)  # eq. (5) of [2] for the group
    # sum v² (d - c)² = sum v² d² - 2 c sum v² d + c² sum v²; var_sum holds sum v² d here.
    centred = np.maximum(vd2_sum - 2.0 * error * var_sum + error**2 * v2_sum, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        correction = np.where(size > 1, np.sqrt(size / np.maximum(size - 1, 1)), np.nan)
    return error, correction * sigma_from_variance(centred, v_sum)  # empirical v in eq. (5)


def _per_point(pred: Predictions) -> dict[str, np.ndarray]:
    """Per-observation terms (keyed by :data:`SUM_KEYS`) whose group sums give every statistic.

    v, v², v·d, v²·d², v²·spread and v·S, with v the weight and d = R - S (the sign of
    mcviz.stats.cumulative); spread is S(1 - S) for binary responses (the null standard error) and
    otherwise d (to centre the empirical one).
    """
    w = pred.weight
    d = pred.label - pred.score
    spread = pred.score * (1.0 - pred.score) if pred.response_kind == "binary" else d
    values = (w, w**2, w * d, w**2 * d**2, w**2 * spread, w * pred.score)
    return dict(zip(SUM_KEYS, values, strict=True))


def _check_columns(pred: Predictions, columns: Sequence[str]) -> list[str]:
    columns = [columns] if isinstance(columns, str) else list(columns)
    for column in columns:
        pred.require_covariate(column)
    return columns


def _observed(series: pd.Series, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Numeric values (NaN where missing), the mask of observed ones, and those values."""
    values = ordinal_values(series)
    present = ~np.isnan(values)
    observed = values[present]
    if observed.size == 0:
        raise ValidationError(f"covariate {name!r} is missing on every row.", column=name)
    return values, present, observed

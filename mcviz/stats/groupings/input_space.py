"""The input space: standardised covariates in which local groups are formed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mcviz.core.arrays import readonly as _readonly
from mcviz.errors import ValidationError
from mcviz.stats.groupings._sums import _check_columns, _observed
from mcviz.stats.groupings.results import InputSpace, Scaling
from mcviz.io import Predictions

ROBUST_SCALE = 1.349
"""IQR / 1.349 is the standard deviation of a normal distribution."""

RULE_NOMINAL = (
    "nominal covariates: distance 0 between equal levels and 1 between different ones (a "
    "missing value is one more level), as one-hot columns scaled by 1/√2; Euclidean distance"
)


@dataclass(frozen=True, slots=True)
class SpaceShape:
    """Columns of an input space, known before it is built (for the resource model)."""

    names: tuple[str, ...]
    numeric: int  # numeric columns, missing flags included
    nominal: int  # nominal covariates
    levels: int  # levels of the nominal covariates, summed
    level_counts: tuple[int, ...] = ()  # levels of each nominal covariate


def space_shape(pred: Predictions, covariates: Sequence[str] | None) -> SpaceShape:
    """Validate the covariates and count the columns of their input space (O(n), no copies)."""
    names = list(pred.covariates.columns) if covariates is None else _check_columns(
        pred, covariates
    )
    if not names:
        raise ValidationError("no covariates to form an input space; choose at least one.")
    numeric = nominal = 0
    counts: list[int] = []
    for name in names:
        series = pred.covariates[name]
        if isinstance(series.dtype, pd.CategoricalDtype):
            nominal += 1
            counts.append(len(series.cat.categories) + int(bool(series.isna().any())))
        else:
            numeric += 1 + int(bool(series.isna().any()))
    return SpaceShape(tuple(names), numeric, nominal, sum(counts), tuple(counts))


def input_space(
    pred: Predictions,
    covariates: Sequence[str] | None = None,
    *,
    scaling: Scaling = "robust",
) -> InputSpace:
    r"""Standardise covariates for nearest-neighbour and kernel groups.

    Parameters
    ----------
    pred : Predictions
    covariates : sequence of str, optional
        Default: every covariate.
    scaling : {"robust", "standard"}
        Numeric covariates: (x - median) / (IQR/1.349), or (x - mean) / sd. Nominal covariates
        are held as integer codes: two different levels lie 1 apart (the distance of a one-hot
        encoding scaled by :math:`1/\sqrt 2`, never built). See the module notes.

    Returns
    -------
    InputSpace
        Memory O(n · covariates), independent of the number of levels.

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.1, 0.2, 0.3], [0, 1, 0],
    ...                                covariates={"c": ["a", "b", "a"]})
    >>> space = input_space(pred)
    >>> space.levels, space.squared_distances([0], [1, 2]).tolist()
    ((('a', 'b'),), [[1.0, 0.0]])
    """
    if scaling not in ("robust", "standard"):
        raise ValidationError(f"scaling must be 'robust' or 'standard', not {scaling!r}.")
    shape = space_shape(pred, covariates)
    numeric: list[np.ndarray] = []
    columns: list[str] = []
    codes: list[np.ndarray] = []
    nominal_columns: list[str] = []
    levels: list[tuple[str, ...]] = []
    for name in shape.names:
        series = pred.covariates[name]
        if isinstance(series.dtype, pd.CategoricalDtype):
            code = series.cat.codes.to_numpy().astype(np.int32)
            names = [str(level) for level in series.cat.categories]
            if (code < 0).any():
                code = np.where(code < 0, len(names), code).astype(np.int32)
                names.append("missing")
            codes.append(code)
            nominal_columns.append(name)
            levels.append(tuple(names))
            continue
        values, present = _standardised(series, name, scaling)
        numeric.append(values)
        columns.append(name)
        if not present.all():
            numeric.append((~present).astype(float))
            columns.append(f"{name} missing")
    rule = (
        ("numeric covariates: (x − median)/(IQR/1.349)" if scaling == "robust"
         else "numeric covariates: (x − mean)/sd")
        + "; missing numeric values at the centre plus a 0/1 missing flag; " + RULE_NOMINAL
    )
    n = pred.n
    return InputSpace(
        numeric=_readonly(np.column_stack(numeric) if numeric else np.zeros((n, 0))),
        codes=_readonly(np.column_stack(codes) if codes else np.zeros((n, 0), np.int32)),
        covariates=shape.names,
        columns=tuple(columns),
        nominal_columns=tuple(nominal_columns),
        levels=tuple(levels),
        scaling=scaling,
        rule=rule,
    )


def _standardised(series: pd.Series, name: str, scaling: str) -> tuple[np.ndarray, np.ndarray]:
    """Return (x - centre) / scale with missing values at 0, and the mask of observed values."""
    values, present, observed = _observed(series, name)
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
    return np.where(present, (values - centre) / scale, 0.0) + 0.0, present


def _centres(n: int, max_centres: int | None, seed: int) -> tuple[np.ndarray, bool]:
    if max_centres is not None and max_centres < 1:
        raise ValidationError(f"max_centres must be positive, not {max_centres}.")
    if max_centres is None or max_centres >= n:
        return np.arange(n), False
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n, size=max_centres, replace=False)), True


def _n_centres(n: int, max_centres: int | None) -> int:
    return n if max_centres is None else min(n, max(int(max_centres), 1))


def _check_k(k: int, n: int) -> int:
    if not isinstance(k, int | np.integer) or k < 1:
        raise ValidationError(f"k must be a positive integer, not {k!r}.")
    if k > n:
        raise ValidationError(f"k = {k:,} exceeds the number of observations ({n:,}).")
    return int(k)

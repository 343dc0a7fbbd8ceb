"""The input space: standardised covariates in which local groups are formed."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError
from mcviz.groupings._sums import _check_columns, _numeric_values
from mcviz.groupings.results import InputSpace, Scaling, _readonly
from mcviz.io import Predictions

ROBUST_SCALE = 1.349
"""IQR / 1.349 is the standard deviation of a normal distribution."""

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


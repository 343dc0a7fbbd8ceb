"""One covariate as numpy arrays (:class:`CovariateColumn`), read without pandas when it can be.

:meth:`mcviz.io.Predictions.covariate_column` gives it: from a Parquet file's Arrow columns
(:mod:`mcviz.io.arrow_path`) or from the covariates' DataFrame (:func:`column_of_series`),
with the same values either way.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CovariateColumn", "column_of_series"]


@dataclass(frozen=True, eq=False)
class CovariateColumn:
    """One covariate's values in score order as numpy arrays (no pandas needed to use them).

    The values :attr:`Predictions.covariates` holds for the column, in one of four kinds
    (:meth:`mcviz.io.Predictions.covariate_column`):

    * ``"number"``: ``keys`` float64 (NaN where missing), as
      :func:`mcviz.core.conditions.ordinal_keys` gives them;
    * ``"time"``: ``keys`` int64 nanoseconds since the epoch, ``tz`` the time zone (None: naive);
    * ``"nominal"`` (a categorical): ``codes`` int32 level codes (-1 where missing) into
      ``levels``, the categories as text in the DataFrame's order (unused ones included);
    * ``"bool"`` (an ordinal boolean): ``codes`` 0/1 (-1 where missing), ``levels``
      ``(False, True)``; its ordinal keys are 0.0 and 1.0.

    ``missing`` is True where the value is missing (every kind).
    """

    kind: str
    missing: np.ndarray
    keys: np.ndarray | None = None
    codes: np.ndarray | None = None
    levels: tuple = ()
    tz: object = None

    def take(self, rows: np.ndarray) -> CovariateColumn:
        """Return the column at positions ``rows``."""
        def at(values: np.ndarray | None) -> np.ndarray | None:
            return None if values is None else values[rows]

        return dataclasses.replace(self, missing=self.missing[rows], keys=at(self.keys),
                                   codes=at(self.codes))

    def ordinal_keys(self) -> np.ndarray:
        """Return the comparable keys of an ordinal column (float64; int64 ns for times)."""
        if self.kind == "bool":
            keys = self.codes.astype(float)
            keys[self.missing] = np.nan
            return keys
        if self.keys is None:
            raise TypeError("a nominal covariate has no ordinal keys")
        return self.keys


def column_of_series(series: pd.Series) -> CovariateColumn:
    """Return a covariate of ``Predictions.covariates`` (a Series) as numpy arrays.

    A categorical is nominal (its codes and categories as text), a boolean ``"bool"`` (codes
    0/1), a datetime ``"time"`` (int64 ns keys and its time zone), anything else a number
    (float64 keys, NaN where missing: :func:`mcviz.core.conditions.ordinal_keys`).
    """
    import pandas as pd

    missing = series.isna().to_numpy()
    if isinstance(series.dtype, pd.CategoricalDtype):
        return CovariateColumn("nominal", missing,
                               codes=series.cat.codes.to_numpy().astype(np.int32),
                               levels=tuple(str(c) for c in series.cat.categories))
    if pd.api.types.is_bool_dtype(series):
        values = series.to_numpy(dtype=float, na_value=0.0)
        return CovariateColumn("bool", missing, codes=np.where(missing, -1, values).astype(
            np.int32), levels=(False, True))
    if pd.api.types.is_datetime64_any_dtype(series):
        return CovariateColumn("time", missing,
                               keys=pd.DatetimeIndex(series).as_unit("ns").asi8.copy(),
                               tz=series.dt.tz)
    return CovariateColumn("number", missing, keys=series.to_numpy(dtype=float, na_value=np.nan))

"""The condition model's ground floor: operators, the missing-value rule and comparable keys.

Everything that tests a condition ``column op value`` on covariate values reads them through
this module: :func:`~mcviz.subpopulations.select_rows` (whole columns),
:class:`~mcviz.core.membership.MembershipPlan` (integer codes, batch by batch) and the
statistics that order rows by a covariate (:func:`ordinal_values`). The
:class:`~mcviz.subpopulations.Condition` records themselves live in
:mod:`mcviz.subpopulations.model`; this module needs only their ``column``, ``op`` and
``value``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MISSING_RULE",
    "OPERATORS",
    "ConditionLike",
    "index_dtype",
    "is_datetime",
    "ordinal_keys",
    "ordinal_values",
    "value_key",
]

MISSING_RULE = (
    "A missing covariate value is a value of its own that sorts after every observed value "
    "(NULLS LAST): it satisfies '>', '>=', '!=', 'not in' and 'is missing', and fails '<', '<=', "
    "'==', 'in' and 'is not missing'. In SQL: x >= v -> (x >= v OR x IS NULL); x != v -> "
    "(x <> v OR x IS NULL); x NOT IN (...) -> (x NOT IN (...) OR x IS NULL)."
)
"""The one documented rule for missing covariate values (engines must reproduce it exactly)."""

OPERATORS = ("<", "<=", ">", ">=", "==", "!=", "in", "not in", "is missing", "is not missing")
"""The operators of a condition, in the order messages list them."""


class ConditionLike(Protocol):
    """What the functions that read a condition need: ``column op value``.

    :class:`~mcviz.subpopulations.Condition` is one; the modules that describe conditions in
    words and SQL annotate with this, so that they need not import the model that uses them.
    """

    @property
    def column(self) -> str: ...  # noqa: D102

    @property
    def op(self) -> str: ...  # noqa: D102

    @property
    def value(self) -> object: ...  # noqa: D102


def index_dtype(n: int) -> type:
    """Member positions are int32 when they fit (half the memory of int64), else int64.

    Examples
    --------
    >>> index_dtype(10).__name__, index_dtype(2**31).__name__
    ('int32', 'int64')
    """
    return np.int32 if n < 2**31 - 1 else np.int64


def is_datetime(series: pd.Series) -> bool:
    """Tell whether a column holds dates/times (compared on int64 nanoseconds)."""
    import pandas as pd

    return pd.api.types.is_datetime64_any_dtype(series)


def ordinal_keys(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Return comparable keys (float64, or int64 ns for datetimes) and the missing mask.

    Examples
    --------
    >>> import pandas as pd
    >>> keys, missing = ordinal_keys(pd.Series([2.0, None, 1.0]))
    >>> keys.tolist()[::2], missing.tolist()
    ([2.0, 1.0], [False, True, False])
    """
    missing = series.isna().to_numpy()
    if is_datetime(series):
        import pandas as pd

        keys = pd.DatetimeIndex(series).as_unit("ns").asi8.copy()
        return keys, missing
    keys = series.to_numpy(dtype=float, na_value=np.nan)
    return keys, missing


def ordinal_values(series: pd.Series) -> np.ndarray:
    """Return an ordinal column as float64 (datetimes as ns since the epoch), NaN where missing.

    The one numeric view of a covariate (ordering variables, covariate bins, curves along a
    variable), from the keys of :func:`ordinal_keys`.

    Examples
    --------
    >>> import pandas as pd
    >>> ordinal_values(pd.Series(pd.to_datetime(["1970-01-01 00:00:01", None]))).tolist()
    [1000000000.0, nan]
    """
    keys, missing = ordinal_keys(series)
    if not is_datetime(series):
        return keys  # already NaN where missing
    values = keys.astype(float)
    values[missing] = np.nan
    return values


def value_key(series: pd.Series, value: object) -> float | int:
    """Return the key of a condition value on an ordinal column (see :func:`ordinal_keys`).

    Examples
    --------
    >>> import pandas as pd
    >>> value_key(pd.Series([1.0]), 3)
    3.0
    """
    if is_datetime(series):
        import pandas as pd

        stamp = pd.Timestamp(value)
        tz = series.dt.tz
        if tz is not None and stamp.tzinfo is None:
            stamp = stamp.tz_localize(tz)
        elif tz is None and stamp.tzinfo is not None:
            stamp = stamp.tz_convert(None)
        return int(stamp.as_unit("ns").value)
    return float(value)

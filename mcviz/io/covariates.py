"""Covariates: kinds (ordinal or nominal), constant or empty ones dropped, score order."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError, describe_rows


def _prepare_covariates(
    frame: pd.DataFrame,
    covariates: Sequence[str],
    kept_rows: np.ndarray,
    nominal: Sequence[str],
    ordinal: Sequence[str],
) -> tuple[pd.DataFrame, dict[str, str], list[str]]:
    """Covariates in score order, with kinds; constant or all-missing ones dropped."""
    kinds: dict[str, str] = {}
    notices: list[str] = []
    columns: dict[str, pd.Series] = {}
    for name in covariates:
        series = frame[name].iloc[kept_rows].reset_index(drop=True)
        if series.dtype == object and series.map(
            lambda v: isinstance(v, list | dict | set | tuple | np.ndarray)
        ).any():
            notices.append(
                f"covariate {name!r} dropped: it holds lists or records, not single values."
            )
            continue
        if series.isna().all():
            notices.append(f"covariate {name!r} dropped: every value is missing.")
            continue
        if series.nunique(dropna=True) <= 1 and not series.isna().any():
            notices.append(f"covariate {name!r} dropped: it takes a single value.")
            continue
        if name in ordinal:
            kind = "ordinal"
        elif name in nominal:
            kind = "nominal"
        elif pd.api.types.is_bool_dtype(series) or pd.api.types.is_numeric_dtype(series) or (
            pd.api.types.is_datetime64_any_dtype(series)
        ):
            kind = "ordinal"
        else:
            kind = "nominal"
        if kind == "ordinal" and not (
            pd.api.types.is_numeric_dtype(series) or pd.api.types.is_datetime64_any_dtype(series)
            or pd.api.types.is_bool_dtype(series)
        ):
            converted = pd.to_numeric(series, errors="coerce")
            bad = converted.isna() & series.notna()
            if bad.any():
                raise ValidationError(
                    f"covariate {name!r} was declared ordinal but "
                    f"{describe_rows(np.flatnonzero(bad.to_numpy()), len(series))} are not "
                    "numbers; declare it nominal instead.",
                    column=name,
                )
            series = converted
        if kind == "nominal" and not isinstance(series.dtype, pd.CategoricalDtype):
            series = series.astype("string").astype("category")
        kinds[name] = kind
        columns[name] = series
    covariate_frame = pd.DataFrame(columns, index=pd.RangeIndex(len(kept_rows)))
    return covariate_frame, kinds, notices



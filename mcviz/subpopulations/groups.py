"""User-defined groups (boolean or categorical columns) as subpopulations."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.subpopulations.describe import describe_conditions
from mcviz.subpopulations.model import Condition, Subpopulation
from mcviz.subpopulations.selection import (
    _categories,
    _is_bool,
    _is_nominal,
    _require_covariates,
    select_rows,
)

# --------------------------------------------------------------------------------------------
# User groups


def group_subpopulations(
    pred: Predictions, columns: Sequence[str], *, first_id: int = 1
) -> tuple[Subpopulation, ...]:
    """User-defined groups as subpopulations (depth 0, ids from ``first_id``).

    A boolean (or 0/1) column is one group (its true rows); a categorical column gives one group
    per level present (and one for missing values).

    Raises
    ------
    ValidationError
        Unknown columns, or numeric columns that are not 0/1 (use a filter such as
        ``age >= 40`` instead).
    """
    groups: list[Subpopulation] = []
    import pandas as pd

    _require_covariates(pred, columns, "group column")
    for column in columns:
        series = pred.covariates[column]
        if _is_nominal(series):
            condition_sets = [(Condition(column, "==", name),) for name in _categories(series)]
            if series.isna().any():
                condition_sets.append((Condition(column, "is missing"),))
        elif _is_bool(series):
            condition_sets = [(Condition(column, "==", True),)]
        elif pd.api.types.is_numeric_dtype(series) and set(
            np.unique(series.dropna().to_numpy(dtype=float))
        ) <= {0.0, 1.0}:
            condition_sets = [(Condition(column, "==", 1),)]
        else:
            raise ValidationError(
                f"group column {column!r} is neither boolean (0/1) nor categorical; describe "
                f"the group with a filter instead (for example '{column} >= ...').",
                column=column,
            )
        for conditions in condition_sets:
            index = select_rows(pred, conditions)
            if index.size:
                groups.append(Subpopulation(
                    first_id + len(groups), 0, conditions, describe_conditions(conditions), index
                ))
    return tuple(groups)

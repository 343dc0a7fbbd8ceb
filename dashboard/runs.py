"""Subpopulation runs shared by the Subpopulations, Review and Report pages, and review scopes.

Plain Python (no Streamlit): the pages pass a ``compute`` callable that caches each call, so the
subpopulations of one set of settings are generated and measured once per session and server,
whichever page asks first.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from mcviz.cumulative import cumulative_differences
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.multical import multicalibration
from mcviz.subpopulations import (
    Condition,
    Subpopulation,
    describe_conditions,
    filter_subpopulation,
    full_population,
    generate_subpopulations,
    group_subpopulations,
)

__all__ = ["Run", "RunSettings", "Scope", "resolve_scope", "run_subpopulations", "scope_levels"]

Compute = Callable[..., Any]
"""``compute(name, fn, *args, **kwargs)``: calls ``fn``; a page's version caches the call."""


def _direct(_name: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


@dataclass(frozen=True)
class RunSettings:
    """Settings of Algorithm 1 chosen on the Subpopulations page (with the repeats)."""

    covariates: tuple[str, ...]
    n_subpopulations: int
    min_size: int
    seed: int
    repeats: int = 1

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> RunSettings:
        """Build from the page's settings dictionary (extra keys such as ``key`` ignored)."""
        return cls(tuple(data["covariates"]), int(data["n_subpopulations"]),
                   int(data["min_size"]), int(data["seed"]), int(data.get("repeats", 1)))


@dataclass(frozen=True)
class Run:
    """One repeat: its seed, the generated subpopulations and their multi-calibration result."""

    seed: int
    subsets: Any  # mcviz.subpopulations.SubpopulationSet
    result: Any  # mcviz.multical.MulticalibrationResult


def measure_subpopulations(pred: Predictions, subsets: Any, **_params: Any) -> Any:
    """Measure M over generated subpopulations (``_params`` only key the cache)."""
    return multicalibration(pred, subsets.subpopulations)


def run_subpopulations(
    pred: Predictions,
    settings: RunSettings,
    *,
    compute: Compute = _direct,
    progress: Callable[[float, str], None] | None = None,
) -> tuple[Run, ...]:
    """Generate and measure the subpopulations of every repeat (seeds seed, seed + 1, ...)."""
    runs = []
    for repeat in range(settings.repeats):
        seed = settings.seed + repeat
        options = {"covariates": list(settings.covariates),
                   "n_subpopulations": settings.n_subpopulations,
                   "min_size": settings.min_size, "seed": seed}
        if progress is not None:
            progress(repeat / settings.repeats, f"Seed {seed}: generating subpopulations…")
        subsets = compute("subpopulations", generate_subpopulations, pred, **options)
        if progress is not None:
            progress((repeat + 0.5) / settings.repeats, f"Seed {seed}: measuring…")
        result = compute("multicalibration", measure_subpopulations, pred, subsets, **options)
        runs.append(Run(seed, subsets, result))
    return tuple(runs)


def repeats_table(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per repeat: seed, M, M/σ₀ and the argmax's description."""
    return pd.DataFrame({
        "seed": [r.seed for r in runs], "M": [r.result.metric for r in runs],
        "M/σ₀": [r.result.metric_z for r in runs],
        "argmax": [r.result.argmax.description for r in runs],
    })


def subset_predictions(pred: Predictions, index: Any, *, covariates: bool = True) -> Predictions:
    """Restrict the predictions to ``index`` (sorted positions), without re-sorting."""
    index = np.asarray(index)
    score = pred.score[index]
    run_end = np.ones(index.size, dtype=bool)
    run_end[:-1] = score[1:] != score[:-1]
    extra: dict[str, Any] = {}
    if covariates:
        extra["covariates"] = pred.covariates.iloc[index].reset_index(drop=True)
    else:  # the score-ordered statistics never look at the covariates
        extra["covariates"] = pd.DataFrame(index=pd.RangeIndex(index.size))
        extra["covariate_kinds"] = {}
    if pred.predicted_class is not None:
        extra["predicted_class"] = pred.predicted_class[index]
    if pred.true_class is not None:
        extra["true_class"] = pred.true_class[index]
    return replace(
        pred, score=score, label=pred.label[index], weight=pred.weight[index],
        row=pred.row[index], run_end=run_end, **extra,
    )


def own_cumulative(pred: Predictions, index: Any) -> Any:
    """Return a subpopulation's own cumulative calibration result."""
    return cumulative_differences(subset_predictions(pred, index, covariates=False))


@dataclass(frozen=True)
class Scope:
    """What the review view shows: the full population or one subpopulation of it."""

    kind: str  # "full", "argmax", "sub", "filter" or "level"
    subpopulation: Subpopulation

    @property
    def is_full(self) -> bool:
        """True when the scope is every row."""
        return self.kind == "full"

    @property
    def description(self) -> str:
        """The scope in words."""
        return self.subpopulation.description

    @property
    def cache_key(self) -> str:
        """Identifies the rows of the scope for caches (kind and description)."""
        return f"{self.kind}:{self.description}"


def scope_levels(pred: Predictions, variable: str, *, bins: int = 5) -> list[str]:
    """Filter expressions of the levels (nominal) or quantile ranges (ordinal) of a variable."""
    kind = pred.covariate_kinds.get(variable)
    if kind is None:
        raise ValidationError(f"column {variable!r} is not a covariate of the mapping.")
    if kind == "nominal":
        return [group.description for group in group_subpopulations(pred, [variable])]
    series = pred.covariates[variable]
    dates = pd.api.types.is_datetime64_any_dtype(series)
    values = (pd.DatetimeIndex(series).as_unit("ns").asi8[series.notna().to_numpy()] if dates
              else pd.to_numeric(series, errors="coerce").to_numpy(dtype=float))
    values = values[np.isfinite(values)]
    if values.size == 0:
        raise ValidationError(f"column {variable!r}: no finite values to split into ranges.")
    edges = np.unique(np.quantile(values, np.linspace(0, 1, bins + 1)))
    # dates are written as dates (the edges of datetime covariates are nanoseconds)
    edges = ([pd.Timestamp(round(e), tz=series.dt.tz) for e in edges] if dates
             else [float(e) for e in edges])
    if len(edges) == 1:
        return [describe_conditions([Condition(variable, "==", edges[0])])]
    levels = [describe_conditions([Condition(variable, ">=", lo), Condition(variable, "<", hi)])
              for lo, hi in itertools.pairwise(edges[:-1])]
    levels.append(describe_conditions([Condition(variable, ">=", edges[-2])]))
    return levels


def resolve_scope(
    pred: Predictions,
    kind: str,
    *,
    runs: Sequence[Run] = (),
    sub_id: int | None = None,
    expression: str = "",
) -> Scope:
    """Return the rows of a review scope.

    ``argmax`` and ``sub`` need the subpopulation runs (the first repeat's); ``filter`` and
    ``level`` take a filter expression (a level is the expression of :func:`scope_levels`).

    Raises
    ------
    ValidationError
        No runs for ``argmax``/``sub``, an unknown id, an empty or bad expression.
    """
    if kind == "full":
        return Scope("full", full_population(pred))
    if kind in ("argmax", "sub"):
        if not runs:
            raise ValidationError("no subpopulations computed yet: press Compute on the "
                                  "Subpopulations page (or choose another scope).")
        result, subsets = runs[0].result, runs[0].subsets
        if kind == "argmax":
            return Scope("argmax", result.argmax)
        by_id = {sub.id: sub for sub in subsets.subpopulations}
        if sub_id not in by_id:
            raise ValidationError(f"no generated subpopulation has id {sub_id!r} (ids 0 to "
                                  f"{max(by_id):,}).")
        return Scope("sub", by_id[sub_id])
    if kind in ("filter", "level"):
        if not expression.strip():
            raise ValidationError("the filter is empty: type an expression such as "
                                  "'age >= 40 and sex == \"Male\"'.")
        return Scope(kind, filter_subpopulation(pred, expression))
    raise ValidationError(f"unknown scope {kind!r}.")

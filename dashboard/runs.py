"""Subpopulation runs shared by the Subpopulations, Review and Report pages, and review scopes.

Plain Python (no Streamlit): the pages pass a ``compute`` callable that caches each call, so the
subpopulations of one set of settings are generated and measured once per session and server,
whichever page asks first.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.stats.multical import multicalibration
from mcviz.present.review import Compute, direct, own_cumulative, subset_predictions
from mcviz.search import search_subpopulations
from mcviz.settings import SearchSettings, SubpopulationSettings
from mcviz.subpopulations import (
    Condition,
    Subpopulation,
    describe_conditions,
    filter_subpopulation,
    full_population,
    generate_subpopulations,
    group_subpopulations,
)

__all__ = ["MODES", "Compute", "Run", "RunSettings", "Scope", "Verdict", "argmax_verdict",
           "own_cumulative", "resolve_scope", "run_subpopulations", "scope_levels",
           "search_verdict", "subset_predictions", "with_adjusted", "with_holm"]

MODES = {"generated": "generated (Algorithm 1 of paper 000)", "searched": "searched"}
"""How the Subpopulations page finds its subpopulations: random median splits or the search."""


@dataclass(frozen=True)
class RunSettings:
    """Settings chosen on the Subpopulations page.

    ``mode`` "generated": Algorithm 1 (ℓ, m, seed, repeats); "searched": the guided search
    (:func:`mcviz.search_subpopulations` with ``max_conditions`` and ``n_findings``; one run).
    """

    covariates: tuple[str, ...]
    n_subpopulations: int
    min_size: int
    seed: int
    repeats: int = SubpopulationSettings.repeats
    mode: str = "generated"
    max_conditions: int = SearchSettings.max_conditions
    n_findings: int = SearchSettings.n_findings

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> RunSettings:
        """Build from the page's settings dictionary (extra keys such as ``key`` ignored).

        Values are checked and typed by :mod:`mcviz.settings` (one place for defaults and
        bounds); a value out of bounds raises :class:`~mcviz.errors.ValidationError`.
        """
        mode = data.get("mode", "generated")
        generated = SubpopulationSettings.from_mapping(data)
        searched = SearchSettings.from_mapping(
            {name: data[name] for name in ("max_conditions", "n_findings") if name in data})
        return cls(tuple(data["covariates"]), generated.n_subpopulations, generated.min_size,
                   generated.seed, generated.repeats, mode if mode in MODES else "generated",
                   searched.max_conditions, searched.n_findings)

    @property
    def generated(self) -> SubpopulationSettings:
        """Algorithm 1's settings (checked by :class:`mcviz.settings.SubpopulationSettings`)."""
        return SubpopulationSettings(n_subpopulations=self.n_subpopulations,
                                     min_size=self.min_size, seed=self.seed, repeats=self.repeats)

    @property
    def searched(self) -> SearchSettings:
        """The guided search's settings (:class:`mcviz.settings.SearchSettings`)."""
        return SearchSettings(max_conditions=self.max_conditions, n_findings=self.n_findings,
                              seed=self.seed)

    def key(self) -> tuple:
        """Return the run's identity: mode, covariates and its settings object's ``key()``.

        Only the settings the mode uses enter it (a searched run ignores ℓ, m and repeats), so
        the cache key, like the widgets, links and CLI options, comes from :mod:`mcviz.settings`.
        """
        settings = self.searched if self.mode == "searched" else self.generated
        return (self.mode, tuple(self.covariates), *settings.key())


@dataclass(frozen=True)
class Run:
    """One repeat: its seed, the generated subpopulations and their multi-calibration result."""

    seed: int
    subsets: Any  # mcviz.subpopulations.SubpopulationSet
    result: Any  # mcviz.stats.multical.MulticalResult
    search: Any = None  # mcviz.search.SearchResult of a searched run, else None


def measure_subpopulations(pred: Predictions, subsets: Any, **_params: Any) -> Any:
    """Measure M over generated subpopulations (``_params`` only key the cache)."""
    return multicalibration(pred, subsets.subpopulations)


def run_subpopulations(
    pred: Predictions,
    settings: RunSettings,
    *,
    compute: Compute = direct,
    progress: Callable[[float, str], None] | None = None,
) -> tuple[Run, ...]:
    """Generate and measure the subpopulations of every repeat (seeds seed, seed + 1, ...).

    A searched run is one run: the findings of the guided search, measured like generated
    subpopulations so that the table, the scatter and the drill-down work on them unchanged.
    """
    if settings.mode == "searched":
        options = {"covariates": list(settings.covariates),
                   "max_conditions": settings.max_conditions,
                   "n_findings": settings.n_findings, "seed": settings.seed}
        found = compute("search", _search, pred, progress, **options)  # progress: not a key
        result = compute("multicalibration", measure_subpopulations, pred, found.subpopulations,
                         mode="searched", **options)
        return (Run(settings.seed, found.subpopulations, result, found),)
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


def _search(pred: Predictions, progress: Callable | None, **options: Any) -> Any:
    """:func:`mcviz.search_subpopulations`; ``progress`` positional, so no cache key holds it."""
    return search_subpopulations(pred, progress=progress, **options)


@dataclass(frozen=True)
class Verdict:
    """What the page may say about the worst subpopulation.

    ``kind``: "finding" (adjusted p below the level: shown as a finding), "chance" (within
    what chance produces with this many subpopulations) or "untested" (no null computed yet).
    """

    kind: str
    text: str

    @property
    def is_finding(self) -> bool:
        """True only when an adjusted p-value is below the level."""
        return self.kind == "finding"

    @property
    def short(self) -> str:
        """The verdict in a few words (for a caption beside the subpopulation)."""
        return {"finding": "a finding (adjusted p < 0.05)",
                "chance": "within what chance produces",
                "untested": "not yet tested against chance"}[self.kind]


def argmax_verdict(result: Any, null: Any = None, *, level: float = 0.05,
                   words: str | None = None, total: int | None = None) -> Verdict:
    """State the worst subpopulation honestly: a finding only when its adjusted p < ``level``.

    ``null`` is the :class:`mcviz.stats.significance.NullDistribution` of ``result``'s
    subpopulations (its ``p_adjusted`` in the order of ``result.subpopulations``), or None;
    ``words`` the argmax in words (:func:`mcviz.subpopulations.subpopulation_words`), ``total``
    the rows of the full population (default: the largest subpopulation's, the full one). The
    argmax's own (unadjusted) p-value is never the evidence: with ℓ subpopulations, chance
    alone makes the smallest of ℓ p-values tiny. The words are the verdict's
    (:func:`mcviz.present.verdict.selected_sentence`), its adjusted p after them.
    """
    from mcviz.present.verdict import Selection, selected_sentence, selection_details

    argmax = result.argmax
    count = int(result.n_subpopulations)
    selection = Selection(count)
    if null is not None:
        position = [sub.id for sub in result.subpopulations].index(argmax.id)
        selection = Selection(count, p_adjusted=float(null.p_adjusted[position]),
                              draws=int(null.draws))
    total = total or max(int(sub.size) for sub in result.subpopulations)
    said, ok = selected_sentence(selection, description=words or argmax.description,
                                 size=int(argmax.size), total=total, level=level)
    step = ("To test it, compute the null distribution." if selection.p_adjusted is None
            else selection_details(selection))  # the sentence said "largest of …" once (#40)
    text = f"Worst subpopulation (argmax, #{argmax.id}): {said} {step}"
    if ok is None:
        return Verdict("untested", text)
    return Verdict("chance" if ok else "finding", text)


def search_verdict(search: Any) -> Verdict:
    """State the first finding: a finding only when it is confirmed (``Finding.confirmed``)."""
    if search.findings and search.findings[0].confirmed:
        return Verdict("finding", search.findings[0].sentence)
    return Verdict("chance", "No group is confirmed on the rows the search did not use: what "
                             "it found is within what chance produces.")


def with_adjusted(table: pd.DataFrame, null: Any) -> pd.DataFrame:
    """Add the null's ``p_adjusted`` column to the table (NaN without a null).

    The table's rows are in the order of the result's subpopulations, as ``p_adjusted`` is.
    """
    adjusted = (np.full(len(table), np.nan) if null is None
                else np.asarray(null.p_adjusted, dtype=float))
    if adjusted.size != len(table):
        raise ValidationError(f"the null distribution has {adjusted.size:,} adjusted p-values "
                              f"for {len(table):,} subpopulations: compute it again.")
    return table.assign(p_adjusted=adjusted)


NULL_HELD = "null_held"
"""Session-state key of the null distribution computed on the Subpopulations page."""


def run_id(analysis_key: str, settings: RunSettings | Mapping[str, Any]) -> str:
    """Identify one computed set of subpopulations: the analysis and :meth:`RunSettings.key`.

    ``settings`` is a :class:`RunSettings` or the page's settings mapping (read by
    :meth:`RunSettings.from_mapping`, so ``"50"`` and ``50`` name the same run; an empty
    mapping, before any run, gives the defaults' id).
    """
    if not isinstance(settings, RunSettings):
        settings = RunSettings.from_mapping({"covariates": (), **settings})
    return f"{analysis_key}|{json.dumps(settings.key(), default=str)}"


def hold_null(state: MutableMapping[str, Any], run: str, null: Any) -> None:
    """Keep the null distribution of run ``run`` for the Review and Report pages."""
    state[NULL_HELD] = (run, null)


def held_null(state: Mapping[str, Any], run: str) -> Any:
    """Return the null distribution held for run ``run``, or None (none, or another run's)."""
    held = state.get(NULL_HELD)
    return held[1] if held is not None and held[0] == run else None


def with_holm(table: pd.DataFrame, search: Any) -> pd.DataFrame:
    """Add the findings' Holm-adjusted held-out p-values as ``p_adjusted`` (id = rank)."""
    adjusted = {finding.rank: finding.p_adjusted for finding in search.findings}
    return table.assign(p_adjusted=[adjusted.get(int(i), np.nan) for i in table["id"]])


def repeats_table(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per repeat: seed, M, M/σ₀ and the argmax's description."""
    return pd.DataFrame({
        "seed": [r.seed for r in runs], "M": [r.result.metric for r in runs],
        "M/σ₀": [r.result.metric_z for r in runs],
        "argmax": [r.result.argmax.description for r in runs],
    })


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

"""Records of loading: :class:`LoadReport` and :class:`Roles`.

:class:`~mcviz.io.Predictions` itself lives in :mod:`mcviz.io.predictions` (no pandas);
:class:`~mcviz.io.covariates.PendingCovariates` in :mod:`mcviz.io.covariates`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EVERY_VALUE_MISSING", "SINGLE_VALUE", "VOID_P_VALUES", "LoadReport", "Roles"]

VOID_P_VALUES = "not valid with label-dependent weights — use the null draws"
"""What every Brownian or classical p-value says when the weights depend on the labels."""

EVERY_VALUE_MISSING = "every value is missing"
"""Why a covariate is dropped when it holds no value (both loaders' words)."""

SINGLE_VALUE = "it takes a single value"
"""Why a covariate is dropped when all its values are equal (both loaders' words)."""



@dataclass(frozen=True, slots=True, eq=False)
class LoadReport:
    """What loading did to the input.

    Attributes
    ----------
    n_read : int
        Rows in the input.
    n_kept : int
        Rows in the returned predictions.
    dropped : tuple of (str, int)
        Each reason rows were dropped (only with ``drop_invalid=True``) and how many rows it cost;
        a row with several problems counts once, under the first reason checked.
    warnings : tuple of str
        Problems that did not stop the load (a single class, probabilities not summing to 1).
    notices : tuple of str
        Decisions taken for the caller (covariates dropped for being constant or all missing).
    """

    n_read: int
    n_kept: int
    dropped: tuple[tuple[str, int], ...] = ()
    warnings: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()

    @property
    def n_dropped(self) -> int:
        """Total rows dropped."""
        return sum(count for _, count in self.dropped)


@dataclass(frozen=True, slots=True)
class Roles:
    """Column roles inferred from names and contents; every field can be overridden.

    Attributes
    ----------
    score : str or None
        The score column (the first score-like column).
    score_candidates : tuple of str
        Every score-like numeric column (for choosing or comparing models).
    probabilities : tuple of str
        Per-class probability columns, when three or more share a prefix such as ``prob_``.
    label, weight : str or None
    id_columns : tuple of str
    covariates : tuple of str
        All other columns.
    """

    score: str | None
    score_candidates: tuple[str, ...]
    probabilities: tuple[str, ...]
    label: str | None
    weight: str | None
    id_columns: tuple[str, ...]
    covariates: tuple[str, ...]


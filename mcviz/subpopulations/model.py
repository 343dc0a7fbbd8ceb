"""Subpopulations as predicates: conditions, subpopulations, sets and the missing-value rule."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcviz.core.arrays import readonly as _readonly
from mcviz.core.conditions import index_dtype
from mcviz.io import Predictions
from mcviz.subpopulations.describe import describe_conditions

MAX_IDLE_PATHS = 1000
"""Generation gives up after this many consecutive paths that add no new subpopulation."""

MAX_PATHS_PER_SUBPOPULATION = 50
MAX_NOMINAL_CATEGORIES = 1000
"""Nominal covariates with more categories are left out of Algorithm 1 (with a notice)."""
MAX_STALLED_STEPS = 64
"""A path ends after this many consecutive splits that do not shrink the set."""


@dataclass(frozen=True, slots=True)
class Condition:
    """One split or filter clause: ``column op value``.

    Attributes
    ----------
    column : str
    op : str
        One of :data:`~mcviz.core.conditions.OPERATORS`.
    value : float, int, bool, str, pandas.Timestamp, tuple or None
        A number (ordinal), a category string (nominal ``==``/``!=``), a tuple of values for
        ``in``/``not in``, a Timestamp for datetime covariates, None for the missing tests.
    """

    column: str
    op: str
    value: float | int | str | tuple | None = None

    def __str__(self) -> str:
        return describe_conditions((self,))


@dataclass(frozen=True, slots=True, eq=False)
class Subpopulation:
    """A subpopulation: its path (a conjunction of conditions), description and members.

    Attributes
    ----------
    id : int
        0 for the full population.
    depth : int
        Number of splits of Algorithm 1 (0 for the full population, user groups and filters).
    conditions : tuple of Condition
        Conjunction; empty for the full population.
    description : str
        The conditions in words, re-parseable by :func:`parse_filter`.
    index : ndarray of int32 (int64 beyond 2**31 rows)
        Sorted positions of the members in the score order of the predictions (read-only).
    parent : int or None
        Id of the subpopulation this one was split from (Algorithm 1 only).
    """

    id: int
    depth: int
    conditions: tuple[Condition, ...]
    description: str
    index: np.ndarray
    parent: int | None = None

    @property
    def size(self) -> int:
        """Number of members."""
        return int(self.index.size)


@dataclass(frozen=True, slots=True, eq=False)
class SubpopulationSet:
    """Subpopulations to measure: ``subpopulations[0]`` is the full population.

    Attributes
    ----------
    subpopulations : tuple of Subpopulation
    notice : str or None
        Why fewer than the requested number were generated (None when all were).
    seed : int
    min_size : int
    n_requested : int
    covariates : tuple of str
    n_paths : int
        Random paths drawn (0 unless ``source`` is ``"generated"``).
    source : {"generated", "groups", "searched"}, default "generated"
        Where the subpopulations came from: ``"generated"`` by Algorithm 1 of paper 000
        (random median splits), ``"groups"`` given by the user (levels or filters),
        ``"searched"`` found by the guided search (:func:`mcviz.search_subpopulations`; then
        ``min_size`` is the search's smallest finding and ``n_requested`` the findings asked
        for). Pages and reports say which.
    """

    subpopulations: tuple[Subpopulation, ...]
    notice: str | None
    seed: int
    min_size: int
    n_requested: int
    covariates: tuple[str, ...]
    n_paths: int
    source: str = "generated"

    def __len__(self) -> int:
        return len(self.subpopulations)

    def __iter__(self):
        return iter(self.subpopulations)

    def __getitem__(self, item: int) -> Subpopulation:
        return self.subpopulations[item]


def full_population(pred: Predictions) -> Subpopulation:
    """Subpopulation 0: every row."""
    index = np.arange(pred.n, dtype=index_dtype(pred.n))
    return Subpopulation(0, 0, (), "full population", _readonly(index))

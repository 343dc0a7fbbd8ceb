"""The monitored segments, and the membership patterns (atoms) that partition the rows.

Segments are levels of covariates, user filters, and findings of a search on the reference.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.subpopulations import (
    Subpopulation,
    filter_subpopulation,
    group_subpopulations,
    select_rows,
)

__all__ = ["MAX_ATOM_PERIODS", "MAX_SEGMENTS", "membership_atoms", "monitored_segments"]

MAX_SEGMENTS = 200
"""At most this many segments are monitored at once."""
MAX_ATOM_PERIODS = 500_000
"""At most this many cells (membership patterns x periods) in the null simulation."""


def monitored_segments(
    pred: Predictions,
    *,
    levels: Sequence[str] = (),
    filters: Sequence[str] = (),
    search_rows: np.ndarray | None = None,
    search_covariates: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[tuple[Subpopulation, ...], str | None]:
    """Return the segments (ids from 1) and a notice about the search, if one ran.

    Parameters
    ----------
    pred : Predictions
    levels : sequence of str
        Covariates whose every level is a segment (:func:`~mcviz.group_subpopulations`).
    filters : sequence of str
        Filter expressions, one segment each (:func:`~mcviz.filter_subpopulation`).
    search_rows : ndarray of int, optional
        Positions (score order) of the reference rows: search them
        (:func:`~mcviz.search_subpopulations`) and monitor the findings confirmed on held-out
        reference rows (Holm-adjusted p <= ``alpha``), with their conditions applied to every row.
    search_covariates : sequence of str, optional
        Covariates the search may use (default: all but ``exclude``).
    exclude : sequence of str
        Left out of the default search covariates (the time column).

    Raises
    ------
    ValidationError
        Unknown columns, bad filters, a filter selecting no rows, more than
        :data:`MAX_SEGMENTS` segments.
    """
    found: list[Subpopulation] = list(group_subpopulations(pred, list(levels))) if levels else []
    for expression in filters:
        found.append(filter_subpopulation(pred, expression))
    notice = None
    if search_rows is not None:
        searched, notice = _searched(pred, search_rows, search_covariates, exclude, alpha, seed)
        found.extend(searched)
    if len(found) > MAX_SEGMENTS:
        raise ValidationError(f"{len(found):,} segments: at most {MAX_SEGMENTS} can be monitored "
                              f"at once; choose covariates with fewer levels or fewer filters.")
    segments, seen = [], set()
    for sub in found:
        if sub.description in seen:
            continue
        seen.add(sub.description)
        segments.append(Subpopulation(len(segments) + 1, sub.depth, sub.conditions,
                                      sub.description, sub.index))
    return tuple(segments), notice


def _searched(pred, rows, covariates, exclude, alpha, seed) -> tuple[list[Subpopulation], str]:
    from mcviz.search import search_subpopulations

    names = [c for c in pred.covariates.columns if c not in set(exclude)] if (
        covariates is None) else list(covariates)
    if not names:
        raise ValidationError("search on the reference: there are no covariates to search.")
    for name in names:
        pred.require_covariate(name, " to search")
    frame = pred.covariates.iloc[rows][names].reset_index(drop=True)
    reference = Predictions.from_arrays(pred.score[rows], pred.label[rows],
                                        pred.weight[rows] if pred.weighted else None,
                                        covariates=frame)
    result = search_subpopulations(reference, covariates=names, seed=seed)
    confirmed = [f for f in result.findings if f.p_adjusted <= alpha]
    segments = []
    for finding in confirmed:
        conditions = finding.subpopulation.conditions
        index = select_rows(pred, conditions)
        if index.size:
            segments.append(Subpopulation(0, 0, conditions, finding.description, index))
    notice = (f"search on the reference periods ({rows.size:,} rows): {len(result.findings)} "
              f"findings, {len(confirmed)} confirmed on held-out reference rows "
              f"(Holm-adjusted p <= {alpha:g}) and monitored.")
    return segments, notice


def membership_atoms(n: int, members: Sequence[np.ndarray], n_periods: int,
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Partition the rows by membership pattern: each row's atom and the incidence matrix.

    Row ``k + 1`` of the incidence is segment ``k``; row 0 (the full population) is all ones.
    Disjoint segments (levels of one covariate) give atom ``k + 1`` to segment ``k``'s rows and
    0 to the others, with no sort; overlapping ones are told apart by a sum of random 64-bit
    keys per row (a collision has probability below ``atoms**2 / 2**64``) and one ``np.unique``.
    O(n + sum of segment sizes) memory; never rows x segments.

    Raises
    ------
    ValidationError
        More than :data:`MAX_ATOM_PERIODS` cells.

    Examples
    --------
    >>> atom, incidence = membership_atoms(4, [np.array([0, 1]), np.array([1, 2])], 2)
    >>> incidence[:, atom].T.astype(int).tolist()  # each row: full population, segment 1, 2
    [[1, 1, 0], [1, 1, 1], [1, 0, 1], [1, 0, 0]]
    """
    covered = np.zeros(n, dtype=bool)
    disjoint = True
    for index in members:
        if covered[index].any():
            disjoint = False
            break
        covered[index] = True
    if disjoint:
        atom = np.zeros(n, dtype=np.int32)
        for k, index in enumerate(members):
            atom[index] = k + 1
        n_atoms = len(members) + 1
        incidence = np.zeros((len(members) + 1, n_atoms))
        incidence[0] = 1.0
        incidence[np.arange(1, n_atoms), np.arange(1, n_atoms)] = 1.0
        return atom, incidence
    keys = np.random.default_rng(20_260_105).integers(1, 2**63, size=len(members),
                                                      dtype=np.uint64)
    code = np.zeros(n, dtype=np.uint64)
    for key, index in zip(keys, members, strict=True):
        code[index] += key  # wraps modulo 2**64
    _, first, atom = np.unique(code, return_index=True, return_inverse=True)
    n_atoms = first.size
    if n_atoms * n_periods > MAX_ATOM_PERIODS:
        raise ValidationError(f"the segments overlap in {n_atoms:,} distinct ways over "
                              f"{n_periods} periods: more than {MAX_ATOM_PERIODS:,} cells to "
                              f"simulate; monitor fewer overlapping segments or longer periods.")
    incidence = np.zeros((len(members) + 1, n_atoms))
    incidence[0] = 1.0
    mask = np.zeros(n, dtype=bool)
    for k, index in enumerate(members):
        mask[index] = True
        incidence[k + 1] = mask[first]
        mask[index] = False
    return atom.astype(np.int32), incidence

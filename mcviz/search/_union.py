r"""Confirmed findings offered together as one problem: a union (issue #42 item 4).

A deviation over ``kind in {k3, k7}`` OR ``0.8 <= u < 0.9`` is one problem, but a subpopulation
is a conjunction of conditions: the search reports each arm as a finding (the second from its
look among the rows outside the first, :func:`~mcviz.search._find._look_again`). Two confirmed
findings of the same direction whose rows are mostly apart are offered as one union when the
union's :math:`D/\sigma` exceeds each part's, first on the search rows (the choice), then on the
held-out rows (the issue's rule). A union is listed beside the findings
(:attr:`~mcviz.search.SearchResult.unions`), never among them: it is no conjunction, so nothing
that turns a finding's conditions into SQL, masks or a fix receives it; each part stays a
finding and is fixed as one.

Why the false-find rate is held: a union is offered only when both its parts are confirmed
findings. Under calibration (the null of every subpopulation), a draw with a confirmed union
therefore already has a confirmed finding: unions add no draw with a confirmed result, and the
family-wise error stays that of the findings (:func:`~mcviz.search._confirm.holm` over them; the
calibrated null of ``benchmarks/bench_find.py`` counts the same draws with and without unions).
More generally a union's claim, "these rows are miscalibrated in this direction", is false only
when neither part is miscalibrated in that direction, so a false union needs a false confirmed
part. The union's own held-out p-value (:func:`~mcviz.search._confirm.holdout_p_values`, on its
held-out rows) is adjusted by Holm over the findings and unions together, and is never smaller
than either part's adjusted p-value; the findings' adjusted p-values are not changed by it.
Because the union is kept only when its held-out :math:`D/\sigma` exceeds each part's, that
p-value is selected: it is reported as the union's held-out evidence, not as a test of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from mcviz.io import Predictions
from mcviz.search._confirm import (
    Confirmation,
    effect,
    holdout_p_values,
    holm,
    is_confirmed,
    p_value_kinds,
    sentence,
)
from mcviz.search._screen import Data, score_candidates
from mcviz.search.rules import RULES
from mcviz.subpopulations import subpopulation_words


@dataclass(frozen=True, slots=True, eq=False)
class FindingUnion(Confirmation):
    r"""Confirmed findings offered as one problem: the rows in any of them.

    Attributes
    ----------
    parts : tuple of int
        The ranks of the findings joined (each a confirmed finding of the same direction).
    description : str
        The parts' descriptions in parentheses joined by ``or`` (a union, not a filter: each
        part is one).
    index : ndarray
        Its members among all rows (positions in score order, read-only).
    size, share : int, float
        Members among all rows and their share.
    kuiper_z, search_kuiper_z, holdout_kuiper_z : float
        :math:`D/\sigma` over all its rows, its search rows and its held-out rows (as a
        finding's; the search and held-out values exceed each part's, or it is not offered).
    holdout_size : int
    p_value, p_adjusted, p_kind : float, float, str
        The held-out p-value (as a finding's), Holm's adjustment over the findings and unions
        together, at least each part's adjusted p-value; the kind of p-value.
    mean_residual, ci_low, ci_high, predicted, observed, observed_expected : float
        The held-out effect, its 95% interval and the rates (as a finding's).
    sentence : str
        In plain words: the groups, that they share one problem, predicted against observed.
    """

    parts: tuple[int, ...]
    description: str
    index: np.ndarray


def _pairs(findings: Sequence) -> list[tuple[object, object]]:
    """Pairs of confirmed findings of one direction whose rows are mostly apart.

    Mostly apart: the rows they share are at most ``RULES.union_overlap`` of the smaller's.
    """
    confirmed = [f for f in findings if f.confirmed and np.isfinite(f.mean_residual)
                 and f.mean_residual != 0]
    pairs = []
    for a, b in combinations(confirmed, 2):
        if np.sign(a.mean_residual) != np.sign(b.mean_residual):
            continue
        rows_a, rows_b = np.asarray(a.subpopulation.index), np.asarray(b.subpopulation.index)
        common = np.intersect1d(rows_a, rows_b, assume_unique=True).size
        if common <= RULES.union_overlap * min(rows_a.size, rows_b.size):
            pairs.append((a, b))
    return pairs


def offer_unions(pred: Predictions, data: Data, whole: Data, findings: Sequence,
                 search_rows: np.ndarray, holdout_rows: np.ndarray,
                 seed: int) -> tuple[FindingUnion, ...]:
    r"""Return the unions of two findings that deviate more than each part (module docstring).

    ``findings`` are the confirmed search's findings (ranked); ``data`` scores held-out rows
    and ``whole`` all rows and search rows, as for the findings. A pair is kept when its union's
    :math:`D/\sigma` on the search rows exceeds each part's ``search_kuiper_z`` materially, by
    the gain the search asks of a condition (``RULES.material`` with ``kept`` the part's share
    of the union's rows: the other part must bring more than its rows would by chance), and
    then on the held-out rows each part's ``holdout_kuiper_z``. Without the margin a finding
    joined with a small group that overlaps it and carries its deviation (a score band through
    both arms of a planted union) is offered for a gain of 0.03. Listed by held-out
    :math:`D/\sigma`. One pair's union is examined at a time (memory: the unions kept and one
    more).
    """
    kept = []  # (a, b, rows, search z, held-out rows, held-out z)
    for a, b in _pairs(findings):
        rows = np.union1d(a.subpopulation.index, b.subpopulation.index)
        z = float(score_candidates(whole, [np.intersect1d(rows, search_rows)])[0, 0])
        if any(z < part.search_kuiper_z + RULES.material(
                z, kept=part.subpopulation.index.size / rows.size) for part in (a, b)):
            continue
        held_rows = np.intersect1d(rows, holdout_rows)
        held = float(score_candidates(data, [held_rows])[0, 0])
        if held > max(a.holdout_kuiper_z, b.holdout_kuiper_z):
            kept.append((a, b, rows, z, held_rows, held))
    if not kept:
        return ()
    held_members = [k[4] for k in kept]
    descriptions = [f"({a.description}) or ({b.description})" for a, b, *_ in kept]
    p_values = holdout_p_values(pred, held_members, np.array([k[5] for k in kept]),
                                descriptions, seed)
    joint = holm(np.concatenate([[f.p_value for f in findings], p_values]))[len(findings):]
    kinds = p_value_kinds(pred, held_members)
    everywhere = score_candidates(whole, [k[2] for k in kept])[:, 0]
    unions = []
    for k, (a, b, rows, z, held_rows, held) in enumerate(kept):
        adjusted = max(float(joint[k]), a.p_adjusted, b.p_adjusted)
        rows.flags.writeable = False
        unions.append(_union(pred, a, b, rows, held_rows, descriptions[k], held,
                             (float(everywhere[k]), z), (float(p_values[k]), adjusted, kinds[k])))
    return tuple(sorted(unions, key=lambda u: (-u.holdout_kuiper_z, u.parts)))


def _union(pred: Predictions, a, b, rows: np.ndarray, held_rows: np.ndarray, description: str,
           held_z: float, z: tuple[float, float], tested: tuple[float, float, str]) -> FindingUnion:
    """One union's numbers and sentence (:func:`offer_unions`)."""
    mean, low, high, ratio, predicted, observed = effect(pred, held_rows)
    share = rows.size / pred.n
    p_value, adjusted, kind = tested
    first, second = (subpopulation_words(pred, f.subpopulation) for f in (a, b))
    words = f"{first}, or {second if second.startswith('where ') else 'with ' + second}"
    said = sentence(words, size=rows.size, share=share, effect=mean, low=low, high=high,
                    predicted=predicted, observed=observed,
                    confirmed=is_confirmed(kind, adjusted), p_kind=kind,
                    binary=pred.response_kind == "binary")
    return FindingUnion(
        parts=(a.rank, b.rank), description=description, index=rows, size=int(rows.size),
        share=share, kuiper_z=z[0], search_kuiper_z=z[1], holdout_size=int(held_rows.size),
        holdout_kuiper_z=held_z, p_value=p_value, p_adjusted=adjusted, p_kind=kind,
        mean_residual=mean, ci_low=low, ci_high=high, predicted=predicted, observed=observed,
        observed_expected=ratio,
        sentence=f"Findings {a.rank} and {b.rank} are one problem: {said[0].lower()}{said[1:]}")

"""Confirmed findings offered as one union (issue #42 item 4, :mod:`mcviz.search._union`).

Planted data of 20,000 rows with two groups on unrelated columns, ``kind == k1`` and
``0.6 <= u < 0.8`` (a fifth of the rows each, so they share a fifth of each other's rows). Every
held-out D/sigma is recomputed here by brute force (continuous scores: no ties; the path of
R - S over the group's held-out rows in score order, eqs. (2) and (5) of paper 000), never read
from the search. The union is offered when one error covers both groups; it is not when one
group is much weaker than the other (the union deviates less than the strong part), nor when the
groups deviate in opposite directions (two disjoint confirmed findings: the direction alone keeps
them apart).
"""

from __future__ import annotations

import numpy as np

from mcviz import Predictions, search_subpopulations
from mcviz.cli.search import result_json
from mcviz.search import _union
from mcviz.search.rules import RULES


def _planted(seed: int, shift_kind: float, shift_u: float, n: int = 20_000) -> Predictions:
    """Scores uniform on [0.2, 0.8); labels shifted by ``shift_kind`` in kind == k1 and by
    ``shift_u`` in 0.6 <= u < 0.8 (added where both hold)."""
    rng = np.random.default_rng(seed)
    kind, u = rng.integers(0, 5, n), rng.uniform(size=n)
    score = rng.uniform(0.2, 0.8, n)
    truth = score + shift_kind * (kind == 1) + shift_u * ((u >= 0.6) & (u < 0.8))
    label = rng.random(n) < np.clip(truth, 0, 1)
    return Predictions.from_arrays(score, label, covariates={
        "kind": [f"k{k}" for k in kind], "u": u})


def _z(pred: Predictions, rows: np.ndarray) -> float:
    """D/sigma of the rows by brute force: the range of the path of R - S (with 0) in score
    order over sqrt(sum S(1 - S))."""
    rows = np.sort(rows)
    s, r = pred.score[rows], pred.label[rows]
    assert np.all(np.diff(s) > 0)  # no ties: the path at every row
    path = np.concatenate(([0.0], np.cumsum(r - s)))
    return float((path.max() - path.min()) / np.sqrt(np.sum(s * (1 - s))))


def _held(result, rows) -> np.ndarray:
    return np.intersect1d(rows, result.holdout_index)


def test_a_planted_union_is_offered():
    pred = _planted(0, 0.12, 0.12)
    result = search_subpopulations(pred, seed=0, n_findings=3)
    by_rank = {f.rank: f for f in result.findings}
    assert result.unions, [f.description for f in result.findings]
    union = result.unions[0]
    parts = [by_rank[r] for r in union.parts]
    assert all(p.confirmed and p.mean_residual > 0 for p in parts)
    words = sorted(p.description.split(" ")[0] for p in parts)
    assert words == ["kind", "u"], [p.description for p in parts]
    # its members: the rows of either part, and the planted rows (kind == k1 or u in the band)
    assert np.array_equal(union.index, np.union1d(*[p.subpopulation.index for p in parts]))
    kind = np.asarray(pred.covariates["kind"])
    u = np.asarray(pred.covariates["u"], dtype=float)
    planted = np.flatnonzero((kind == "k1") | ((u >= 0.6) & (u < 0.8)))
    assert np.intersect1d(planted, union.index).size / np.union1d(planted, union.index).size > 0.9
    # held-out D/sigma, by brute force: the union's above each part's
    held = _z(pred, _held(result, union.index))
    assert abs(held - union.holdout_kuiper_z) < 1e-9
    assert all(held > _z(pred, _held(result, p.subpopulation.index)) for p in parts)
    assert union.confirmed
    assert union.p_adjusted >= max(p.p_adjusted for p in parts)
    assert union.ci_low > 0
    assert union.sentence.startswith(
        f"Findings {union.parts[0]} and {union.parts[1]} are one problem: among rows with ")
    assert union.description == f"({parts[0].description}) or ({parts[1].description})"
    listed = result_json(result)["unions"][0]  # mcviz search --json: the same numbers
    assert listed["parts"] == list(union.parts)
    assert listed["holdout_kuiper_z"] == union.holdout_kuiper_z
    assert list(listed)[1:] == list(result_json(result)["findings"][0])[1:]  # a finding's keys


def test_a_weak_group_beside_a_strong_one_is_no_union():
    """Both groups confirmed, of one direction and mostly apart (the pair is a candidate), but
    the weak one dilutes the strong one: the union's D/sigma is below the strong part's."""
    pred = _planted(1, 0.2, 0.06)
    result = search_subpopulations(pred, seed=1, n_findings=3)
    confirmed = [f for f in result.findings if f.confirmed]
    assert sorted(f.description.split(" ")[0] for f in confirmed[:2]) == ["kind", "u"]
    assert [(a.rank, b.rank) for a, b in _union._pairs(result.findings)] == [
        (confirmed[0].rank, confirmed[1].rank)]
    both = np.union1d(confirmed[0].subpopulation.index, confirmed[1].subpopulation.index)
    strong = max(_z(pred, _held(result, f.subpopulation.index)) for f in confirmed[:2])
    assert _z(pred, _held(result, both)) < strong
    assert result.unions == ()


def test_opposite_directions_are_never_joined():
    """Over-predicted at low scores (kind == k1 and score < 0.45), under-predicted at high
    scores (0.6 <= u < 0.8 and score >= 0.55): two confirmed findings with no row in common, so
    only their directions keep them from being a candidate pair."""
    rng = np.random.default_rng(2)
    n = 20_000
    kind, u = rng.integers(0, 5, n), rng.uniform(size=n)
    score = rng.uniform(0.2, 0.8, n)
    low, high = (kind == 1) & (score < 0.45), (u >= 0.6) & (u < 0.8) & (score >= 0.55)
    label = rng.random(n) < np.clip(score - 0.18 * low + 0.18 * high, 0, 1)
    pred = Predictions.from_arrays(score, label, covariates={
        "kind": [f"k{k}" for k in kind], "u": u})
    result = search_subpopulations(pred, seed=2, n_findings=3)
    confirmed = [f for f in result.findings if f.confirmed]
    assert len(confirmed) == 2, [f.description for f in result.findings]
    assert sorted(np.sign(f.mean_residual) for f in confirmed) == [-1, 1]
    assert np.intersect1d(*[f.subpopulation.index for f in confirmed]).size == 0
    assert _union._pairs(result.findings) == []
    assert result.unions == ()


def test_a_union_must_gain_materially_on_the_search_rows():
    """Five findings asked of the planted union: a score band through both arms is confirmed too
    (it carries their deviation). Its union with ``kind == k1`` gains 0.03 on the search rows
    (a candidate pair: one direction, mostly apart) -- less than the search asks of a condition
    (``RULES.material``) -- so only the arms' union is offered."""
    pred = _planted(0, 0.12, 0.12)
    result = search_subpopulations(pred, seed=0, n_findings=5)
    confirmed = [f for f in result.findings if f.confirmed]
    assert len(confirmed) == 3
    band = next(f for f in confirmed if f.description.startswith("score"))
    kind = next(f for f in confirmed if f.description.startswith("kind"))
    assert (min(kind.rank, band.rank), max(kind.rank, band.rank)) in [
        (a.rank, b.rank) for a, b in _union._pairs(result.findings)]
    both = np.union1d(kind.subpopulation.index, band.subpopulation.index)
    gain = _z(pred, np.setdiff1d(both, result.holdout_index)) - kind.search_kuiper_z
    assert 0 < gain < RULES.material(0.0, kept=kind.size / both.size)
    assert [u.parts for u in result.unions] == [tuple(sorted(
        f.rank for f in confirmed if f is not band))]

"""The compiled loops (mcviz.core._compiled, numba) against loops written here and select_rows.

Tests with ``passes`` run on both: ``numpy`` (kernels.enabled False) and ``compiled`` (the
loops loaded, so every call of the evaluator takes them). The compiled membership loop is
tested against select_rows in test_core_membership.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mcviz.core import Evaluator, kernels
from mcviz.engines.base import Columns, as_specs
from mcviz.io import Predictions
from mcviz.subpopulations import generate_subpopulations

pytest.importorskip("numba")


@pytest.fixture(params=["numpy", "compiled"])
def passes(request, monkeypatch):
    if request.param == "numpy":
        monkeypatch.setattr(kernels, "enabled", False)
    else:
        assert kernels.loops(force=True) is not None
    return request.param


def brute(score, weight, residual, variance_terms, floor_terms, index):
    """Eq. (5) pieces of one subpopulation, by a plain loop: the path read at the last member
    of each run of tied scores (eqs. (1)-(2)), the origin included."""
    path, running = [0.0], 0.0
    for j, row in enumerate(index):
        running += weight[row] * residual[row]
        if j == index.size - 1 or score[index[j + 1]] != score[row]:
            path.append(running)
    return {"offset": running, "high": max(path), "low": min(path),
            "weight": weight[index].sum(), "variance": variance_terms[index].sum(),
            "floor": floor_terms[index].sum(), "count": index.size}


def data(n, seed, *, ties):
    rng = np.random.default_rng(seed)
    score = np.sort(np.round(rng.random(n), 2) if ties else rng.random(n))
    label = (rng.random(n) < score).astype(float)
    weight = rng.random(n) + 0.25
    members = [np.arange(n)] + [np.flatnonzero(rng.random(n) < p)
                                for p in (0.5, 0.2, 0.05, 0.01, 0.0, 0.3)]
    members.append(np.array([n - 1]))  # one member, at the last row
    return score, label, weight, members


@pytest.mark.parametrize("ties", [True, False])
@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("floored", [True, False])
def test_summaries_equal_a_plain_loop(passes, ties, weighted, floored):
    score, label, weight, members = data(3000, 5, ties=ties)
    rng = np.random.default_rng(9)
    floor = rng.random(score.size) * 0.1 if floored else None
    ev = Evaluator(score, weight if weighted else None, response_variance=floor)
    got = ev.summaries(label - score, members, adjacent=False)
    w = weight if weighted else np.ones(score.size)
    variance_terms = score * (1 - score) * w**2
    floor_terms = floor * w**2 if floored else np.zeros(score.size)
    for k, index in enumerate(members):
        expected = brute(score, w, label - score, variance_terms, floor_terms, index)
        for name, value in expected.items():
            assert getattr(got, name)[k] == pytest.approx(value, rel=1e-12, abs=1e-12), (
                passes, name, k)


def test_the_two_passes_agree_on_lists_masks_and_flat_members(monkeypatch):
    score, label, weight, members = data(20_000, 6, ties=True)
    ev = Evaluator(score, weight)
    masks = [np.isin(np.arange(score.size), m) for m in members]
    lengths = np.array([m.size for m in members])
    flat = kernels.FlatMembers(np.concatenate(members).astype(np.int32),
                               np.r_[0, np.cumsum(lengths)[:-1]], lengths)
    assert kernels.loops(force=True) is not None
    compiled = [ev.summaries(label - score, m, adjacent=False) for m in (members, masks, flat)]
    monkeypatch.setattr(kernels, "enabled", False)
    reference = ev.summaries(label - score, members, adjacent=False)
    for got in compiled:
        for name in ("count", "weight", "variance", "offset", "high", "low"):
            np.testing.assert_allclose(getattr(got, name), getattr(reference, name),
                                       rtol=1e-12, atol=1e-12, err_msg=name)


def test_lists_longer_than_one_join_are_joined_in_pieces(monkeypatch):
    import mcviz.core.evaluator as module

    score, label, weight, members = data(5000, 7, ties=True)
    ev = Evaluator(score, weight)
    assert kernels.loops(force=True) is not None
    whole = ev.summaries(label - score, members, adjacent=False)
    monkeypatch.setattr(module, "WALK_MEMBERS", 1000)  # several joins, one member list alone
    pieces = ev.summaries(label - score, members, adjacent=False)
    for name in ("count", "weight", "variance", "offset", "high", "low"):
        np.testing.assert_array_equal(getattr(pieces, name), getattr(whole, name))


def test_the_order_of_tied_rows_does_not_matter(passes):
    score, label, weight, members = data(4000, 8, ties=True)
    rng = np.random.default_rng(1)
    base = Evaluator(score, weight).statistics(label - score, members)
    order = np.lexsort((rng.random(score.size), score))  # shuffles rows inside tie runs only
    inverse = np.empty(score.size, dtype=np.int64)
    inverse[order] = np.arange(score.size)
    moved = [np.sort(inverse[m]) for m in members]
    other = Evaluator(score[order], weight[order]).statistics(label[order] - score[order], moved)
    np.testing.assert_allclose(base.kuiper, other.kuiper, rtol=0, atol=1e-12)
    np.testing.assert_allclose(base.sigma, other.sigma, rtol=0, atol=1e-12)


def test_the_numpy_engine_screens_the_same_on_both_passes(tmp_path, monkeypatch):
    from mcviz.engines.numpy_engine import NumpyEngine

    rng = np.random.default_rng(4)
    n = 30_000
    frame = pd.DataFrame({
        "score": np.round(rng.random(n), 3), "label": (rng.random(n) < 0.5).astype(int),
        "weight": rng.random(n) + 0.5, "x": rng.normal(size=n),
        "cat": rng.choice(["a", "b", "c"], n)})
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path)
    pred = Predictions.from_arrays(frame["score"].to_numpy(), frame["label"].to_numpy(),
                                   weight=frame["weight"].to_numpy(),
                                   covariates={"x": frame["x"], "cat": frame["cat"]})
    specs = as_specs(generate_subpopulations(pred, n_subpopulations=200, seed=1).subpopulations)
    assert kernels.loops(force=True) is not None
    results = []
    for enabled in (True, False):
        monkeypatch.setattr(kernels, "enabled", enabled)
        engine = NumpyEngine(str(path), Columns("score", "label", "weight"), threads=2)
        results.append(engine.screen(specs, exact=True))
        engine.close()
    compiled, reference = results
    assert compiled.metric == pytest.approx(reference.metric, rel=1e-12)
    np.testing.assert_allclose(compiled.table["kuiper"], reference.table["kuiper"],
                               rtol=1e-12, atol=1e-15)


def test_loops_that_cannot_load_leave_numpy_s_passes(monkeypatch):
    import importlib

    def refuse(name, *args, **kwargs):
        raise RuntimeError("cannot cache function: no locator available")

    monkeypatch.setattr(kernels, "_loaded", None)
    monkeypatch.setattr(kernels, "_failed", False)
    monkeypatch.setattr(importlib, "import_module", refuse)
    assert kernels.loops(force=True) is None
    score, label, weight, members = data(500, 3, ties=True)
    got = Evaluator(score, weight).summaries(label - score, members, adjacent=False)
    assert got.count[0] == 500

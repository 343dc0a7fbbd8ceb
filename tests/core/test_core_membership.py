"""MembershipPlan (integer codes, children tested on their parents' rows) against select_rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mcviz.core import MembershipPlan, kernels
from mcviz.engines.base import as_specs
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.subpopulations import Condition, generate_subpopulations, select_rows


@pytest.fixture(scope="module")
def pred():
    rng = np.random.default_rng(3)
    n = 4000
    x = rng.integers(0, 20, n).astype(float)
    x[rng.random(n) < 0.1] = np.nan
    cat = pd.Categorical(rng.choice(["a", "b", "c", "d"], n))
    cat[rng.random(n) < 0.05] = np.nan
    when = pd.Timestamp("2024-01-01", tz="UTC") + pd.to_timedelta(rng.integers(0, 60, n), "D")
    return Predictions.from_arrays(
        rng.random(n), (rng.random(n) < 0.5).astype(int),
        covariates={"x": x, "cat": cat, "flag": rng.random(n) < 0.4, "when": when,
                    "z": rng.normal(size=n)})


CONDITIONS = [
    (Condition("x", "<", 5.0),), (Condition("x", "<=", 5.0),), (Condition("x", ">", 5.0),),
    (Condition("x", ">=", 5.5),), (Condition("x", "==", 7.0),), (Condition("x", "!=", 7.0),),
    (Condition("x", "in", (1.0, 3.0, 99.0)),), (Condition("x", "not in", (1.0,)),),
    (Condition("x", "is missing"),), (Condition("x", "is not missing"),),
    (Condition("x", "<", np.inf),), (Condition("x", ">=", -np.inf),),
    (Condition("cat", "==", "a"),), (Condition("cat", "!=", "a"),),
    (Condition("cat", "in", ("b", "zz")),), (Condition("cat", "not in", ("b",)),),
    (Condition("cat", "is missing"),), (Condition("flag", "==", True),),
    (Condition("when", ">=", pd.Timestamp("2024-02-01")),),
    (Condition("when", "<", pd.Timestamp("2024-01-20", tz="UTC")), Condition("x", ">=", 3.0)),
]


@pytest.fixture(params=["numpy", "compiled"])
def compiled(request, monkeypatch):
    """The numpy pass, or the compiled loop (:func:`mcviz.core._compiled.flat_members`)."""
    if request.param == "numpy":
        return False
    pytest.importorskip("numba")
    return True


def test_each_operator_selects_what_select_rows_selects(pred, compiled):
    specs = as_specs([list(c) for c in [*CONDITIONS, (
        Condition("z", "<", 0.5), Condition("x", ">=", 3.0), Condition("cat", "!=", "c"))]])
    plan = MembershipPlan(specs)
    codes = plan.encode({c: pred.covariates[c] for c in pred.covariates.columns})
    members = plan.members_from_codes(codes, pred.n, compiled=compiled)
    assert isinstance(members, kernels.FlatMembers) is compiled
    assert members[0].size == pred.n  # the full population comes first
    for spec, rows in zip(specs[1:], list(members)[1:], strict=True):
        np.testing.assert_array_equal(rows, select_rows(pred, spec.conditions),
                                      err_msg=str(spec.conditions))


def test_algorithm_1_paths_and_batches(pred, compiled):
    generated = generate_subpopulations(pred, n_subpopulations=150, seed=2)
    plan = MembershipPlan(generated.subpopulations)
    assert sum(p is not None for p in plan.parent) > 100  # children tested on parents' rows
    codes = plan.encode({c: pred.covariates[c] for c in plan.columns})
    whole = plan.members_from_codes(codes, pred.n, compiled=compiled)
    for sub, rows in zip(generated.subpopulations, whole, strict=True):
        np.testing.assert_array_equal(rows, sub.index)
    # a batch's codes mean the same as the whole data's (batches of other sizes, one after
    # another: the compiled loop writes each into the buffer the one before used)
    for first, last in ((1000, 2500), (0, 7), (3990, 4000), (0, 4000)):
        batch = plan.members_from_codes(plan.encode(
            {c: pred.covariates[c].iloc[first:last] for c in plan.columns}), last - first,
            compiled=compiled)
        for sub, rows in zip(generated.subpopulations, batch, strict=True):
            expected = sub.index[(sub.index >= first) & (sub.index < last)] - first
            np.testing.assert_array_equal(rows, expected)


def test_compiled_members_grow_a_small_buffer(pred):
    # a fresh plan sized on 7 rows, then every row: the buffer of the first grows (and is
    # read from the new one: a child reads its parent's rows back from the buffer)
    generated = generate_subpopulations(pred, n_subpopulations=150, seed=2)
    plan = MembershipPlan(generated.subpopulations)
    codes = plan.encode({c: pred.covariates[c] for c in plan.columns})
    small = plan.members_from_codes({k: v[:7] for k, v in codes.items()}, 7, compiled=True)
    assert small.index.size < sum(s.index.size for s in generated.subpopulations) / 10
    whole = plan.members_from_codes(codes, pred.n, compiled=True)
    for sub, rows in zip(generated.subpopulations, whole, strict=True):
        np.testing.assert_array_equal(rows, sub.index)


def test_without_the_loops_members_are_lists(pred, monkeypatch):
    monkeypatch.setattr(kernels, "enabled", False)
    plan = MembershipPlan(as_specs([list(c) for c in CONDITIONS[:3]]))
    codes = plan.encode({"x": pred.covariates["x"]})
    assert isinstance(plan.members_from_codes(codes, pred.n, compiled=True), list)


def test_errors_name_the_column(pred):
    plan = MembershipPlan(as_specs([[Condition("nope", "<", 1.0)]]))
    with pytest.raises(ValidationError, match="column 'nope'"):
        plan.members({"x": pred.covariates["x"]}, pred.n)
    with pytest.raises(ValidationError, match="unknown operator"):
        MembershipPlan(as_specs([[Condition("x", "~", 1.0)]]))

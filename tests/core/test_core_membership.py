"""MembershipPlan (integer codes, children tested on their parents' rows) against select_rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mcviz.core import MembershipPlan
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


def test_each_operator_selects_what_select_rows_selects(pred):
    specs = as_specs([list(c) for c in CONDITIONS])
    members = MembershipPlan(specs).members(
        {c: pred.covariates[c] for c in pred.covariates.columns}, pred.n)
    assert members[0].size == pred.n  # the full population comes first
    for spec, rows in zip(specs[1:], members[1:], strict=True):
        np.testing.assert_array_equal(rows, select_rows(pred, spec.conditions),
                                      err_msg=str(spec.conditions))


def test_algorithm_1_paths_and_batches(pred):
    generated = generate_subpopulations(pred, n_subpopulations=150, seed=2)
    plan = MembershipPlan(generated.subpopulations)
    assert sum(p is not None for p in plan.parent) > 100  # children tested on parents' rows
    codes = plan.encode({c: pred.covariates[c] for c in plan.columns})
    whole = plan.members_from_codes(codes, pred.n)
    for sub, rows in zip(generated.subpopulations, whole, strict=True):
        np.testing.assert_array_equal(rows, sub.index)
    # a batch's codes mean the same as the whole data's
    batch = plan.members({c: pred.covariates[c].iloc[1000:2500] for c in plan.columns}, 1500)
    for sub, rows in zip(generated.subpopulations, batch, strict=True):
        expected = sub.index[(sub.index >= 1000) & (sub.index < 2500)] - 1000
        np.testing.assert_array_equal(rows, expected)


def test_errors_name_the_column(pred):
    plan = MembershipPlan(as_specs([[Condition("nope", "<", 1.0)]]))
    with pytest.raises(ValidationError, match="column 'nope'"):
        plan.members({"x": pred.covariates["x"]}, pred.n)
    with pytest.raises(ValidationError, match="unknown operator"):
        MembershipPlan(as_specs([[Condition("x", "~", 1.0)]]))

"""Subpopulations in plain words (mcviz.subpopulations.words): no operator, readable bounds."""

import numpy as np
import pandas as pd
import pytest

from mcviz import Predictions
from mcviz.subpopulations import Condition, filter_subpopulation, parse_filter, select_rows
from mcviz.subpopulations.words import (
    FILTER_OPERATORS,
    conditions_words,
    integer_columns,
    subpopulation_words,
)


@pytest.mark.parametrize(("conditions", "kwargs", "expected"), [
    # age >= 29 and age < 50 on whole numbers: the last age in is 49
    ([Condition("age", ">=", 29.0), Condition("age", "<", 50.0)], {"integers": {"age"}},
     "age 29 to 49"),
    # > 28.5 on whole numbers: 29; <= 49.5: 49
    ([Condition("age", ">", 28.5), Condition("age", "<=", 49.5)], {"integers": {"age"}},
     "age 29 to 49"),
    ([Condition("age", ">=", 50)], {"integers": {"age"}}, "age 50 or more"),
    ([Condition("age", "<", 50)], {"integers": {"age"}}, "age below 50"),
    ([Condition("age", "<=", 49.5)], {"integers": {"age"}}, "age below 50"),
    ([Condition("c", "<", 100), Condition("d", "<", 100)], {"integers": {"c", "d"}},
     "c below 100 and d below 100"),
    # whole numbers of 1,000 and more: rounded, as other numbers
    ([Condition("fnlwgt", ">=", 30730), Condition("fnlwgt", "<", 88840)],
     {"integers": {"fnlwgt"}}, "fnlwgt between 30,700 and 88,800"),
    # three significant digits: 30730 -> 30,700, 88840 -> 88,800
    ([Condition("fnlwgt", ">=", 30730.0), Condition("fnlwgt", "<", 88840.0)], {},
     "fnlwgt between 30,700 and 88,800"),
    ([Condition("x", ">", 0.12345)], {}, "x above 0.123"),
    ([Condition("x", "<=", 7)], {}, "x 7 or less"),
    ([Condition("region", "==", "South"), Condition("product", "==", "personal_loan")], {},
     "region is South and product is personal_loan"),
    ([Condition("region", "!=", "South")], {}, "region is not South"),
    ([Condition("m", "in", ("A", "B", "C"))], {}, "m is A, B or C"),
    ([Condition("m", "not in", ("A", "B"))], {}, "m is none of A and B"),
    ([Condition("zip", "in", tuple(f"z{k}" for k in range(12)))], {},
     "zip is z0, z1, z2, z3, z4 or 7 more"),
    ([Condition("p", ">=", 0.3), Condition("p", "<", 0.5)], {"score_column": "p"},
     "where the model predicts between 30% and 50%"),
    ([Condition("b", "is missing")], {}, "b is missing"),
    ([Condition("b", "is not missing")], {}, "b is known"),
    ([Condition("d", ">=", pd.Timestamp("2013-07-23 04:53:26.024096512"))], {},
     "d 2013-07-23 04:53:26.024 or more"),
])
def test_words(conditions, kwargs, expected):
    words = conditions_words(conditions, **kwargs)
    assert words == expected
    assert not any(op in words for op in FILTER_OPERATORS)


def test_bounds_that_round_alike_are_said_exactly():
    # 1,000.1 and 1,000.4 both round to 1,000: the words keep them apart
    words = conditions_words([Condition("x", ">=", 1000.1), Condition("x", "<", 1000.4)])
    assert words == "x between 1000.1 and 1000.4"


def test_subpopulation_words_read_integers_and_missing_from_the_data():
    rng = np.random.default_rng(0)
    n = 400
    x = rng.normal(size=n)
    x[:40] = np.nan
    pred = Predictions.from_arrays(rng.uniform(0.1, 0.9, n), rng.random(n) < 0.5, covariates={
        "age": rng.integers(18, 90, n), "x": x, "w": rng.uniform(0, 100, n).round(1)})
    assert integer_columns(pred, ["age", "x", "w"]) == {"age"}
    sub = filter_subpopulation(pred, "age >= 30 and age < 41 and x >= 0.5")
    words = subpopulation_words(pred, sub)
    assert words == "age 30 to 40 and x 0.5 or more, or missing"
    # the description stays the exact expression: it selects the same rows again
    assert np.array_equal(select_rows(pred, parse_filter(sub.description, pred)), sub.index)


def test_each_split_of_a_path_is_said_in_words():
    from mcviz import Predictions
    from mcviz.subpopulations import filter_subpopulation, split_words
    from mcviz.subpopulations.words import FILTER_OPERATORS

    rng = np.random.default_rng(0)
    n = 500
    pred = Predictions.from_arrays(rng.uniform(0.1, 0.9, n), rng.integers(0, 2, n), covariates={
        "age": rng.integers(18, 90, n).astype(float), "sex": rng.choice(["F", "M"], n)})
    sub = filter_subpopulation(pred, "age >= 30 and sex == M and age < 50")
    steps = split_words(pred, sub)
    assert steps == ["age 30 or more", "sex is M", "age below 50"]
    assert not any(op in step for step in steps for op in FILTER_OPERATORS)

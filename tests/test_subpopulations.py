import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.subpopulations import (
    MISSING_RULE,
    Condition,
    describe_conditions,
    filter_subpopulation,
    generate_subpopulations,
    group_subpopulations,
    parse_filter,
    select_rows,
)


def mixed_predictions(n=3000, seed=0, order=None):
    rng = np.random.default_rng(seed)
    score = np.round(rng.random(n), 2)  # ties in the score
    label = (rng.random(n) < score).astype(int)
    age = rng.integers(18, 90, n).astype(float)
    age[rng.random(n) < 0.05] = np.nan
    hours = rng.normal(40, 10, n)
    occupation = rng.choice(["Sales", "Tech-support", "Exec managerial", "Prof-specialty",
                             "Craft"], n).astype(object)
    occupation[rng.random(n) < 0.03] = None
    female = rng.random(n) < 0.4
    when = pd.to_datetime("2020-01-01") + pd.to_timedelta(rng.integers(0, 400, n), unit="D")
    frame = pd.DataFrame({"age": age, "hours per week": hours, "occupation": occupation,
                          "female": female, "when": when})
    if order is not None:
        score, label, frame = score[order], label[order], frame.iloc[order].reset_index(drop=True)
    return Predictions.from_arrays(score, label, covariates=frame)


@pytest.fixture(scope="module")
def mixed():
    pred = mixed_predictions()
    return pred, generate_subpopulations(pred, n_subpopulations=300, min_size=10, seed=7)


def test_kinds_of_the_fixture(mixed):
    pred, _ = mixed
    assert pred.covariate_kinds == {"age": "ordinal", "hours per week": "ordinal",
                                    "occupation": "nominal", "female": "ordinal",
                                    "when": "ordinal"}


def test_exactly_ell_distinct_subpopulations(mixed):
    pred, subpops = mixed
    assert len(subpops) == 301
    assert subpops.notice is None
    assert [s.id for s in subpops] == list(range(301))
    assert subpops[0].description == "full population"
    assert subpops[0].size == pred.n
    memberships = {s.index.tobytes() for s in subpops}
    assert len(memberships) == 301


def test_algorithm_1_properties(mixed):
    pred, subpops = mixed
    by_id = {s.id: s for s in subpops}
    for sub in subpops.subpopulations[1:]:
        assert sub.size >= 10
        assert sub.size < pred.n
        assert np.all(np.diff(sub.index) > 0)  # sorted, in score order
        assert not sub.index.flags.writeable
        parent = by_id[sub.parent]
        assert np.isin(sub.index, parent.index).all()  # subset of its parent
        assert sub.size < parent.size
        assert sub.depth == parent.depth + 1
        # the description re-applied through the filter language selects exactly the members
        assert np.array_equal(select_rows(pred, parse_filter(sub.description, pred)), sub.index)
        assert np.array_equal(select_rows(pred, sub.conditions), sub.index)
        assert describe_conditions(sub.conditions) == sub.description


def test_same_seed_same_result_other_seed_differs(mixed):
    pred, subpops = mixed
    again = generate_subpopulations(pred, n_subpopulations=300, min_size=10, seed=7)
    assert [s.description for s in again] == [s.description for s in subpops]
    assert all(np.array_equal(a.index, b.index) for a, b in zip(again, subpops, strict=True))
    other = generate_subpopulations(pred, n_subpopulations=300, min_size=10, seed=8)
    assert [s.description for s in other] != [s.description for s in subpops]


def test_descriptions_use_original_names_and_units(mixed):
    _, subpops = mixed
    text = " ".join(s.description for s in subpops)
    assert "`hours per week`" in text
    assert "occupation in {" in text or "occupation not in {" in text or "occupation ==" in text
    assert '"Exec managerial"' in text  # quoted: has a space
    assert 'when ≥ "20' in text or 'when < "20' in text  # dates as dates


def test_nominal_order_is_redrawn_per_path():
    # One nominal covariate with 6 equally common categories: a fixed order could only ever
    # produce 2 first-level subpopulations; fresh orders per path give many different sets.
    rng = np.random.default_rng(0)
    n = 600
    pred = Predictions.from_arrays(rng.random(n), rng.integers(0, 2, n),
                                   covariates={"c": np.repeat(list("abcdef"), n // 6)})
    subpops = generate_subpopulations(pred, n_subpopulations=30, min_size=50, seed=1)
    first_level = {s.description for s in subpops if s.depth == 1}
    assert len(first_level) > 4
    for sub in subpops.subpopulations[1:]:
        assert np.array_equal(select_rows(pred, parse_filter(sub.description, pred)), sub.index)


def test_median_of_distinct_values_hand_computed():
    # Values 1,1,1,1,1,1,2,3,4 (distinct 1,2,3,4: u = 4, split point v_2 = 3), so the two
    # first-level subpopulations are "x < 3" (7 members) and "x ≥ 3" (2 members).
    x = np.array([1, 1, 1, 1, 1, 1, 2, 3, 4], dtype=float)
    pred = Predictions.from_arrays(np.linspace(0.1, 0.9, 9), [0, 1] * 4 + [0],
                                   covariates={"x": x})
    subpops = generate_subpopulations(pred, n_subpopulations=10, min_size=1, seed=0)
    first = {s.description: s.size for s in subpops if s.depth == 1}
    assert first == {"x < 3": 7, "x ≥ 3": 2}
    # odd number of distinct values 1..5: the median 3 itself is the split point
    pred = Predictions.from_arrays(np.linspace(0.1, 0.9, 5), [0, 1, 0, 1, 0],
                                   covariates={"x": [5.0, 4.0, 3.0, 2.0, 1.0]})
    subpops = generate_subpopulations(pred, n_subpopulations=10, min_size=1, seed=0)
    first = {s.description: s.size for s in subpops if s.depth == 1}
    assert first == {"x < 3": 2, "x ≥ 3": 3}


def test_missing_counts_as_largest_value_in_algorithm_1():
    # Observed 1, 2 and missing: distinct values 1, 2, missing (u = 3, split point 2).
    x = np.array([1, 1, 2, 2, np.nan, np.nan])
    pred = Predictions.from_arrays(np.linspace(0.1, 0.6, 6), [0, 1, 0, 1, 0, 1],
                                   covariates={"x": x})
    subpops = generate_subpopulations(pred, n_subpopulations=10, min_size=1, seed=0)
    sizes = {s.description: s.size for s in subpops}
    assert sizes["x < 2"] == 2
    assert sizes["x ≥ 2"] == 4  # the missing rows sort above 2
    assert sizes["x is missing"] == 2  # the two NaN rows
    for sub in subpops:
        assert np.array_equal(select_rows(pred, parse_filter(sub.description, pred)), sub.index)


def test_missing_rule_in_select_rows():
    pred = Predictions.from_arrays(
        [0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1],
        covariates={"x": [1.0, np.nan, 3.0, 2.0], "c": ["a", None, "b", "a"]})
    rows = {}
    for op, value in (("<", 2), ("<=", 2), (">", 2), (">=", 2), ("==", 2), ("!=", 2),
                      ("in", (1, 2)), ("not in", (1, 2)), ("is missing", None),
                      ("is not missing", None)):
        rows[op] = pred.row[select_rows(pred, [Condition("x", op, value)])].tolist()
    assert sorted(rows["<"]) == [0]
    assert sorted(rows["<="]) == [0, 3]
    assert sorted(rows[">"]) == [1, 2]  # missing sorts after every value
    assert sorted(rows[">="]) == [1, 2, 3]
    assert sorted(rows["=="]) == [3]
    assert sorted(rows["!="]) == [0, 1, 2]
    assert sorted(rows["in"]) == [0, 3]
    assert sorted(rows["not in"]) == [1, 2]
    assert rows["is missing"] == [1]
    assert sorted(rows["is not missing"]) == [0, 2, 3]
    nominal = lambda op, v: sorted(pred.row[select_rows(pred, [Condition("c", op, v)])].tolist())  # noqa: E731
    assert nominal("==", "a") == [0, 3]
    assert nominal("!=", "a") == [1, 2]
    assert nominal("in", ("a", "b")) == [0, 2, 3]
    assert nominal("not in", ("a",)) == [1, 2]
    assert "NULLS LAST" in MISSING_RULE


def test_tiny_or_constant_data_give_a_notice_and_stop():
    pred = Predictions.from_arrays([0.2, 0.4, 0.6, 0.8] * 5, [0, 1] * 10,
                                   covariates={"x": [1.0, 2.0] * 10})
    subpops = generate_subpopulations(pred, n_subpopulations=50, min_size=3, seed=0)
    assert len(subpops) == 3  # full, x < 2, x >= 2
    assert subpops.notice is not None
    assert "only 2 distinct subpopulations" in subpops.notice
    assert "asked for 50" in subpops.notice
    # min size larger than the data: nothing but the full population
    subpops = generate_subpopulations(pred, n_subpopulations=5, min_size=100, seed=0)
    assert len(subpops) == 1
    assert "only 0" in subpops.notice
    # no covariates
    bare = Predictions.from_arrays([0.2, 0.4], [0, 1])
    subpops = generate_subpopulations(bare, n_subpopulations=5)
    assert len(subpops) == 1
    assert "no covariates" in subpops.notice


def test_generation_validation():
    pred = Predictions.from_arrays([0.2, 0.4], [0, 1], covariates={"x": [1.0, 2.0]})
    with pytest.raises(ValidationError, match="covariate 'y' is not among"):
        generate_subpopulations(pred, covariates=["y"])
    with pytest.raises(ValidationError, match="min_size must be an integer >= 1"):
        generate_subpopulations(pred, min_size=0)
    with pytest.raises(ValidationError, match="n_subpopulations must be"):
        generate_subpopulations(pred, n_subpopulations=-1)
    with pytest.raises(ValidationError, match="seed must be"):
        generate_subpopulations(pred, seed=-3)


def _row_sets(pred, subpops):
    return [(s.description, frozenset(pred.row[s.index].tolist())) for s in subpops]


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**20), st.integers(30, 300), st.integers(0, 2**10))
def test_independent_of_row_order(seed, n, algorithm_seed):
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    one = mixed_predictions(n, seed)
    two = mixed_predictions(n, seed, order=order)
    a = generate_subpopulations(one, n_subpopulations=25, min_size=3, seed=algorithm_seed)
    b = generate_subpopulations(two, n_subpopulations=25, min_size=3, seed=algorithm_seed)
    # rows are numbered in the file; map the permuted file's rows back to the original ones
    mapped = [(d, frozenset(order[list(rows)].tolist())) for d, rows in _row_sets(two, b)]
    assert _row_sets(one, a) == mapped


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**20), st.integers(1, 30))
def test_properties_hold_for_random_data(seed, min_size):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 400))
    pred = Predictions.from_arrays(
        rng.random(n), rng.integers(0, 2, n),
        covariates={"a": rng.integers(0, 4, n), "b": rng.normal(size=n),
                    "c": rng.choice(["x", "y", "z"], n)})
    subpops = generate_subpopulations(pred, n_subpopulations=40, min_size=min_size, seed=seed)
    assert len({s.index.tobytes() for s in subpops}) == len(subpops)
    assert len(subpops) == 41 or subpops.notice
    for sub in subpops.subpopulations[1:]:
        assert sub.size >= min_size
        assert np.array_equal(select_rows(pred, parse_filter(sub.description, pred)), sub.index)


# ---------------------------------------------------------------------------------------------
# filter language


@pytest.fixture(scope="module")
def small():
    return Predictions.from_arrays(
        [0.1, 0.3, 0.5, 0.7, 0.9], [0, 1, 0, 1, 1],
        covariates={"age": [25, 40, 55, 40, 70], "sex": ["Male", "Female", "Female", "Male",
                                                         "Female"],
                    "capital gain": [0.0, 10.5, 0.0, 3.0, np.nan],
                    "smoker": [True, False, True, False, False],
                    "day": pd.to_datetime(["2024-01-01", "2024-02-01", "2024-03-01",
                                           "2024-04-01", "2024-05-01"])})


def test_filter_examples(small):
    rows = lambda text: small.row[select_rows(small, parse_filter(text, small))].tolist()  # noqa: E731
    assert rows('age >= 40 and sex == "Female"') == [1, 2, 4]
    assert rows("age ≥ 40 & sex = Female") == [1, 2, 4]
    assert rows('sex in {"Male"}') == [0, 3]
    assert rows("sex not in (Male)") == [1, 2, 4]
    assert rows("`capital gain` > 0") == [1, 3, 4]  # missing sorts last
    assert rows("`capital gain` > 0 and `capital gain` is not missing") == [1, 3]
    assert rows("(age < 50) and smoker == true") == [0]
    assert rows('day >= "2024-03-01"') == [2, 3, 4]
    assert rows("age in [40, 70]") == [1, 3, 4]
    assert rows("full population") == [0, 1, 2, 3, 4]
    conditions = parse_filter("age <> 40 and sex != 'Male'", small)
    assert conditions == (Condition("age", "!=", 40), Condition("sex", "!=", "Female"[:0] + "Male"))


def test_filter_round_trip(small):
    conditions = (Condition("age", ">=", 40.0), Condition("capital gain", "<", 10.5),
                  Condition("sex", "in", ("Female",)), Condition("smoker", "==", False),
                  Condition("day", "<", pd.Timestamp("2024-04-01")))
    text = describe_conditions(conditions)
    assert text == ('age ≥ 40 and `capital gain` < 10.5 and sex in {Female} and '
                    'smoker == False and day < "2024-04-01"')
    assert np.array_equal(select_rows(small, parse_filter(text, small)),
                          select_rows(small, conditions))


@pytest.mark.parametrize(("text", "message", "pointer"), [
    ("agee >= 40", r"unknown column 'agee'; did you mean 'age'", "^^^^"),
    ("age >= forty", r"column 'age' is numeric; expected a number, found 'forty'",
     " " * 7 + "^^^^^"),
    ("sex < 3", r"column 'sex' is nominal", "    ^"),
    ('sex == "Femal"', r"no category 'Femal'; did you mean 'Female'", "       ^^^^^^^"),
    ("age >= 40 or sex == Male", r"'or' is not supported", " " * 10 + "^^"),
    ("age 40", r"expected an operator .* found '40'", "    ^^"),
    ('sex == "Male', r"unterminated string", "       ^"),
    ("age >= 40 and", r"expected a column name, found 'the end of the filter'", ""),
    ("age >= 40 $", r"unexpected character '\$'", " " * 10 + "^"),
    ("sex in {Male, , Female}", r"expected a value for .sex., found .,.", " " * 14 + "^"),
    ("smoker == maybe", r"boolean; expected true or false", ""),
    ('day > "yesterday-ish"', r"holds dates", ""),
    ("", r"empty filter", ""),
    ("not age > 3", r"'not' must follow a column name", "^^^"),
    ("sex in Male", r"expected a set of values", ""),
    ("age >= 40 age", r"expected 'and' or the end of the filter, found 'age'", ""),
])
def test_filter_errors_point_at_the_token(small, text, message, pointer):
    with pytest.raises(ValidationError, match=message) as error:
        parse_filter(text, small)
    shown = str(error.value)
    assert f"\n  {text}\n" in shown
    assert shown.split("\n")[-1].startswith("  " + pointer)


def test_parse_with_kinds_only():
    kinds = {"age": "ordinal", "occupation": "nominal"}
    assert parse_filter("occupation in {a, 'b c'} and age < 3.5", kinds) == (
        Condition("occupation", "in", ("a", "b c")), Condition("age", "<", 3.5))


def test_filter_subpopulation(small):
    sub = filter_subpopulation(small, "age >= 40 and sex == Female")
    assert sub.description == "age ≥ 40 and sex == Female"
    assert small.row[sub.index].tolist() == [1, 2, 4]
    with pytest.raises(ValidationError, match="selects none of the 5 rows"):
        filter_subpopulation(small, "age > 100")


def test_select_rows_validation(small):
    with pytest.raises(ValidationError, match="no covariate 'nope'"):
        select_rows(small, [Condition("nope", "<", 1)])
    with pytest.raises(ValidationError, match="unknown operator '=>'"):
        select_rows(small, [Condition("age", "=>", 1)])


# ---------------------------------------------------------------------------------------------
# groups


def test_groups(small):
    groups = group_subpopulations(small, ["smoker", "sex"])
    assert [g.description for g in groups] == ["smoker == True", "sex == Female", "sex == Male"]
    assert [g.id for g in groups] == [1, 2, 3]
    assert [small.row[g.index].tolist() for g in groups] == [[0, 2], [1, 2, 4], [0, 3]]
    assert all(g.depth == 0 for g in groups)
    with pytest.raises(ValidationError, match="neither boolean"):
        group_subpopulations(small, ["age"])
    with pytest.raises(ValidationError, match="group column 'nope' is not a covariate"):
        group_subpopulations(small, ["nope"])


def test_groups_with_missing_level_and_zero_one_column():
    pred = Predictions.from_arrays([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1],
                                   covariates={"c": ["a", None, "a", "b"], "flag": [0, 1, 1, 0]})
    groups = group_subpopulations(pred, ["c", "flag"])
    assert [g.description for g in groups] == ["c == a", "c == b", "c is missing", "flag == 1"]
    assert [pred.row[g.index].tolist() for g in groups] == [[0, 2], [3], [1], [1, 2]]


@pytest.mark.parametrize("n", [500, 6000])
def test_only_the_order_of_values_matters(n):
    # Algorithm 1 uses only the order of a covariate's values, so a strictly increasing
    # transformation changes no membership. This crosses the internal encodings: integers,
    # decimals, arbitrary floats, and (n = 6000) floats with every value distinct.
    rng = np.random.default_rng(n)
    score = rng.random(n)
    label = (rng.random(n) < score).astype(int)
    x = rng.normal(size=n)
    d = np.round(rng.random(n), 2)
    x[rng.random(n) < 0.02] = np.nan
    one = Predictions.from_arrays(score, label, covariates={"x": x, "d": d})
    two = Predictions.from_arrays(score, label, covariates={
        "x": np.exp(x) * 3 + 1, "d": np.round(d * 100).astype(int)})
    a = generate_subpopulations(one, n_subpopulations=60, min_size=5, seed=11)
    b = generate_subpopulations(two, n_subpopulations=60, min_size=5, seed=11)
    assert [s.index.tobytes() for s in a] == [s.index.tobytes() for s in b]
    for sub in (*a, *b):
        pred = one if sub in a.subpopulations else two
        assert np.array_equal(select_rows(pred, parse_filter(sub.description, pred)), sub.index)


def test_sql_translation_selects_the_same_rows_in_duckdb(mixed):
    import duckdb
    import pyarrow as pa

    from mcviz.subpopulations import conditions_sql

    pred, subpops = mixed
    frame = pred.covariates.copy()
    frame["row_number"] = pred.row
    table = pa.Table.from_pandas(frame, preserve_index=False)  # NaN and None become NULL
    connection = duckdb.connect()
    connection.register("t", table)
    for sub in subpops.subpopulations[:120]:
        query = f"SELECT row_number FROM t WHERE {conditions_sql(sub.conditions)}"
        rows = sorted(r[0] for r in connection.execute(query).fetchall())
        assert rows == sorted(pred.row[sub.index].tolist()), conditions_sql(sub.conditions)


def test_nominal_with_too_many_categories_is_left_out_with_a_notice():
    rng = np.random.default_rng(0)
    n = 3000
    pred = Predictions.from_arrays(rng.random(n), rng.integers(0, 2, n),
                                   covariates={"id": [f"u{i}" for i in range(n)],
                                               "x": rng.normal(size=n)})
    subpops = generate_subpopulations(pred, n_subpopulations=20, seed=0)
    assert len(subpops) == 21
    assert "left out of Algorithm 1: 'id'" in subpops.notice
    assert all("id" not in s.description for s in subpops)
    only = generate_subpopulations(pred, covariates=["id"], n_subpopulations=20)
    assert len(only) == 1
    assert "no covariates to split on" in only.notice


_ORDINAL_OPS = ("<", "<=", ">", ">=", "==", "!=", "is missing", "is not missing")


@st.composite
def _conditions(draw):
    conditions = []
    for _ in range(draw(st.integers(1, 4))):
        column = draw(st.sampled_from(["age", "sex", "capital gain", "smoker"]))
        if column == "sex":
            op = draw(st.sampled_from(["==", "!=", "in", "not in", "is missing"]))
            items = tuple(draw(st.lists(st.sampled_from(["Male", "Female"]), min_size=1,
                                        max_size=2, unique=True)))
            value = items if op in ("in", "not in") else (None if "missing" in op else items[0])
        elif column == "smoker":
            op = draw(st.sampled_from(["==", "!="]))
            value = draw(st.booleans())
        else:
            op = draw(st.sampled_from((*_ORDINAL_OPS, "in", "not in")))
            number = draw(st.one_of(st.integers(-100, 100), st.floats(-1e6, 1e6)))
            value = (number, 40) if op in ("in", "not in") else (
                None if "missing" in op else number)
        conditions.append(Condition(column, op, value))
    return conditions


@settings(max_examples=60, deadline=None)
@given(_conditions())
def test_describe_then_parse_selects_the_same_rows(small, conditions):
    text = describe_conditions(conditions)
    assert np.array_equal(select_rows(small, parse_filter(text, small)),
                          select_rows(small, conditions)), text


def test_infinite_covariate_values_round_trip():
    # The split point v_{floor(u/2)} can be +inf (values {2, inf}: u = 2, split point inf), so
    # descriptions such as "x < inf" must parse back to the same members.
    rng = np.random.default_rng(0)
    n = 40
    x = np.where(rng.random(n) < 0.5, np.inf, rng.integers(0, 3, n).astype(float))
    x[:3] = -np.inf
    pred = Predictions.from_arrays(rng.random(n), rng.integers(0, 2, n), covariates={"x": x})
    subpops = generate_subpopulations(pred, n_subpopulations=10, min_size=1, seed=0)
    descriptions = [s.description for s in subpops]
    assert any("inf" in d for d in descriptions), descriptions
    for sub in subpops:
        assert np.array_equal(select_rows(pred, parse_filter(sub.description, pred)), sub.index)
    rows = lambda text: sorted(pred.row[select_rows(pred, parse_filter(text, pred))].tolist())  # noqa: E731
    assert rows("x < inf") == sorted(np.flatnonzero(x < np.inf).tolist())
    assert rows("x > -inf and x in {-inf, 1}") == sorted(np.flatnonzero(x == 1).tolist())
    assert parse_filter("x >= -Infinity", {"x": "ordinal"}) == (Condition("x", ">=", -np.inf),)


def test_timezone_aware_dates_round_trip():
    rng = np.random.default_rng(1)
    n = 300
    when = pd.date_range("2024-03-01", periods=n, freq="7h", tz="US/Eastern")  # crosses DST
    pred = Predictions.from_arrays(rng.random(n), rng.integers(0, 2, n),
                                   covariates=pd.DataFrame({"when": when}))
    subpops = generate_subpopulations(pred, n_subpopulations=30, min_size=3, seed=2)
    assert len(subpops) == 31
    for sub in subpops:
        assert np.array_equal(select_rows(pred, parse_filter(sub.description, pred)), sub.index)


def test_nominal_and_ordinal_missing_values_with_every_kind():
    # NaN in an ordinal, None in a nominal and NA in a nullable boolean column (loaded as
    # nominal): every description re-applied selects exactly the members.
    rng = np.random.default_rng(4)
    n = 400
    x = rng.normal(size=n)
    x[rng.random(n) < 0.3] = np.nan
    c = rng.choice(["a", "b", "c"], n).astype(object)
    c[rng.random(n) < 0.2] = None
    b = pd.array(rng.random(n) < 0.5, dtype="boolean")
    b[rng.random(n) < 0.2] = pd.NA
    pred = Predictions.from_arrays(rng.random(n), rng.integers(0, 2, n),
                                   covariates=pd.DataFrame({"x": x, "c": c, "b": b}))
    subpops = generate_subpopulations(pred, n_subpopulations=150, min_size=3, seed=5)
    assert len(subpops) == 151
    text = " ".join(s.description for s in subpops)
    assert "is missing" in text
    by_id = {s.id: s for s in subpops}
    for sub in subpops.subpopulations[1:]:
        assert sub.size >= 3
        assert np.isin(sub.index, by_id[sub.parent].index).all()
        assert np.array_equal(select_rows(pred, parse_filter(sub.description, pred)), sub.index)


def test_sql_translation_with_infinite_thresholds_in_duckdb():
    import duckdb

    from mcviz.subpopulations import conditions_sql

    x = np.array([-np.inf, 1.0, 2.0, np.inf, np.nan, np.inf])
    pred = Predictions.from_arrays(np.linspace(0.1, 0.6, 6), [0, 1, 0, 1, 0, 1],
                                   covariates={"x": x})
    connection = duckdb.connect()
    connection.execute("CREATE TABLE t (row_number INTEGER, x DOUBLE)")
    connection.executemany("INSERT INTO t VALUES (?, ?)",
                           [(i, None if np.isnan(v) else float(v)) for i, v in enumerate(x)])
    for text in ("x < inf", "x >= inf", "x > -inf", "x in {-inf, 2}", "x != inf"):
        conditions = parse_filter(text, pred)
        query = f"SELECT row_number FROM t WHERE {conditions_sql(conditions)}"
        rows = sorted(r[0] for r in connection.execute(query).fetchall())
        assert rows == sorted(pred.row[select_rows(pred, conditions)].tolist()), text

"""Covariates: decided at load time, put in score order on first access; the unstable sort."""

import dataclasses
import pickle

import numpy as np
import pandas as pd
import pytest

from mcviz import ValidationError, load_predictions
from mcviz.io import Predictions
from mcviz.io.covariates import PendingCovariates


def _frame():
    return pd.DataFrame({
        "score": [0.9, 0.1, 0.5, 0.3],
        "label": [1, 0, 1, 0],
        "age": [40, 20, 35, 50],
        "city": ["a", "b", "a", None],
        "const": [7, 7, 7, 7],
    })


def test_covariates_wait_until_read_and_then_match_score_order():
    pred = load_predictions(_frame())
    assert isinstance(pred.__dict__["_covariates"], PendingCovariates)
    # Kinds and the dropped constant are known at once, before any reordering.
    assert pred.covariate_kinds == {"age": "ordinal", "city": "nominal"}
    assert any("'const' dropped: it takes a single value" in n for n in pred.report.notices)
    # Score order 0.1, 0.3, 0.5, 0.9 is input rows 1, 3, 2, 0.
    assert pred.covariates["age"].tolist() == [20, 50, 35, 40]
    assert pred.covariates["city"].astype(object).where(pred.covariates["city"].notna(),
                                                        None).tolist() == ["b", None, "a", "a"]
    assert isinstance(pred.covariates["city"].dtype, pd.CategoricalDtype)
    assert pred.covariates is pred.covariates  # prepared once


def test_later_edits_of_the_callers_frame_do_not_leak():
    frame = _frame()
    pred = load_predictions(frame)
    frame.loc[1, "age"] = 99
    frame["age"] = frame["age"] * 0
    assert pred.covariates["age"].tolist() == [20, 50, 35, 40]


def test_pickle_and_replace_keep_pending_covariates_working():
    pred = load_predictions(_frame())
    again = pickle.loads(pickle.dumps(pred))
    assert again.covariates["age"].tolist() == [20, 50, 35, 40]
    heavier = dataclasses.replace(pred, weight=np.full(4, 2.0))
    assert heavier.covariates["age"].tolist() == [20, 50, 35, 40]
    with pytest.raises(dataclasses.FrozenInstanceError):
        pred.covariates = pd.DataFrame()


def test_declared_ordinal_text_is_refused_at_load_time_with_input_rows():
    frame = _frame().assign(grade=["1", "2", "x", "3"])
    with pytest.raises(ValidationError, match=r"'grade' was declared ordinal but 1 of 4 rows "
                                              r"\(rows 2\) are not numbers"):
        load_predictions(frame, ordinal=["grade"])
    pred = load_predictions(frame.assign(grade=["1", "2", "4", "3"]), ordinal=["grade"])
    assert pred.covariates["grade"].tolist() == [2.0, 3.0, 4.0, 1.0]


def test_constant_among_kept_rows_only_is_dropped():
    frame = _frame().assign(score=[0.9, 0.1, 1.5, 0.3], flag=[1, 1, 2, 1])
    pred = load_predictions(frame, drop_invalid=True)  # row 2 (the only flag 2) is dropped
    assert "flag" not in pred.covariate_kinds
    assert any("'flag' dropped: it takes a single value" in n for n in pred.report.notices)


def test_lists_among_values_are_dropped_with_notice():
    frame = _frame().assign(tags=[[1], "a", [2, 3], None])
    pred = load_predictions(frame)
    assert "tags" not in pred.covariate_kinds
    assert any("'tags' dropped: it holds lists" in n for n in pred.report.notices)


def test_direct_construction_takes_a_frame():
    covariates = pd.DataFrame({"x": [1.0, 2.0]})
    pred = Predictions(
        score=np.array([0.2, 0.4]), label=np.array([0.0, 1.0]), weight=np.ones(2),
        row=np.arange(2), run_end=np.ones(2, bool), covariates=covariates,
        covariate_kinds={"x": "ordinal"}, score_column="score", label_column="label",
    )
    assert pred.covariates is covariates


def test_tied_scores_any_order_inside_a_run_same_rows():
    # 2,000 rows with 10 distinct scores: the default sort may order each tie run as it likes,
    # but the runs, their members and run_end are fixed by the scores.
    rng = np.random.default_rng(3)
    score = rng.integers(0, 10, 2000) / 10
    pred = load_predictions(pd.DataFrame({"score": score, "label": rng.integers(0, 2, 2000)}))
    assert np.all(np.diff(pred.score) >= 0)
    assert sorted(pred.row.tolist()) == list(range(2000))
    assert np.array_equal(pred.score, score[pred.row])
    ends = np.flatnonzero(pred.run_end)
    assert np.array_equal(ends, np.searchsorted(pred.score, np.unique(score), side="right") - 1)


def _with_ids(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "score": rng.random(n), "label": rng.integers(0, 2, n),
        "customer_id": rng.permutation(n) + 10_000,  # by name (*_id)
        "id_region": rng.integers(0, 5, n),  # by name (id_*), few values all the same
        "session_uuid": [f"{i:032x}" for i in rng.permutation(n)],  # by name (uuid)
        "ref": [f"R{i:06d}" for i in rng.permutation(n)],  # by content: unique text
        "code": rng.permutation(n) + 1,  # by content: dense integer codes 1..n
        "income": rng.permutation(n) * 97 + 20_000,  # unique integers, but a measure
        "height": rng.normal(170, 10, n),  # unique reals: a measure
        "city": rng.choice(["a", "b", "c"], n),
        "paid": rng.integers(0, 2, n).astype(bool),  # ends in "id" without a separator
    })


def test_ids_are_left_out_by_name_and_content_with_a_note():
    pred = load_predictions(_with_ids(), score="score", label="label")
    assert set(pred.covariate_kinds) == {"income", "height", "city", "paid"}
    notes = " ".join(pred.report.notices)
    for name in ("customer_id", "id_region", "session_uuid", "ref", "code"):
        assert f"column {name!r} left out of the covariates: it reads as an id" in notes
    assert "name it among the covariates to use it" in notes


def test_an_id_named_among_the_covariates_is_kept():
    pred = load_predictions(_with_ids(), score="score", label="label",
                            covariates=["customer_id", "ref", "city"], nominal=["customer_id"])
    assert pred.covariate_kinds == {"customer_id": "nominal", "ref": "nominal",
                                    "city": "nominal"}
    assert not any("reads as an id" in n for n in pred.report.notices)


def test_small_tables_keep_unique_text():
    # fewer than 200 values: unique text is not called an id by its content
    frame = _with_ids().head(50)
    assert "ref" in load_predictions(frame, score="score", label="label").covariate_kinds


@pytest.mark.parametrize("rows", [[3, 0, 2, 1], [2, 2, 0], []])
def test_take_rows_is_pandas_take_for_every_kind_of_column(rows):
    from mcviz.io.covariates import take_rows

    frame = pd.DataFrame({
        "f": [0.5, np.nan, 2.0, 3.0], "i": [1, 2, 3, 4], "b": [True, False, True, False],
        "cat": pd.Categorical(["a", None, "b", "a"]),
        "s": pd.array(["x", None, "z", "w"], dtype="string"), "o": ["p", 1, None, 2.5],
        "when": pd.to_datetime(["2024-01-01", None, "2024-03-01", "2024-04-01"]).tz_localize("UTC"),
        "naive": pd.to_datetime(["2024-01-01", None, "2024-03-01", "2024-04-01"]),
        "td": pd.to_timedelta([1, 2, None, 4], unit="D"),
    })
    rows = np.array(rows, dtype=np.int64)
    pd.testing.assert_frame_equal(take_rows(frame, rows), frame.take(rows).reset_index(drop=True))
    assert len(take_rows(frame[[]], rows)) == rows.size  # no columns: still one row per row

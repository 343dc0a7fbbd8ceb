"""Reading and validating prediction files."""

import gzip
import io
import zipfile

import numpy as np
import pandas as pd
import pytest

from mcviz import Predictions, ValidationError, infer_roles, load_predictions, read_table
from mcviz.io import demo_path


def frame(**extra):
    data = {
        "score": [0.9, 0.1, 0.5, 0.3, 0.7],
        "label": [1, 0, 1, 0, 1],
        "age": [40, 20, 35, 50, 60],
        "city": ["a", "b", "a", None, "c"],
    }
    data.update(extra)
    return pd.DataFrame(data)


def csv_bytes(df, sep=","):
    return df.to_csv(index=False, sep=sep).encode()


def test_sorted_once_with_original_rows_and_kinds():
    pred = load_predictions(frame())
    assert pred.score.tolist() == [0.1, 0.3, 0.5, 0.7, 0.9]
    assert pred.row.tolist() == [1, 3, 2, 4, 0]
    assert pred.label.tolist() == [0, 0, 1, 1, 1]
    assert pred.covariates["age"].tolist() == [20, 50, 35, 60, 40]
    assert pred.covariate_kinds == {"age": "ordinal", "city": "nominal"}
    # The missing city is kept, not dropped (row 3 -> position 1).
    assert pred.covariates["city"].isna().tolist() == [False, True, False, False, False]
    assert not pred.weighted
    assert pred.weight_total == 5
    assert pred.report.n_read == 5
    assert pred.report.n_dropped == 0
    with pytest.raises(ValueError, match="read-only"):
        pred.score[0] = 0.5


@pytest.mark.parametrize("kind", ["csv", "tsv", "gz", "zip", "parquet", "filelike", "semicolon"])
def test_formats(tmp_path, kind):
    df = frame()
    if kind == "csv":
        source = tmp_path / "p.csv"
        source.write_bytes(csv_bytes(df))
    elif kind == "tsv":
        source = tmp_path / "p.tsv"
        source.write_bytes(csv_bytes(df, "\t"))
    elif kind == "semicolon":
        source = tmp_path / "p.csv"
        source.write_bytes(csv_bytes(df, ";"))
    elif kind == "gz":
        source = tmp_path / "p.csv.gz"
        source.write_bytes(gzip.compress(csv_bytes(df)))
    elif kind == "zip":
        source = tmp_path / "p.zip"
        with zipfile.ZipFile(source, "w") as archive:
            archive.writestr("p.csv", csv_bytes(df))
    elif kind == "parquet":
        source = tmp_path / "p.parquet"
        df.to_parquet(source)
    else:
        source = io.BytesIO(csv_bytes(df))
    pred = load_predictions(source)
    assert pred.n == 5
    assert pred.score_column == "score"
    assert sorted(pred.covariate_kinds) == ["age", "city"]


def test_infer_roles_common_names_and_explicit_override():
    df = pd.DataFrame(
        {"id": [1, 2, 3], "y_prob": [0.1, 0.6, 0.8], "other_score": [0.2, 0.3, 0.9],
         "target": [0, 1, 1], "w": [1.0, 2.0, 1.0], "x": [3, 4, 5]}
    )
    roles = infer_roles(df)
    assert roles.score == "y_prob"
    assert roles.score_candidates == ("y_prob", "other_score")
    assert roles.label == "target"
    assert roles.weight == "w"
    assert roles.id_columns == ("id",)
    pred = load_predictions(df)
    assert pred.weight_column == "w"
    # Further score columns and id columns are not covariates.
    assert list(pred.covariates.columns) == ["x"]
    explicit = load_predictions(df, score="other_score", weight=False, covariates=["x", "w"])
    assert explicit.score_column == "other_score"
    assert not explicit.weighted
    assert list(explicit.covariates.columns) == ["x", "w"]


def test_missing_column():
    with pytest.raises(ValidationError, match="column 'prob' is missing from the file") as info:
        load_predictions(frame(), score="prob")
    assert info.value.column == "prob"


def test_duplicate_column_names_csv_and_frame():
    raw = b"score,label,score\n0.1,0,0.2\n0.4,1,0.3\n"
    with pytest.raises(ValidationError, match="duplicate column names: 'score'"):
        load_predictions(io.BytesIO(raw))
    df = pd.DataFrame([[0.1, 0, 1], [0.2, 1, 2]], columns=["score", "label", "label"])
    with pytest.raises(ValidationError, match="duplicate column names: 'label'"):
        read_table(df)


@pytest.mark.parametrize(("name", "content", "match"), [
    ("empty.csv", b"", "is empty"),
    ("header.csv", b"score,label\n", "has a header but no rows"),
    ("garbage.parquet", b"PAR1" + bytes(range(256)) * 3,
     r"'garbage\.parquet' could not be read as Parquet"),
    ("ragged.csv", b"score,label\n0.1,0\n0.2,1,5,6\n", "not a valid CSV/TSV file"),
])
def test_empty_header_only_and_unreadable_files(tmp_path, name, content, match):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValidationError, match=match):
        load_predictions(path)


def test_nonexistent_file(tmp_path):
    with pytest.raises(ValidationError, match="does not exist"):
        load_predictions(tmp_path / "nope.csv")


def test_oversized_file_is_refused(tmp_path):
    path = tmp_path / "big.csv"
    data = csv_bytes(frame())
    path.write_bytes(data)
    with pytest.raises(ValidationError, match=rf"big.csv' is {len(data)} bytes; the limit is 10 b"):
        load_predictions(path, max_bytes=10)
    with pytest.raises(ValidationError, match="upload' is more than 10 bytes; the limit is 10 b"):
        load_predictions(io.BufferedReader(io.BytesIO(data)), max_bytes=10)  # no size known


def test_non_numeric_scores():
    df = frame(score=["0.9", "abc", "0.5", "0.3", "high"])
    with pytest.raises(
        ValidationError,
        match=r"column 'score': 2 of 5 rows \(rows 1, 4\) are not numbers .*'abc', 'high'",
    ):
        load_predictions(df, score="score")


@pytest.mark.parametrize("column", ["score", "label", "w"])
def test_nan_and_infinite(column):
    df = frame(w=[1.0, 2.0, 1.0, 1.0, 1.0])
    df[column] = df[column].astype(float)
    df.loc[2, column] = np.nan
    if column != "label":
        df.loc[4, column] = np.inf
    with pytest.raises(ValidationError, match=f"column '{column}': .* rows"):
        load_predictions(df, weight="w")


def test_score_outside_unit_interval_names_rows_and_values():
    df = frame(score=[0.9, 1.2, 0.5, -0.1, 0.7])
    with pytest.raises(
        ValidationError,
        match=r"column 'score': 2 of 5 rows \(rows 1, 3\) lie outside \[0, 1\] \(e.g. 1.2, -0.1\)",
    ):
        load_predictions(df)


def test_label_with_a_third_value_and_string_labels():
    message = r"column 'label': 1 of 5 rows \(rows 2\) are neither"
    with pytest.raises(ValidationError, match=message):
        load_predictions(frame(label=[1, 0, 2, 0, 1]))
    strings = frame(label=["yes", "no", "yes", "no", "maybe"])
    with pytest.raises(ValidationError, match="third label value"):
        load_predictions(strings, positive="yes")
    words = frame(label=[">50K", "<=50K", ">50K", "<=50K", ">50K"])
    with pytest.raises(ValidationError, match="name the positive value"):
        load_predictions(words)
    pred = load_predictions(words, positive=">50K")
    assert pred.label.sum() == 3
    assert pred.classes == ("<=50K", ">50K")
    booleans = load_predictions(frame(label=[True, False, True, False, True]))
    assert booleans.label.sum() == 3
    yes_no = load_predictions(frame(label=["yes", "no", "yes", "no", "yes"]))
    assert yes_no.label.sum() == 3


def test_single_class_is_a_warning():
    pred = load_predictions(frame(label=[1, 1, 1, 1, 1]))
    assert any("same label" in w for w in pred.report.warnings)


def test_zero_and_negative_weights():
    df = frame(w=[1.0, 0.0, 2.0, -1.0, 1.0])
    with pytest.raises(
        ValidationError, match=r"column 'w': 2 of 5 rows \(rows 1, 3\) are zero or negative"
    ):
        load_predictions(df, weight="w")


def test_drop_invalid_reports_exact_counts():
    df = frame(score=[0.9, np.nan, 1.5, 0.3, 0.7], w=[1.0, 1.0, 1.0, -2.0, 1.0])
    pred = load_predictions(df, weight="w", drop_invalid=True)
    assert pred.n == 2
    assert pred.report.n_read == 5
    assert pred.report.n_kept == 2
    assert dict(pred.report.dropped) == {
        "column 'score': are NaN or infinite": 1,
        "column 'score': lie outside [0, 1]": 1,
        "column 'w': are zero or negative": 1,
    }
    assert pred.report.n_dropped == 3
    assert sorted(pred.row.tolist()) == [0, 4]


def test_all_rows_invalid():
    with pytest.raises(ValidationError, match="no valid rows left: all 2 rows"):
        load_predictions(
            pd.DataFrame({"score": [2.0, 3.0], "label": [0, 1]}), drop_invalid=True
        )


def test_constant_and_all_missing_covariates_are_dropped_with_notice():
    df = frame(const=[1, 1, 1, 1, 1], empty=[None] * 5)
    pred = load_predictions(df)
    assert "const" not in pred.covariates
    assert "empty" not in pred.covariates
    assert any("'const' dropped" in n for n in pred.report.notices)
    assert any("'empty' dropped" in n for n in pred.report.notices)


def test_kind_overrides():
    df = frame(zip_code=["01", "02", "01", "03", "02"])
    pred = load_predictions(df, nominal=["age"], ordinal=["zip_code"])
    assert pred.covariate_kinds["age"] == "nominal"
    assert pred.covariate_kinds["zip_code"] == "ordinal"
    with pytest.raises(ValidationError, match="'city' was declared ordinal"):
        load_predictions(df, ordinal=["city"])


def test_datetimes_are_ordinal():
    df = frame(when=pd.date_range("2024-01-01", periods=5))
    assert load_predictions(df).covariate_kinds["when"] == "ordinal"


def multiclass_frame():
    probabilities = np.array(
        [[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4], [0.5, 0.4, 0.1], [0.2, 0.2, 0.6]]
    )
    df = pd.DataFrame(probabilities, columns=["prob_a", "prob_b", "prob_c"])
    df["truth"] = ["a", "b", "a", "b", "c"]
    df["x"] = [1, 2, 3, 4, 5]
    return df


def test_multiclass_top_label():
    pred = load_predictions(multiclass_frame(), label="truth")
    assert pred.multiclass
    assert pred.classes == ("a", "b", "c")
    assert pred.score.tolist() == [0.4, 0.5, 0.6, 0.7, 0.8]
    # Row 2 predicts c (label a: wrong), row 3 predicts a (label b: wrong), others right.
    assert pred.label.tolist() == [0, 0, 1, 1, 1]
    assert list(pred.covariates.columns) == ["x"]


def test_multiclass_unknown_label_and_sum_warning():
    df = multiclass_frame()
    df.loc[1, "truth"] = "z"
    message = r"column 'truth': 1 of 5 rows \(rows 1\) are not a known class"
    with pytest.raises(ValidationError, match=message):
        load_predictions(df, label="truth")
    df = multiclass_frame()
    df.loc[0, "prob_a"] = 0.5
    pred = load_predictions(df, label="truth")
    assert any("do not sum to 1" in w for w in pred.report.warnings)


def test_no_score_or_label():
    with pytest.raises(ValidationError, match="no score column"):
        load_predictions(pd.DataFrame({"a": [0.1, 0.2], "label": [0, 1]}))
    with pytest.raises(ValidationError, match="no label column"):
        load_predictions(pd.DataFrame({"score": [0.1, 0.2], "a": ["x", "y"]}))


def test_ties_marked_by_run_end():
    pred = Predictions.from_arrays([0.2, 0.5, 0.2, 0.9, 0.5], [0, 1, 1, 1, 0])
    assert pred.run_end.tolist() == [False, True, False, True, True]


def test_unknown_demo():
    with pytest.raises(ValidationError, match="unknown demo"):
        demo_path("iris")


# ---------------------------------------------------------------------------- review additions


def test_latin1_csv_is_read_not_crashed():
    raw = "score,label,city\n0.1,0,München\n0.2,1,Zürich\n".encode("latin-1")
    pred = load_predictions(io.BytesIO(raw))
    assert sorted(pred.covariates["city"].astype(str)) == ["München", "Zürich"]


def test_directory_is_a_clear_error(tmp_path):
    with pytest.raises(ValidationError, match="is a directory, not a file"):
        load_predictions(tmp_path)


def test_compressed_file_over_the_limit_is_refused(tmp_path):
    raw = csv_bytes(pd.concat([frame()] * 200, ignore_index=True))
    path = tmp_path / "p.csv.gz"
    path.write_bytes(gzip.compress(raw))
    limit = len(raw) - 1  # the compressed file is under it, the content is not
    assert path.stat().st_size <= limit
    with pytest.raises(ValidationError, match="decompresses to more than"):
        load_predictions(path, max_bytes=limit)
    zipped = tmp_path / "p.zip"
    with zipfile.ZipFile(zipped, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("p.csv", raw)
    with pytest.raises(ValidationError, match=rf"decompresses to {len(raw) / 1024:.2f} KiB"):
        load_predictions(zipped, max_bytes=limit)


def test_score_and_weight_named_columns_holding_text_are_named():
    with pytest.raises(ValidationError, match=r"column 'score': 2 of 5 rows .* not numbers"):
        load_predictions(frame(score=["0.9", "0,1", "0.5", "0.3", "high"]))
    # A weight column with text is checked, never silently ignored (weight=False opts out).
    df = frame(weight=["1", "2", "x", "1", "1"])
    with pytest.raises(ValidationError, match=r"column 'weight': 1 of 5 rows \(rows 2\)"):
        load_predictions(df)
    assert not load_predictions(df, weight=False).weighted


def test_label_words_in_any_case_and_unknown_positive():
    pred = load_predictions(frame(label=["yes", "no", "YES", "No", "yes"]))
    assert pred.label.sum() == 3
    with pytest.raises(ValidationError, match=r"positive value 'z' is not one of its labels"):
        load_predictions(frame(label=["a", "b", "a", "b", "a"]), positive="z")
    # A declared positive value absent from one-class labels is the one-class warning.
    pred = load_predictions(frame(label=["no"] * 5), positive="yes")
    assert pred.label.sum() == 0
    assert any("same label" in w for w in pred.report.warnings)


def test_covariate_of_lists_is_dropped_with_notice():
    pred = load_predictions(frame(tags=[[1], [2, 3], [], [4], [5]]))
    assert "tags" not in pred.covariates
    assert any("'tags' dropped" in n for n in pred.report.notices)


def test_multiclass_numeric_labels_and_class_names():
    df = pd.DataFrame({"prob_0": [0.7, 0.2, 0.1], "prob_1": [0.2, 0.7, 0.3],
                       "prob_2": [0.1, 0.1, 0.6], "y": [0.0, 2.0, np.nan]})
    pred = load_predictions(df.iloc[:2], label="y")  # float labels 0.0, 2.0 -> classes 0, 2
    # Both top-label probabilities are 0.7 (a tie, so read the response by input row): row 0
    # predicts 0 (right), row 1 predicts 1 (label 2: wrong).
    assert dict(zip(pred.row.tolist(), pred.label.tolist(), strict=True)) == {0: 1.0, 1: 0.0}
    df = pd.DataFrame({"prob_a1": [0.7, 0.2], "prob_a2": [0.3, 0.8], "y": ["a1", "a1"]})
    pred = load_predictions(df, probabilities=["prob_a1", "prob_a2"], label="y")
    assert pred.classes == ("a1", "a2")
    assert pred.label.tolist() == [1.0, 0.0]  # scores 0.7 (a1: right), 0.8 (a2: wrong)
    with pytest.raises(ValidationError, match="one probability column"):
        load_predictions(df, probabilities=["prob_a1"], label="y")
    with pytest.raises(ValidationError, match="listed twice"):
        load_predictions(df, probabilities=["prob_a1", "prob_a1"], label="y")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"nominal": ["nonexistent"]}, "column 'nonexistent' is missing"),
        ({"ordinal": ["score"]}, "'score' is declared ordinal but is not one of the covariates"),
        ({"nominal": ["age"], "ordinal": ["age"]}, "'age' is declared both nominal and ordinal"),
    ],
)
def test_declared_kinds_that_cannot_apply_are_errors(options, message):
    frame = pd.DataFrame({"score": [0.2, 0.6, 0.9], "label": [0, 1, 1], "age": [30, 40, 50]})
    with pytest.raises(ValidationError, match=message):
        load_predictions(frame, score="score", label="label", **options)


def test_unknown_response_kind_is_an_error():
    frame = pd.DataFrame({"score": [0.2, 0.8], "label": [0, 1]})
    with pytest.raises(ValidationError, match="response must be 'binary' or 'continuous'"):
        load_predictions(frame, response="rates")


def test_one_class_name_rule_for_loader_and_mapping():
    from mcviz.io import class_names, labels_are_classes

    columns = ["prob_a1", "prob_a2", "prob_b3"]
    labels = pd.Series(["a1", "b3", None, " a2 "])
    # The common prefix "prob_" leaves a1, a2, b3, which the labels name (stripped).
    assert class_names(columns, labels) == ["a1", "a2", "b3"]
    assert labels_are_classes(columns, labels)
    two = ["prob_a1", "prob_a2"]  # prefix "prob_a" leaves 1, 2; cut back to "prob_": a1, a2
    assert class_names(two) == ["1", "2"]
    assert class_names(two, ["a2", "a1"]) == ["a1", "a2"]
    assert labels_are_classes(two, ["a2", "a1"])
    assert labels_are_classes(["p_0", "p_1", "p_2"], [0.0, 2.0])  # float labels, numeric names
    assert not labels_are_classes(["score_a", "score_b", "score_c"], [0, 1])
    pred = load_predictions(pd.DataFrame({"prob_a1": [0.6, 0.3], "prob_a2": [0.4, 0.7],
                                          "y": ["a2", "a2"]}), probabilities=two, label="y")
    assert pred.classes == tuple(class_names(two, ["a2", "a2"]))

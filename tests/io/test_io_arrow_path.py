"""The pandas-free Parquet path of ``mcviz metrics`` gives exactly the loader's predictions.

Every file is loaded both ways - :func:`mcviz.io.arrow_path.parquet_predictions` and
:func:`mcviz.load_predictions` - and everything a statistic or the output reads is compared:
the score-sorted arrays, the roles, the covariates kept (names, kinds, values in score order)
and the notices of those dropped. Files the path cannot promise that for must give None (the
loader then answers), and the reader's limits refuse a file with the loader's own message.
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mcviz import ValidationError, load_predictions
from mcviz.cli import main
from mcviz.io import arrow_path
from mcviz.io.arrow_path import ArrowCovariates, parquet_predictions

ROOT = Path(__file__).resolve().parents[2]
N = 2_000


def _scores(rng: np.random.Generator, n: int = N) -> tuple[np.ndarray, np.ndarray]:
    score = np.round(rng.random(n), 2)  # ties: the order inside a run must not matter
    return score, (rng.random(n) < score).astype(np.int64)


def _many_kinds(seed: int = 0, n: int = N) -> dict[str, object]:
    """Columns of every kind the path handles, usable or not, with and without missing values."""
    rng = np.random.default_rng(seed)
    score, label = _scores(rng, n)
    some = rng.random(n) < 0.1
    floats = rng.normal(size=n)
    ints = rng.integers(0, 5, n)
    times = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 100, n), unit="D")
    words = np.array(["a", "b", "c"], dtype=object)[rng.integers(0, 3, n)]
    return {
        "score": score,
        "label": label,
        "age": ints,
        "int8": ints.astype(np.int8),
        "uint64": ints.astype(np.uint64) + np.uint64(2**63),
        "float32": floats.astype(np.float32),
        "real": floats,
        "real_nan": np.where(some, np.nan, floats),
        "real_all_nan": np.full(n, np.nan),
        "zeros_signed": np.where(some, -0.0, 0.0),  # -0.0 == 0.0: a single value
        "const_int": np.full(n, 7),
        "const_real": np.full(n, 2.5),
        "flag": ints > 2,
        "const_flag": np.ones(n, dtype=bool),
        "flag_missing": pd.array(np.where(some, None, ints > 2), dtype="boolean"),
        "flag_objects": np.where(some, None, ints > 2).astype(object),
        "flag_objects_full": (ints > 2).astype(object),
        "int_missing": pd.array(np.where(some, None, ints), dtype="Int64"),
        "int_all_missing": pd.array([None] * n, dtype="Int64"),
        "city": words,
        "city_missing": np.where(some, None, words),
        "city_odd": np.array(["Zoë", "zoe", "Émile", "", "b b", "\u05d0"], dtype=object)[
            rng.integers(0, 6, n)],  # code-point order (not locale, not case-folded)
        "cat": pd.Categorical(np.where(some, None, words), categories=["c", "unused", "a", "b"]),
        "cat_full": pd.Categorical(words),
        "cat_ordered": pd.Categorical(words, categories=["c", "b", "a"], ordered=True),
        "const_cat": pd.Categorical(np.full(n, "x"), categories=["x", "y"]),
        "cat_all_missing": pd.Categorical([None] * n, categories=["p", "q"]),
        "const_text": np.full(n, "x", dtype=object),
        "text_all_missing": pd.array([None] * n, dtype="string"),
        "when": times,
        "when_utc": times.tz_localize("UTC"),
        "const_when": pd.Series([pd.Timestamp("2020-02-02")] * n),
        "id": np.arange(n),  # an id: never a covariate
        "model_b_score": np.clip(score + 0.1, 0, 1),  # another score: never a covariate
    }


def _write(tmp_path: Path, columns: dict, *, name: str = "p.parquet", pandas: bool = True,
           row_group_size: int | None = 700) -> Path:
    """Write with pandas' metadata (pandas) or plain Arrow; several row groups (chunks)."""
    path = tmp_path / name
    frame = pd.DataFrame(columns)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    if not pandas:
        table = table.replace_schema_metadata(None)
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def _assert_same(fast, slow) -> None:
    for field in ("score", "label", "weight", "row", "run_end"):
        assert np.array_equal(getattr(fast, field), getattr(slow, field)), field
        assert getattr(fast, field).dtype == getattr(slow, field).dtype, field
    for field in ("score_column", "label_column", "weight_column", "probability_columns",
                  "classes", "positive", "response_kind", "weights_depend_on_label"):
        assert getattr(fast, field) == getattr(slow, field), field
    assert fast.predicted_class is None
    assert slow.predicted_class is None
    assert fast.covariate_names == slow.covariate_names
    assert fast.covariate_kinds == slow.covariate_kinds
    for field in ("n_read", "n_kept", "dropped", "warnings", "notices"):
        assert getattr(fast.report, field) == getattr(slow.report, field), field
    pd.testing.assert_frame_equal(fast.covariates, slow.covariates)


@pytest.mark.parametrize("pandas_metadata", [True, False])
@pytest.mark.parametrize("seed", [0, 1])
def test_many_column_kinds_give_the_loaders_predictions(tmp_path, seed, pandas_metadata):
    path = _write(tmp_path, _many_kinds(seed), pandas=pandas_metadata)
    fast = parquet_predictions(path, score="score", label="label")
    assert fast is not None
    assert isinstance(fast.__dict__["_covariates"], ArrowCovariates)
    slow = load_predictions(path, score="score", label="label")
    _assert_same(fast, slow)
    # what the comparison covers: kept and dropped columns of every kind
    kinds = fast.covariate_kinds
    assert kinds["city_missing"] == "nominal"
    assert kinds["flag_objects"] == "nominal"  # pandas holds booleans with a gap as objects
    # ... unless its metadata restores its nullable boolean dtype
    assert kinds["flag_missing"] == ("ordinal" if pandas_metadata else "nominal")
    assert kinds["when_utc"] == "ordinal"
    assert kinds["int_missing"] == "ordinal"
    dropped = {n.split("'")[1] for n in fast.report.notices if " dropped: " in n}
    assert [n.split("'")[1] for n in fast.report.notices if "reads as an id" in n] == ["id"]
    assert dropped == {"real_all_nan", "zeros_signed", "const_int", "const_real", "const_flag",
                       "int_all_missing", "const_text", "text_all_missing", "const_when",
                       "const_cat", "cat_all_missing"}
    assert kinds["cat"] == kinds["cat_ordered"] == "nominal"
    assert "id" not in kinds
    assert "model_b_score" not in kinds


@pytest.mark.parametrize("options", [
    {"weight": None},  # inferred from the name
    {"weight": ""},  # unweighted: the weight-named column is no covariate either
    {"weight": "w"},
    {"weight": "other_weight"},
    {"response": "continuous"},
])
def test_weights_and_responses_give_the_loaders_predictions(tmp_path, options):
    rng = np.random.default_rng(3)
    score, label = _scores(rng)
    columns = {"w": rng.random(N) + 0.5, "other_weight": rng.integers(1, 4, N),
               "p": score, "y": label.astype(bool), "x": rng.integers(0, 9, N)}
    if options.get("response") == "continuous":
        columns["y"] = rng.random(N)
    path = _write(tmp_path, columns)
    fast = parquet_predictions(path, score="p", label="y", **options)
    assert fast is not None
    _assert_same(fast, load_predictions(path, score="p", label="y", **options))


@pytest.mark.parametrize("statistics", [True, False])
def test_with_or_without_the_footers_statistics(tmp_path, statistics):
    # With statistics, a column whose smallest value is below its largest is usable without
    # being read (a NaT among them too: pandas sees one missing value and others); without,
    # every candidate is decoded. Both give the loader's predictions.
    columns = _many_kinds(5)
    columns["with_nat"] = pa.array(np.r_[np.iinfo(np.int64).min, np.arange(N - 1)],
                                   pa.timestamp("us"))
    path = tmp_path / "p.parquet"
    table = pa.Table.from_pandas(pd.DataFrame({k: v for k, v in columns.items()
                                               if k != "with_nat"}), preserve_index=False)
    if statistics:  # decoded, a NaT leaves the file to the loader (see the test below)
        table = table.append_column("with_nat", columns["with_nat"])
    pq.write_table(table, path, row_group_size=600, write_statistics=statistics)
    fast = parquet_predictions(path, score="score", label="label")
    assert fast is not None
    _assert_same(fast, load_predictions(path, score="score", label="label"))
    assert fast.covariate_kinds.get("with_nat", "ordinal") == "ordinal"


def test_covariates_read_later_refuse_a_changed_file(tmp_path):
    path = _write(tmp_path, _plain(tmp_path))
    fast = parquet_predictions(path, score="score", label="label")
    assert fast.covariate_names == ("x",)
    _write(tmp_path, _plain(tmp_path, y=np.arange(N)))
    with pytest.raises(ValidationError, match="changed since it was loaded"):
        _ = fast.covariates


@pytest.mark.parametrize("covariates", [
    ["age", "city", "const_int", "real_nan"],
    ["score", "when", "id", "model_b_score"],  # a role is left out; ids and scores are kept
    [],
])
def test_covariates_named_give_the_loaders_predictions(tmp_path, covariates):
    path = _write(tmp_path, _many_kinds(6))
    fast = parquet_predictions(path, score="score", label="label", covariates=covariates)
    assert fast is not None
    _assert_same(fast, load_predictions(path, score="score", label="label",
                                        covariates=covariates))


@pytest.mark.parametrize("covariates", [["age", "nothing"], ["age", "age"]])
def test_unknown_or_repeated_covariates_are_left_to_the_loader(tmp_path, covariates):
    path = _write(tmp_path, _many_kinds(6))
    assert parquet_predictions(path, score="score", label="label", covariates=covariates) is None


def test_a_flag_named_weight_is_a_covariate_not_a_weight(tmp_path):
    rng = np.random.default_rng(4)
    score, label = _scores(rng)
    path = _write(tmp_path, {"score": score, "label": label, "weight": rng.random(N) < 0.5})
    fast = parquet_predictions(path, score="score", label="label")
    assert fast is not None
    assert fast.weight_column is None
    _assert_same(fast, load_predictions(path, score="score", label="label"))


def _plain(tmp_path: Path, **extra) -> dict:
    rng = np.random.default_rng(5)
    score, label = _scores(rng)
    return {"score": score, "label": label, "x": rng.integers(0, 9, N), **extra}


@pytest.mark.parametrize("change", [
    "nan_score", "score_above_one", "label_two", "single_class", "missing_label",
    "int_dictionary", "date", "null_type", "float16", "stored_index", "text_weight",
    "no_such_column", "nat_time",
])
def test_what_the_path_cannot_promise_is_left_to_the_loader(tmp_path, change):
    columns = _plain(tmp_path)
    label = "label"
    if change == "nan_score":
        columns["score"] = np.where(np.arange(N) == 5, np.nan, columns["score"])
    elif change == "score_above_one":
        columns["score"] = columns["score"] + 0.5
    elif change == "label_two":
        columns["label"] = columns["label"] * 2
    elif change == "single_class":
        columns["label"] = np.zeros(N, dtype=int)
    elif change == "missing_label":
        columns["label"] = pd.array(np.where(np.arange(N) == 3, None, columns["label"]),
                                    dtype="Int64")
    elif change == "int_dictionary":  # categories that are not text
        columns["kind"] = pd.Categorical(np.array([3, 5])[np.arange(N) % 2])
    elif change == "date":
        columns["day"] = [pd.Timestamp("2024-01-01").date()] * (N - 1) + [None]
    elif change == "null_type":
        columns["empty"] = [None] * N
    elif change == "text_weight":
        columns["weight"] = ["1"] * N
    elif change == "no_such_column":
        label = "target"
    if change == "stored_index":
        path = tmp_path / "p.parquet"
        pd.DataFrame(columns, index=np.arange(N) + 10).to_parquet(path)
    elif change in ("float16", "nat_time"):
        table = pa.table(columns)
        extra = (pa.array(np.ones(N, dtype=np.float16)) if change == "float16" else
                 pa.array(np.full(N, np.iinfo(np.int64).min), pa.timestamp("us")))  # all NaT
        path = tmp_path / "p.parquet"
        pq.write_table(table.append_column("extra", extra), path)
    else:
        path = _write(tmp_path, columns)
    assert parquet_predictions(path, score="score", label=label) is None


def test_other_sources_are_left_to_the_loader(tmp_path):
    columns = _plain(tmp_path)
    parquet = _write(tmp_path, columns)
    csv = tmp_path / "p.csv"
    pd.DataFrame(columns).to_csv(csv, index=False)
    packed = tmp_path / "p.parquet.gz"
    packed.write_bytes(gzip.compress(parquet.read_bytes()))
    for source in (csv, packed, io.BytesIO(parquet.read_bytes()), pd.DataFrame(columns),
                   tmp_path / "nothing.parquet"):
        assert parquet_predictions(source, score="score", label="label") is None


@pytest.mark.parametrize(("env", "options", "pattern"), [
    ({"MCVIZ_MAX_COLUMNS": "2"}, {}, r"has 3 columns; the limit is 2"),
    ({}, {"max_bytes": 1_000}, r"the limit is 1,000 bytes"),
    ({"MCVIZ_MEMORY_BUDGET": "60K"}, {"max_bytes": 10**9}, r"reading 'p.parquet'.*budget"),
])
def test_the_readers_limits_refuse_with_the_loaders_message(tmp_path, monkeypatch, env,
                                                            options, pattern):
    path = _write(tmp_path, _plain(tmp_path))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError, match=pattern) as fast:
        parquet_predictions(path, score="score", label="label", **options)
    with pytest.raises(ValidationError) as slow:
        load_predictions(path, score="score", label="label", **options)
    assert str(fast.value) == str(slow.value)


def _metrics(arguments: list[str], capsys) -> tuple[int | None, str, str]:
    code = main(["metrics", *arguments, "--json"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("arguments", [
    [],
    ["--weighting", "proportional", "--rho", "0.05"],
    ["--no-weight"],
    ["--drop-invalid"],
    ["--covariates", "age,city_missing,const_int,when_utc,real_nan", "--subpopulations", "30"],
    ["--covariates", "age,int8,uint64,float32,real_nan,int_missing", "--subpopulations", "30",
     "--null-draws", "20", "--repeats", "2"],  # number covariates only: no DataFrame at all
    ["--groups", "city", "--covariates", "age,flag_missing", "--subpopulations", "10"],
    ["--groups", "flag"],
])
def test_mcviz_metrics_prints_the_same_with_either_loader(tmp_path, capsys, monkeypatch,
                                                         arguments):
    columns = _many_kinds(7)
    columns["weight"] = np.random.default_rng(8).random(N) + 0.1
    path = str(_write(tmp_path, columns))
    command = [path, "--score", "score", "--label", "label", *arguments]
    calls = []
    real = arrow_path.parquet_predictions

    def counted(*args, **kwargs):
        calls.append(result := real(*args, **kwargs))
        return result

    monkeypatch.setattr(arrow_path, "parquet_predictions", counted)
    fast = _metrics(command, capsys)
    assert calls[0] is not None  # the Parquet path answered
    monkeypatch.setattr(arrow_path, "parquet_predictions", lambda *a, **k: None)
    slow = _metrics(command, capsys)
    assert fast == slow
    assert json.loads(fast[1])["columns"]["covariates"]  # the list #31's tests pin


@pytest.mark.parametrize("extra", [
    [],
    # Algorithm 1 and eq. (4) on number covariates (integers, nullable, NaN, float32, uint64)
    ["--covariates", "age,int8,uint64,float32,real_nan,int_missing", "--subpopulations", "30"],
])
def test_mcviz_metrics_on_parquet_imports_no_pandas(tmp_path, extra):
    path = _write(tmp_path, _many_kinds(2))
    code = textwrap.dedent(f"""
        import sys, contextlib, io
        import mcviz.cli
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = mcviz.cli.main(["metrics", {str(path)!r}, "--score", "score", "--label",
                                   "label", "--json", *{extra!r}])
        print(code, sorted(m for m in sys.modules if m.split(".")[0] in ("pandas", "scipy")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() in ("0 []", "None []"), out.stdout + out.stderr


def test_pickled_predictions_keep_their_arrow_covariates(tmp_path):
    import pickle

    path = _write(tmp_path, _many_kinds(4))
    fast = parquet_predictions(path, score="score", label="label")
    again = pickle.loads(pickle.dumps(fast))
    pd.testing.assert_frame_equal(again.covariates, fast.covariates)


def _assert_same_column(fast, slow) -> None:
    assert (fast.kind, fast.levels, str(fast.tz)) == (slow.kind, slow.levels, str(slow.tz))
    assert np.array_equal(fast.missing, slow.missing)
    for field in ("keys", "codes"):
        a, b = getattr(fast, field), getattr(slow, field)
        assert (a is None) == (b is None), field
        if a is not None:
            assert a.dtype == b.dtype, field
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), field


@pytest.mark.parametrize("hold", [False, True])
@pytest.mark.parametrize("pandas_metadata", [True, False])
def test_covariate_columns_read_from_arrow_are_the_dataframes(tmp_path, hold, pandas_metadata):
    """Numbers, booleans, text and categoricals as arrays without pandas: the DataFrame's values.

    Codes, categories in their order (unused ones kept, text sorted by code point), missing
    values, kinds; timestamps are read from the DataFrame.
    """
    from mcviz.io.columns import column_of_series

    path = _write(tmp_path, _many_kinds(3), pandas=pandas_metadata)
    fast = parquet_predictions(path, score="score", label="label", hold_covariates=hold)
    slow = load_predictions(path, score="score", label="label")
    names = list(fast.covariate_names)
    columns = fast.covariate_columns(names)
    arrow = set(fast.__dict__["_covariate_columns"])
    assert arrow == set(names) - {"when", "when_utc"}
    assert columns["cat"].levels == ("c", "unused", "a", "b")
    assert columns["city_odd"].levels == ("", "Zoë", "b b", "zoe", "Émile", "\u05d0")
    assert columns["flag"].kind == "bool"
    for name in names:
        _assert_same_column(columns[name], column_of_series(slow.covariates[name]))
    _assert_same(fast, slow)


def test_categories_of_row_groups_with_their_own_dictionaries(tmp_path):
    """Each row group's dictionary differs: the categories are unified in order (as to_pandas)."""
    rng = np.random.default_rng(5)
    batches = []
    for words in (["b", "a"], ["c", "a", "d"], ["e", "b"]):
        score, label = _scores(rng, 700)
        indices = pa.array(rng.integers(0, len(words), 700).astype(np.int8),
                           mask=rng.random(700) < 0.05)
        batches.append(pa.record_batch({
            "score": score, "label": label,
            "group": pa.DictionaryArray.from_arrays(indices, pa.array(words))}))
    path = tmp_path / "groups.parquet"
    pq.write_table(pa.Table.from_batches(batches), path, row_group_size=700)
    fast = parquet_predictions(path, score="score", label="label", hold_covariates=True)
    slow = load_predictions(path, score="score", label="label")
    column = fast.covariate_column("group")
    assert column.levels == ("b", "a", "c", "d", "e")
    from mcviz.io.columns import column_of_series

    _assert_same_column(column, column_of_series(slow.covariates["group"]))
    _assert_same(fast, slow)


def test_ids_left_out_by_name_and_text_content_as_the_loader_does(tmp_path):
    rng = np.random.default_rng(4)
    n = 500
    frame = pd.DataFrame({
        "score": rng.random(n), "label": rng.integers(0, 2, n).astype(np.int64),
        "customer_id": rng.permutation(n).astype(np.int64),
        "ref": [f"R{i:06d}" for i in rng.permutation(n)],
        "city": rng.choice(["a", "b", "c"], n), "age": rng.integers(18, 90, n),
    })
    path = _write(tmp_path, frame, pandas=False)
    fast = parquet_predictions(path, score="score", label="label")
    slow = load_predictions(path, score="score", label="label")
    assert fast is not None
    assert set(fast.covariate_kinds) == set(slow.covariate_kinds) == {"city", "age"}
    assert fast.report.notices == slow.report.notices
    assert any("'ref' left out" in note for note in fast.report.notices)

"""A catalogue of bad and odd input files: each kind through the library and the CLI.

Every kind is written into ``tmp_path`` by the test itself. The library must return
:class:`Predictions` (with the number of rows the file holds) or raise a ``ValidationError``
whose message names the file or column and the problem; ``python -m mcviz metrics FILE --json``
must exit 0 or 2 accordingly, with the same message and never a traceback. A bounded
hypothesis fuzz feeds random bytes and random small CSVs to the loader.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_cases import environment
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcviz import Predictions, ValidationError, load_predictions, read_table

ROOT = Path(__file__).resolve().parents[2]
BASE = "score,label,age,city\n0.1,0,30,a\n0.4,1,40,b\n0.35,0,50,a\n0.8,1,60,c\n"  # 4 rows


def _base_frame(n: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    score = rng.random(n).round(3)
    return pd.DataFrame({"score": score, "label": (rng.random(n) < score).astype(int),
                         "age": rng.integers(20, 70, n)})


def _text(name: str, text: str, encoding: str = "utf-8") -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(text.encode(encoding))
        return path
    return build


def _bytes(name: str, make: Callable[[], bytes]) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(make())
        return path
    return build


def _zip(members: dict[str, bytes], *, corrupt: bool = False) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    raw = bytearray(buffer.getvalue())
    if corrupt:  # flip bytes inside the first member's compressed data (after its header)
        start = 30 + len(next(iter(members)))
        for i in range(start + 5, start + 25):
            raw[i] ^= 0x5A
    return bytes(raw)


def _parquet(table: pa.Table, **options: object) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer, **options)
    return buffer.getvalue()


def _base_parquet() -> bytes:
    return _parquet(pa.Table.from_pandas(_base_frame(), preserve_index=False))


def _corrupt_gzip() -> bytes:
    raw = bytearray(gzip.compress(_base_frame(2000).to_csv(index=False).encode()))
    for i in range(40, 80):
        raw[i] ^= 0xFF
    return bytes(raw)


def _nested_parquet() -> bytes:
    frame = _base_frame(6)
    table = pa.Table.from_pandas(frame, preserve_index=False).append_column(
        "tags", pa.array([[1, 2], [3], [], None, [5], [6, 7]], pa.list_(pa.int64()))
    ).append_column(
        "record", pa.array([{"a": i, "b": str(i)} for i in range(6)])
    ).append_column(
        "lookup", pa.array([[("k", i)] for i in range(6)], pa.map_(pa.string(), pa.int64()))
    )
    return _parquet(table)


def _many_columns() -> str:
    frame = _base_frame(5)
    extra = pd.DataFrame(np.arange(5 * 10_000).reshape(5, 10_000) % 7,
                         columns=[f"x{i}" for i in range(10_000)])
    return pd.concat([frame, extra], axis=1).to_csv(index=False)


@dataclass(frozen=True)
class Case:
    """One kind of input: how to write it, and what must come of it."""

    kind: str
    build: Callable[[Path], Path]
    pattern: str | None = None  # None: loads; else the ValidationError message (regex)
    n: int | None = None  # rows of the loaded Predictions
    options: dict = field(default_factory=dict)  # load_predictions keywords (CLI flags too)
    env: dict = field(default_factory=dict)


CASES = [
    # --- compression
    Case("gzip_ok", _bytes("p.csv.gz", lambda: gzip.compress(BASE.encode())), n=4),
    Case("gzip_of_garbage", _bytes("g.csv.gz", lambda: b"\x1f\x8b" + bytes(range(256)) * 4),
         r"'g.csv.gz' is not a valid gzip stream"),
    Case("gzip_corrupt_stream", _bytes("c.csv.gz", _corrupt_gzip),
         r"'c.csv.gz' is not a valid gzip stream"),
    Case("gzip_truncated", _bytes("t.csv.gz", lambda: gzip.compress(BASE.encode() * 50)[:60]),
         r"'t.csv.gz' is not a valid gzip stream"),
    Case("zip_ok", _bytes("p.zip", lambda: _zip({"p.csv": BASE.encode()})), n=4),
    Case("zip_corrupt_member",
         _bytes("c.zip", lambda: _zip({"p.csv": _base_frame(3000).to_csv().encode()},
                                      corrupt=True)),
         r"zip file 'c.zip' could not be read"),
    Case("zip_empty", _bytes("e.zip", lambda: _zip({})), r"zip file 'e.zip' holds 0 files"),
    Case("zip_several_members",
         _bytes("s.zip", lambda: _zip({"a.csv": BASE.encode(), "b.csv": BASE.encode()})),
         r"zip file 's.zip' holds 2 files; it must hold exactly one"),
    Case("zip_excel_workbook",
         _bytes("w.xlsx", lambda: _zip({"xl/workbook.xml": b"<x/>", "[Content_Types].xml": b""})),
         r"'w.xlsx' holds 2 files.*Excel workbook: save it as CSV"),
    Case("zip_of_parquet", _bytes("p.zip", lambda: _zip({"p.parquet": _base_parquet()})), n=40),
    Case("gzip_bomb", _bytes("bomb.csv.gz", lambda: gzip.compress(
        b"score,label\n" + b"0.5,1\n" * 1_000_000, compresslevel=9)),
         r"'bomb.csv.gz' decompresses to more than 1.00 MiB; the limit is 1.00 MiB.*mcviz screen",
         env={"MCVIZ_MEMORY_BUDGET": "4M"}),
    Case("zip_bomb", _bytes("bomb.zip", lambda: _zip(
        {"b.csv": b"score,label\n" + b"0.5,1\n" * 1_000_000})),
         r"'bomb.zip' decompresses to 5.72 MiB; the limit is 1.00 MiB",
         env={"MCVIZ_MEMORY_BUDGET": "4M"}),
    # --- Parquet
    Case("parquet_ok", _bytes("p.parquet", _base_parquet), n=40),
    Case("parquet_corrupt", _bytes("c.parquet", lambda: b"PAR1" + bytes(range(256)) * 8),
         r"'c.parquet' could not be read as Parquet"),
    Case("parquet_truncated", _bytes("t.parquet", lambda: _base_parquet()[:300]),
         r"'t.parquet' could not be read as Parquet"),
    Case("parquet_corrupt_page", _bytes("p.parquet", lambda: (lambda raw: raw[:4] + bytes(
        b ^ 0x77 for b in raw[4:200]) + raw[200:])(_base_parquet())),
         r"'p.parquet' could not be read as Parquet"),
    Case("parquet_nested_types", _bytes("n.parquet", _nested_parquet), n=6),
    Case("parquet_dictionary_scores", _bytes("d.parquet", lambda: _parquet(pa.table({
        "score": pa.array(["0.2", "0.7", "0.2"]).dictionary_encode(), "label": [0, 1, 1]}))),
         n=3),
    Case("parquet_dictionary_float_scores", _bytes("f.parquet", lambda: _parquet(pa.table({
        "score": pa.array([0.2, 0.7, 0.2]).dictionary_encode(), "label": [0, 1, 1]}))), n=3),
    Case("parquet_lists_beside_class_columns", _bytes("l.parquet", lambda: _parquet(pa.table({
        "prob_a": [0.2, 0.5, 0.3], "prob_b": [0.3, 0.2, 0.3], "prob_c": [0.5, 0.3, 0.4],
        "tags": pa.array([[1], [2], [3]]), "letter": ["c", "a", "b"]}))), n=3),
    Case("parquet_decimal_and_time", _bytes("t.parquet", lambda: _parquet(pa.table({
        "score": pa.array([0.2, 0.7, 0.4]).cast(pa.decimal128(5, 3)), "label": [0, 1, 1],
        "when": pa.array([1, 2, 3], pa.time32("s"))}))), n=3),
    Case("parquet_bomb", _bytes("bomb.parquet", lambda: _parquet(pa.table(
        {"score": np.full(1_000_000, 0.5), "label": np.ones(1_000_000, np.int8)}),
        compression="zstd")),
         r"'bomb.parquet' decompresses to about \S+ MiB \(its row-group metadata\); the limit "
         r"is 1.00 MiB.*mcviz screen", env={"MCVIZ_MEMORY_BUDGET": "4M"}),
    Case("parquet_duplicate_names", _bytes("d.parquet", lambda: _parquet(pa.Table.from_arrays(
        [pa.array([0.1, 0.9]), pa.array([0, 1]), pa.array([1, 2])],
        names=["score", "label", "score"]))), r"duplicate column names: 'score'"),
    # --- sizes and shapes
    Case("empty_file", _text("e.csv", ""), r"'e.csv' is empty"),
    Case("whitespace_only", _text("w.csv", " \n\n\t\n"), r"'w.csv' is empty"),
    Case("header_only", _text("h.csv", "score,label\n"), r"'h.csv' has a header but no rows"),
    Case("single_row", _text("s.csv", "score,label\n0.3,1\n"), n=1),
    Case("one_column", _text("o.csv", "score\n0.1\n0.5\n"), r"no label column"),
    Case("headerless", _text("h.csv", "0.1,0\n0.4,1\n0.3,0\n"), r"no score column"),
    Case("ragged_rows", _text("r.csv", "score,label\n0.1,0\n0.2,1,5,6\n"),
         r"'r.csv' is not a valid CSV/TSV file.*Expected 2 columns"),
    Case("ten_thousand_columns", _text("wide.csv", _many_columns()),
         r"file 'wide.csv' has 10,003 columns; the limit is 2,000 \(max_columns, or "
         r"MCVIZ_MAX_COLUMNS\)"),
    Case("ten_thousand_columns_under_a_raised_limit", _text("wide.csv", _many_columns()), n=5,
         env={"MCVIZ_MAX_COLUMNS": "20000"}),
    Case("long_field_over_128k", _text("l.csv", BASE.replace("a\n", "a" + "x" * 200_000 + "\n", 1)),
         n=4),
    Case("long_header_field", _text("h.csv", BASE.replace("city", "c" * 200_000, 1)), n=4),
    Case("line_over_2mib", _text("m.csv", BASE.replace("b\n", "y" * (2 << 20) + "\n", 1)), n=4),
    # --- encodings, delimiters, line endings
    Case("cr_only_line_endings", _text("mac.csv", BASE.replace("\n", "\r")), n=4),
    Case("crlf_line_endings", _text("win.csv", BASE.replace("\n", "\r\n")), n=4),
    Case("utf8_bom", _text("bom.csv", "\ufeff" + BASE), n=4),
    Case("utf16_with_bom", _text("u16.csv", BASE, "utf-16"), n=4),
    Case("non_utf8_latin1", _text("l1.csv", BASE.replace(",a\n", ",München\n"), "latin-1"), n=4),
    Case("semicolon_delimiter", _text("s.csv", BASE.replace(",", ";")), n=4),
    Case("tab_delimiter", _text("t.tsv", BASE.replace(",", "\t")), n=4),
    Case("pipe_delimiter", _text("p.txt", BASE.replace(",", "|")), n=4),
    Case("decimal_comma", _text("eu.csv", BASE.replace(",", ";").replace("0.", "0,")),
         r"column 'score': 4 of 4 rows .*are not numbers"),
    Case("quoted_newlines", _text("q.csv", BASE.replace(",a\n", ',"a\nline two"\n')), n=4),
    Case("unknown_extension", _text("p.dat", BASE), n=4),
    Case("binary_garbage", _bytes("x.bin", lambda: bytes(range(256)) * 16),
         r"no score column|no label column|'x.bin'"),
    # --- paths
    Case("directory", lambda folder: folder, r"is a directory, not a file"),
    Case("nonexistent_path", lambda folder: folder / "missing.csv",
         r"'\S*missing.csv' does not exist"),
    # --- columns and values
    Case("duplicate_column_names", _text("d.csv", "score,label,score\n0.1,0,1\n0.9,1,2\n"),
         r"duplicate column names: 'score'"),
    Case("duplicate_after_trimming", _text("d.csv", "score,label, label\n0.1,0,1\n0.9,1,0\n"),
         r"duplicate column names: 'label'"),
    Case("missing_score_column", _text("m.csv", "a,label\n0.1,0\n0.9,1\n"), r"no score column"),
    Case("missing_label_column", _text("m.csv", "score,z\n0.1,a\n0.9,b\n"), r"no label column"),
    Case("named_score_column_absent", _text("m.csv", BASE), r"column 'prob' is missing",
         options={"score": "prob"}),
    Case("ambiguous_roles", _text("a.csv", "pred_a,pred_b,y,target\n0.1,0.2,0,1\n0.9,0.8,1,0\n"),
         n=2),
    Case("non_numeric_scores", _text("n.csv", BASE.replace("0.4,", "high,")),
         r"column 'score': 1 of 4 rows \(rows 1\) are not numbers .*'high'"),
    Case("scores_outside_unit_interval", _text("o.csv", BASE.replace("0.8,", "1.5,")),
         r"column 'score': 1 of 4 rows \(rows 3\) lie outside \[0, 1\] \(e.g. 1.5\)"),
    Case("nan_scores", _text("n.csv", BASE.replace("0.4,", "NaN,")),
         r"column 'score': 1 of 4 rows \(rows 1\) are NaN or infinite"),
    Case("inf_scores", _text("i.csv", BASE.replace("0.4,", "inf,")),
         r"column 'score': 1 of 4 rows \(rows 1\) are NaN or infinite"),
    Case("overflowing_scores", _text("i.csv", BASE.replace("0.4,", "1e999,")),
         r"column 'score': 1 of 4 rows \(rows 1\) are NaN or infinite"),
    Case("constant_scores", _text("c.csv", "score,label\n0.5,0\n0.5,1\n0.5,1\n"), n=3),
    Case("unknown_labels", _text("u.csv", BASE.replace(",0,", ",neg,").replace(",1,", ",pos,")),
         r"column 'label': labels are .*name the positive value"),
    Case("three_label_values", _text("t.csv", BASE.replace("0.8,1,", "0.8,2,")),
         r"column 'label': 1 of 4 rows \(rows 3\) are neither 0 nor 1"),
    Case("missing_labels", _text("m.csv", BASE.replace("0.4,1,", "0.4,,")),
         r"column 'label': 1 of 4 rows \(rows 1\) are missing"),
    Case("labels_in_words", _text("w.csv", BASE.replace(",0,", ",No,").replace(",1,", ",Yes,")),
         n=4),
    Case("single_class", _text("s.csv", BASE.replace(",0,", ",1,")), n=4),
    Case("negative_weights", _text("w.csv", "score,label,weight\n0.1,0,1\n0.9,1,-2\n"),
         r"column 'weight': 1 of 2 rows \(rows 1\) are zero or negative \(e.g. -2\)"),
    Case("nan_weights", _text("w.csv", "score,label,weight\n0.1,0,1\n0.9,1,NaN\n"),
         r"column 'weight': 1 of 2 rows \(rows 1\) are NaN or infinite"),
    Case("all_zero_weights", _text("w.csv", "score,label,weight\n0.1,0,0\n0.9,1,0\n"),
         r"column 'weight': 2 of 2 rows \(rows 0, 1\) are zero or negative"),
    Case("text_weights", _text("w.csv", "score,label,weight\n0.1,0,1\n0.9,1,heavy\n"),
         r"column 'weight': 1 of 2 rows \(rows 1\) are not numbers"),
    Case("empty_after_dropping", _text("d.csv", "score,label\n2,0\n-1,1\n"),
         r"no valid rows left: all 2 rows were dropped", options={"drop_invalid": True}),
    Case("some_dropped", _text("d.csv", BASE.replace("0.4,", "7,")), n=3,
         options={"drop_invalid": True}),
    # --- multi-class
    Case("probabilities_not_summing_to_one",
         _text("m.csv", "prob_a,prob_b,prob_c,y\n0.5,0.5,0.5,a\n0.2,0.3,0.5,c\n"), n=2),
    Case("label_not_among_classes",
         _text("m.csv", "prob_a,prob_b,prob_c,y\n0.2,0.3,0.5,a\n0.2,0.3,0.5,z\n"),
         r"column 'y': 1 of 2 rows \(rows 1\) are not a known class \(values 'z'"),
    Case("probability_column_text",
         _text("m.csv", "prob_a,prob_b,prob_c,y\n0.2,0.3,0.5,a\n0.2,x,0.5,b\n"),
         r"column 'prob_b': 1 of 2 rows \(rows 1\) are not numbers",
         options={"probabilities": "prob_a,prob_b,prob_c"}),
]
KINDS = [case.kind for case in CASES]
assert len(set(KINDS)) == len(KINDS) >= 40


def _load(case: Case, folder: Path) -> tuple[Path, Predictions | ValidationError]:
    path = case.build(folder)
    with environment(case.env):
        try:
            options = dict(case.options)
            if "probabilities" in options:  # a comma-separated list, as on the command line
                options["probabilities"] = options["probabilities"].split(",")
            return path, load_predictions(path, **options)
        except ValidationError as error:
            return path, error


@pytest.mark.parametrize("case", CASES, ids=KINDS)
def test_library(case, tmp_path):
    _, outcome = _load(case, tmp_path)  # any other exception type fails the test
    if case.pattern is None:
        assert isinstance(outcome, Predictions), str(outcome)
        assert outcome.n == case.n
        assert len(outcome.covariates) == outcome.n  # the lazy preparation works too
    else:
        assert isinstance(outcome, ValidationError), "loaded, but should have been refused"
        assert re.search(case.pattern, str(outcome)), str(outcome)


@pytest.mark.parametrize("case", [c for c in CASES if "path" not in c.kind and
                                  c.kind != "directory"], ids=lambda c: c.kind)
def test_upload(case, tmp_path, monkeypatch):
    """The dashboard's path: the uploaded bytes (with their name) read, then loaded."""
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    path = case.build(tmp_path)
    buffer = io.BytesIO(path.read_bytes())
    buffer.name = path.name
    options = dict(case.options)
    if "probabilities" in options:
        options["probabilities"] = options["probabilities"].split(",")
    try:
        outcome = load_predictions(read_table(buffer), **options)
    except ValidationError as error:
        outcome = error
    if case.pattern is None:
        assert isinstance(outcome, Predictions), str(outcome)
        assert outcome.n == case.n
    else:
        assert isinstance(outcome, ValidationError), "loaded, but should have been refused"
        assert re.search(case.pattern, str(outcome)), str(outcome)


def _cli_flags(options: dict) -> list[str]:
    flags = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        flags += [flag] if value is True else [flag, str(value)]
    return flags


REAL_PROCESSES = ("gzip_ok", "gzip_bomb", "parquet_corrupt", "nonexistent_path")
"""Cases run as ``python -m mcviz`` processes of their own: the command's own exit paths (a
refused file leaves by ``os._exit`` after the message; a finished ``metrics`` too), a loaded and a
refused file, an environment variable. The other cases run in one process (tests/io/cli_cases.py)
through the same entry point: one interpreter start instead of ~75 (~1.2 s CPU each)."""


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory):
    """``mcviz metrics FILE --json`` for every case: a few real processes, the rest in one."""
    folder = tmp_path_factory.mktemp("catalogue")
    argv = {}
    for case in CASES:
        case_folder = folder / case.kind
        case_folder.mkdir()
        path = case.build(case_folder)
        argv[case.kind] = ["metrics", str(path), "--json", *_cli_flags(case.options)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run(case: Case) -> tuple[str, subprocess.CompletedProcess]:
        done = subprocess.run([sys.executable, "-m", "mcviz", *argv[case.kind]],
                              capture_output=True, text=True, env={**env, **case.env},
                              timeout=300, check=False)
        return case.kind, done

    batch = folder / "cases.json"
    batch.write_text(json.dumps([{"kind": c.kind, "argv": argv[c.kind], "env": c.env}
                                 for c in CASES if c.kind not in REAL_PROCESSES]))
    driver = [sys.executable, str(Path(__file__).with_name("cli_cases.py")), str(batch)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        together = pool.submit(subprocess.run, driver, capture_output=True, text=True, env=env,
                               timeout=600, check=False)
        runs = dict(pool.map(run, [c for c in CASES if c.kind in REAL_PROCESSES]))
        done = together.result()
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]
    for kind, result in json.loads(done.stdout).items():
        runs[kind] = subprocess.CompletedProcess(argv[kind], result["returncode"],
                                                 result["stdout"], result["stderr"])
    assert set(runs) == set(KINDS)
    return runs


def test_some_cases_run_as_processes_of_their_own():
    """The command's own exit path is checked on a loaded file and on refused ones."""
    real = [c for c in CASES if c.kind in REAL_PROCESSES]
    assert len(real) == len(REAL_PROCESSES)
    assert any(c.pattern is None for c in real)
    assert any(c.pattern for c in real)
    assert any(c.env for c in real)


@pytest.mark.parametrize("case", CASES, ids=KINDS)
def test_cli(case, cli_runs):
    done = cli_runs[case.kind]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    if case.pattern is None:
        assert done.returncode == 0, done.stderr[-2000:]
        assert json.loads(done.stdout)["n"] == case.n
    else:
        assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
        assert done.stderr.startswith("mcviz: error: ")
        assert re.search(case.pattern, done.stderr), done.stderr[-2000:]


# ---------------------------------------------------------------------------------------
# Fuzz: random bytes and random small CSVs never raise anything but ValidationError

_FUZZ = settings(max_examples=50, deadline=2000, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow])


def _outcome(data: bytes) -> Predictions | ValidationError:
    try:
        return load_predictions(io.BytesIO(data))
    except ValidationError as error:
        return error


@_FUZZ
@given(st.binary(max_size=400))
def test_fuzz_random_bytes(data):
    assert str(_outcome(data))


@_FUZZ
@given(st.sampled_from([b"\x1f\x8b", b"PK\x03\x04", b"PAR1", b"\xff\xfe", b"\xef\xbb\xbf"]),
       st.binary(max_size=300))
def test_fuzz_magic_prefixed_bytes(magic, data):
    assert str(_outcome(magic + data))


_CELLS = st.one_of(
    st.sampled_from(["0", "1", "0.5", "1.5", "-1", "nan", "inf", "", "NA", "yes", "no", "a",
                     '"x,y"', '"q\nr"', "1e999", "0.25"]),
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=6),
)


@_FUZZ
@given(
    st.lists(st.sampled_from(["score", "label", "weight", "prob_a", "prob_b", "prob_c", "y",
                              "x", "city", "id", "p", "w", " score"]),
             min_size=1, max_size=5),
    st.lists(st.lists(_CELLS, min_size=1, max_size=6), min_size=0, max_size=8),
    st.sampled_from([",", ";", "\t"]),
    st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_fuzz_random_small_csv(header, rows, delimiter, newline):
    text = newline.join([delimiter.join(header), *(delimiter.join(r) for r in rows)])
    outcome = _outcome(text.encode())
    assert str(outcome)  # a message, never an empty one
    if isinstance(outcome, Predictions):
        assert outcome.n >= 1
        assert np.all(np.diff(outcome.score) >= 0)
        assert len(outcome.covariates) == outcome.n


_VALUES = {
    "float": st.floats(allow_nan=True, allow_infinity=True, width=64),
    "unit": st.floats(0, 1),
    "int": st.integers(-3, 3),
    "bool": st.booleans(),
    "text": st.sampled_from(["a", "b", "yes", "no", "0", "1", "", " a "]),
    "mixed": st.one_of(st.none(), st.integers(0, 1), st.text(max_size=3), st.just([1, 2]),
                       st.just({"k": 1})),
}


@_FUZZ
@given(st.data())
def test_fuzz_random_frames(data):
    n = data.draw(st.integers(1, 6))
    names = data.draw(st.lists(st.sampled_from(["score", "label", "weight", "prob_a", "prob_b",
                                                "prob_c", "y", "x", "id", "w", "p"]),
                               min_size=1, max_size=5, unique=True))
    columns = {}
    for name in names:
        kind = data.draw(st.sampled_from(sorted(_VALUES)))
        columns[name] = pd.Series(data.draw(st.lists(_VALUES[kind], min_size=n, max_size=n)),
                                  dtype=object if kind == "mixed" else None)
    drop = data.draw(st.booleans())
    try:
        outcome = load_predictions(pd.DataFrame(columns), drop_invalid=drop)
    except ValidationError as error:
        outcome = error
    assert str(outcome)
    if isinstance(outcome, Predictions):
        assert 1 <= outcome.n <= n
        assert len(outcome.covariates) == outcome.n

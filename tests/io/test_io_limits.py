"""Reading within the budget (issue #25 item 1): columns counted from the header, the read's
memory estimated before parsing, Parquet (and screening tables) refused from the footer."""

from __future__ import annotations

import gzip
import io
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mcviz import ValidationError, read_table
from mcviz.engines.results import read_screen
from mcviz.io import read_parquet_table
from mcviz.io.readers import DEFAULT_MAX_COLUMNS, default_max_columns

ROOT = Path(__file__).resolve().parents[2]


def _buffer(raw: bytes, name: str = "upload.csv") -> io.BytesIO:
    buffer = io.BytesIO(raw)
    buffer.name = name
    return buffer


def wide_csv(columns: int) -> bytes:
    """The issue's file: a header of ``columns`` names and one row of empty fields."""
    header = ",".join(f"c{i}" for i in range(columns)).encode()
    return header + b"\n" + b"," * (columns - 1) + b"\n"


def test_the_column_limit_is_checked_from_the_header_for_csv_and_gzip():
    raw = wide_csv(10**6)
    for data, name in ((raw, "wide.csv"), (gzip.compress(raw), "wide.csv.gz")):
        with pytest.raises(ValidationError, match=(
                rf"file '{name}' has 1,000,000 columns; the limit is 2,000 \(max_columns, or "
                r"MCVIZ_MAX_COLUMNS\)")):
            read_table(_buffer(data, name))


def test_the_column_limit_is_configurable(monkeypatch):
    raw = b"score,label," + b",".join(b"x%d" % i for i in range(10)) + b"\n" + b"0.5,1" + \
        b",1" * 10 + b"\n"
    assert read_table(_buffer(raw), max_columns=12).shape == (1, 12)
    with pytest.raises(ValidationError, match="has 12 columns; the limit is 11"):
        read_table(_buffer(raw), max_columns=11)
    monkeypatch.setenv("MCVIZ_MAX_COLUMNS", "11")
    assert default_max_columns() == 11
    with pytest.raises(ValidationError, match="the limit is 11"):
        read_table(_buffer(raw))
    monkeypatch.setenv("MCVIZ_MAX_COLUMNS", "many")
    with pytest.raises(ValidationError, match="MCVIZ_MAX_COLUMNS='many' is not a positive"):
        read_table(_buffer(raw))
    monkeypatch.delenv("MCVIZ_MAX_COLUMNS")
    assert default_max_columns() == DEFAULT_MAX_COLUMNS


def test_quoted_delimiters_in_names_do_not_count_as_columns():
    names = ",".join(f'"a,{i}"' for i in range(6))  # 12 commas inside quotes, 6 columns
    raw = (names + "\n" + ",".join("1" for _ in range(6)) + "\n").encode()
    assert read_table(_buffer(raw), max_columns=6).shape == (1, 6)


def test_parquet_columns_are_counted_from_the_footer():
    buffer = io.BytesIO()
    pq.write_table(pa.table({f"c{i}": [0.5] for i in range(30)}), buffer)
    with pytest.raises(ValidationError, match="has 30 columns; the limit is 20"):
        read_table(_buffer(buffer.getvalue(), "w.parquet"), max_columns=20)
    with pytest.raises(ValidationError, match="has 30 columns; the limit is 20"):
        read_parquet_table(buffer.getvalue(), max_columns=20)


def test_a_dataframe_over_the_column_limit_is_refused():
    frame = pd.DataFrame(np.zeros((2, 5)), columns=list("abcde"))
    with pytest.raises(ValidationError, match="DataFrame' has 5 columns; the limit is 4"):
        read_table(frame, max_columns=4)


def test_short_values_that_expand_when_parsed_are_stopped_while_parsing():
    # 200,000 lines of 40 zeros: 16 MB of text, but 8 million values (8 bytes each parsed, and
    # the DataFrame's copy): under a 64 MB read budget the text fits, the table does not; the
    # read stops part-way (blocks of text are parsed one after the other)
    text = (",".join(f"v{i}" for i in range(40)) + "\n" + ("0," * 39 + "0\n") * 200_000)
    raw = gzip.compress(text.encode())
    assert len(raw) < 1_000_000
    with pytest.raises(ValidationError, match=(
            r"file 'z.csv.gz' is too large to read within the memory budget: stopped after "
            r"[0-9,]+ rows .*budget 64 MB.*read a sample of the rows")):
        read_table(_buffer(raw, "z.csv.gz"), max_memory=64_000_000)
    assert read_table(_buffer(raw, "z.csv.gz"), max_memory=2_000_000_000).shape == (200_000, 40)


def test_parquet_read_memory_is_estimated_from_the_footer():
    buffer = io.BytesIO()
    pq.write_table(pa.table({"x": np.zeros(2_000_000)}), buffer, compression="zstd")
    raw = buffer.getvalue()
    assert len(raw) < 1_000_000  # 16 MB of zeros, a small file
    with pytest.raises(ValidationError, match="refused before starting: reading"):
        read_table(_buffer(raw, "p.parquet"), max_memory=20_000_000)


def test_a_screening_table_bomb_is_refused_from_its_footer(monkeypatch):
    # a small zstd file that decodes to 160 MB: refused before any page is decompressed
    buffer = io.BytesIO()
    pq.write_table(pa.table({"description": np.zeros(20_000_000)}), buffer, compression="zstd")
    monkeypatch.setenv("MCVIZ_MEMORY_BUDGET", "200MB")  # reads of up to 50 MB decoded
    with pytest.raises(ValidationError, match="not a screening table: file 'upload' "
                                              "decompresses to about"):
        read_screen(buffer.getvalue())


def test_a_deeply_nested_screening_context_is_a_message():
    table = pa.table({"a": [1]}).replace_schema_metadata({b"mcviz": b"[" * 5000 + b"]" * 5000})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    with pytest.raises(ValidationError, match="the screening table's context nests 5,000 levels"):
        read_screen(buffer.getvalue())


@pytest.mark.skipif(sys.platform != "linux", reason="an address-space cap (RLIMIT_AS)")
def test_metrics_on_the_million_column_csv_exits_2_under_a_4gb_cap(tmp_path):
    # issue #25: a 9.9 MB CSV of 10^6 columns aborted the CLI (SIGABRT, std::bad_alloc)
    path = tmp_path / "wide.csv"
    path.write_bytes(wide_csv(10**6))

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4_000_000_000, 4_000_000_000))

    done = subprocess.run([sys.executable, "-m", "mcviz", "metrics", str(path)],
                          capture_output=True, text=True, preexec_fn=cap, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "has 1,000,000 columns; the limit is 2,000" in done.stderr
    assert "Traceback" not in done.stderr

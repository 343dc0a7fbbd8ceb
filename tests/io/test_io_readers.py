"""Readers: the input budget, decompression limits, parser options decided before parsing."""

import gzip
import io

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mcviz import ValidationError, load_predictions, read_table
from mcviz.io.readers import (
    DEFAULT_MAX_BYTES,
    _decoded_row_groups,
    default_max_bytes,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", DEFAULT_MAX_BYTES),
        ("4000", 1000),  # bytes / 4
        ("8G", 2 << 30),
        ("6 GiB", 6 * 2**30 // 4),
        ("512m", 128 << 20),
        ("1.5K", 384),
    ],
)
def test_budget_from_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv("MCVIZ_MEMORY_BUDGET", value)
    assert default_max_bytes() == expected


def test_budget_that_is_not_a_size_is_named(monkeypatch):
    monkeypatch.setenv("MCVIZ_MEMORY_BUDGET", "lots")
    with pytest.raises(ValidationError, match="MCVIZ_MEMORY_BUDGET='lots' is not a size"):
        read_table(io.BytesIO(b"score,label\n0.1,0\n"))


def test_parquet_estimate_counts_decoded_values_not_encoded_pages():
    # 100,000 equal doubles and int8s: run-length encoding makes the pages tiny, but decoded
    # they need at least 100,000 rows x 2 columns x 8 bytes = 1,600,000 bytes.
    buffer = io.BytesIO()
    pq.write_table(pa.table({"score": np.full(100_000, 0.5),
                             "label": np.ones(100_000, np.int8)}), buffer)
    parquet = pq.ParquetFile(pa.BufferReader(buffer.getvalue()))
    assert parquet.metadata.row_group(0).total_byte_size < 1_600_000
    assert _decoded_row_groups(pa.BufferReader(buffer.getvalue()), parquet) == [1_600_000]
    with pytest.raises(ValidationError, match=r"about 1.53 MiB \(its row-group metadata\)"):
        read_table(io.BytesIO(buffer.getvalue()), max_bytes=1_599_999)
    assert len(read_table(io.BytesIO(buffer.getvalue()), max_bytes=1_600_000)) == 100_000


def test_gzip_limit_is_on_the_decompressed_bytes():
    text = b"score,label\n" + b"0.5,1\n" * 10_000  # 60,012 bytes
    packed = gzip.compress(text)
    assert len(read_table(io.BytesIO(packed), max_bytes=len(text))) == 10_000
    with pytest.raises(ValidationError, match=r"decompresses to more than 58\.60 KiB"):
        read_table(io.BytesIO(packed), max_bytes=len(text) - 1)


def test_cr_only_and_long_fields_keep_every_value():
    long = "z" * 300_000
    text = f"score,label,note\r0.25,1,{long}\r0.75,0,short\r"
    frame = read_table(io.BytesIO(text.encode()))
    assert frame["note"].tolist() == [long, "short"]
    assert frame["score"].tolist() == [0.25, 0.75]


def test_quoted_line_breaks_stay_inside_their_value():
    text = 'score,label,note\n0.25,1,"two\nlines"\n0.75,0,"a, b"\n'
    frame = read_table(io.BytesIO(text.encode()))
    assert frame["note"].tolist() == ["two\nlines", "a, b"]


def test_utf16_and_bom_headers_are_clean():
    text = "score,label,city\n0.25,1,Zürich\n0.75,0,Genève\n"
    for encoded in (text.encode("utf-16"), b"\xef\xbb\xbf" + text.encode()):
        frame = read_table(io.BytesIO(encoded))
        assert list(frame.columns) == ["score", "label", "city"]
        assert frame["city"].tolist() == ["Zürich", "Genève"]


def test_oversized_parquet_is_refused_through_load_predictions(tmp_path):
    path = tmp_path / "p.parquet"
    pd.DataFrame({"score": np.linspace(0, 1, 1000), "label": np.arange(1000) % 2}).to_parquet(path)
    pattern = r"'p.parquet' decompresses to about 1[5-9]\.\d\d KiB"  # >= 16,000 bytes
    with pytest.raises(ValidationError, match=pattern):
        load_predictions(path, max_bytes=10_000)  # 1000 rows x 2 columns x 8 = 16,000 bytes


def test_a_file_that_grows_after_its_size_was_read_is_read_whole_or_refused(tmp_path,
                                                                          monkeypatch):
    # The reader asks the file's size once, reads that much and then whatever it grew by:
    # simulate the growth by under-reporting the size.
    from types import SimpleNamespace

    import mcviz.io.readers as readers

    path = tmp_path / "grow.csv"
    path.write_text("score,label\n" + "0.5,1\n" * 1000)
    monkeypatch.setattr(readers.os, "fstat", lambda fd: SimpleNamespace(st_size=20))
    assert len(read_table(path)) == 1000
    with pytest.raises(ValidationError, match=r"grow\.csv"):
        read_table(path, max_bytes=path.stat().st_size - 1)

"""CSV parsed in bounded chunks (issue #25): types as a whole-file read, every codec, stops early.

The reference for types and values is pyarrow's whole-file reader (``pyarrow.csv.read_csv``,
which infers each column's type over every block), not the chunked reader itself. Blocks are
made small (``BLOCK_BYTES``) so that a few kilobytes of text span many blocks.
"""

import bz2
import gzip
import io
import lzma
import zipfile

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from mcviz import ValidationError, budget, read_table
from mcviz.io import chunked


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(chunked, "BLOCK_BYTES", 1 << 12)  # 4 KiB: many blocks per test file


def _buffer(raw: bytes, name: str) -> io.BytesIO:
    buffer = io.BytesIO(raw)
    buffer.name = name
    return buffer


def _whole_file(text: bytes) -> pd.DataFrame:
    """The reference: one whole-file read with the reader's null values."""
    return pacsv.read_csv(io.BytesIO(text), convert_options=pacsv.ConvertOptions(
        null_values=chunked.NULL_VALUES, strings_can_be_null=True)).to_pandas()


def _later_change(rows: int, late: str) -> bytes:
    """A CSV whose column ``x`` holds integers for ``rows`` lines, then ``late``, then more."""
    lines = ["score,label,x,y"]
    lines += [f"0.{i % 9 + 1},{i % 2},{i},w{i % 7}" for i in range(rows)]
    lines += [f"0.5,1,{late},w0", "0.5,0,3,w1"]
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize(("late", "dtype_kind"), [("abc", "text"), ("2.5", "f"), ("", "i")])
def test_a_column_changing_type_in_a_later_block_reads_as_a_whole_file_read(
        small_blocks, late, dtype_kind):
    text = _later_change(5_000, late)  # ~80 KB: the change is 20 blocks after the first
    frame = read_table(_buffer(text, "late.csv"))
    expected = _whole_file(text)
    assert len(frame) == 5_002
    pd.testing.assert_frame_equal(frame, expected)  # values and dtypes
    if dtype_kind == "text":
        assert frame["x"].iloc[5_000] == "abc"
        assert frame["x"].iloc[0] == "0"
    else:
        assert frame["x"].dtype.kind == dtype_kind or (late == "" and frame["x"].dtype.kind
                                                       == "f")


@pytest.mark.parametrize(("first", "late", "expected"), [
    ("2024-01-{day:02d}", "2024-02-03 12:30:00", "timestamp[s]"),  # dates, then a date-time
    ("2024-01-{day:02d}", "2024-02-03 12:30:00.25", "timestamp[ns]"),
    ("2024-01-{day:02d} 08:00:00", "2024-02-03 12:30:00.25", "timestamp[ns]"),
    ("2024-01-{day:02d}T08:00:00Z", "2024-02-03T12:30:00.25Z", "timestamp[ns, tz=UTC]"),
    ("{bit}", "true", "bool"),  # 0/1 integers, then a boolean word
    ("2024-01-{day:02d}", "soon", "string"),
])
def test_a_later_value_moves_a_column_along_the_whole_file_inference(small_blocks, first, late,
                                                                     expected):
    # the streaming reader inferred the first block's type; a whole-file read moves on to the
    # type holding every value (pyarrow's order: integer, boolean, real, date, timestamps)
    lines = ["score,label,when"]
    lines += [f"0.5,{i % 2}," + first.format(day=i % 28 + 1, bit=i % 2) for i in range(4_000)]
    lines += [f"0.5,1,{late}", "0.5,0," + first.format(day=2, bit=1)]
    text = ("\n".join(lines) + "\n").encode()
    assert str(pacsv.read_csv(io.BytesIO(text)).schema.field("when").type) == expected
    frame = read_table(_buffer(text, "dates.csv"))
    pd.testing.assert_frame_equal(frame, _whole_file(text))  # values and dtypes
    assert len(frame) == 4_002


def test_a_column_empty_in_the_first_block_takes_the_type_of_its_values(small_blocks):
    lines = ["score,label,x"] + [f"0.5,{i % 2}," for i in range(3_000)]
    lines += [f"0.5,1,{i}" for i in range(3_000)]
    text = ("\n".join(lines) + "\n").encode()
    frame = read_table(_buffer(text, "empty_first.csv"))
    pd.testing.assert_frame_equal(frame, _whole_file(text))
    assert frame["x"].isna().sum() == 3_000
    assert frame["x"].iloc[-1] == 2_999


def test_many_columns_changing_type_restart_a_bounded_number_of_times(small_blocks, monkeypatch):
    rng = np.random.default_rng(3)
    body = rng.integers(0, 100, size=(4_000, 8)).astype(str)
    body[-1] = ["x1", "1.5", "x3", "2.5", "x5", "x6", "7.5", "x8"]  # eight late changes
    text = ("a,b,c,d,e,f,g,h\n" + "\n".join(",".join(r) for r in body) + "\n").encode()
    attempts = []
    original = chunked._attempt
    monkeypatch.setattr(chunked, "_attempt", lambda *a, **k: attempts.append(1) or original(
        *a, **k))
    frame = read_table(_buffer(text, "many.csv"))
    pd.testing.assert_frame_equal(frame, _whole_file(text))
    assert len(attempts) <= 5  # three single restarts, then every numeric column at once


@pytest.mark.parametrize("codec", ["plain", "gzip", "bzip2", "xz", "zstd", "zip"])
def test_every_codec_reads_the_same_table_in_chunks(small_blocks, codec):
    text = _later_change(3_000, "abc")
    frame = read_table(_buffer(_compress(text, codec), f"t.{codec}"))
    pd.testing.assert_frame_equal(frame, _whole_file(text))


@pytest.mark.parametrize("codec", ["gzip", "bzip2", "xz", "zstd", "zip"])
def test_every_codec_stops_at_the_decompressed_limit_as_it_streams(codec):
    text = b"score,label\n" + b"0.5,1\n" * 400_000  # 2.4 MB of text, a few kB compressed
    raw = _compress(text, codec)
    assert len(raw) < 200_000
    with pytest.raises(ValidationError, match=r"decompresses to .*the limit is 1\.00 MiB"):
        read_table(_buffer(raw, f"bomb.{codec}"), max_bytes=1 << 20)
    assert len(read_table(_buffer(raw, f"bomb.{codec}"), max_bytes=len(text))) == 400_000


def test_a_corrupt_stream_is_named_by_its_codec():
    raw = bytearray(_compress(b"score,label\n" + b"0.5,1\n" * 50_000, "xz"))
    raw[len(raw) // 2] ^= 0xFF
    with pytest.raises(ValidationError, match="not a valid xz stream"):
        read_table(_buffer(bytes(raw), "c.xz"))


def test_bytes_that_are_not_utf8_in_a_later_block_are_read_as_latin1(small_blocks):
    text = _later_change(3_000, "5").replace(b"w0\n0.5,0,3", "caf\xe9\n0.5,0,3".encode(
        "latin-1"))
    frame = read_table(_buffer(text, "latin.csv"))
    assert frame["y"].iloc[-2] == "café"
    assert len(frame) == 3_002


def test_a_line_longer_than_a_block_widens_the_blocks(small_blocks):
    long = "z" * 50_000  # twelve 4 KiB blocks
    text = f"score,label,note\n0.25,1,{long}\n0.75,0,short\n".encode()
    assert read_table(_buffer(text, "long.csv"))["note"].tolist() == [long, "short"]


def test_the_read_stops_once_the_table_would_pass_the_budget(small_blocks, monkeypatch):
    text = b"a,b,c,d\n" + b"1,2,3,4\n" * 300_000  # 2.4 MB of text, 9.6 MB parsed
    seen = []
    estimate = budget.table_read_estimate
    monkeypatch.setattr(budget, "table_read_estimate",
                        lambda table, **k: seen.append(table) or estimate(table, **k))
    with pytest.raises(ValidationError, match=(
            r"file 'big.csv' is too large to read within the memory budget: stopped after "
            r"[0-9,]+ rows .*budget 8\.0 MB.*read a sample of the rows.*MCVIZ_MEMORY_BUDGET")):
        read_table(_buffer(text, "big.csv"), max_memory=8_000_000)
    assert 0 < seen[-1] < 9_600_000 / 2  # stopped with less than half the table parsed
    assert read_table(_buffer(text, "big.csv"), max_memory=10**9).shape == (300_000, 4)


def _compress(text: bytes, codec: str) -> bytes:
    if codec == "plain":
        return text
    if codec == "gzip":
        return gzip.compress(text)
    if codec == "bzip2":
        return bz2.compress(text)
    if codec == "xz":
        return lzma.compress(text)
    if codec == "zstd":
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, "zstd") as stream:
            stream.write(text)
        return sink.getvalue().to_pybytes()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("t.csv", text)
    return buffer.getvalue()


def _batches_seen(monkeypatch) -> list:
    """Record the bytes of every batch the Parquet reader decodes."""
    import pyarrow.parquet as pq

    seen = []
    original = pq.ParquetFile.iter_batches

    def iter_batches(self, *args, **kwargs):
        for batch in original(self, *args, **kwargs):
            seen.append(batch.nbytes)
            yield batch

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", iter_batches)
    return seen


def _dictionary_parquet(rows: int, text: int, distinct: int = 1) -> bytes:
    """``rows`` rows of a ``text``-byte text among ``distinct`` ones, dictionary-encoded."""
    import pyarrow.parquet as pq

    notes = [str(i % distinct) + "n" * text for i in range(rows)]
    buffer = io.BytesIO()
    pq.write_table(pa.table({"score": np.full(rows, 0.5), "label": np.ones(rows, np.int8),
                             "note": notes}), buffer, use_dictionary=True)
    return buffer.getvalue()


def test_parquet_values_decoding_past_the_footer_are_refused_before_any_batch(monkeypatch):
    # 4,000 rows of one 20 kB text, dictionary-encoded: the pages (and so the footer's sizes)
    # hold it once, decoded it is 80 MB. The dictionary's indices count it before any text is
    # decoded: refused with nothing read (before, one 80 MB batch was decoded first, past the
    # 30 MB budget, and only then refused).
    raw = _dictionary_parquet(4_000, 20_000)
    seen = _batches_seen(monkeypatch)
    with pytest.raises(ValidationError, match=(
            r"refused before starting: reading 'd.parquet': .* decoding to about 8\d MB")):
        read_table(_buffer(raw, "d.parquet"), max_memory=30_000_000)
    assert max(seen, default=0) <= 30_000_000
    assert read_table(_buffer(raw, "d.parquet"), max_memory=10**9).shape == (4_000, 3)
    # the columns a reader projects: the text, never decoded, is not counted
    from mcviz.io import read_parquet_table

    table = read_parquet_table(raw, columns=["score", "label"], max_memory=30_000_000)
    assert table.column_names == ["score", "label"]


def test_parquet_batches_are_sized_from_the_decoded_rows(monkeypatch):
    # 40,000 rows of 2 kB texts among 50 (80 MB decoded, a few hundred kB of pages) under a
    # 1 GB budget: read in batches of about four blocks each, not in one 80 MB batch
    raw = _dictionary_parquet(40_000, 2_000, distinct=50)
    seen = _batches_seen(monkeypatch)
    frame = read_table(_buffer(raw, "d.parquet"), max_memory=10**9)
    assert frame.shape == (40_000, 3)
    assert frame["note"].iloc[7].startswith("7n")
    assert len(seen) > 2
    assert max(seen) <= 5 * chunked.BLOCK_BYTES



"""Bounded reading: decompression counted as it streams, CSV parsed in chunks, Parquet by batches.

A CSV/TSV file (plain, gzip, bzip2, xz, zstd or a one-file zip) is never held whole, neither
compressed-and-decompressed nor as text: it streams through a counting reader (more than
``max_bytes`` decompressed bytes stop it) into pyarrow's streaming CSV reader
(:func:`pyarrow.csv.open_csv`, blocks of :data:`BLOCK_BYTES`), and the parsed batches are added
up as they come. Before each batch is kept, the peak the whole read would reach with it -
:func:`mcviz.budget.table_read_estimate` of the table so far (the table, its conversion to a
DataFrame) - is compared with the memory budget; above it the read stops at once with a message
naming what to change. A Parquet file is read by batches of rows alike.

Types stay those of a whole-file read. The streaming reader infers each column's type from
its first block; when a later block holds a value that type cannot hold (an integer column
that turns to text, or to decimals), the read starts again with that column read as text, and
once complete the column goes on along pyarrow's order of inference from the type of its first
block (int64, boolean, float64, date, timestamp in s or ns, with a zone) to the first type that
holds every value, else text - the type a whole-file read gives it. After three such restarts
every non-text column is read as text at once (bounded restarts). Bytes that are not UTF-8
restart the read as Latin-1; a line longer than a block restarts it with blocks eight times
larger (up to ``max_bytes``).
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
import re
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

from mcviz.errors import ValidationError

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["BLOCK_BYTES", "MAX_COLUMNS_VARIABLE", "MEMORY_BUDGET_VARIABLE", "codec_of"]

BLOCK_BYTES = 1 << 22
"""Text parsed at once by the streaming CSV reader (4 MiB; larger when a line is longer)."""

MAX_COLUMNS_VARIABLE = "MCVIZ_MAX_COLUMNS"
"""Environment variable: the column limit (a positive integer)."""

MEMORY_BUDGET_VARIABLE = "MCVIZ_MEMORY_BUDGET"
"""Environment variable: the memory a load may use; the input budget is a quarter of it."""

SUGGESTION = "Sample it, or screen it out of core with `mcviz screen --engine duckdb`."
NULL_VALUES = ["", "NA", "N/A", "NaN", "nan", "null", "NULL", "None", "?"]
_CHUNK = 1 << 20
_RESTARTS_PER_COLUMN = 3  # then every non-text column is read as text at once
_MAGIC = (  # (codec, magic bytes)
    ("gzip", b"\x1f\x8b"), ("bzip2", b"BZh"), ("xz", b"\xfd7zXZ\x00"),
    ("zstd", b"\x28\xb5\x2f\xfd"), ("zip", b"PK\x03\x04"), ("zip", b"PK\x05\x06"),
)
_CONVERSION = re.compile(r"In CSV column #(\d+): (?:Row #\d+: )?CSV conversion error")


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of one read: decompressed bytes, columns, and the read's peak memory."""

    bytes: int
    columns: int
    memory: int


def size_text(count: float) -> str:
    """Word a byte count in binary units (``1.50 GiB``)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.2f} {unit}"
    return f"{int(count):,} bytes"


def too_large(name: str, found: str, limit: int) -> ValidationError:
    """Return the message for input over ``max_bytes``."""
    return ValidationError(
        f"file {name!r} {found}; the limit is {size_text(limit)} (max_bytes, or a quarter of "
        f"{MEMORY_BUDGET_VARIABLE}). {SUGGESTION}"
    )


def too_many_columns(name: str, columns: int, limit: int) -> ValidationError:
    """Return the message for a file over the column limit."""
    return ValidationError(
        f"file {name!r} has {columns:,} columns; the limit is "
        f"{limit:,} (max_columns, or {MAX_COLUMNS_VARIABLE}). Keep only the columns to analyse "
        "(the score, the label, a weight and the covariates), or raise the limit."
    )


def short(error: BaseException, length: int = 300) -> str:
    """Return an error's text on one line, at most ``length`` characters."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= length else text[:length] + "..."


def codec_of(head: bytes) -> str | None:
    r"""Return the compression of a stream from its first bytes (None: not compressed).

    Examples
    --------
    >>> codec_of(b"\x1f\x8b\x08"), codec_of(b"score,label"), codec_of(b"\x28\xb5\x2f\xfd")
    ('gzip', None, 'zstd')
    """
    return next((codec for codec, magic in _MAGIC if head.startswith(magic)), None)


class _Counted(io.RawIOBase):
    """The decompressed bytes of a stream as they come; more than ``limit`` stop the read."""

    def __init__(self, stream: IO[bytes], base: IO[bytes], name: str, codec: str | None,
                 limit: int) -> None:
        super().__init__()
        self._stream, self._base, self._name, self._codec = stream, base, name, codec
        self._limit = limit
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        try:
            data = self._stream.read(len(buffer))
        except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError, RuntimeError,
                NotImplementedError, zipfile.BadZipFile) as error:
            raise self._corrupt(error) from None
        except Exception as error:  # pyarrow's zstd decoder raises ArrowException
            if type(error).__module__.startswith("pyarrow"):
                raise self._corrupt(error) from None
            raise
        self.count += len(data)
        if self.count > self._limit:
            found = ("decompresses to more than" if self._codec else "is more than")
            raise too_large(self._name, f"{found} {size_text(self._limit)}", self._limit)
        buffer[: len(data)] = data
        return len(data)

    def _corrupt(self, error: BaseException) -> ValidationError:
        if self._codec == "zip":
            return ValidationError(f"zip file {self._name!r} could not be read (corrupt, "
                                   f"encrypted or unsupported): {short(error)}")
        return ValidationError(f"file {self._name!r} is not a valid {self._codec} stream "
                               f"(corrupt or truncated): {short(error)}")

    def close(self) -> None:
        self._stream.close()
        self._base.close()
        super().close()


def decompressed(base: IO[bytes], name: str, limit: int) -> tuple[_Counted, str | None]:
    """Open ``base`` (seekable, at its start) decompressed and counted; returns its codec too."""
    head = base.read(8)
    base.seek(0)
    codec = codec_of(head)
    try:
        if codec == "gzip":
            stream: IO[bytes] = gzip.GzipFile(fileobj=base)
        elif codec == "bzip2":
            stream = bz2.BZ2File(base)
        elif codec == "xz":
            stream = lzma.LZMAFile(base)  # noqa: SIM115 (closed with the counted stream)
        elif codec == "zstd":
            import pyarrow as pa

            stream = pa.CompressedInputStream(pa.PythonFile(base, mode="r"), "zstd")
        elif codec == "zip":
            stream = _zip_member(base, name, limit)
        else:
            stream = base
    except ValidationError:
        base.close()
        raise
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError,
            RuntimeError, ValueError) as error:
        base.close()
        raise ValidationError(
            f"{codec} file {name!r} could not be read (corrupt, encrypted or unsupported): "
            f"{short(error)}"
        ) from None
    return _Counted(stream, base, name, codec, limit), codec


def _zip_member(base: IO[bytes], name: str, limit: int) -> IO[bytes]:
    archive = zipfile.ZipFile(base)
    members = [m for m in archive.infolist() if not m.is_dir()]
    if len(members) != 1:
        excel = any(m.filename.startswith("xl/") for m in members)
        raise ValidationError(
            f"zip file {name!r} holds {len(members)} files; it must hold exactly one."
            + (" It looks like an Excel workbook: save it as CSV." if excel else "")
        )
    if members[0].file_size > limit:
        raise too_large(name, f"decompresses to {size_text(members[0].file_size)}", limit)
    return archive.open(members[0])


def read_counted(stream: IO[bytes]) -> bytes:
    """Every byte of a counted stream (it stops at its limit), in one buffer."""
    out = bytearray()
    while chunk := stream.read(_CHUNK):
        out += chunk
    return bytes(out)


# --------------------------------------------------------------------------------------------
# The header: delimiter, encoding and the number of columns, from the first line alone


@dataclass(frozen=True, slots=True)
class Header:
    """What the first line of a text says: its delimiter, encoding and column count."""

    delimiter: str
    encoding: str
    columns: int


def read_header(stream: IO[bytes], name: str, max_columns: int) -> Header | None:
    """Read up to the first line break and count its columns, before any parsing.

    Returns None for an empty (or blank) text; raises the column-limit message. The header line
    is held once (it is bounded by ``max_bytes`` through the counted stream).
    """
    head = bytearray()
    while chunk := stream.read(_CHUNK):
        head += chunk
        if b"\n" in chunk or b"\r" in chunk:
            break
    utf16 = head[:2] in (b"\xff\xfe", b"\xfe\xff")
    text = bytes(head).decode("utf-16", "ignore").encode() if utf16 else bytes(head)
    text = text.removeprefix(b"\xef\xbb\xbf")
    if not text.strip():
        return None
    ends = [i for i in (text.find(b"\n"), text.find(b"\r")) if i >= 0]
    line = text[: min(ends)] if ends else text
    delimiter = _delimiter(line)
    columns = _header_columns(line, delimiter)
    if columns > max_columns:
        raise too_many_columns(name, columns, max_columns)
    return Header(delimiter, "utf-16" if utf16 else "utf8", columns)


def _delimiter(first_line: bytes) -> str:
    counts = {d: first_line.count(d.encode()) for d in (",", "\t", ";", "|")}
    if counts["\t"] > counts[","]:
        return "\t"
    if counts[","] == 0:
        other = max((";", "|"), key=counts.__getitem__)
        if counts[other] > 0:
            return other
    return ","


def _header_columns(line: bytes, delimiter: str) -> int:
    """Columns of a header line: its delimiters bound them; a quoted one is parsed exactly."""
    count = line.count(delimiter.encode()) + 1
    if b'"' in line:
        text = line.decode("utf-8", "replace")
        count = max(len(next(csv.reader([text], delimiter=delimiter), [])), 1)
    return count


# --------------------------------------------------------------------------------------------
# The CSV in chunks


@dataclass(slots=True)
class _Plan:
    """What the next attempt reads: block size, encoding and the columns read as text."""

    block: int
    encoding: str
    as_text: dict[str, object] = field(default_factory=dict)  # name -> type inferred first
    restarts: int = 0
    schema: object = None  # the last attempt's schema (the types of its first block)
    attempts: int = 0  # reads started (each restart reads the text again)


def read_csv_chunked(open_base: Callable[[], IO[bytes]], name: str, limits: Limits, *,
                     held: int) -> pd.DataFrame:
    """Parse a CSV/TSV text in blocks within ``limits``; see the module's docstring.

    ``open_base`` opens the (possibly compressed) bytes afresh for each attempt; ``held`` is
    the bytes of the file kept in memory meanwhile (0 when it streams from disk).
    """
    import pyarrow as pa

    with decompressed(open_base(), name, limits.bytes)[0] as stream:
        header = read_header(stream, name, limits.columns)
    if header is None:
        raise ValidationError(f"file {name!r} is empty.")
    plan = _Plan(BLOCK_BYTES, header.encoding)
    while True:
        try:
            table = _attempt(open_base, name, limits, held, header, plan)
        except pa.ArrowInvalid as error:
            if not _replan(plan, str(error), limits):
                raise ValidationError(
                    f"file {name!r} is not a valid CSV/TSV file: {short(error)}"
                ) from None
            continue
        if plan.encoding == "utf8" and any(
                pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)
                for f in table.schema):
            plan.encoding = "latin-1"  # not UTF-8: read the bytes as Latin-1 text
            continue
        break
    table = _narrowest(table, plan.as_text)
    names = [str(c).strip() for c in table.column_names]
    check_duplicate_names(names)
    frame = table.to_pandas(self_destruct=True)  # each column freed once converted
    frame.columns = names
    return frame


def _replan(plan: _Plan, message: str, limits: Limits) -> bool:
    """Change the plan after a failed attempt; False when nothing would help."""
    if "straddling" in message and plan.block < limits.bytes:
        plan.block = min(plan.block * 8, max(limits.bytes + 1, BLOCK_BYTES), (1 << 31) - 1)
        return True
    if "invalid UTF8" in message and plan.encoding == "utf8":
        plan.encoding = "latin-1"
        return True
    match = _CONVERSION.search(message)
    if match is None or plan.schema is None:
        return False
    column = plan.schema.names[int(match.group(1))]
    if column in plan.as_text:
        return False
    plan.restarts += 1
    if plan.restarts > _RESTARTS_PER_COLUMN:
        import pyarrow as pa

        plan.as_text.update({f.name: f.type for f in plan.schema
                             if not pa.types.is_string(f.type) and f.name not in plan.as_text})
    else:
        plan.as_text[column] = plan.schema.field(column).type
    return True


def _attempt(open_base: Callable[[], IO[bytes]], name: str, limits: Limits, held: int,
             header: Header, plan: _Plan) -> pa.Table:
    """One streaming read; stops as soon as the table would exceed the memory budget."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from mcviz.budget import check, table_read_estimate

    stream, _ = decompressed(open_base(), name, limits.bytes)
    plan.schema, plan.attempts = None, plan.attempts + 1
    with stream:
        reader = pacsv.open_csv(
            stream,
            read_options=pacsv.ReadOptions(encoding=plan.encoding, block_size=plan.block),
            parse_options=pacsv.ParseOptions(delimiter=header.delimiter,
                                              newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(
                null_values=NULL_VALUES, strings_can_be_null=True,
                column_types=dict.fromkeys(plan.as_text, pa.string())),
        )
        plan.schema = reader.schema
        batches, total, rows = [], 0, 0
        for batch in reader:
            total += batch.nbytes
            rows += batch.num_rows
            estimate = table_read_estimate(total, held=held,
                                           buffer=min(plan.block, stream.count),
                                           values=rows * batch.num_columns,
                                           what=f"reading {name!r}")
            if estimate.bytes > limits.memory:
                raise over_budget(name, rows, f"{size_text(stream.count)} of text", estimate.bytes,
                                  limits.memory)
            batches.append(batch)
        table = pa.Table.from_batches(batches, schema=reader.schema)
    check(table_read_estimate(total, held=held, buffer=min(plan.block, stream.count),
                              values=table.num_rows * table.num_columns * plan.attempts,
                              what=f"reading {name!r}"), limits.memory)
    return table


def over_budget(name: str, rows: int, read: str, need: int, memory: int) -> ValidationError:
    from mcviz.budget import format_bytes

    return ValidationError(
        f"file {name!r} is too large to read within the memory budget: stopped after "
        f"{rows:,} rows ({read}), where the table would need about "
        f"{format_bytes(need)} (budget {format_bytes(memory)}). To read it: read a sample of "
        "the rows or fewer columns, screen it out of core with `mcviz screen --engine "
        f"duckdb`, or raise the budget (max_memory, or {MEMORY_BUDGET_VARIABLE})."
    )


def _inference_order() -> list:
    """Return pyarrow's CSV inference order (after null): each type tried when the last fails.

    A whole-file read (:func:`pyarrow.csv.read_csv`) moves a column along it until a type holds
    every value: integer, boolean, real, date, (time), timestamp in seconds, in nanoseconds,
    with a zone in seconds, in nanoseconds; else text.
    """
    import pyarrow as pa

    return [pa.int64(), pa.bool_(), pa.float64(), pa.date32(), pa.timestamp("s"),
            pa.timestamp("ns"), pa.timestamp("s", "UTC"), pa.timestamp("ns", "UTC")]


def _narrowest(table: pa.Table, as_text: dict[str, object]) -> pa.Table:
    """Columns read as text take the type a whole-file read would have given them.

    Each goes on along pyarrow's inference order (:func:`_inference_order`) from the type its
    first block was inferred as (a column empty there from the start): the first type that
    holds every value, else text. A column first read as dates that later holds date-times
    becomes a timestamp, as in a whole-file read.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    order = _inference_order()
    for column in as_text:
        first = as_text[column]
        if pa.types.is_null(first):
            candidates = order
        elif pa.types.is_time(first):  # a time is never a timestamp: text
            candidates = []
        else:
            start = next((i for i, t in enumerate(order) if t == first), None)
            candidates = order[start:] if start is not None else []
        position = table.schema.get_field_index(column)
        for target in candidates:
            try:
                values = pc.cast(table[column], target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                continue
            table = table.set_column(position, pa.field(column, target), values)
            break
    return table


def check_duplicate_names(names) -> None:
    """Refuse duplicate column names, naming them."""
    seen: set[str] = set()
    duplicated = sorted({str(n) for n in names if n in seen or seen.add(n)})
    if duplicated:
        raise ValidationError(
            f"duplicate column names: {', '.join(repr(d)[:80] for d in duplicated[:10])}; "
            "rename them so every column is unique.",
            column=duplicated[0],
        )

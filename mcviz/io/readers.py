"""Readers: CSV/TSV (plain, gzip, zip) and Parquet bytes to a DataFrame, within a size budget.

Every failure of a reader (a corrupt or truncated stream, an archive of several files, text that
is not a table, a Parquet type pandas cannot hold) becomes a
:class:`~mcviz.errors.ValidationError` naming the file and the problem. Compressed input is
measured before it is materialised: gzip and zip members are decompressed through a counting
stream that stops at the budget, and a Parquet file's size is estimated from its row-group
metadata before any page is read.

The budget (``max_bytes``) defaults to 1 GiB of decompressed input, or a quarter of the
``MCVIZ_MEMORY_BUDGET`` environment variable when it is set (bytes, or a number with a K, M, G
or T suffix): reading a table holds its bytes, the parsed table and the DataFrame at once.

Two more bounds are checked before anything is parsed:

* the number of columns (``max_columns``, default :data:`DEFAULT_MAX_COLUMNS` or
  ``MCVIZ_MAX_COLUMNS``), from the CSV's header line or the Parquet footer: a 10 MB CSV of 10^6
  columns otherwise makes the parser allocate per-column state until the process aborts;
* the peak memory of the whole read (:func:`mcviz.budget.csv_read_estimate` and
  :func:`mcviz.budget.parquet_read_estimate`: the text, the parsed table and the DataFrame,
  from the text's size, its lines and its columns, or the Parquet footer) against the memory
  budget (``max_memory``, default :func:`mcviz.budget.memory_budget`): a short CSV value
  (``0,0,``) takes 2 bytes of text but about 26 once parsed and converted, so a file under
  ``max_bytes`` can still need many times its size.

Arrow's memory pool hands freed memory back to the system after every read (and after a
refused one).
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import os
import re
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

import pandas as pd

from mcviz.errors import ValidationError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_COLUMNS",
    "Source",
    "default_max_bytes",
    "default_max_columns",
    "read_parquet_table",
    "read_table",
]

DEFAULT_MAX_BYTES = 1 << 30
"""Input larger than this (1 GiB, after decompression) is refused rather than exhausting memory."""

DEFAULT_MAX_COLUMNS = 2_000
"""Files with more columns than this are refused from their header, before parsing."""

MAX_COLUMNS_VARIABLE = "MCVIZ_MAX_COLUMNS"
"""Environment variable: the column limit (a positive integer)."""

MEMORY_BUDGET_VARIABLE = "MCVIZ_MEMORY_BUDGET"
"""Environment variable: the memory a load may use; the input budget is a quarter of it."""

Source = str | Path | IO[bytes] | pd.DataFrame

_PARQUET_MAGIC = b"PAR1"
_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_MAGIC = b"PK\x03\x04"
_EMPTY_ZIP_MAGIC = b"PK\x05\x06"
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_CHUNK = 1 << 20
_SUGGESTION = "Sample it, or screen it out of core with `mcviz screen --engine duckdb`."
# The reader errors a corrupt, truncated or hostile file can raise; anything else is a bug.
_READ_ERRORS = (
    OSError, EOFError, ValueError, zlib.error, zipfile.BadZipFile, NotImplementedError,
    MemoryError,
)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def default_max_bytes() -> int:
    """Return the input budget: a quarter of ``MCVIZ_MEMORY_BUDGET`` if set, else 1 GiB.

    Examples
    --------
    >>> import os
    >>> os.environ["MCVIZ_MEMORY_BUDGET"] = "8G"
    >>> default_max_bytes() == 2 * 2**30
    True
    >>> del os.environ["MCVIZ_MEMORY_BUDGET"]
    >>> default_max_bytes() == DEFAULT_MAX_BYTES
    True
    """
    text = os.environ.get(MEMORY_BUDGET_VARIABLE, "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?", text, re.IGNORECASE)
    if match is None:
        raise ValidationError(
            f"{MEMORY_BUDGET_VARIABLE}={text!r} is not a size; use bytes or a number with a "
            "K, M, G or T suffix (for example 8G)."
        )
    return max(1, int(float(match.group(1)) * _UNITS[match.group(2).upper()]) // 4)


def default_max_columns() -> int:
    """Return the column limit: ``MCVIZ_MAX_COLUMNS`` if set, else :data:`DEFAULT_MAX_COLUMNS`.

    Examples
    --------
    >>> default_max_columns() == DEFAULT_MAX_COLUMNS
    True
    """
    text = os.environ.get(MAX_COLUMNS_VARIABLE, "").strip()
    if not text:
        return DEFAULT_MAX_COLUMNS
    if not text.isdigit() or int(text) < 1:
        raise ValidationError(
            f"{MAX_COLUMNS_VARIABLE}={text!r} is not a positive whole number of columns."
        )
    return int(text)


def _too_many_columns(name: str, columns: int, limit: int) -> ValidationError:
    return ValidationError(
        f"file {name!r} has {columns:,} columns; the limit is "
        f"{limit:,} (max_columns, or {MAX_COLUMNS_VARIABLE}). Keep only the columns to analyse "
        "(the score, the label, a weight and the covariates), or raise the limit."
    )


def read_table(
    source: Source,
    *,
    max_bytes: int | None = None,
    max_columns: int | None = None,
    max_memory: int | None = None,
) -> pd.DataFrame:
    """Read a CSV/TSV (plain, .gz or .zip) or Parquet file into a DataFrame.

    The format is recognised from the content (Parquet, gzip and zip magic bytes), so a file
    uploaded under any name works. The delimiter (comma, tab, semicolon or bar) is decided from
    the header line; line endings may be LF, CRLF or CR alone; fields may be of any length.

    Parameters
    ----------
    source : path, file-like or DataFrame
        A DataFrame is returned as is (after the duplicate-name check).
    max_bytes : int, optional
        Budget for the file and for its decompressed content (default
        :func:`default_max_bytes`). Larger input is refused with a message.
    max_columns : int, optional
        The most columns accepted (default :func:`default_max_columns`), checked from the
        header (CSV) or the footer (Parquet) before parsing.
    max_memory : int, optional
        The most memory the read may take at its peak (default
        :func:`mcviz.budget.memory_budget`), estimated before parsing.

    Raises
    ------
    ValidationError
        Unreadable, empty, corrupt or oversized files, wrong formats, duplicate column names,
        too many columns, or a read estimated above the memory budget.
    """
    columns = default_max_columns() if max_columns is None else int(max_columns)
    if isinstance(source, pd.DataFrame):
        if source.shape[1] > columns:
            raise _too_many_columns("DataFrame", source.shape[1], columns)
        _check_duplicate_names([str(c) for c in source.columns])
        return source
    limits = _Limits(default_max_bytes() if max_bytes is None else int(max_bytes), columns,
                     _memory_budget(max_memory))
    name, size = _source_name_and_size(source)
    if size is not None and size > limits.bytes:
        raise _too_large(name, f"is {_size(size)}", limits.bytes)
    import pyarrow as pa

    try:
        raw = _read_bytes(source, name, limits.bytes)
        if not raw or raw.isspace():  # isspace stops at the first other byte (strip would copy)
            raise ValidationError(f"file {name!r} is empty.")
        frame = _read_content(raw, name, limits)
    except ValidationError:
        raise
    except (pa.ArrowException, *_READ_ERRORS) as error:
        raise ValidationError(
            f"file {name!r} could not be read as CSV, TSV or Parquet: {_short(error)}"
        ) from None
    finally:
        raw = None
        release_arrow_memory()
    if frame.shape[1] == 0:
        raise ValidationError(f"file {name!r} has no columns.")
    if frame.shape[0] == 0:
        raise ValidationError(f"file {name!r} has a header but no rows.")
    return frame


@dataclass(frozen=True, slots=True)
class _Limits:
    bytes: int  # decompressed input
    columns: int
    memory: int  # peak of the whole read


def _memory_budget(value: int | None) -> int:
    from mcviz.budget import memory_budget

    return memory_budget(value)


def release_arrow_memory() -> None:
    """Hand the memory Arrow's pool keeps for reuse back to the system."""
    import pyarrow as pa

    with contextlib.suppress(AttributeError, NotImplementedError):
        pa.default_memory_pool().release_unused()


def _read_content(raw: bytes, name: str, limits: _Limits, *, held: int = 0) -> pd.DataFrame:
    """Dispatch on the magic bytes; a compressed file may hold CSV, TSV or Parquet.

    ``held``: the bytes of the compressed file still held while its content is read.
    """
    if raw[:4] == _PARQUET_MAGIC:
        return _read_parquet(raw, name, limits, held=held).to_pandas(self_destruct=True)
    if not held and raw[:2] == _GZIP_MAGIC:
        return _read_content(_gunzip_limited(raw, name, limits.bytes), name, limits,
                             held=len(raw))
    if not held and raw[:4] in (_ZIP_MAGIC, _EMPTY_ZIP_MAGIC):
        return _read_content(_unzip_single(raw, name, limits.bytes), name, limits,
                             held=len(raw))
    return _read_delimited(raw, name, limits, held=held)


def _source_name_and_size(source: str | Path | IO[bytes]) -> tuple[str, int | None]:
    if isinstance(source, str | Path):
        path = Path(source)
        try:
            if not path.exists():
                raise ValidationError(f"file {str(path)!r} does not exist.")
            if path.is_dir():
                raise ValidationError(
                    f"file {path.name!r} could not be read: it is a directory, not a file."
                )
            return path.name, path.stat().st_size
        except OSError as error:  # a name too long, a path through a file
            raise ValidationError(
                f"file {str(path)[:200]!r} could not be read: {error.strerror or error}."
            ) from None
    name = getattr(source, "name", None) or "upload"
    size = getattr(source, "size", None)
    return str(name), size if isinstance(size, int) else None


def _read_bytes(source: str | Path | IO[bytes], name: str, limit: int) -> bytes:
    """All bytes of the source, refusing more than ``limit`` (the file may grow while read)."""
    try:
        if isinstance(source, str | Path):
            with Path(source).open("rb") as stream:
                # read the size the file has (a read of limit + 1 bytes would allocate that
                # much first), then whatever it grew by, never past limit + 1
                size = os.fstat(stream.fileno()).st_size
                raw = stream.read(min(size, limit) + 1)
                if len(raw) <= limit and (more := stream.read(1)):
                    raw += more + stream.read(limit - len(raw))
        elif hasattr(source, "getvalue"):
            raw = bytes(source.getvalue())
        else:
            if hasattr(source, "seek"):
                source.seek(0)
            raw = source.read(limit + 1)
    except OSError as error:
        raise ValidationError(
            f"file {name!r} could not be read: {error.strerror or error}."
        ) from None
    if not isinstance(raw, bytes | bytearray | memoryview):
        raise ValidationError(f"file {name!r} did not give bytes (opened in text mode?).")
    if len(raw) > limit:
        raise _too_large(name, f"is more than {_size(limit)}", limit)
    return bytes(raw)


def _size(count: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.2f} {unit}"
    return f"{int(count):,} bytes"


def _too_large(name: str, found: str, limit: int) -> ValidationError:
    return ValidationError(
        f"file {name!r} {found}; the limit is {_size(limit)} (max_bytes, or a quarter of "
        f"{MEMORY_BUDGET_VARIABLE}). {_SUGGESTION}"
    )


def _short(error: BaseException, length: int = 300) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= length else text[:length] + "..."


def _read_limited(stream: IO[bytes], name: str, limit: int) -> bytearray:
    """Decompress through a counting stream: stop as soon as more than ``limit`` bytes come.

    The chunks are appended to one buffer (never a list of chunks joined into a second copy).
    """
    out = bytearray()
    while chunk := stream.read(_CHUNK):
        if len(out) + len(chunk) > limit:
            raise _too_large(name, f"decompresses to more than {_size(limit)}", limit)
        out += chunk
    return out


def _gunzip_limited(raw: bytes, name: str, limit: int) -> bytearray:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as stream:
            return _read_limited(stream, name, limit)
    except (OSError, EOFError, zlib.error) as error:
        raise ValidationError(
            f"file {name!r} is not a valid gzip stream (corrupt or truncated): {_short(error)}"
        ) from None


def _unzip_single(raw: bytes, name: str, limit: int) -> bytearray:
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            members = [m for m in archive.infolist() if not m.is_dir()]
            if len(members) != 1:
                excel = any(m.filename.startswith("xl/") for m in members)
                raise ValidationError(
                    f"zip file {name!r} holds {len(members)} files; it must hold exactly one."
                    + (" It looks like an Excel workbook: save it as CSV." if excel else "")
                )
            if members[0].file_size > limit:
                raise _too_large(name, f"decompresses to {_size(members[0].file_size)}", limit)
            with archive.open(members[0]) as stream:
                return _read_limited(stream, name, limit)
    except ValidationError:
        raise
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError,
            RuntimeError, ValueError) as error:  # encrypted or unsupported members included
        raise ValidationError(
            f"zip file {name!r} could not be read (corrupt, encrypted or unsupported): "
            f"{_short(error)}"
        ) from None


def read_parquet_table(
    source: str | Path | bytes,
    *,
    max_bytes: int | None = None,
    max_columns: int | None = None,
    max_memory: int | None = None,
) -> pa.Table:
    """Read a Parquet file (a path or its bytes) to an Arrow table, within the same limits.

    The guarded reader of :func:`read_table` for callers that need the table's schema metadata
    (the Screening page's tables): the column limit, the decoded size and the memory of the read
    are checked from the footer before any page is decompressed.

    Raises
    ------
    ValidationError
        Not Parquet, corrupt, too many columns, or above a limit.
    """
    limits = _Limits(default_max_bytes() if max_bytes is None else int(max_bytes),
                     default_max_columns() if max_columns is None else int(max_columns),
                     _memory_budget(max_memory))
    if isinstance(source, bytes | bytearray):
        name, raw = "upload", bytes(source)
        if len(raw) > limits.bytes:
            raise _too_large(name, f"is {_size(len(raw))}", limits.bytes)
    else:
        name, size = _source_name_and_size(source)
        if size is not None and size > limits.bytes:
            raise _too_large(name, f"is {_size(size)}", limits.bytes)
        raw = _read_bytes(source, name, limits.bytes)
    if raw[:4] != _PARQUET_MAGIC:
        raise ValidationError(f"file {name!r} is not a Parquet file.")
    try:
        return _read_parquet(raw, name, limits)
    finally:
        release_arrow_memory()


def _read_parquet(raw: bytes, name: str, limits: _Limits, *, held: int = 0) -> pa.Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mcviz.budget import check, parquet_read_estimate

    try:
        parquet = pq.ParquetFile(pa.BufferReader(raw))  # native reads, no Python file object
        metadata = parquet.metadata
        if metadata.num_columns > limits.columns:
            raise _too_many_columns(name, metadata.num_columns, limits.columns)
        _check_duplicate_names(parquet.schema_arrow.names)
        estimate = _parquet_memory(metadata)
        if estimate > limits.bytes:
            raise _too_large(
                name, f"decompresses to about {_size(estimate)} (its row-group metadata)",
                limits.bytes,
            )
        check(parquet_read_estimate(len(raw) + held, estimate, what=f"reading {name!r}"),
              limits.memory)
        return parquet.read()
    except ValidationError:
        raise
    except (pa.ArrowException, *_READ_ERRORS) as error:
        raise ValidationError(
            f"file {name!r} could not be read as Parquet (corrupt, truncated or of a type "
            f"mcviz cannot hold): {_short(error)}"
        ) from None


def _parquet_memory(metadata: object) -> int:
    """Bytes a Parquet file needs once decoded, from its footer alone.

    The larger of the uncompressed page sizes and rows x 8 bytes per leaf column (a float or a
    pointer per value): run-length and dictionary encoding can make the pages far smaller than
    the values they decode to.
    """
    uncompressed = sum(
        metadata.row_group(i).total_byte_size  # type: ignore[attr-defined]
        for i in range(metadata.num_row_groups)  # type: ignore[attr-defined]
    )
    values = metadata.num_rows * max(metadata.num_columns, 1) * 8  # type: ignore[attr-defined]
    return max(uncompressed, values)


def _decode_text(raw: bytes) -> bytes:
    """UTF-8 bytes for pyarrow: a UTF-8 BOM dropped, UTF-16 (with a BOM) re-encoded."""
    if raw.startswith(_UTF8_BOM):
        return raw[len(_UTF8_BOM):]
    if raw[:2] in _UTF16_BOMS:
        return raw.decode("utf-16").encode("utf-8")
    return raw


def _delimiter(first_line: bytes) -> str:
    counts = {d: first_line.count(d.encode()) for d in (",", "\t", ";", "|")}
    if counts["\t"] > counts[","]:
        return "\t"
    if counts[","] == 0:
        other = max((";", "|"), key=counts.__getitem__)
        if counts[other] > 0:
            return other
    return ","


def _header_columns(raw: bytes, delimiter: str) -> int:
    """Columns of the header line, from that line alone (no copy of it unless it is quoted).

    The delimiters of the line bound the count from above; a header with quotes (a name may
    hold the delimiter) is parsed exactly when that bound is over the limit.
    """
    ends = [i for i in (raw.find(b"\n"), raw.find(b"\r")) if i >= 0]
    end = min(ends) if ends else len(raw)
    count = raw.count(delimiter.encode(), 0, end) + 1
    if raw.find(b'"', 0, end) >= 0:
        line = raw[:end].decode("utf-8", "replace")
        count = max(len(next(csv.reader([line], delimiter=delimiter), [])), 1)
    return count


def _lines(raw: bytes) -> int:
    """Lines of a text (LF, CRLF or CR alone), counted without a copy."""
    return max(raw.count(b"\n"), raw.count(b"\r")) + 1


def _read_delimited(raw: bytes, name: str, limits: _Limits, *, held: int) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from mcviz.budget import check, csv_read_estimate

    try:
        raw = _decode_text(raw)
    except UnicodeDecodeError as error:
        raise ValidationError(f"file {name!r} is not valid UTF-16 text: {_short(error)}") from None
    first_line = re.split(rb"\r\n|\r|\n", raw[:_CHUNK], maxsplit=1)[0]
    delimiter = _delimiter(first_line)
    columns = _header_columns(raw, delimiter)
    if columns > limits.columns:
        raise _too_many_columns(name, columns, limits.columns)
    check(csv_read_estimate(len(raw), _lines(raw) * columns, held=held,
                            what=f"reading {name!r}"), limits.memory)

    # Decide the parser options up front: a failed multi-threaded parse can leave pyarrow's
    # worker threads busy when the process exits. Quoted fields may hold line breaks; a block
    # as large as the file takes lines of any length.
    options = pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=b'"' in raw)
    block = min(len(raw) + 1, (1 << 31) - 1) if _has_long_line(raw) else None

    def parse_any(encoding: str) -> pa.Table:
        return pacsv.read_csv(
            pa.py_buffer(raw),
            read_options=pacsv.ReadOptions(encoding=encoding, block_size=block),
            parse_options=options,
            convert_options=pacsv.ConvertOptions(
                null_values=["", "NA", "N/A", "NaN", "nan", "null", "NULL", "None", "?"],
                strings_can_be_null=True,
            ),
        )

    try:
        table = parse_any("utf8")
        if any(pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)
               for f in table.schema):
            table = parse_any("latin-1")  # not UTF-8: read the bytes as Latin-1 text
    except pa.ArrowInvalid as error:
        raise ValidationError(
            f"file {name!r} is not a valid CSV/TSV file: {_short(error)}"
        ) from None
    names = [str(c).strip() for c in table.column_names]
    _check_duplicate_names(names)
    frame = table.to_pandas(self_destruct=True)  # each column freed once converted
    frame.columns = names
    return frame


def _has_long_line(raw: bytes, window: int = _CHUNK // 2) -> bool:
    """Tell whether a line may exceed the reader's 1 MiB block.

    True when some aligned ``window`` of bytes holds no line break (any line of two windows or
    more covers one): one ``find`` per window, never a pass per line.
    """
    return any(
        raw.find(b"\n", start, start + window) < 0 and raw.find(b"\r", start, start + window) < 0
        for start in range(0, len(raw) - window + 1, window)
    )


def _check_duplicate_names(names: Sequence[str]) -> None:
    seen: set[str] = set()
    duplicated = sorted({str(n) for n in names if n in seen or seen.add(n)})
    if duplicated:
        raise ValidationError(
            f"duplicate column names: {', '.join(repr(d)[:80] for d in duplicated[:10])}; "
            "rename them so every column is unique.",
            column=duplicated[0],
        )

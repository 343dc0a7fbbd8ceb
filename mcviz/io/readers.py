"""Readers: CSV/TSV (plain or compressed) and Parquet to a DataFrame, within the budget.

Every failure of a reader (a corrupt or truncated stream, an archive of several files, text that
is not a table, a Parquet type pandas cannot hold) becomes a
:class:`~mcviz.errors.ValidationError` naming the file and the problem.

Three bounds hold whatever the file:

* ``max_bytes``, the decompressed input: 1 GiB by default, or a quarter of the
  ``MCVIZ_MEMORY_BUDGET`` environment variable when it is set (bytes, or a number with a K, M,
  G or T suffix). Compressed text (gzip, bzip2, xz, zstd, a one-file zip) is counted as it
  streams and stops there;
* the number of columns (``max_columns``, default :data:`DEFAULT_MAX_COLUMNS` or
  ``MCVIZ_MAX_COLUMNS``), from the CSV's header line or the Parquet footer before parsing: a
  10 MB CSV of 10^6 columns otherwise makes the parser allocate per-column state until the
  process aborts;
* the peak memory of the read (``max_memory``, default :func:`mcviz.budget.memory_budget`):
  CSV is parsed in blocks and Parquet read by batches of rows (:mod:`mcviz.io.chunked`); the
  read stops as soon as the table so far would exceed the budget once converted
  (:func:`mcviz.budget.table_read_estimate`), and a Parquet file whose footer already says so
  (:func:`mcviz.budget.parquet_read_estimate`) is refused before any page is read.

Arrow's memory pool hands freed memory back to the system after every read (and after a
refused one).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, TypeAlias

from mcviz.errors import ValidationError
from mcviz.io.chunked import (
    BLOCK_BYTES,
    MAX_COLUMNS_VARIABLE,
    MEMORY_BUDGET_VARIABLE,
    Limits,
    check_duplicate_names,
    codec_of,
    decompressed,
    read_counted,
    read_csv_chunked,
    short,
    size_text,
    too_large,
    too_many_columns,
)

if TYPE_CHECKING:  # pandas is imported where a DataFrame is built (Arrow alone reads Parquet)
    import pandas as pd
    import pyarrow as pa

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_COLUMNS",
    "MAX_COLUMNS_VARIABLE",
    "MEMORY_BUDGET_VARIABLE",
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

Source: TypeAlias = "str | Path | IO[bytes] | pd.DataFrame"

_PARQUET_MAGIC = b"PAR1"
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
    pandas = sys.modules.get("pandas")  # no DataFrame can exist before pandas is imported
    if pandas is not None and isinstance(source, pandas.DataFrame):
        if source.shape[1] > columns:
            raise too_many_columns("DataFrame", source.shape[1], columns)
        check_duplicate_names([str(c) for c in source.columns])
        return source
    limits = Limits(default_max_bytes() if max_bytes is None else int(max_bytes), columns,
                    _memory_budget(max_memory))
    name, size = _source_name_and_size(source)
    if size is not None and size > limits.bytes:
        raise too_large(name, f"is {size_text(size)}", limits.bytes)
    import pyarrow as pa

    try:
        frame = _read_source(source, name, limits)
    except ValidationError:
        raise
    except (pa.ArrowException, *_READ_ERRORS) as error:
        raise ValidationError(
            f"file {name!r} could not be read as CSV, TSV or Parquet: {short(error)}"
        ) from None
    finally:
        release_arrow_memory()
    if frame.shape[1] == 0:
        raise ValidationError(f"file {name!r} has no columns.")
    if frame.shape[0] == 0:
        raise ValidationError(f"file {name!r} has a header but no rows.")
    return frame


def _memory_budget(value: int | None) -> int:
    from mcviz.budget import memory_budget

    return memory_budget(value)


def release_arrow_memory() -> None:
    """Hand the memory Arrow's pool keeps for reuse back to the system."""
    import pyarrow as pa

    with contextlib.suppress(AttributeError, NotImplementedError):
        pa.default_memory_pool().release_unused()


def _read_source(source: str | Path | IO[bytes], name: str, limits: Limits) -> pd.DataFrame:
    """Dispatch on the magic bytes; a compressed file may hold CSV, TSV or Parquet.

    A path streams from disk (its bytes are never held whole); other sources are read to bytes
    first (within ``max_bytes``), then streamed from them.
    """
    import pyarrow as pa

    if isinstance(source, str | Path):
        path = Path(source)

        def open_base() -> IO[bytes]:
            return path.open("rb")

        held, size = 0, path.stat().st_size
    else:
        raw = _read_bytes(source, name, limits.bytes)

        def open_base() -> IO[bytes]:
            return io.BytesIO(raw)

        held = size = len(raw)
    with open_base() as base:
        magic = base.read(8)
    if not magic.strip():
        with open_base() as base:
            if not base.read(1 << 20).strip():
                raise ValidationError(f"file {name!r} is empty.")
    if magic[:4] == _PARQUET_MAGIC:
        native = pa.OSFile(str(path)) if held == 0 else pa.BufferReader(raw)
        with native:
            return _frame(_read_parquet(native, name, limits, file=size))
    if codec_of(magic) is not None:
        with decompressed(open_base(), name, limits.bytes)[0] as stream:
            if stream.read(4) == _PARQUET_MAGIC:  # Parquet inside: decompressed whole
                with decompressed(open_base(), name, limits.bytes)[0] as again:
                    content = read_counted(again)
                return _frame(_read_parquet(pa.BufferReader(content), name, limits,
                                            file=len(content) + held))
    return read_csv_chunked(open_base, name, limits, held=held)


def _frame(table: pa.Table) -> pd.DataFrame:
    """Return a read Parquet table as a DataFrame, one block per column (no 2-D copy).

    ``split_blocks`` lets each column's buffer become its numpy array without a copy where Arrow
    allows it, and ``self_destruct`` frees each converted column: at 10^6 rows x 12 columns this
    avoids allocating and filling a second 2-D block of the numeric columns. Values are the same.
    """
    return table.to_pandas(self_destruct=True, split_blocks=True)


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
        raise too_large(name, f"is more than {size_text(limit)}", limit)
    return bytes(raw)


def read_parquet_table(
    source: str | Path | bytes,
    *,
    max_bytes: int | None = None,
    max_columns: int | None = None,
    max_memory: int | None = None,
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """Read a Parquet file (a path or its bytes) to an Arrow table, within the same limits.

    The guarded reader of :func:`read_table` for callers that need the table's schema metadata
    (the Screening page's tables): the column limit, the decoded size and the memory of the read
    are checked from the footer before any page is decompressed. ``columns``: read only these
    (the footer checks still cover the whole file, the batches only them).

    Raises
    ------
    ValidationError
        Not Parquet, corrupt, too many columns, or above a limit.
    """
    limits = Limits(default_max_bytes() if max_bytes is None else int(max_bytes),
                    default_max_columns() if max_columns is None else int(max_columns),
                    _memory_budget(max_memory))
    if isinstance(source, bytes | bytearray):
        name, raw = "upload", bytes(source)
        if len(raw) > limits.bytes:
            raise too_large(name, f"is {size_text(len(raw))}", limits.bytes)
    else:
        name, size = _source_name_and_size(source)
        if size is not None and size > limits.bytes:
            raise too_large(name, f"is {size_text(size)}", limits.bytes)
        if isinstance(source, str | Path):  # read in place, as read_table does (no copy)
            return _read_parquet_file(Path(source), name, limits, size, columns)
        raw = _read_bytes(source, name, limits.bytes)
    if raw[:4] != _PARQUET_MAGIC:
        raise ValidationError(f"file {name!r} is not a Parquet file.")
    import pyarrow as pa

    try:
        return _read_parquet(pa.BufferReader(raw), name, limits, file=len(raw), columns=columns)
    finally:
        release_arrow_memory()


def _read_parquet_file(path: Path, name: str, limits: Limits, size: int | None,
                       columns: Sequence[str] | None) -> pa.Table:
    """:func:`read_parquet_table` of a path: read through an Arrow file, not copied to bytes."""
    import pyarrow as pa

    try:
        native = pa.OSFile(str(path))
    except (OSError, pa.ArrowException) as error:
        raise ValidationError(f"file {name!r} could not be read: {short(error)}.") from None
    with native:
        if native.read(4) != _PARQUET_MAGIC:
            raise ValidationError(f"file {name!r} is not a Parquet file.")
        native.seek(0)
        try:
            return _read_parquet(native, name, limits, file=native.size() if size is None
                                 else size, columns=columns)
        finally:
            release_arrow_memory()


def _read_parquet(source: pa.NativeFile, name: str, limits: Limits, *, file: int,
                  columns: Sequence[str] | None = None) -> pa.Table:
    """Footer checks (columns, decoded size, memory), then the rows by batches within budget.

    ``file``: the bytes of the file (and of its compressed form) held meanwhile.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mcviz.budget import check, parquet_read_estimate

    try:
        parquet = pq.ParquetFile(source)  # native reads, no Python file object
        metadata = parquet.metadata
        if metadata.num_columns > limits.columns:
            raise too_many_columns(name, metadata.num_columns, limits.columns)
        check_duplicate_names(parquet.schema_arrow.names)
        groups = _decoded_row_groups(source, parquet, columns)
        estimate = sum(groups)
        if estimate > limits.bytes:
            raise too_large(
                name, f"decompresses to about {size_text(estimate)} (its row-group metadata)",
                limits.bytes,
            )
        check(parquet_read_estimate(file, estimate, what=f"reading {name!r}"), limits.memory)
        row_bytes = max((size // max(metadata.row_group(i).num_rows, 1)
                         for i, size in enumerate(groups)), default=1)
        return _parquet_batches(parquet, name, limits, file, max(row_bytes, 1), columns)
    except ValidationError:
        raise
    except (pa.ArrowException, *_READ_ERRORS) as error:
        raise ValidationError(
            f"file {name!r} could not be read as Parquet (corrupt, truncated or of a type "
            f"mcviz cannot hold): {short(error)}"
        ) from None


def _parquet_batches(parquet, name: str, limits: Limits, file: int, row_bytes: int,
                     columns: Sequence[str] | None = None) -> pa.Table:
    """Read the rows by batches of about four blocks decoded; stop above the budget.

    Each batch is checked with the footer's estimate (:func:`mcviz.budget.parquet_read_estimate`)
    of what has been decoded so far, so a file whose values decode to more than its footer says
    stops before the DataFrame is built (after the batch that passes the budget). A batch holds
    1,024 to 2^20 rows, sized from the footer's bytes per row (smaller batches read slower).
    """
    import pyarrow as pa

    from mcviz.budget import parquet_read_estimate
    from mcviz.io.chunked import over_budget

    batches, total, rows = [], 0, 0
    size = max(1_024, min(1 << 20, 4 * BLOCK_BYTES // row_bytes))
    for batch in parquet.iter_batches(batch_size=size, columns=columns):
        total += batch.nbytes
        rows += batch.num_rows
        need = parquet_read_estimate(file, total, what=f"reading {name!r}").bytes
        if need > limits.memory:
            raise over_budget(name, rows, f"{size_text(file)} file", need, limits.memory)
        batches.append(batch)
    schema = parquet.schema_arrow
    if columns is not None:  # the columns read, in that order (pandas' metadata kept)
        schema = pa.schema([schema.field(c) for c in columns], metadata=schema.metadata)
    return pa.Table.from_batches(batches, schema=schema)


def _decoded_row_groups(source: pa.NativeFile, parquet,
                        columns: Sequence[str] | None = None) -> list[int]:
    """Bytes each row group of a Parquet file needs once decoded (its footer, then its indices).

    From the footer: the larger of the uncompressed page sizes and rows x 8 bytes per leaf
    column (a float or a pointer per value), as run-length encoding can make pages far smaller
    than the values they decode to. A dictionary-encoded text column is counted exactly: its
    pages hold each distinct value once and an index per row, so its footer sizes say nothing
    of the decoded column (4,000 rows of one 20 kB text: 20 kB of pages, 80 MB decoded). Such
    columns (text read as text, not as a categorical) are read once more as dictionaries - an
    index per row, one column chunk at a time - and the lengths of the values the rows point at
    summed, before any of their text is decoded (only those among ``columns`` when given: the
    others are never decoded).
    """
    metadata = parquet.metadata
    text = [j for j in range(metadata.num_columns) if _dictionary_text(parquet, j)
            and (columns is None or metadata.schema.column(j).name in columns)]
    names = [metadata.schema.column(j).name for j in text]
    indexed = None
    if text:
        import pyarrow.parquet as pq

        indexed = pq.ParquetFile(source, read_dictionary=names, metadata=metadata)
    sizes = []
    for i in range(metadata.num_row_groups):
        group = metadata.row_group(i)
        size = max(group.total_byte_size, group.num_rows * max(metadata.num_columns, 1) * 8)
        for j, name in zip(text, names, strict=True):
            if group.column(j).has_dictionary_page:
                chunk = group.column(j).total_uncompressed_size
                size += max(_dictionary_decoded(indexed, i, name) - chunk, 0)
        sizes.append(size)
    return sizes


def _dictionary_text(parquet, j: int) -> bool:
    """Tell whether column ``j`` is top-level text read as text (not as a dictionary)."""
    import pyarrow as pa

    column = parquet.metadata.schema.column(j)
    schema = parquet.schema_arrow
    if column.physical_type != "BYTE_ARRAY" or column.path != column.name:
        return False
    if column.name not in schema.names:
        return False
    return not pa.types.is_dictionary(schema.field(column.name).type)


def _dictionary_decoded(indexed, group: int, name: str) -> int:
    """Bytes a dictionary-encoded column chunk decodes to: its values' lengths, offsets."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values = indexed.read_row_group(group, columns=[name]).column(0)
    total = 0
    for chunk in values.chunks:
        if not pa.types.is_dictionary(chunk.type):  # read as values after all
            total += chunk.nbytes
            continue
        lengths = pc.binary_length(chunk.dictionary)
        total += int(pc.sum(pc.take(lengths, chunk.indices)).as_py() or 0) + 8 * len(chunk)
    return total

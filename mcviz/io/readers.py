"""Readers: CSV/TSV (plain, gzip, zip) and Parquet bytes to a DataFrame, within a size budget."""

from __future__ import annotations

import csv
import gzip
import io
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import pandas as pd

from mcviz.errors import ValidationError

__all__ = ["DEFAULT_MAX_BYTES", "Source", "read_table"]

DEFAULT_MAX_BYTES = 1 << 30
"""Files larger than this (1 GiB) are refused with a message rather than exhausting memory."""


Source = str | Path | IO[bytes] | pd.DataFrame

_PARQUET_MAGIC = b"PAR1"
_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_MAGIC = b"PK\x03\x04"


def read_table(source: Source, *, max_bytes: int = DEFAULT_MAX_BYTES) -> pd.DataFrame:
    """Read a CSV/TSV (plain, .gz or .zip) or Parquet file into a DataFrame.

    The format is recognised from the content (Parquet, gzip and zip magic bytes), so a file
    uploaded under any name works. CSV versus TSV is decided from the header line.

    Parameters
    ----------
    source : path, file-like or DataFrame
        A DataFrame is returned as is (after the duplicate-name check).
    max_bytes : int, default 1 GiB
        Larger files are refused with a message (use the out-of-core ``mcviz screen``).

    Raises
    ------
    ValidationError
        Unreadable, empty or oversized files, wrong formats, and duplicate column names.
    """
    if isinstance(source, pd.DataFrame):
        _check_duplicate_names(list(source.columns))
        return source
    name, size = _source_name_and_size(source)
    if size is not None and size > max_bytes:
        raise ValidationError(
            f"file {name!r} is {size / 2**30:.2f} GiB; the limit is {max_bytes / 2**30:.2f} GiB. "
            "Sample it, or screen it out of core with `mcviz screen --engine duckdb`."
        )
    try:
        raw = _read_bytes(source)
    except OSError as error:
        reason = error.strerror or error
        raise ValidationError(f"file {name!r} could not be read: {reason}.") from None
    if len(raw) > max_bytes:
        raise ValidationError(
            f"file {name!r} is {len(raw) / 2**30:.2f} GiB; the limit is "
            f"{max_bytes / 2**30:.2f} GiB."
        )
    if not raw.strip():
        raise ValidationError(f"file {name!r} is empty.")
    try:
        if raw[:4] == _PARQUET_MAGIC:
            frame = _read_parquet(raw)
        else:
            if raw[:2] == _GZIP_MAGIC:
                raw = _gunzip_limited(raw, name, max_bytes)
            elif raw[:4] == _ZIP_MAGIC:
                raw = _unzip_single(raw, name, max_bytes)
            frame = _read_delimited(raw, name)
    except ValidationError:
        raise
    except (OSError, ValueError, UnicodeDecodeError, EOFError, zipfile.BadZipFile) as error:
        raise ValidationError(
            f"file {name!r} could not be read as CSV, TSV or Parquet: {error}"
        ) from None
    if frame.shape[1] == 0:
        raise ValidationError(f"file {name!r} has no columns.")
    if frame.shape[0] == 0:
        raise ValidationError(f"file {name!r} has a header but no rows.")
    return frame


def _source_name_and_size(source: str | Path | IO[bytes]) -> tuple[str, int | None]:
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.exists():
            raise ValidationError(f"file {str(path)!r} does not exist.")
        return path.name, path.stat().st_size
    name = getattr(source, "name", None) or "upload"
    size = getattr(source, "size", None)
    return str(name), size if isinstance(size, int) else None


def _read_bytes(source: str | Path | IO[bytes]) -> bytes:
    if isinstance(source, str | Path):
        return Path(source).read_bytes()
    if hasattr(source, "getvalue"):
        return bytes(source.getvalue())
    if hasattr(source, "seek"):
        source.seek(0)
    return source.read()


def _read_parquet(raw: bytes) -> pd.DataFrame:
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(raw))
    _check_duplicate_names(table.column_names)
    return table.to_pandas()


def _too_large(name: str, max_bytes: int) -> ValidationError:
    return ValidationError(
        f"file {name!r} decompresses to more than {max_bytes / 2**30:.2f} GiB, the limit. "
        "Sample it, or screen it out of core with `mcviz screen --engine duckdb`."
    )


def _gunzip_limited(raw: bytes, name: str, max_bytes: int) -> bytes:
    with gzip.GzipFile(fileobj=io.BytesIO(raw)) as stream:
        data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _too_large(name, max_bytes)
    return data


def _unzip_single(raw: bytes, name: str, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        members = [m for m in archive.namelist() if not m.endswith("/")]
        if len(members) != 1:
            raise ValidationError(
                f"zip file {name!r} holds {len(members)} files; it must hold exactly one."
            )
        if archive.getinfo(members[0]).file_size > max_bytes:
            raise _too_large(name, max_bytes)
        return archive.read(members[0])


def _read_delimited(raw: bytes, name: str) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    first_line = raw.split(b"\n", 1)[0].decode("utf-8-sig", errors="replace")
    delimiter = "\t" if first_line.count("\t") > first_line.count(",") else ","
    if first_line.count(delimiter) == 0 and first_line.count(";") > 0:
        delimiter = ";"
    header = next(csv.reader([first_line], delimiter=delimiter))
    _check_duplicate_names([h.strip() for h in header])

    def parse(encoding: str) -> pa.Table:
        return pacsv.read_csv(
            pa.py_buffer(raw),
            read_options=pacsv.ReadOptions(encoding=encoding),
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(
                null_values=["", "NA", "N/A", "NaN", "nan", "null", "NULL", "None", "?"],
                strings_can_be_null=True,
            ),
        )

    try:
        table = parse("utf8")
        if any(pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)
               for f in table.schema):
            table = parse("latin-1")  # not UTF-8: read the bytes as Latin-1 text
    except pa.ArrowInvalid as error:
        raise ValidationError(f"file {name!r} is not a valid CSV/TSV file: {error}") from None
    frame = table.to_pandas()
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def _check_duplicate_names(names: Sequence[str]) -> None:
    seen: set[str] = set()
    duplicated = sorted({str(n) for n in names if n in seen or seen.add(n)})
    if duplicated:
        raise ValidationError(
            f"duplicate column names: {', '.join(repr(d) for d in duplicated)}; "
            "rename them so every column is unique.",
            column=duplicated[0],
        )


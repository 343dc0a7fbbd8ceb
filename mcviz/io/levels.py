"""Distinct levels of a few columns, counted from those columns alone before a file is read.

``mcviz monitor --segments COL`` monitors every level of ``COL``; a column with thousands of
levels is refused. Counting them from the one column (a Parquet file's column chunks, or one
streaming pass over a CSV that keeps that column only) says so in a fraction of the time and
memory of reading the whole file first.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mcviz.io.chunked import NULL_VALUES, decompressed, read_header
from mcviz.io.readers import default_max_bytes, default_max_columns

__all__ = ["count_levels"]

_BLOCK = 1 << 22


def count_levels(path: str | Path, columns: Sequence[str], *,
                 stop_above: int) -> dict[str, int]:
    """Return the number of distinct non-missing values of each column found in ``path``.

    Counting stops for a column once it passes ``stop_above`` (its count is then
    ``stop_above + 1`` or a little more: enough to refuse it). A column not in the file, or a
    file this cannot read, is left out: the loader says what is wrong with it.

    Examples
    --------
    >>> import pandas as pd, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "t.csv")
    >>> pd.DataFrame({"a": [1, 2, 2, None], "b": ["x"] * 4}).to_csv(path, index=False)
    >>> count_levels(path, ["a", "b", "c"], stop_above=10)
    {'a': 2, 'b': 1}
    """
    import pyarrow as pa

    try:
        with Path(path).open("rb") as base:
            magic = base.read(4)
        if magic == b"PAR1":
            batches = _parquet_batches(path, columns)
        else:
            batches = _csv_batches(path, columns)
        seen: dict[str, set] = {}
        for batch in batches:
            for name in batch.schema.names:
                values = seen.setdefault(name, set())
                if len(values) <= stop_above:
                    column = batch.column(name).drop_null().unique()
                    values.update(column.cast(pa.string()).to_pylist())
            if all(len(v) > stop_above for v in seen.values()) and len(seen) == len(columns):
                break
    except (OSError, ValueError, pa.ArrowException, EOFError):  # the loader will say why
        return {}
    return {name: len(values) for name, values in seen.items()}


def _parquet_batches(path: str | Path, columns: Sequence[str]):
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    present = [c for c in columns if c in parquet.schema_arrow.names]
    if present:
        yield from parquet.iter_batches(columns=present, batch_size=1 << 16)


def _csv_batches(path: str | Path, columns: Sequence[str]):
    import pyarrow as pa
    import pyarrow.csv as pacsv

    name = Path(path).name
    stream, _ = decompressed(Path(path).open("rb"), name, default_max_bytes())
    with stream:
        header = read_header(stream, name, default_max_columns())
    if header is None:
        return
    read = pacsv.ReadOptions(encoding=header.encoding, block_size=_BLOCK)
    parse = pacsv.ParseOptions(delimiter=header.delimiter, newlines_in_values=True)
    stream, _ = decompressed(Path(path).open("rb"), name, default_max_bytes())
    with stream:  # the file's column names (one block): a column not in the file is left out
        names = set(pacsv.open_csv(stream, read_options=read, parse_options=parse).schema.names)
    columns = [column for column in columns if column in names]
    if not columns:
        return
    stream, _ = decompressed(Path(path).open("rb"), name, default_max_bytes())
    with stream:
        reader = pacsv.open_csv(
            stream,
            read_options=pacsv.ReadOptions(encoding=header.encoding, block_size=_BLOCK),
            parse_options=pacsv.ParseOptions(delimiter=header.delimiter,
                                              newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(
                null_values=NULL_VALUES, strings_can_be_null=True,
                include_columns=list(columns), include_missing_columns=False,
                column_types=dict.fromkeys(columns, pa.string())),
        )
        yield from reader

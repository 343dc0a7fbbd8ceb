"""What Spark's Python workers run for the held-out passes: functions light to import.

A Python worker unpickles the function of a ``mapInArrow`` by its module and imports that
module (cloudpickle pickles a module's function by reference). This module imports numpy
alone (pyarrow and pyspark inside the functions, which the worker has loaded anyway): not
pandas, not the engines. Measured (Python 3.11, maximum resident memory of a fresh process
importing it, 1 Dec 2026): ``import pyspark.worker`` 31 MiB, with numpy and pyarrow 69 MiB;
``mcviz.engines.holdout`` (where these functions were) took it to 114 MiB, pandas and the
engines with it, in every worker of a held-out pass.

* :func:`searched_partition`: the searched rows dropped (or flagged) by their (file, row) codes
  (:func:`mcviz.engines.holdout.exclude_rows`, :func:`~mcviz.engines.holdout.flag_searched`);
* :func:`write_partition`: a sorted partition written to an Arrow file
  (:func:`mcviz.engines.holdout.local_sorted_batches`).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote

import numpy as np

__all__ = ["FILE_KEY", "HELD", "ROW_BITS", "ROW_KEY", "file_path", "searched_partition",
           "write_partition"]

FILE_KEY, ROW_KEY = "__mcviz_file", "__mcviz_row"
"""The columns naming a row by its file and its 0-based row number in that file."""

HELD = "__mcviz_held"
"""The boolean column :func:`~mcviz.engines.holdout.flag_searched` adds: true on the rows the
search did not look at."""

ROW_BITS = 40
"""A searched row's code is ``file index * 2**ROW_BITS + row number`` (rows of a file < 2^40)."""


def file_path(uri: str) -> str:
    """Return a file URI (or path) as a normalised local path (to match Spark's names)."""
    return os.path.normpath(unquote(uri[len("file:"):]) if uri.startswith("file:") else uri)


def searched_partition(codes_broadcast, targets: dict, flag: bool, batches):
    """Drop (or, ``flag``, flag with :data:`HELD`) the searched rows of each Arrow batch.

    ``codes_broadcast``: the sorted searched codes (:data:`ROW_BITS`); ``targets``: each
    file's normalised path to its index. The batches carry :data:`FILE_KEY` (Spark's file URI)
    and :data:`ROW_KEY`; the rows come back without them.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    codes = codes_broadcast.value
    for batch in batches:
        uris = pc.dictionary_encode(batch.column(FILE_KEY))
        names = [file_path(uri) for uri in uris.dictionary.to_pylist()]
        if any(name not in targets for name in names):
            raise RuntimeError(f"Spark read a file not given: {names}")
        files = np.array([targets[name] for name in names], dtype=np.int64)
        code = (files[uris.indices.to_numpy(zero_copy_only=False)] << ROW_BITS) | (
            batch.column(ROW_KEY).to_numpy(zero_copy_only=False).astype(np.int64))
        at = np.minimum(np.searchsorted(codes, code), max(codes.size - 1, 0))
        searched = codes[at] == code if codes.size else np.zeros(code.size, dtype=bool)
        rest = batch.select([n for n in batch.schema.names if n not in (FILE_KEY, ROW_KEY)])
        if flag:
            yield pa.RecordBatch.from_arrays([*rest.columns, pa.array(~searched)],
                                             names=[*rest.schema.names, HELD])
        else:
            yield rest.filter(pa.array(~searched))


def write_partition(directory: str, batches):
    """Write one partition's Arrow batches to ``directory/<partition>.arrow``; yield its rows.

    Written under a temporary name, then renamed (a retried task replaces the same file); an
    empty partition writes nothing. Yields one batch: (partition id, rows written).
    """
    import pyarrow as pa
    from pyspark import TaskContext

    context = TaskContext.get()
    part = context.partitionId()
    temporary = Path(directory) / f".{part}.{context.attemptNumber()}.tmp"
    count, writer = 0, None
    try:
        with pa.OSFile(str(temporary), "wb") as sink:
            for batch in batches:
                if writer is None:
                    writer = pa.ipc.new_stream(sink, batch.schema)
                writer.write_batch(batch)
                count += batch.num_rows
            if writer is None:  # an empty partition: nothing to read
                yield pa.RecordBatch.from_pydict({"part": [part], "rows": [0]})
                return
            writer.close()
        temporary.replace(Path(directory) / f"{part}.arrow")
    finally:
        temporary.unlink(missing_ok=True)
    yield pa.RecordBatch.from_pydict({"part": [part], "rows": [count]})

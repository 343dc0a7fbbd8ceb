"""Multi-calibration screening beyond memory: one engine interface, three implementations.

* :class:`NumpyEngine` — in memory, exact (the reference).
* :class:`DuckDBEngine` — Parquet files larger than memory: DuckDB sorts by score out of core
  and streams Arrow batches; exact or histogram mode.
* :class:`SparkEngine` — a distributed job: range partitions by score summarised on the
  executors, combined in score order on the driver (local or a cluster).

Every engine only reads, sorts and partitions; the shared evaluator of :mod:`mcviz.core`
measures (one pass over score-sorted rows, the one eq. (4)). Subpopulations are predicates
(lists of :class:`~mcviz.subpopulations.Condition`), typically generated on an in-memory sample
and evaluated on the full data; see :mod:`mcviz.engines.base` for the statistics and the
histogram bound.
"""

from mcviz.engines.base import (
    DEFAULT_EXACT_BINS,
    Columns,
    Engine,
    ScreenResult,
    SubpopulationSpec,
    expand_paths,
)
from mcviz.engines.numpy_engine import NumpyEngine

__all__ = [
    "DEFAULT_EXACT_BINS",
    "Columns",
    "DuckDBEngine",
    "Engine",
    "NumpyEngine",
    "ScreenResult",
    "SparkEngine",
    "SubpopulationSpec",
    "expand_paths",
]


def __getattr__(name: str):
    # The optional engines import their optional dependency lazily.
    if name == "DuckDBEngine":
        from mcviz.engines.duckdb_engine import DuckDBEngine

        return DuckDBEngine
    if name == "SparkEngine":
        from mcviz.engines.spark_engine import SparkEngine

        return SparkEngine
    raise AttributeError(name)

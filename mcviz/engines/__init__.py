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

The names are imported on first use (PEP 562, :func:`mcviz.lazy.lazy_exports`): importing a
module of this package loads that module alone. Spark's Python workers import
:mod:`mcviz.engines.spark_tasks` to run its functions, and with an eager package they loaded
pandas and the engines too (``import mcviz.engines``: 105 MiB maximum resident, against 54 for
numpy and pyarrow; 1 Dec 2026).
"""

from typing import TYPE_CHECKING

from mcviz.lazy import lazy_exports

if TYPE_CHECKING:
    from mcviz.engines.base import (
        DEFAULT_EXACT_BINS,
        Columns,
        Engine,
        ScreenResult,
        SubpopulationSpec,
        expand_paths,
    )
    from mcviz.engines.duckdb_engine import DuckDBEngine
    from mcviz.engines.numpy_engine import NumpyEngine
    from mcviz.engines.spark_engine import SparkEngine

_HOME = {  # name -> the module defining it (the optional engines import their dependency)
    "DEFAULT_EXACT_BINS": "base",
    "Columns": "base",
    "DuckDBEngine": "duckdb_engine",
    "Engine": "base",
    "NumpyEngine": "numpy_engine",
    "ScreenResult": "base",
    "SparkEngine": "spark_engine",
    "SubpopulationSpec": "base",
    "expand_paths": "base",
}

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

__getattr__, __dir__ = lazy_exports(__name__, _HOME)

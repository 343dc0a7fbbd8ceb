"""The ``--engine``, ``--memory-limit`` and ``--spark-master`` options.

The commands that run on DuckDB or Spark as well as in memory take the same flags as
``mcviz screen``.
"""

from __future__ import annotations

import argparse

__all__ = ["add_engine_arguments", "require_engine"]


def add_engine_arguments(parser: argparse.ArgumentParser, help_text: str) -> None:
    """Add ``--engine numpy|duckdb|spark``, ``--memory-limit`` and ``--spark-master``."""
    from mcviz.cli.screen import _spark_master_default

    parser.add_argument("--engine", choices=("numpy", "duckdb", "spark"), default="numpy",
                        help=help_text)
    parser.add_argument("--memory-limit", metavar="SIZE",
                        help="memory limit of the engine, e.g. 2GB: DuckDB's memory_limit "
                        "(spills beyond), Spark's driver memory in local mode")
    master = _spark_master_default()
    parser.add_argument("--spark-master", default=master, metavar="URL",
                        help=f"Spark master (default {master}), e.g. spark://host:7077")


def require_engine(name: str) -> None:
    """Refuse, in one line naming what to install, an engine whose package is missing."""
    from mcviz.cli.screen import _require_engine

    _require_engine(name)

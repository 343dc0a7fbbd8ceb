"""What Spark's Python workers import to run mcviz's functions stays light.

A worker unpickles a ``mapInArrow`` function by importing its module (and its packages'
``__init__``). ``mcviz.engines.spark_tasks`` must load neither pandas nor the engines: with
them each worker of a held-out pass held about 50 MiB more (``import mcviz.engines``: 105 MiB
maximum resident against 54 for numpy and pyarrow, 1 Dec 2026). A fresh interpreter checks it.
"""

from __future__ import annotations

import subprocess
import sys


def test_the_workers_module_loads_neither_pandas_nor_the_engines():
    code = ("import sys; import mcviz.engines.spark_tasks; "
            "print(sorted(m for m in sys.modules if m == 'pandas' or m.startswith('mcviz')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert loaded == str(["mcviz", "mcviz.engines", "mcviz.engines.spark_tasks", "mcviz.errors",
                          "mcviz.lazy"])


def test_the_engines_are_still_exported_by_the_package():
    import mcviz.engines as engines
    from mcviz.engines.base import Columns
    from mcviz.engines.numpy_engine import NumpyEngine

    assert engines.Columns is Columns
    assert engines.NumpyEngine is NumpyEngine
    assert set(engines.__all__) <= set(dir(engines))

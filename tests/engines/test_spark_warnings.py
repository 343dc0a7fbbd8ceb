"""The Spark engine silences PySpark's pandas >= 3 warning, and only that one.

Why it is harmless: tests/engines/test_engines_spark.py runs the Spark engine under this pandas
and checks M and every statistic against the library to 1e-12.
"""

from __future__ import annotations

import warnings

from mcviz.engines.spark_engine import _quiet_pandas_warning

PYSPARK_TEXT = ("PySpark does not yet fully support pandas >= 3.0.0. Some features may not work "
                "correctly. It is recommended to use pandas < 3.0.0 for now.")


def test_only_the_pandas_version_warning_is_silenced():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _quiet_pandas_warning()
        warnings.warn(PYSPARK_TEXT, FutureWarning, stacklevel=1)
        warnings.warn("PySpark does not yet fully support something else", FutureWarning,
                      stacklevel=1)
        warnings.warn(PYSPARK_TEXT, UserWarning, stacklevel=1)
    assert [(w.category, str(w.message)) for w in caught] == [
        (FutureWarning, "PySpark does not yet fully support something else"),
        (UserWarning, PYSPARK_TEXT),
    ]

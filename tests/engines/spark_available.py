"""Whether Spark can run here: pyspark importable and a Java runtime present."""

from __future__ import annotations

import contextlib
import os
import shutil


def spark_missing() -> str | None:
    """Return why Spark cannot run here, or None when it can."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install mcviz[spark])"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime (apt-get install default-jre-headless)"
    return None


@contextlib.contextmanager
def local_spark():
    """Yield a local[2] Spark session, stopped afterwards; skip the test when Spark is missing."""
    import pytest

    missing = spark_missing()
    if missing is not None:
        pytest.skip(missing)
    from mcviz.engines.spark_engine import local_session

    session = local_session("local[2]")
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@contextlib.contextmanager
def spark_table(path):
    """Yield the Parquet at ``path`` as a :class:`mcviz.engines.tables.SparkTable` (local[2])."""
    from mcviz.engines.tables import SparkTable

    with local_spark() as session:
        yield SparkTable(path, spark=session)

"""Whether Spark can run here: pyspark importable and a Java runtime present."""

from __future__ import annotations

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

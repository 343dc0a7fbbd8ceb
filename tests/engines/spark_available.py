"""Whether Spark can run here: pyspark importable and a Java runtime present."""

from __future__ import annotations

import atexit
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


def skip_module_without_spark() -> None:
    """Skip the calling test module when Spark cannot run here; on CI (CI=true), fail it."""
    import pytest

    missing = spark_missing()
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the Spark tests: {missing}", pytrace=False)
        pytest.skip(missing, allow_module_level=True)


_SHARED: list = []  # this process's local[2] session, once started


def shared_spark():
    """Return this process's local[2] Spark session, started on first use; skip without Spark.

    Every Spark test of a process shares it (stopped at exit): a SparkContext started and
    stopped per file or per test cost each a new context and cold first queries (pyspark keeps
    its one JVM per process either way). Measured at load 17-40 (h21x): stop, new context and a
    400-row screen 113-135 s against 26-31 s for the same screen in the kept session. A test
    that stops it (a command closing the session it found) leaves the next caller a new one.
    Each call sets the session's runtime configuration back to what it was when started
    (:func:`_reset_conf`): what one test sets (e.g. tiny file splits) must not reach the next.
    """
    import pytest

    missing = spark_missing()
    if missing is not None:
        pytest.skip(missing)
    if not _SHARED or _SHARED[0].sparkContext._jsc is None:
        from mcviz.engines.spark_engine import local_session

        session = local_session("local[2]")
        session.sparkContext.setLogLevel("ERROR")
        if not _SHARED:
            atexit.register(_stop_shared)
        _SHARED[:] = [session]
        _STARTED_CONF.clear()
        _STARTED_CONF.update(session.conf.getAll)
    _reset_conf(_SHARED[0])
    return _SHARED[0]


_STARTED_CONF: dict = {}  # the shared session's runtime configuration when it started


def _reset_conf(session) -> None:
    """Unset what was set on ``session`` since it started, and set back what was changed."""
    for key, value in session.conf.getAll.items():
        if _STARTED_CONF.get(key) == value or not session.conf.isModifiable(key):
            continue
        if key in _STARTED_CONF:
            session.conf.set(key, _STARTED_CONF[key])
        else:
            session.conf.unset(key)


def _stop_shared() -> None:
    with contextlib.suppress(Exception):  # at exit: the JVM may be gone already
        _SHARED[0].stop()


@contextlib.contextmanager
def local_spark():
    """Yield this process's local[2] session (:func:`shared_spark`); skip without Spark."""
    yield shared_spark()


@contextlib.contextmanager
def spark_table(path):
    """Yield the Parquet at ``path`` as a :class:`mcviz.engines.tables.SparkTable` (local[2])."""
    from mcviz.engines.tables import SparkTable

    with local_spark() as session:
        yield SparkTable(path, spark=session)


def spark_scripts_missing() -> str | None:
    """Return why a standalone cluster cannot start here (Spark's sbin scripts), or None."""
    missing = spark_missing()
    if missing is not None:
        return missing
    import pyspark

    if not os.path.exists(os.path.join(os.path.dirname(pyspark.__file__), "sbin",
                                       "spark-daemon.sh")):
        return "pyspark has no sbin/spark-daemon.sh"
    return None


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def standalone_cluster(directory, workers: int = 2, timeout: float = 240.0):
    """Yield the URL of a standalone Spark cluster on this machine, stopped afterwards.

    A master and ``workers`` workers (one core, 1 GB each) started by Spark's own script
    ``sbin/spark-daemon.sh`` (``start-master.sh`` and ``start-worker.sh`` call it the same
    way; the pip package ships only this one), bound to 127.0.0.1, with logs, pids and the
    workers' directories under ``directory``. The workers' Python is this interpreter and
    finds mcviz where this process finds it. Skips when Spark or its scripts are missing.
    """
    import subprocess
    import sys
    import time
    from pathlib import Path

    import pytest

    missing = spark_scripts_missing()
    if missing is not None:
        pytest.skip(missing)
    import pyspark

    import mcviz

    home = os.path.dirname(pyspark.__file__)
    directory = Path(directory)
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    env = {**os.environ, "SPARK_HOME": home, "SPARK_LOG_DIR": str(directory / "logs"),
           "SPARK_PID_DIR": str(directory / "pids"), "SPARK_WORKER_DIR": str(directory / "work"),
           "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "SPARK_IDENT_STRING": f"mcviz{port}",
           "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
           "PYTHONPATH": os.pathsep.join(filter(None, [
               os.path.dirname(os.path.dirname(mcviz.__file__)), os.environ.get("PYTHONPATH")]))}
    daemon = os.path.join(home, "sbin", "spark-daemon.sh")
    started = [("org.apache.spark.deploy.master.Master", 1,
                ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(_free_port())])]
    started += [("org.apache.spark.deploy.worker.Worker", i,
                 ["--host", "127.0.0.1", "--webui-port", str(_free_port()), "--cores", "1",
                  "--memory", "1g", url]) for i in range(1, workers + 1)]

    def daemon_run(action: str, name: str, instance: int, args: list[str]):
        return subprocess.Popen(["bash", daemon, action, name, str(instance), *args], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    try:
        for process in [daemon_run("start", *spec) for spec in started]:  # all at once
            process.wait(timeout=120)
        deadline = time.monotonic() + timeout
        while True:
            log = "".join(p.read_text(errors="replace")
                          for p in (directory / "logs").glob("*Master*.out"))
            if log.count("Registering worker") >= workers:
                break
            if time.monotonic() > deadline:
                pytest.fail(f"the cluster did not start within {timeout:.0f} s: {log[-2000:]}")
            time.sleep(1.0)
        yield url, env
    finally:
        for process in [daemon_run("stop", name, i, []) for name, i, _ in reversed(started)]:
            process.wait(timeout=120)

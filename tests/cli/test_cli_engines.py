"""Every command's ``--engine duckdb|spark`` path: a missing package is one line, exit 2.

The line names what to install, and comes before any work (the file is not even read: the
path given here does not exist).
"""

from __future__ import annotations

import sys

import pytest

COMMANDS = {
    "apply": ["apply", "{tmp}/map.json", "{tmp}/rows.parquet", "--out", "{tmp}/o.parquet"],
    "monitor": ["monitor", "{tmp}/rows.parquet", "--time", "when"],
    "decide": ["decide", "{tmp}/rows.parquet", "--no-fix"],
    "metrics": ["metrics", "{tmp}/rows.parquet"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(("engine", "package"), [("duckdb", "duckdb"), ("spark", "pyspark")])
def test_a_missing_engine_names_what_to_install(cli, tmp_path, monkeypatch, command, engine,
                                                package):
    (tmp_path / "map.json").write_text("{}")
    monkeypatch.setitem(sys.modules, package, None)  # import fails as if not installed
    argv = [a.format(tmp=tmp_path) for a in COMMANDS[command]]
    run = cli(*argv, "--engine", engine)
    assert run.status == 2
    lines = run.err.strip().splitlines()
    assert len(lines) == 1, run.err
    assert f"--engine {engine} needs {package}" in lines[0]
    assert "pip install" in lines[0]


def test_a_failed_spark_job_is_one_line(cli, monkeypatch, tmp_path):
    """An executor's error (here: the workers' Python lacks mcviz) is its cause, no traceback."""
    import mcviz.cli.metrics

    class PythonException(Exception):
        pass

    PythonException.__module__ = "pyspark.errors.exceptions.captured"

    def fail(args):
        raise PythonException("An exception was thrown from the Python worker:\nTraceback "
                              "(most recent call last):\n  File \"worker.py\", line 1\n"
                              "ModuleNotFoundError: No module named 'mcviz'\n")

    monkeypatch.setattr(mcviz.cli.metrics, "_in_engine", fail)
    data = tmp_path / "rows.csv"
    data.write_text("score,label\n0.2,0\n0.7,1\n")
    run = cli("metrics", data, "--engine", "spark")
    assert run.status == 1
    assert run.err.strip().splitlines() == [
        "mcviz: error: the Spark job failed: ModuleNotFoundError: No module named 'mcviz' (an "
        "executor's Python needs mcviz and its dependencies; see the Spark logs for the rest)."]

    def lost(args):  # (the line Spark 4.0 gave for mcviz compare under too small a heap)
        raise PythonException(
            "An error occurred while calling o142.getResult.\n: org.apache.spark.SparkException"
            ": Job aborted due to stage failure: Task 0 in stage 36.0 failed 1 times, most "
            "recent failure: Lost task 0.0 in stage 36.0 (TID 33) (192.0.2.2 executor driver): "
            "TaskResultLost (result lost from block manager)\nDriver stacktrace:\n\tat org."
            "apache.spark.scheduler.DAGScheduler.abortStage(DAGScheduler.scala:4568)\n")

    monkeypatch.setattr(mcviz.cli.metrics, "_in_engine", lost)
    run = cli("metrics", data, "--engine", "spark")
    assert run.status == 1
    assert run.err.strip().splitlines() == [
        "mcviz: error: the Spark job failed: TaskResultLost (result lost from block manager) "
        "(Spark ran short of memory: give a larger --memory-limit (or Spark's executors more "
        "memory); see the Spark logs for the rest)."]

    def gone(args):  # the JVM died: py4j's connection to it is refused
        import py4j.java_gateway

        def connect():
            raise ConnectionRefusedError(111, "Connection refused")

        code = compile("def call(connect):\n    connect()\n", py4j.java_gateway.__file__, "exec")
        space: dict = {}
        exec(code, space)  # a frame of py4j's file, as a refused connection inside py4j has
        space["call"](connect)

    monkeypatch.setattr(mcviz.cli.metrics, "_in_engine", gone)
    run = cli("metrics", data, "--engine", "spark")
    assert run.status == 1
    assert run.err.strip().splitlines() == [
        "mcviz: error: Spark's JVM stopped during the run (it may have run out of memory: give a "
        "larger --memory-limit; see the Spark logs for the rest)."]

    def other(args):
        raise RuntimeError("not an engine's")

    monkeypatch.setattr(mcviz.cli.metrics, "_in_engine", other)
    with pytest.raises(RuntimeError):  # anything else is a defect, shown as one
        cli("metrics", data, "--engine", "spark")

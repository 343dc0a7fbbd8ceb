"""A Spark run spills into its own temporary directory and leaves ``SPARK_LOCAL_DIRS`` as it was.

pyspark copies ``os.environ`` into the JVM it starts, so the variable names the run's directory
then; afterwards it is restored, since the directory is deleted when the run ends and a Spark
started later by the same process would inherit it (the code before set it in ``screen``,
``search``, ``compare`` and every table command, for the rest of the process).

The JVM's start is intercepted (no JVM: a local Spark run of these commands took 40-210 s at
load 8), and pyspark's error when Java cannot start is the one raised.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from spark_available import skip_module_without_spark

skip_module_without_spark()

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> Path:
    """2,000 rows: two scores, a label and a covariate."""
    rng = np.random.default_rng(5)
    score = rng.uniform(0.05, 0.95, 2_000)
    frame = pd.DataFrame({"score": score, "label": (rng.random(2_000) < score).astype(int),
                          "score_b": np.clip(score + rng.normal(0, 0.05, 2_000), 0.01, 0.99),
                          "g": rng.choice(["a", "b"], 2_000)})
    path = tmp_path_factory.mktemp("local_dirs") / "rows.parquet"
    frame.to_parquet(path, index=False)
    return path


@pytest.fixture
def launches(monkeypatch) -> list:
    """The ``SPARK_LOCAL_DIRS`` of each JVM start pyspark attempts (each fails as without Java)."""
    import pyspark.context
    from pyspark.sql import SparkSession

    seen = []

    def launch_gateway(conf=None, popen_kwargs=None):
        seen.append(os.environ.get("SPARK_LOCAL_DIRS"))
        raise RuntimeError("Java gateway process exited before sending its port number")

    for owner, name in ((pyspark.context.SparkContext, "_gateway"),
                        (pyspark.context.SparkContext, "_jvm"),
                        (pyspark.context.SparkContext, "_active_spark_context"),
                        (SparkSession, "_instantiatedSession"), (SparkSession, "_activeSession")):
        monkeypatch.setattr(owner, name, None)
    monkeypatch.setattr(pyspark.context, "launch_gateway", launch_gateway)
    return seen


def _argv(command: str, rows: Path, out: Path) -> list:
    roles = ["--score", "score", "--label", "label"]
    tail = ["--json", "--engine", "spark"]
    if command == "screen":
        return ["screen", rows, "--out", out, *roles, "--covariates", "g",
                "--subpopulations", "4", *tail]
    if command == "search":
        return ["search", rows, *roles, "--no-weight", "--covariates", "g",
                "--sample-rows", "1000", *tail]
    if command == "compare":
        return ["compare", rows, *roles, "--score-b", "score_b", "--no-weight", "--covariates",
                "g", "--sample-rows", "500", *tail]
    return ["decide", rows, *roles, "--no-weight", "--no-fix", "--thresholds", "0.5", *tail]


@pytest.mark.parametrize("before", ["set", "unset"])
@pytest.mark.parametrize("command", ["screen", "search", "compare", "decide"])
def test_a_run_leaves_spark_local_dirs_as_it_found_it(cli, rows, tmp_path, monkeypatch,
                                                      launches, command, before):
    """The JVM would start with the run's directory; after the run the variable is as before."""
    mine = str(tmp_path / "mine")
    if before == "set":
        monkeypatch.setenv("SPARK_LOCAL_DIRS", mine)
    else:
        monkeypatch.delenv("SPARK_LOCAL_DIRS", raising=False)
    run = cli(*_argv(command, rows, tmp_path / "out.parquet"))
    assert run.status == 2, run.err
    assert "could not start a local Spark" in run.err
    assert len(launches) == 1
    assert Path(launches[0]).name.startswith("mcviz-")  # the run's own directory, now deleted
    assert not Path(launches[0]).exists()
    assert os.environ.get("SPARK_LOCAL_DIRS") == (mine if before == "set" else None)


def test_spark_local_dirs_is_restored_however_the_block_ends(tmp_path, monkeypatch):
    from mcviz.engines.spark_engine import spark_local_dirs

    monkeypatch.setenv("SPARK_LOCAL_DIRS", "/before")
    with spark_local_dirs(str(tmp_path)):
        assert os.environ["SPARK_LOCAL_DIRS"] == str(tmp_path)
    assert os.environ["SPARK_LOCAL_DIRS"] == "/before"
    with pytest.raises(KeyError), spark_local_dirs(str(tmp_path)):
        raise KeyError("x")
    assert os.environ["SPARK_LOCAL_DIRS"] == "/before"
    with spark_local_dirs(None):
        assert os.environ["SPARK_LOCAL_DIRS"] == "/before"
    monkeypatch.delenv("SPARK_LOCAL_DIRS")
    with spark_local_dirs(str(tmp_path)):
        assert os.environ["SPARK_LOCAL_DIRS"] == str(tmp_path)
    assert "SPARK_LOCAL_DIRS" not in os.environ

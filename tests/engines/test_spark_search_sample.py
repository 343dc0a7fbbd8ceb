"""``mcviz search --engine spark --memory-limit`` sizes its sample from what Spark leaves.

What the sample's search keeps stays in this process while Spark's JVM and Python workers run:
under a limit whose room holds fewer than ``SPARK_SAMPLE_FLOOR`` rows the search is refused
before any row is read (the file here does not even exist), naming a limit; given that limit
the sample holds at least the floor, and a larger limit a larger sample, up to the sample
without a limit. (At 10^7 rows, ``benchmarks/bench_engines.py``: refused at 2GB naming
2450MB, where the run's tree stayed under it; README's scale section.)
"""

from __future__ import annotations

import argparse
import re

import pytest
from spark_available import skip_module_without_spark

skip_module_without_spark()

pytestmark = pytest.mark.spark

COVARIATES = ["region", "age", "channel", "tenure"]


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch):
    """This process holds what a fresh ``mcviz`` holds before its draw (117 MiB measured), not
    what a long test session holds."""
    import mcviz.engines.memory

    monkeypatch.setattr(mcviz.engines.memory, "resident_bytes", lambda: 117 << 20)


def _rows(tmp_path, limit: str) -> tuple[int, str]:
    from mcviz.cli import search

    args = argparse.Namespace(engine="spark", memory_limit=limit, spark_master="local[2]",
                              file=[str(tmp_path / "absent.parquet")], holdout=0.3,
                              max_conditions=3)
    return search._spark_sample_rows(args, search._budget_rows(args, COVARIATES))


def test_a_limit_too_small_for_the_least_sample_is_refused_before_reading(cli, tmp_path):
    from mcviz.cli.search import SPARK_SAMPLE_FLOOR

    run = cli("search", tmp_path / "absent.parquet", "--score", "score", "--label", "label",
              "--no-weight", "--covariates", ",".join(COVARIATES), "--json", "--engine",
              "spark", "--memory-limit", "1900MB")
    assert run.status == 2
    message = run.err.strip().splitlines()[-1]
    assert "cannot hold this search on Spark" in message, message
    least = int(re.search(r"Give --memory-limit (\d+)MB or more\.$", message).group(1))
    assert least > 1900
    rows, note = _rows(tmp_path, f"{least}MB")  # the named limit holds the least sample
    assert rows >= SPARK_SAMPLE_FLOOR
    assert f"{rows:,} rows" in note
    assert "sized from --memory-limit" in note


def test_the_sample_grows_with_the_limit_up_to_the_unlimited_one(tmp_path):
    from mcviz.cli import search

    unlimited = search._budget_rows(argparse.Namespace(
        engine="spark", memory_limit=None, file=[], holdout=0.3, max_conditions=3), COVARIATES)
    sizes = [_rows(tmp_path, limit) for limit in ("2500MB", "2550MB", "100GB")]
    assert sizes[0][0] < sizes[1][0] < unlimited
    assert sizes[2] == (unlimited, "")  # no note when the limit does not cut the sample
    assert "not 1,428,572" in sizes[0][1]

"""``mcviz compare --engine`` sizes its groups' sample from ``--memory-limit`` (issue 44).

The sample is drawn and searched in this process while the engine runs (Spark's JVM was started
to check every row first), so its bytes must fit beside the engine's least: on Spark in local
mode within what the JVM (at its least heap) and its Python workers leave
(:func:`mcviz.engines.memory.spark_room`), and reserved when the heap is sized; on DuckDB
within half the limit, as ``mcviz search --engine`` gives its sample. A sample row costs
:data:`~mcviz.cli.engine_compare.SAMPLE_VALUE_BYTES` per column at the peak of the draw and the
search (measured there). Before: a Spark compare of 10^7 rows under ``--memory-limit 2GB`` drew
the machine budget's 1,428,572 rows and its process tree peaked at 2.95 GiB
(``benchmarks/bench_engines.py``). These tests need no Java: they check the sizes the command
computes, in this process, against the limit's algebra; the run itself is measured by
``benchmarks/bench_engines.py`` (closing note of issue 44).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from mcviz.budget import parse_bytes
from mcviz.cli import build_parser
from mcviz.cli import engine_compare as ec
from mcviz.cli import engine_options
from mcviz.cli._common import settings_from_arguments
from mcviz.engines import memory
from mcviz.errors import ValidationError
from mcviz.search.at_scale import sample_rows
from mcviz.settings import CompareSettings

NAMES = ["region", "age"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A file of nine columns (the bench's shape); only its footer is read here."""
    path = tmp_path_factory.mktemp("budget") / "rows.parquet"
    pd.DataFrame({name: np.zeros(10) for name in
                  ("score", "label", "region", "age", "channel", "tenure", "when", "segment",
                   "chall")}).to_parquet(path)
    return [str(path)]


def _args(engine: str, limit: str | None, *extra: str):
    argv = ["compare", "rows.parquet", "--score-b", "chall", "--engine", engine, *extra]
    if limit is not None:
        argv += ["--memory-limit", limit]
    args = build_parser().parse_args(argv)
    return args, settings_from_arguments(CompareSettings, args)


def test_a_sample_row_counts_every_column_of_the_file_and_its_keys(files):
    assert ec._row_bytes(files) == ec.SAMPLE_VALUE_BYTES * (9 + 2)
    assert ec._row_bytes(["/no/such.parquet"]) == ec.SAMPLE_ROW_FLOOR


@pytest.mark.parametrize("limit", ["2500MB", "3GB", "6GB"])
def test_spark_sample_fits_beside_the_jvm_and_its_heap_is_sized_with_it(files, limit,
                                                                       monkeypatch):
    # what a fresh mcviz holds (a long test session holds more, and 2500MB would be refused)
    monkeypatch.setattr(memory, "resident_bytes", lambda: 130 << 20)
    args, settings = _args("spark", limit)
    rows = ec._sample_size(args, settings, NAMES, ec._row_bytes(files))
    room = engine_options.spark_room(args, worker=memory.COMPARE_WORKER)
    cap = sample_rows(len(NAMES), holdout=settings.holdout, max_conditions=3)
    share = min(room - ec.ROOM_SLACK, parse_bytes(limit) // 2)
    reserve = ec._sample_reserve(args, rows, ec._row_bytes(files))
    assert reserve == rows * ec._row_bytes(files)
    # (this process's resident memory moves by a few MB between the two reads)
    assert abs(rows - max(min(cap, share // ec._row_bytes(files)), 1_000)) <= (
        (8 << 20) // ec._row_bytes(files))
    if rows > 1_000:  # the least sample, 1,000 rows, is refused below when it cannot fit
        assert reserve <= share + (8 << 20)
        heap = engine_options.spark_limit(args, worker=memory.COMPARE_WORKER, reserve=reserve)
        assert int(heap[:-1]) << 20 >= memory.SPARK_HEAP_FLOOR


def test_without_a_limit_the_sample_is_the_machine_budgets(files):
    args, settings = _args("spark", None)
    assert ec._sample_size(args, settings, NAMES, ec._row_bytes(files)) == sample_rows(
        len(NAMES), holdout=settings.holdout, max_conditions=3)


def test_duckdb_sample_takes_at_most_half_the_limit_and_reserves_nothing_beside_duckdb(files):
    args, settings = _args("duckdb", "1GB")
    rows = ec._sample_size(args, settings, NAMES, ec._row_bytes(files))
    assert 1_000 < rows and rows * ec._row_bytes(files) <= parse_bytes("1GB") // 2
    assert ec._sample_reserve(args, rows, ec._row_bytes(files)) == 0  # DuckDB's share counts what is held


def test_a_sample_the_limit_cannot_hold_is_refused_naming_a_limit(files):
    args, settings = _args("spark", "2GB", "--sample-rows", "1400000")
    rows = ec._sample_size(args, settings, NAMES, ec._row_bytes(files))
    assert rows == 1_400_000
    with pytest.raises(ValidationError, match=r"--memory-limit 2GB cannot hold this comparison"
                       r".*Give --memory-limit \d+MB or more"):
        engine_options.spark_limit(args, worker=memory.COMPARE_WORKER, what="this comparison",
                                   reserve=ec._sample_reserve(args, rows, ec._row_bytes(files)))


def test_a_limit_too_small_for_the_least_sample_is_refused_naming_one_that_holds_it(
        files, monkeypatch):
    """At 10^7 rows the limit named for the JVM's least heap alone (2050MB) left a sample of
    1,146 rows; a limit whose room holds fewer than ``SPARK_SAMPLE_FLOOR`` rows is refused,
    naming one whose room holds them."""
    monkeypatch.setattr(memory, "resident_bytes", lambda: 130 << 20)  # a fresh mcviz's
    args, settings = _args("spark", "2GB")
    with pytest.raises(ValidationError, match=r"--memory-limit 2GB cannot hold this "
                       r"comparison on Spark.*Give --memory-limit \d+MB or more\.$") as refused:
        ec._sample_size(args, settings, NAMES, ec._row_bytes(files))
    named = int(re.search(r"Give --memory-limit (\d+)MB", str(refused.value)).group(1))
    args, settings = _args("spark", f"{named}MB")
    assert ec._sample_size(args, settings, NAMES, ec._row_bytes(files)) >= ec.SPARK_SAMPLE_FLOOR

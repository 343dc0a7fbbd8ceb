"""The command line's hostile corpus (issue #41): outputs, saved maps, dates, optional parts, flags.

Each case is what a careless or hostile user typed; each must end in one line on stderr naming
the flag (or the file) and the problem, exit status 2, no traceback, and nothing written; or,
where the work can be done, in the right file with the right mode.
"""

import json
import os
import stat

import numpy as np
import pandas as pd
import pytest

from mcviz.recalibration.simulate import planted_fix_data


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("hostile")
    frame = planted_fix_data(4_000, seed=1).drop(columns="truth")
    frame.to_parquet(directory / "pred.parquet", index=False)
    fresh = planted_fix_data(2_000, seed=2).drop(columns=["truth", "label"])
    fresh.to_csv(directory / "new.csv", index=False)
    return directory


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _refused(run, *words):
    assert run.status == 2, (run.status, run.err)
    assert "Traceback" not in run.err
    line = run.err.strip().splitlines()[-1]
    assert line.startswith("mcviz: error:"), run.err
    for word in words:
        assert word in line, line
    return line


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


# ------------------------------------------------------------------------------------------
# Outputs: checked before the work, written with the user's umask (item 3)

def _fix_map(cli, files, directory):
    path = directory / "fix.json"
    run = cli("fix", files / "pred.parquet", "--method", "platt", "--map", path,
              "--bootstrap", "50", "--json")
    assert run.status == 0, run.err
    return path


def test_fix_map_and_out_follow_the_umask(cli, files, tmp_path, umask_022):
    out = tmp_path / "scored.csv"
    path = tmp_path / "fix.json"
    run = cli("fix", files / "pred.parquet", "--method", "platt", "--map", path, "--out", out,
              "--bootstrap", "50", "--json")
    assert run.status == 0, run.err
    assert _mode(path) == 0o644  # 0666 less umask 022, as `open` gives; mkstemp alone is 0600
    assert _mode(out) == 0o644


def test_apply_out_follows_the_umask(cli, files, tmp_path):
    path = _fix_map(cli, files, tmp_path)
    previous = os.umask(0o027)
    try:
        out = tmp_path / "applied.parquet"
        assert cli("apply", path, files / "new.csv", "--out", out).status == 0
    finally:
        os.umask(previous)
    assert _mode(out) == 0o640


def test_metrics_table_follows_the_umask(cli, files, tmp_path, umask_022):
    table = tmp_path / "table.csv"
    run = cli("metrics", files / "pred.parquet", "--score", "score", "--label", "label",
              "--subpopulations", "10", "--table", table, "--json")
    assert run.status == 0, run.err
    assert _mode(table) == 0o644


def test_screen_out_follows_the_umask(cli, files, tmp_path, umask_022):
    out = tmp_path / "screen.parquet"
    run = cli("screen", files / "pred.parquet", "--score", "score", "--label", "label",
              "--subpopulations", "10", "--out", out, "--json")
    assert run.status == 0, run.err
    assert _mode(out) == 0o644


def test_report_deck_follows_the_umask(cli, files, tmp_path, umask_022):
    pytest.importorskip("pptx")
    deck = tmp_path / "deck.pptx"
    run = cli("report", files / "pred.parquet", "--score", "score", "--label", "label",
              "--covariates", "region,age", "--deck", deck, "--json")
    assert run.status == 0, run.err
    assert _mode(deck) == 0o644


@pytest.mark.parametrize(("command", "flag", "suffix"), [
    ("metrics", "--table", ".csv"), ("screen", "--out", ".parquet"), ("fix", "--map", ".json"),
    ("fix", "--out", ".csv"), ("report", "--deck", ".pptx"),
])
def test_a_bad_output_is_refused_before_the_file_is_read(cli, tmp_path, command, flag, suffix):
    # the input does not exist: a refusal that names the output proves it came first
    missing = tmp_path / "never-read.parquet"
    directory = tmp_path / f"taken{suffix}"
    directory.mkdir()
    fifo = tmp_path / f"pipe{suffix}"
    os.mkfifo(fifo)
    extra = ["--score", "score", "--label", "label"]
    if command == "metrics":
        extra += ["--subpopulations", "10"]
    cases = {
        directory: "is a directory",
        fifo: "not a regular file",
        tmp_path / "no" / f"such{suffix}": "does not exist",
        f"/proc/mcviz-h41{suffix}": "no file can be written",
    }
    for path, words in cases.items():
        run = cli(command, missing, *extra, flag, path)
        _refused(run, flag, words)
    assert not list(directory.iterdir())


def test_apply_refuses_a_directory_as_out_before_reading(cli, files, tmp_path):
    path = _fix_map(cli, files, tmp_path)
    _refused(cli("apply", path, files / "new.csv", "--out", tmp_path), "--out", "suffix" if False
             else ".parquet or .csv")
    folder = tmp_path / "d.csv"
    folder.mkdir()
    _refused(cli("apply", path, files / "new.csv", "--out", folder), "--out", "is a directory")

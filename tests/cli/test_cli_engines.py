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

"""``mcviz search --json``: the keys of the contract, and bad input.

Runs once ``mcviz.cli`` is the package of the cli branch with ``search`` in ``SUBCOMMANDS``
(registered at merge); skipped before.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

cli = pytest.importorskip("mcviz.cli")
if "search" not in getattr(cli, "SUBCOMMANDS", ()):
    pytest.skip("mcviz search is not registered in mcviz.cli.SUBCOMMANDS yet",
                allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_find import planted  # noqa: E402


@pytest.fixture(scope="module")
def planted_file(tmp_path_factory):
    frame, _ = planted(20_000, "level", 0.2, seed=3)
    path = tmp_path_factory.mktemp("search") / "planted.parquet"
    frame.to_parquet(path)
    return path


def test_json_keys_and_first_finding(planted_file, capsys):
    status = cli.main(["search", str(planted_file), "--score", "score", "--label", "label",
                       "--findings", "3", "--json"])
    assert status == 0
    output = json.loads(capsys.readouterr().out)
    assert list(output) == ["n", "search", "mde", "findings", "unions", "notice"]
    assert output["n"] == 20_000
    assert list(output["search"]) == ["max_conditions", "holdout", "seed", "candidates_scored",
                                      "seconds"]
    assert list(output["mde"]) == ["0.01", "0.05", "0.2"]
    first = output["findings"][0]
    assert list(first) == ["rank", "confirmed", "holdout_kuiper_z", "p_adjusted", "p_value",
                           "mean_residual", "ci_low", "ci_high", "holdout_size", "description",
                           "size", "share", "kuiper_z", "sentence"]  # held-out numbers first
    assert first["rank"] == 1
    assert first["description"] == "region == r7"
    assert first["p_adjusted"] < 0.01
    assert first["ci_low"] < first["mean_residual"] < first["ci_high"]


def test_bad_option_is_a_one_line_error(planted_file, capsys):
    status = cli.main(["search", str(planted_file), "--score", "score", "--label", "label",
                       "--max-conditions", "0", "--json"])
    assert status == 2
    assert "the --max-conditions value must be an integer from 1 to 5" in capsys.readouterr().err

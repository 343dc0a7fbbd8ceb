"""Fixtures of the command-line tests."""

from __future__ import annotations

import pytest

from mcviz.recalibration.simulate import planted_fix_data


@pytest.fixture(scope="session")
def planted_directory(tmp_path_factory):
    """A factory: ``make(name, rows, fresh_rows)`` writes planted data to a new directory.

    ``pred.parquet``: ``rows`` labelled rows of :func:`planted_fix_data` (seed 1) without the
    truth; ``new.csv``: ``fresh_rows`` rows (seed 2) without truth or label, to apply a fix to.
    """

    def make(name: str, rows: int, fresh_rows: int):
        directory = tmp_path_factory.mktemp(name)
        frame = planted_fix_data(rows, seed=1).drop(columns="truth")
        frame.to_parquet(directory / "pred.parquet", index=False)
        fresh = planted_fix_data(fresh_rows, seed=2).drop(columns=["truth", "label"])
        fresh.to_csv(directory / "new.csv", index=False)
        return directory

    return make

"""dashboard.runs: the verdict on the worst subpopulation, adjusted p-values, searched runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from wiring_testdata import PLANTED, planted_frame

from dashboard import runs
from mcviz import load_predictions
from mcviz.errors import ValidationError
from mcviz.stats.significance import null_distribution


@pytest.fixture(scope="module")
def pred():
    return load_predictions(planted_frame(4_000, shift=0.0, seed=2), score="score",
                            label="label", covariates=["age", "region", "x"],
                            nominal=["region"])


@pytest.fixture(scope="module")
def generated(pred):
    settings = runs.RunSettings(("age", "x"), 30, 20, 0)
    return runs.run_subpopulations(pred, settings)[0]


def test_no_null_means_untested_never_a_finding(generated):
    verdict = runs.argmax_verdict(generated.result)
    assert verdict.kind == "untested"
    assert not verdict.is_finding
    count = generated.result.n_subpopulations
    assert f"Largest of {count:,}: not yet tested against chance." in verdict.text
    assert "compute the null distribution" in verdict.text
    assert "beyond chance" not in verdict.text
    assert verdict.short == "not yet tested against chance"


class _Null:
    """A null distribution whose adjusted p-values are chosen by hand."""

    def __init__(self, p_adjusted, draws=99):
        self.p_adjusted = np.asarray(p_adjusted, dtype=float)
        self.draws = draws


def test_the_argmax_is_a_finding_only_below_the_level(generated):
    result = generated.result
    position = [sub.id for sub in result.subpopulations].index(result.argmax.id)
    adjusted = np.full(len(result.subpopulations), 0.5)
    adjusted[position] = 0.04
    assert runs.argmax_verdict(result, _Null(adjusted)).kind == "finding"
    adjusted[position] = 0.05  # not below 0.05: within chance
    verdict = runs.argmax_verdict(result, _Null(adjusted))
    assert verdict.kind == "chance"
    assert "Tested against all 30, allowing for choosing the largest: within what chance " \
        "produces." in verdict.text
    assert "Adjusted p = 0.05 (max statistic over 30 generated subpopulations, 99 null draws)" \
        in verdict.text


def test_with_adjusted_lines_up_with_the_table(pred, generated):
    result = generated.result
    null = null_distribution(pred, result.subpopulations, draws=19, seed=0)
    table = runs.with_adjusted(result.table, null)
    assert np.array_equal(table["p_adjusted"].to_numpy(), null.p_adjusted)
    # the argmax holds the largest D/σ, hence the smallest adjusted p (max-statistic method)
    argmax_row = table.index[table["id"] == result.argmax.id][0]
    assert table["p_adjusted"][argmax_row] == table["p_adjusted"].min()
    assert runs.with_adjusted(result.table, None)["p_adjusted"].isna().all()
    with pytest.raises(ValidationError, match="2 adjusted p-values for 31 subpopulations"):
        runs.with_adjusted(result.table, _Null([0.1, 0.2]))


def test_a_held_null_belongs_to_its_run():
    state: dict = {}
    first = runs.run_id("key", {"seed": 0, "mode": "generated"})
    assert first == runs.run_id("key", {"mode": "generated", "seed": 0})  # order-free
    runs.hold_null(state, first, "null")
    assert runs.held_null(state, first) == "null"
    assert runs.held_null(state, runs.run_id("key", {"seed": 1, "mode": "generated"})) is None


def test_a_searched_run_measures_the_findings_like_generated_ones():
    pred = load_predictions(planted_frame(100_000, shift=0.1), score="score", label="label",
                            covariates=["age", "region", "x"], nominal=["region"])
    settings = runs.RunSettings.from_mapping({
        "covariates": ["age", "region", "x"], "n_subpopulations": 1000, "min_size": 10,
        "seed": 0, "repeats": 3, "mode": "searched", "max_conditions": 2, "n_findings": 3})
    (run,) = runs.run_subpopulations(pred, settings)  # one run, whatever the repeats
    assert run.search.max_conditions == 2
    descriptions = [sub.description for sub in run.subsets.subpopulations]
    assert descriptions[1] == PLANTED
    assert list(run.result.table["description"]) == descriptions
    verdict = runs.search_verdict(run.search)
    assert verdict.is_finding
    assert verdict.text == run.search.findings[0].sentence
    # region == r7 measured over all its rows: its own D/σ, as the findings table says
    row = run.result.table.set_index("description").loc[PLANTED]
    assert row["kuiper_z"] == pytest.approx(run.search.findings[0].kuiper_z, rel=1e-12)
    assert isinstance(run.result.table, pd.DataFrame)


def test_unknown_mode_falls_back_to_generated():
    settings = runs.RunSettings.from_mapping({"covariates": ["x"], "n_subpopulations": 5,
                                              "min_size": 2, "seed": 0, "mode": "bogus"})
    assert settings.mode == "generated"

"""One registry of recalibration methods: a toy method registered once is found on every surface.

The surfaces: the library (:class:`Recalibrator`, :func:`verify_fix`), the budget
(:func:`fix_estimate`), ``mcviz fix --method`` (its choices), ``mcviz apply`` (a saved map
names its method) and the Fix page's options (:func:`dashboard.fixing.method_options`). A map
carries its verdict, and ``apply`` refuses a map not recommended unless ``--force``.
"""

import json

import numpy as np
import pytest

from mcviz.errors import ValidationError
from mcviz.recalibration import (
    RecalibrationMethod,
    Recalibrator,
    fix_estimate,
    method_names,
    register_method,
    unregister_method,
    verify_fix,
)
from mcviz.recalibration.simulate import planted_fix_data


class Toward(RecalibrationMethod):
    """Pull every score a fixed share of the way to 1/2 (a fix that makes things worse)."""

    name = "toward_half"
    title = "toy: pull scores toward 1/2"
    seconds_per_row = 1e-3

    def fit(self, fix, pred, w, progress=None):
        return {"share": 0.6}

    def transform(self, fix, params, pred):
        return pred.score + params["share"] * (0.5 - pred.score)

    def describe(self, params):
        return f"toy: each score moved {params['share']:.0%} of the way to 1/2"


class Needy(RecalibrationMethod):
    name = "needy"
    title = "toy: needs a package that is not installed"
    packages = ("no_such_package_for_mcviz",)


@pytest.fixture
def toy():
    method = register_method(Toward())
    needy = register_method(Needy())
    yield method
    unregister_method(method.name)
    unregister_method(needy.name)


@pytest.fixture(scope="module")
def planted_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("registry") / "pred.parquet"
    planted_fix_data(6_000, seed=1).drop(columns="truth").to_parquet(path, index=False)
    return path


def test_a_name_is_registered_once(toy):
    with pytest.raises(ValueError, match="already registered"):
        register_method(Toward())


def test_the_library_and_the_budget_find_the_toy(toy):
    assert "toward_half" in method_names()
    from mcviz.io import Predictions

    pred = Predictions.from_arrays(np.array([0.1, 0.5, 0.9]), np.array([0, 1, 1]))
    fix = Recalibrator("toward_half").fit(pred)
    # closed form: s + 0.6 (0.5 - s)
    np.testing.assert_allclose(fix.transform(pred), [0.34, 0.5, 0.66], rtol=1e-12)
    assert fix.describe() == "toy: each score moved 60% of the way to 1/2"
    # the budget reads the method's cost: 10^6 rows at 1e-3 s against platt's 2.5e-6 s
    toy_cost = fix_estimate(10**6, 4, method="toward_half", search=False).seconds
    platt_cost = fix_estimate(10**6, 4, method="platt", search=False).seconds
    assert toy_cost - platt_cost == pytest.approx(10**6 * (1e-3 - 2.5e-6), rel=1e-9)


def test_an_unavailable_method_says_why(toy):
    from mcviz.io import Predictions

    pred = Predictions.from_arrays(np.array([0.1, 0.5, 0.9]), np.array([0, 1, 1]))
    with pytest.raises(ValidationError, match="no_such_package_for_mcviz"):
        Recalibrator("needy").fit(pred)


def test_the_page_offers_the_toy_and_disables_the_unavailable(toy):
    from dashboard import fixing

    options = {o.name: o for o in fixing.method_options(True)}
    assert options["toward_half"].title == "toy: pull scores toward 1/2"
    assert options["toward_half"].unavailable is None
    assert "no_such_package_for_mcviz" in options["needy"].unavailable
    # without covariates the methods that need them are not offered
    assert "findings" in options
    assert "findings" not in {o.name for o in fixing.method_options(False)}


def test_the_command_line_fits_the_toy_and_apply_refuses_its_worse_map(toy, cli, planted_file,
                                                                        tmp_path):
    map_file = tmp_path / "toy.json"
    run = cli("fix", planted_file, "--method", "toward_half", "--map", map_file,
              "--bootstrap", "50", "--subpopulations", "50", "--json")
    assert run.status == 0, run.err
    assert run.json["method"] == "toward_half"
    assert run.json["map"] == "toy: each score moved 60% of the way to 1/2"
    # pulling scores toward 1/2 loses information: held-out log loss worse beyond noise
    assert run.json["log_loss_change"]["direction"] == "worse"
    assert run.json["recommended"] is False
    saved = json.loads(map_file.read_text())
    assert saved["verdict"]["recommended"] is False
    assert "log loss got worse beyond noise" in saved["verdict"]["reason"]
    out = tmp_path / "scored.csv"
    refused = cli("apply", map_file, planted_file, "--out", out)
    assert refused.status == 2
    assert "not recommended" in refused.err
    assert "--force" in refused.err
    assert "log loss got worse beyond noise" in refused.err
    assert not out.exists()
    forced = cli("apply", map_file, planted_file, "--out", out, "--force", "--json")
    assert forced.status == 0, forced.err
    assert forced.json["method"] == "toward_half"
    assert forced.json["recommended"] is False


def test_the_command_line_refuses_the_unavailable_method(toy, cli, planted_file):
    run = cli("fix", planted_file, "--method", "needy", "--bootstrap", "50")
    assert run.status == 2
    assert "no_such_package_for_mcviz" in run.err


def test_a_map_never_judged_is_applied_and_says_so(cli, planted_file, tmp_path):
    from mcviz.io import load_predictions

    pred = load_predictions(planted_file, score="score", label="label")
    fix = Recalibrator("platt").fit(pred)
    assert fix.verdict is None
    assert fix.recommended is None
    map_file = tmp_path / "platt.json"
    map_file.write_text(fix.to_json())
    assert json.loads(map_file.read_text())["verdict"] is None
    run = cli("apply", map_file, planted_file, "--out", tmp_path / "o.csv", "--json")
    assert run.status == 0, run.err
    assert run.json["recommended"] is None


def test_verify_fix_writes_its_verdict_into_the_map():
    from mcviz.io import load_predictions

    pred = load_predictions(planted_fix_data(6_000, seed=2).drop(columns="truth"),
                            score="score", label="label")
    result = verify_fix(pred, method="platt", search=False, n_subpopulations=50)
    assert result.recalibrator.verdict == {"recommended": result.recommended,
                                           "reason": result.reason}
    again = Recalibrator.from_json(result.recalibrator.to_json())
    assert again.verdict == result.recalibrator.verdict
    broken = json.loads(result.recalibrator.to_json())
    broken["verdict"] = {"recommended": "yes"}
    with pytest.raises(ValidationError, match="verdict"):
        Recalibrator.from_json(json.dumps(broken))

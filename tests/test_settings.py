"""mcviz.settings: each computation's defaults and bounds in one place, and what derives."""

from __future__ import annotations

import inspect

import pytest

from dashboard import links
from dashboard import state as s
from mcviz.errors import ValidationError
from mcviz.search import search_subpopulations
from mcviz.settings import SearchSettings, SubpopulationSettings
from mcviz.stats.multical import multicalibration_repeats
from mcviz.subpopulations import generate_subpopulations


@pytest.mark.parametrize(("function", "settings", "names"), [
    (generate_subpopulations, SubpopulationSettings, ("n_subpopulations", "min_size", "seed")),
    (multicalibration_repeats, SubpopulationSettings, ("n_subpopulations", "min_size")),
    (search_subpopulations, SearchSettings,
     ("max_conditions", "n_findings", "min_share", "holdout", "seed")),
])
def test_library_defaults_are_the_settings_defaults(function, settings, names):
    parameters = inspect.signature(function).parameters
    for name in names:
        assert parameters[name].default == settings.setting(name).default, name


def test_values_are_checked_with_their_bounds_named():
    with pytest.raises(ValidationError, match="n_subpopulations must be an integer from 1 to "
                                              "20,000, not 0"):
        SubpopulationSettings(n_subpopulations=0)
    with pytest.raises(ValidationError, match=r"holdout must be a number from 0\.1 to 0\.9"):
        SearchSettings(holdout=0.95)
    with pytest.raises(ValidationError, match="must be an integer"):
        SubpopulationSettings(repeats=True)
    assert SubpopulationSettings(n_subpopulations=20_000).n_subpopulations == 20_000


def test_mapping_link_and_widget_come_from_one_setting():
    settings = SubpopulationSettings.from_mapping({"n_subpopulations": "50", "seed": 3})
    assert settings.key() == (50, 10, 3, 1)
    assert settings.link_params() == {"l": "50", "seed": "3"}
    with pytest.raises(ValidationError, match="link parameter l="):
        SubpopulationSettings.from_mapping({"n_subpopulations": "fifty"})
    spec = SearchSettings.setting("max_conditions")
    assert spec.widget()["min_value"] == spec.low == 1
    assert spec.widget()["max_value"] == spec.high == 5
    assert spec.parse("6") == (None, "link parameter cond='6' is not a number within [1, 5]; "
                                     "ignored.")
    # the link codec accepts exactly the settings' range
    decoded = links.decode_params({"cond": "5", "l": "20001"})
    assert decoded.restored[s.W_CONDITIONS] == 5
    assert s.W_L not in decoded.restored
    assert any("20,000" in m for m in decoded.messages)
    # the page's defaults are the settings' defaults
    assert s.DEFAULTS[s.W_L] == SubpopulationSettings.n_subpopulations
    assert s.DEFAULTS[s.W_CONDITIONS] == SearchSettings.max_conditions


def test_command_line_options_carry_the_bounds(cli, write_csv, random_frame):
    path = write_csv(random_frame(200, 1))
    run = cli("metrics", path, "--score", "prob", "--label", "y", "--subpopulations", "0",
              "--json")
    assert run.status == 2
    assert "--subpopulations value must be an integer from 1 to 20,000, not 0" in run.err
    run = cli("search", path, "--score", "prob", "--label", "y", "--max-conditions", "9",
              "--json")
    assert run.status == 2
    assert "--max-conditions value must be an integer from 1 to 5, not 9" in run.err


def test_thresholds_have_one_parser_and_one_default():
    from dashboard import fixing
    from mcviz.cli import build_parser
    from mcviz.cli.fix import parse_thresholds as cli_thresholds
    from mcviz.settings import DEFAULT_THRESHOLDS, DecisionSettings, parse_thresholds

    assert parse_thresholds("0.3; 0.1,0.3") == (0.1, 0.3)
    assert fixing.parse_thresholds("0.3; 0.1,0.3") == (0.1, 0.3)
    with pytest.raises(ValidationError, match=r"thresholds must lie in \(0, 1\); got 0, 1\.5"):
        parse_thresholds("0, 0.5, 1.5")
    with pytest.raises(ValidationError, match="'a' is not a number"):
        fixing.parse_thresholds("0.2, a")
    with pytest.raises(ValidationError, match="at least one"):
        parse_thresholds(" , ")
    # the command line's default, the page's widget and the link come from the one setting
    args = build_parser(["decide"]).parse_args(["decide", "f.csv"])
    assert tuple(cli_thresholds(args)) == DEFAULT_THRESHOLDS == DecisionSettings().thresholds
    args = build_parser(["decide"]).parse_args(["decide", "f.csv", "--thresholds", "0.4,0.2",
                                                "--costs", "1:4"])
    assert cli_thresholds(args) == [0.2, 0.4]  # 1 / (1 + 4) = 0.2 once
    spec = DecisionSettings.setting("thresholds")
    assert fixing.parse_thresholds(spec.widget()["value"]) == DEFAULT_THRESHOLDS
    assert spec.parse("0.25,0.75") == ((0.25, 0.75), None)
    assert spec.parse("0.25,2")[1] == ("link parameter thr='0.25,2' is not a list of numbers "
                                       "in (0, 1); ignored.")
    chosen = DecisionSettings(thresholds=[0.7, 0.25])
    assert chosen.link_params() == {"thr": "0.25,0.7"}
    assert DecisionSettings.from_mapping({"thresholds": chosen.link_params()["thr"],
                                          "bootstrap": "200"}).key() == ((0.25, 0.7), 200)
    with pytest.raises(ValidationError, match="bootstrap must be an integer from 20"):
        DecisionSettings(bootstrap=5)

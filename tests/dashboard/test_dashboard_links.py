"""The shareable-link codec (dashboard.links): round trips and every malformed link."""

from __future__ import annotations

import json

import pytest

from dashboard import links
from dashboard import state as s


def test_round_trip_of_a_view():
    mapping = s.ColumnMapping(score="p", label="y", covariates=("age", "city"),
                              nominal=("city",), weighting="proportional", rho=0.05)
    state = {s.SOURCE: {"kind": "demo", "name": "adult", "digest": None}, s.MAPPING: mapping,
             s.W_L: 500, s.W_SEED: 3, s.W_BINS: "5, 15", s.W_SCOPE: "sub", s.W_SCOPE_SUB: 7,
             s.W_SUBCOVS: ["age"], s.W_PRESENTATION: True, s.SUBPOP: {"key": "k"}}
    params = links.encode_state(state, "review")
    decoded = links.decode_params(params)
    assert decoded.messages == ()
    assert decoded.page == "review"
    restored = decoded.restored
    assert restored[s.PENDING] == {"demo": "adult", "mapping": mapping}
    assert restored[s.W_L] == 500
    assert restored[s.W_SEED] == 3
    assert restored[s.W_BINS] == "5, 15"
    assert restored[s.W_SCOPE] == "sub"
    assert restored[s.W_SCOPE_SUB] == 7
    assert restored[s.W_SUBCOVS] == ["age"]
    assert restored[s.W_PRESENTATION] is True
    assert restored[s.AUTO_SUBPOP] is True


def test_defaults_are_left_out_of_the_link():
    params = links.encode_state({s.W_L: s.DEFAULTS[s.W_L], s.W_FILTER: ""}, "data")
    assert params == {"page": "data"}


@pytest.mark.parametrize(("params", "fragment"), [
    ({"demo": "adult", "map": "[1,2]"}, "not a JSON object"),
    ({"demo": "adult", "map": "{not json"}, "not valid JSON"),
    ({"demo": "adult", "map": "42"}, "not a JSON object"),
    ({"map": json.dumps({"rho": "x", "score": "p"})}, "rho"),
    ({"map": json.dumps({"rho": 1e308 * 10})}, "rho"),
    ({"map": json.dumps({"covariates": "age"})}, "covariates"),
    ({"map": json.dumps({"covariates": [1, 2]})}, "covariates"),
    ({"map": json.dumps({"drop_invalid": "yes"})}, "drop_invalid"),
    ({"map": json.dumps({"response": "ordinal"})}, "response"),
    ({"map": json.dumps({"weighting": "magic"})}, "weighting"),
    ({"map": json.dumps({"score": {"a": 1}})}, "score"),
    ({"map": json.dumps({"bogus": 1, "score": "p"})}, "unknown keys"),
    ({"l": "9" * 400}, "not a whole number"),
    ({"l": "99999999999"}, "outside"),
    ({"l": "0"}, "outside"),
    ({"seed": "-1"}, "outside"),
    ({"reps": "1e3"}, "not a whole number"),
    ({"sub": "abc"}, "not a whole number"),
    ({"scope": "everything"}, "scope"),
    ({"subcov": "{\"a\": 1}"}, "subcov"),
    ({"subcov": "[1, 2]"}, "subcov"),
    ({"subcov": "[[["}, "subcov"),
    ({"demo": "nope"}, "unknown demo"),
    ({"sha": "xyz"}, "SHA-256"),
    ({"zzz": "1", "demo": "adult"}, "unknown link parameters"),
])
def test_every_malformed_link_gets_a_message(params, fragment):
    decoded = links.decode_params(params)  # never raises
    assert any(fragment in message for message in decoded.messages), decoded.messages


def test_a_bad_mapping_field_keeps_the_good_ones():
    mapping, messages = links.mapping_from_json(json.dumps({"rho": "x", "score": "p",
                                                            "label": "y"}))
    assert mapping == s.ColumnMapping(score="p", label="y")
    assert len(messages) == 1


def test_a_malformed_map_falls_back_to_the_inferred_mapping_but_keeps_the_demo():
    decoded = links.decode_params({"demo": "adult", "map": "[1,2]"})
    assert decoded.restored[s.PENDING] == {"demo": "adult", "mapping": None}


def test_page_names_are_checked():
    assert links.decode_params({"page": "review"}).page == "review"
    assert links.decode_params({"page": "../etc"}).page is None


DEEP = "[" * 1_999  # the reported link: /monitor?...&mseg=[[[[... (1,999 brackets)


@pytest.mark.parametrize("name", sorted(links.LINK_KEYS))
def test_every_key_answers_a_deep_value_with_a_message(name):
    """Every key the codec knows (read from it), fed 1,999 nested brackets: never raises."""
    for value in (DEEP, DEEP + "]" * 1_999, '{"a":' * 1_999):
        decoded = links.decode_params({"demo": "adult", name: value})
        if name in links.JSON_KEYS:
            assert any(f"link parameter {name} nests" in m for m in decoded.messages), \
                decoded.messages
        restored = {k: v for k, v in decoded.restored.items() if k not in (s.W_DEMO, s.PENDING)}
        # a text field may keep brackets (its own parser checks them); nothing else keeps them
        assert all(isinstance(v, str) for v in restored.values()), restored


@pytest.mark.parametrize("name", sorted(links.LINK_KEYS))
def test_every_key_over_its_limit_is_refused_with_a_message_never_cut(name):
    limit = links.LINK_KEYS[name]
    decoded = links.decode_params({name: "1" * (limit + 1)})
    assert any(f"link parameter {name} has {limit + 1:,} characters" in m
               for m in decoded.messages), decoded.messages
    assert decoded.restored == {} and decoded.page is None


def test_a_110_kb_filter_link_is_refused_not_cut_into_another_scope():
    expression = "age >= 40 and (" + " or ".join(f"age == {k}" for k in range(9_000)) + ")"
    assert len(expression) > 110_000
    decoded = links.decode_params({"demo": "adult", "scope": "filter", "filter": expression})
    assert s.W_FILTER not in decoded.restored  # not its first 2,000 characters
    assert any("link parameter filter has" in m for m in decoded.messages)
    # a filter within the limit comes back whole
    whole = expression[:90_000]
    assert links.decode_params({"filter": whole}).restored[s.W_FILTER] == whole


def test_every_key_the_codec_writes_it_also_knows():
    state = {s.SOURCE: {"kind": "demo", "name": "adult", "digest": None},
             s.MAPPING: s.ColumnMapping(score="p"), s.W_SUBCOVS: ["a"],
             s.W_MON_SEGMENTS: ["b"], s.W_MON_SEARCH: True, s.W_PRESENTATION: True,
             s.SUBPOP: {}, s.NULL_SHOWN: True,
             **{key: "text" for key in links._SIMPLE.values()}}
    assert set(links.encode_state(state, "data")) <= set(links.LINK_KEYS)


def test_round_trip_of_a_searched_finding_with_its_settings_and_null():
    state = {s.SOURCE: {"kind": "demo", "name": "adult", "digest": None},
             s.W_SUB_MODE: "searched", s.W_CONDITIONS: 2, s.W_FINDINGS: 7,
             s.W_NULL_DRAWS: 500, s.W_SCOPE: "sub", s.W_SCOPE_SUB: 2, s.W_BINS: "10",
             s.W_VARIABLE: "age", s.SUBPOP: {"key": "k"}, s.NULL_SHOWN: True}
    params = links.encode_state(state, "review")
    assert params["smode"] == "searched"
    decoded = links.decode_params(params)
    assert decoded.messages == ()
    restored = decoded.restored
    for key in (s.W_SUB_MODE, s.W_CONDITIONS, s.W_FINDINGS, s.W_NULL_DRAWS, s.W_SCOPE,
                s.W_SCOPE_SUB, s.W_BINS, s.W_VARIABLE):
        assert restored[key] == state[key], key
    assert restored[s.AUTO_SUBPOP] is True
    assert restored[s.AUTO_NULL] is True


@pytest.mark.parametrize(("params", "fragment"), [
    ({"smode": "brute"}, "smode"), ({"cond": "9"}, "outside"), ({"find": "0"}, "outside"),
    ({"nd": "1e9"}, "not a whole number"), ({"nd": "10"}, "outside"),
])
def test_bad_search_and_null_settings_are_named(params, fragment):
    decoded = links.decode_params(params)
    assert decoded.restored == {}
    assert any(fragment in m for m in decoded.messages), decoded.messages


def test_subpopulation_params_from_the_widgets():
    state = {s.W_SUB_MODE: "searched", s.W_SUBCOVS: ["age", "gone"], s.W_L: 50,
             s.W_CONDITIONS: 2}
    params = s.subpopulation_params(state, {"age": "ordinal", "sex": "nominal"})
    assert params == {"covariates": ["age"], "n_subpopulations": 50, "min_size": 10, "seed": 0,
                      "repeats": 1, "mode": "searched", "max_conditions": 2, "n_findings": 5}
    assert s.subpopulation_params({}, ["a", "b"])["covariates"] == ["a", "b"]

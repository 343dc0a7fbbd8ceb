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


def test_huge_text_is_cut():
    decoded = links.decode_params({"filter": "x" * 100_000})
    assert len(decoded.restored[s.W_FILTER]) <= 2_000

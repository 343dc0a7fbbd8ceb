"""User text as data (issue #25 item 4): bidi controls shown, line separators quoted, nesting
bounded before a recursive parser sees the text."""

from __future__ import annotations

import json

import pytest

from mcviz import ValidationError
from mcviz.subpopulations import parse_filter
from mcviz.text import BIDI_CONTROLS, check_nesting, csv_text, display_text


@pytest.mark.parametrize("control", sorted(BIDI_CONTROLS))
def test_every_bidi_control_is_shown_not_obeyed(control):
    shown = display_text(f"level {control}1 = p")
    assert not set(shown) & BIDI_CONTROLS
    assert f"[U+{ord(control):04X}]" in shown


def test_the_issue_ranges_are_covered():
    # U+202A-U+202E and U+2066-U+2069 (issue #25)
    wanted = {chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]}
    assert wanted <= BIDI_CONTROLS


def test_plain_text_is_unchanged():
    assert display_text("Prof-specialty · age ≥ 40 — naïve") == "Prof-specialty · age ≥ 40 — naïve"


@pytest.mark.parametrize("separator", ["\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c"])
def test_line_separators_become_line_feeds(separator):
    assert csv_text(f"a{separator}b") == "a\nb"


def test_nesting_is_refused_with_a_message_not_a_recursion_error():
    with pytest.raises(ValidationError, match="nests 3,000 levels deep; at most 50"):
        check_nesting("[" * 3000 + "]" * 3000, what="the link")
    check_nesting("'" + "(" * 3000 + "'", what="quoted text does not count")
    check_nesting(json.dumps({"a": [[["x"]]]}), what="shallow")


@pytest.mark.parametrize("depth", [1_000, 40_000])
def test_a_deeply_nested_filter_is_a_message(depth):
    expression = "(" * depth + "age >= 40" + ")" * depth
    with pytest.raises(ValidationError, match=f"filter: the expression nests {depth:,} levels"):
        parse_filter(expression, {"age": "ordinal"})


def test_a_filter_past_the_length_limit_is_refused_before_its_nesting_is_read():
    expression = "(" * 100_000 + "age >= 40" + ")" * 100_000
    with pytest.raises(ValidationError, match="filter: the expression has 200,009 characters; at most 100,000"):
        parse_filter(expression, {"age": "ordinal"})


def test_moderate_nesting_still_parses():
    assert parse_filter("((age >= 40))", {"age": "ordinal"})

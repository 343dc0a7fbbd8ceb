"""User text stays text: Markdown and plotly escaping of data-derived strings (issue #20, 2)."""

from __future__ import annotations

import re
import string

from hypothesis import given
from hypothesis import strategies as st

from dashboard.text import code, escape_markdown
from mcviz.figures._text import plotly_text

HOSTILE = ['<a href=//evil>x</a>', "![t](http://127.0.0.9/x.png)", '=HYPERLINK("http://e","x")',
           "**bold**", "<script>alert(1)</script>", ":red[x] :material/home: $x^2$",
           "# heading\n- item", "[link](javascript:alert(1))", "a | b\n---|---"]


def unescape(text: str) -> str:
    """CommonMark's reading of backslash escapes (an independent decoder)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


@given(st.text())
def test_markdown_escape_round_trips_and_leaves_no_bare_punctuation(text):
    escaped = escape_markdown(text)
    flat = re.sub(r"[\x00-\x1f\x7f\u2028\u2029]+", " ", text)
    assert unescape(escaped) == flat
    # every punctuation mark is escaped: the only bare characters left are letters, digits,
    # spaces and non-ASCII
    bare = re.sub(r"\\[!-/:-@\[-`{-~]", "", escaped)
    assert not set(bare) & set(string.punctuation)
    assert "\n" not in escaped


def test_hostile_strings_lose_every_markdown_construct():
    for text in HOSTILE:
        escaped = escape_markdown(text)
        # with the escaped pairs taken out, no character that starts a construct is left
        bare = re.sub(r"\\[!-/:-@\[-`{-~]", "", escaped)
        assert not set(bare) & set("![]()*<>:$#-|=_`"), (text, escaped)


@given(st.text())
def test_code_span_holds_the_text(text):
    span = code(text)
    fence = re.match(r"`+", span).group()
    assert span.endswith(fence)
    inner = span[len(fence): len(span) - len(fence)]
    assert fence not in inner  # CommonMark: a longer or shorter run never closes the span


def test_plotly_text_escapes_the_html_plotly_parses():
    assert plotly_text("<a href=//evil>x</a>") == "&lt;a href=//evil&gt;x&lt;/a&gt;"
    assert plotly_text("R&D <b>") == "R&amp;D &lt;b&gt;"
    assert plotly_text(3) == "3"
    for text in HOSTILE:
        assert "<" not in plotly_text(text)

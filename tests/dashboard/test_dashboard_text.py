"""User text stays text: Markdown and plotly escaping of data-derived strings (issue #20, 2)."""

from __future__ import annotations

import html
import re
import string

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dashboard.text import code, escape_markdown
from mcviz.present.figures._text import escape_figure, plotly_text
from mcviz.text import display_text

HOSTILE = ['<a href=//evil>x</a>', "![t](http://127.0.0.9/x.png)", '=HYPERLINK("http://e","x")',
           "**bold**", "<script>alert(1)</script>", ":red[x] :material/home: $x^2$",
           "# heading\n- item", "[link](javascript:alert(1))", "a | b\n---|---"]


def unescape(text: str) -> str:
    """CommonMark's reading of backslash escapes (an independent decoder)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


@given(st.text())
def test_markdown_escape_round_trips_and_leaves_no_bare_punctuation(text):
    escaped = escape_markdown(text)
    flat = re.sub(r"[\x00-\x1f\x7f\x85\u2028\u2029]+", " ", display_text(text))
    assert unescape(escaped).replace("\u2060", "") == flat.replace("\u2060", "")
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


def test_bare_urls_and_emails_cannot_autolink():
    # GitHub-flavoured Markdown links bare http://, www. and e-mail text even when escaped
    for text in ("see http://127.0.0.9/x", "HTTPS://a.b", "www.example.com", "me@host.org"):
        escaped = escape_markdown(text).replace("\\", "")
        assert not re.search(r"(?i)(https?:|www\.|\w@)", escaped), escaped


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


# ---------------------------------------------------------------------------------------------
# Plotly: escape_figure over built figures

LIVE_TAG = re.compile(r"<(?!/?(?:br|b|i|sup|sub|em|extra)\s*/?>"
                      r"|span style='font-size:\d+px'>|/span>)")


def strings(value):
    """Every string in a figure's JSON (an independent walk)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if k != "template":
                yield from strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from strings(v)
    elif isinstance(value, np.ndarray) and value.dtype.kind in "OUS":
        yield from strings(value.ravel().tolist())


def test_escape_figure_leaves_no_live_tag_from_data_and_keeps_the_builders_markup():
    import plotly.graph_objects as go

    from mcviz.stats.cumulative import cumulative_differences
    from mcviz.present.figures import cumulative_figure
    from mcviz.io import Predictions

    rng = np.random.default_rng(0)
    pred = Predictions.from_arrays(rng.random(500), rng.integers(0, 2, 500))
    fig = cumulative_figure(cumulative_differences(pred), title=HOSTILE[0])
    fig.add_trace(go.Bar(x=HOSTILE, y=list(range(len(HOSTILE))), name=HOSTILE[4],
                         customdata=np.array([[h, 1] for h in HOSTILE], dtype=object),
                         hovertemplate="%{customdata[0]}<extra></extra>"))
    fig.add_annotation(text=HOSTILE[1] + " <a href='//e'>x</a>", x=0, y=0)
    fig.update_xaxes(ticktext=HOSTILE, tickvals=list(range(len(HOSTILE))))
    before = [s for s in strings(fig.to_plotly_json()) if "<br>" in s]
    assert any(LIVE_TAG.search(s) for s in strings(fig.to_plotly_json()))  # the attack is there
    escape_figure(fig)
    after = list(strings(fig.to_plotly_json()))
    assert not [s for s in after if LIVE_TAG.search(s)]
    assert before  # the builder's subtitle line break survives
    assert all("<br>" in s for s in after if s.startswith("Cumulative") or "<br>" in s)
    assert fig.data[-1].hovertemplate == "%{customdata[0]}<extra></extra>"
    shown = [html.unescape(s) for s in fig.data[-1].x]
    assert shown == HOSTILE  # what plotly shows: the original characters
    once = fig.to_json()
    assert escape_figure(fig).to_json() == once  # idempotent


def test_escape_figure_changes_nothing_without_markup():
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4], name="a & b?", text=["x", "y"]),
                    layout={"title": {"text": "Plain<br><sup>sub</sup>"}})
    before = fig.to_json()
    assert escape_figure(fig).to_json() == before.replace('"a & b?"', '"a &amp; b?"')


def test_escape_figure_reads_the_same_json_plotly_would_copy():
    import plotly.graph_objects as go

    from mcviz.present.figures._text import _stored_json

    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4], name="<i>a</i>", text=["<b>x</b>", "y"]),
                    layout={"title": {"text": "T"}, "xaxis": {"ticktext": ["<u>t</u>"]}})
    fig.add_bar(x=["p", "q"], y=[1, 2])
    data, layout = _stored_json(fig)
    spec = fig.to_plotly_json()
    assert data == spec["data"]  # read in place, not copied
    assert layout == spec["layout"]
    assert data is not spec["data"]
    fig.data[0].name = "changed"  # the stored JSON is plotly's own: it follows updates
    assert _stored_json(fig)[0][0]["name"] == "changed"


def test_dropped_covariates_are_one_notice_per_reason():
    from dashboard.text import grouped_notices

    notices = [f"covariate 'c{i}' dropped: it takes a single value." for i in range(20_000)]
    notices.insert(5, "covariate 'x' dropped: every value is missing.")
    notices.append("something else")
    grouped = grouped_notices(notices)
    assert grouped == [
        "20,000 covariates dropped: it takes a single value. ('c0', 'c1', 'c2', 'c3', 'c4', "
        "'c5', 'c6', 'c7' and 19,992 more)",
        "covariate 'x' dropped: every value is missing.",
        "something else",
    ]


def test_bidi_controls_are_shown_in_markdown_and_code():
    from dashboard.text import code, escape_markdown

    assert "\u202e" not in escape_markdown("a\u202eb")
    assert escape_markdown("a\u202eb") == "a\\[U\\+202E\\]b"
    assert code("a\u2066b") == "`a[U+2066]b`"

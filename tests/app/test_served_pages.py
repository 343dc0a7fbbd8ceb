"""AppTest: every page shows hostile names and values as text (issue #20 item 2).

A file whose column names, category values and file name are Markdown, HTML and formulas is
uploaded; every page is visited (the subpopulations computed, every grouping drawn, a hostile
filter typed). No element that renders Markdown may contain a payload unescaped, and no chart
may carry a live HTML tag from the data. The browser test (test_served.py) checks the same
from outside: no request leaves the server's address.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.text import escape_markdown

APP = str(Path(__file__).resolve().parents[2] / "app.py")
HOSTILE = ['<a href=//127.0.0.9/a>x</a>', "![t](http://127.0.0.9/x.png)",
           '=HYPERLINK("http://127.0.0.9/h","x")', "**bold**",
           "<script>alert(1)</script>", ":red[red] $x^2$"]
FILE_NAME = "![n](http://127.0.0.9/n.png).csv"
LIVE_TAG = re.compile(r"<(?!/?(?:br|b|i|sup|sub|em|extra)\s*/?>"
                      r"|span style='font-size:\d+px'>|/span>)")
MARKDOWN_ELEMENTS = ("markdown", "caption", "error", "warning", "info", "success", "header",
                     "subheader", "title")


def hostile_csv(n: int = 3000) -> bytes:
    rng = np.random.default_rng(5)
    score = np.clip(rng.beta(2, 3, n), 0.01, 0.99)
    truth = np.where(rng.random(n) < 0.3, np.minimum(score + 0.3, 1), score)
    frame = pd.DataFrame({
        "score": score.round(4), "label": (rng.random(n) < truth).astype(int),
        HOSTILE[0]: rng.choice(HOSTILE, n), HOSTILE[1]: rng.normal(size=n).round(3),
        HOSTILE[3]: rng.choice(HOSTILE[2:], n),
    })
    return frame.to_csv(index=False).encode()


def shown_texts(at: AppTest) -> list[str]:
    """Every text a page renders as Markdown: elements, widget labels, metric labels."""
    texts = [str(e.value) for kind in MARKDOWN_ELEMENTS for e in getattr(at, kind)]
    for kind in ("selectbox", "multiselect", "radio", "checkbox", "text_input", "number_input",
                 "button", "toggle", "metric"):
        texts.extend(str(w.label) for w in getattr(at, kind))
    return texts


def chart_strings(at: AppTest) -> list[str]:
    found = []

    def walk(value):
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                if k != "template":
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for chart in at.get("plotly_chart"):
        walk(json.loads(chart.proto.spec))
    return found


def check(at: AppTest, where: str) -> list[str]:
    assert not at.exception, (where, [e.value for e in at.exception])
    texts = shown_texts(at)
    raw = [(p, t) for t in texts for p in [*HOSTILE, FILE_NAME] if p in t]
    assert not raw, (where, raw[:3])
    live = [s for s in chart_strings(at) if LIVE_TAG.search(s)]
    assert not live, (where, live[:3])
    return texts


@pytest.fixture(scope="module")
def uploaded():
    at = AppTest.from_file(APP, default_timeout=180).run()
    at.file_uploader(key="w_upload").set_value((FILE_NAME, hostile_csv(), "text/csv"))
    return at.run()


def test_the_data_page_shows_the_hostile_file_as_text(uploaded):
    texts = check(uploaded, "data")
    # the file name is shown -- escaped, so it reads as written
    assert any(escape_markdown(FILE_NAME) in t for t in texts)


@pytest.mark.parametrize("page", ["review", "calibration", "variables", "report"])
def test_every_page_shows_hostile_data_as_text(uploaded, page):
    uploaded.switch_page(f"pages/{page}.py").run()
    check(uploaded, page)


def test_subpopulations_and_a_hostile_filter(uploaded):
    at = uploaded
    at.switch_page("pages/subpopulations.py").run()
    check(at, "subpopulations")
    next(b for b in at.button if b.label == "Compute").click().run()
    texts = check(at, "subpopulations computed")
    assert any("Worst subpopulation" in t for t in texts)
    # a filter naming an unknown category: the error echoes the expression and the categories
    at.text_input(key="w_filter").set_value(f'`{HOSTILE[3]}` == "{HOSTILE[1]}"').run()
    check(at, "filter")


@pytest.mark.parametrize("grouping", ["score", "covariate", "local"])
def test_groupings_show_hostile_groups_as_text(uploaded, grouping):
    uploaded.switch_page("pages/groupings.py").run()
    uploaded.radio(key="grouping_kind").set_value(grouping).run()
    check(uploaded, f"groupings {grouping}")


def test_an_upload_that_decompresses_past_the_budget_is_refused(monkeypatch):
    # 0.35 MB of gzip that decompresses to 240 MB, under a 400 MB memory budget (input budget
    # a quarter of it): refused before it is materialised, pointing at `mcviz screen`.
    import gzip

    monkeypatch.setenv("MCVIZ_MEMORY_BUDGET", "400MB")
    bomb = gzip.compress(b"score,label\n" + b"0.5,1\n" * 40_000_000, compresslevel=9)
    at = AppTest.from_file(APP, default_timeout=180).run()
    at.file_uploader(key="w_upload").set_value(("bomb.csv.gz", bomb, "application/gzip"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    messages = " ".join(e.value for e in at.error)
    assert "decompresses to more than" in messages
    assert "mcviz screen" in messages


def test_a_heavy_link_is_clamped_and_waits_for_a_click(monkeypatch):
    # The link that grew a served app by ~7 GB: under a 2 GB budget ℓ is reduced to fit, the
    # estimate is shown, and nothing runs until Compute is pressed.
    monkeypatch.setenv("MCVIZ_MEMORY_BUDGET", "2GB")
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update({"page": "subpopulations", "demo": "adult", "l": "20000",
                            "reps": "20", "m": "10", "sp": "1"})
    at.run()
    if not any(b.label == "Compute" for b in at.button):  # AppTest opens the default page
        at.switch_page("pages/subpopulations.py").run()
    assert not at.exception, [e.value for e in at.exception]
    notices = " ".join(i.value for i in at.info)
    assert "20,000 random subpopulations × 20 repeats" in notices
    assert "Press Compute" in notices
    assert at.number_input(key="w_l").value < 20_000  # clamped to the budget
    assert not any(m.label == "M" for m in at.metric)  # nothing was computed

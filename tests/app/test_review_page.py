"""AppTest of the Review page's verdict, finding clicks and deck (issue #26)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _review() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180).run()
    at.switch_page("pages/review.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _verdict_text(at: AppTest) -> str:
    return " ".join(m.value for m in at.markdown).replace("\\", "")


def _finding_buttons(at: AppTest) -> list:
    return [b for b in at.button if str(b.key).startswith("open_finding_")]


def test_verdict_search_finding_click_and_deck():
    pptx = pytest.importorskip("pptx")
    at = _review()
    text = _verdict_text(at)
    assert "Over all 48,842 rows the model is calibrated within what chance produces" in text
    assert "Groups are not examined yet" in text
    assert "Next step:" in text
    at.button(key="verdict_search").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["w_sub_mode"] == "searched"
    # The guided search confirms the Adult demo's one real region (low census weight, #30's
    # tests/search/test_search_adult.py): the verdict names it and offers it to open.
    assert "confirmed 1 finding" in _verdict_text(at)
    confirmed = len(_finding_buttons(at))
    assert confirmed >= 1
    finding = at.button(key="open_finding_1")
    label = finding.label.replace("\\", "")  # data-derived text: escaped Markdown
    assert label.startswith("#1 · Among rows with")
    assert "fnlwgt between" in label  # the low-census-weight region, in words
    assert "on held-out rows" in label
    assert not any(op in label for op in ("<", ">", "≥", "≤", "=="))
    assert "not confirmed" not in label  # confirmed: adjusted p < 0.05 (0.008 since #30's split)
    finding.click().run()
    assert at.session_state["w_scope"] == "sub"
    assert at.session_state["w_scope_sub"] == 1
    assert at.query_params["smode"] == "searched"
    assert at.query_params["ssub"] == "1"
    # a finding as the scope: stated by its own sentence, judged by Finding.confirmed
    assert label.split("· ", 1)[1] in _verdict_text(at)
    assert "Open Fix" in _verdict_text(at)
    at.button(key="review_deck_build").click().run()
    assert not at.exception, [e.value for e in at.exception]
    deck = at.session_state["review_deck_file"]
    assert deck[0] == "pptx"
    slides = list(pptx.Presentation(io.BytesIO(deck[1])).slides)
    texts = ["\n".join(s.text_frame.text for s in slide.shapes if s.has_text_frame)
             for slide in slides]
    # title, verdict, the scope's charts, each confirmed finding's slides, appendix
    assert texts[1].startswith("Verdict")
    assert any(label.split("· ", 1)[1] in text for text in texts)
    findings = [slide for slide, text in zip(slides, texts, strict=True)
                if text.startswith("Finding ")]
    assert len(findings) >= confirmed
    assert all(any(shape.has_chart for shape in slide.shapes) for slide in findings)


def test_report_is_headed_by_the_verdict():
    at = _review()
    verdict = next(m.value for m in at.markdown if "calibrated" in m.value).replace("\\", "")
    verdict = verdict.split("  \n")[0]  # the headline (the next step follows on its line)
    at.switch_page("pages/report.py").run()
    assert not at.exception, [e.value for e in at.exception]
    next(b for b in at.button if b.label == "Build the report").click().run()
    html = at.session_state["report_html"].decode()
    first = html.index("<h2>Verdict</h2>")
    assert first < html.index("<h2>Review")
    import html as html_module

    assert html_module.escape(verdict, quote=True) in html


def test_a_score_filter_is_drawn_and_judged_by_its_own_calibration():
    # bounded by the score alone, the group's deviation from the full population is zero by
    # construction: it showed a flat line and said "calibrated like the full population"
    import json

    shown = {}
    for expression in ("score_gbm >= 0.6", "age >= 50"):
        at = AppTest.from_file(APP, default_timeout=180)
        at.query_params.update({"page": "review", "demo": "adult", "scope": "filter",
                                "filter": expression})
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        first = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"]
        toggles = [t.key for t in at.toggle]
        shown[expression] = first, toggles, _verdict_text(at)
    first, toggles, text = shown["score_gbm >= 0.6"]
    assert first.startswith("Own calibration of the subpopulation"), first
    assert "w_review_own" not in toggles  # nothing to switch to
    assert "like the full population" not in text
    assert ("where the model predicts 60% or more (8,027 rows, 16.4% of all) is calibrated "
            "within what chance produces") in text  # its own words, not the deviation's
    first, toggles, text = shown["age >= 50"]  # a covariate's group keeps its deviation
    assert first.startswith("Deviation from the full population"), first
    assert "w_review_own" in toggles


def test_the_drill_down_of_a_score_filter_says_why_no_deviation_is_drawn():
    import json

    at = AppTest.from_file(APP, default_timeout=180).run()
    at.switch_page("pages/subpopulations.py").run()
    at.text_input(key="w_filter").set_value("score_gbm >= 0.6").run()
    assert not at.exception, [e.value for e in at.exception]
    said = " ".join(i.value for i in at.info).replace("\\", "")
    assert "Deviation from the full population: not drawn. Bounded by the model's score" in said
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert not any(t.startswith("Deviation") for t in titles), titles
    assert any(t.startswith("The subpopulation's own calibration") for t in titles), titles
    at.text_input(key="w_filter").set_value("age >= 50").run()  # a covariate: drawn
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert any(t.startswith("Deviation from the full population") for t in titles), titles

"""AppTest of the Compare page: the verdict, the tables, the charts, Review on a click, links."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from dashboard import links

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 300


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for e in at.info]
    return "\n".join(str(p) for p in parts).replace("\\", "").replace("\u2060", "")


def test_compare_page_shows_the_verdict_tables_and_groups():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page("pages/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    choice = at.selectbox(key="w_score2")
    assert "score_logistic" in choice.options
    choice.set_value("score_uncalibrated")
    at.text_input(key="w_cmp_thresholds").set_value("0.3").run()
    assert not at.exception, [e.value for e in at.exception]
    text = _texts(at)
    # the Adult demo: the uncalibrated score is worse than the GBM's (Brier 0.10 vs 0.09)
    assert "B predicts worse than A overall" in text
    assert "At a threshold of 0.3" in text
    assert "Next step:" in text
    assert "mcviz compare FILE --score score_gbm --label income_gt_50k --score-b " \
           "score_uncalibrated --thresholds 0.3 --json" in text
    frames = [d.value for d in at.dataframe]
    summary = next(f for f in frames if "statistic" in f.columns)
    assert list(summary["statistic"])[:2] == ["Brier score", "Log loss"]
    assert any("B − A per 1,000" in f.columns for f in frames)
    order = at.selectbox(key="w_cmp_order")
    assert order.value == "average score"
    assert "age" in order.options
    order.set_value("age").run()
    assert not at.exception, [e.value for e in at.exception]
    # the comparison's deck: built on a click, then offered for download
    build = next(b for b in at.button
                 if b.key and b.key.startswith("compare_deck_") and b.key.endswith("_build"))
    build.click().run()
    assert not at.exception, [e.value for e in at.exception]
    labels = [d.proto.label for d in at.get("download_button")]
    assert "Download the deck (PPTX)" in labels, labels


def test_a_group_opens_in_review():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page("pages/compare.py").run()
    at.selectbox(key="w_score2").set_value("score_logistic").run()
    assert not at.exception, [e.value for e in at.exception]
    # the logistic model is far worse than the GBM among rows with capital gains
    opens = [b for b in at.button if b.key and b.key.startswith("compare_open_worse")]
    assert opens
    label = opens[0].label
    opens[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["w_scope"] == "filter"
    assert label.endswith(at.session_state["w_filter"])


def test_the_link_restores_b_and_the_settings():
    state = {"w_score2": "score_logistic", "w_cmp_findings": 2, "w_cmp_thresholds": "0.2,0.4",
             "w_cmp_order": "age"}
    params = links.encode_state(state, "compare")
    assert params["page"] == "compare"
    assert (params["score2"], params["cf"], params["cthr"]) == ("score_logistic", "2", "0.2,0.4")
    restored = links.decode_params(params)
    assert restored.messages == ()
    assert restored.restored["w_score2"] == "score_logistic"
    assert restored.restored["w_cmp_findings"] == "2"  # text: the page reads it as a setting
    assert restored.page == "compare"


def test_a_malformed_link_value_falls_back_with_a_message():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update({"page": "compare", "demo": "adult", "cf": "999",
                            "score2": "score_logistic"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    warnings = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "cf='999'" in warnings
    assert at.number_input(key="w_cmp_findings").value == 3


def _review_b_text(at: AppTest) -> str:
    return "\n".join(str(m.value) for m in at.markdown if "Model B" in str(m.value))


def test_a_group_opens_in_review_with_both_models_and_its_link_reopens_it():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page("pages/compare.py").run()
    at.selectbox(key="w_score2").set_value("score_logistic").run()
    opens = [b for b in at.button if b.key and b.key.startswith("compare_open_worse")]
    assert opens
    opens[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["w_review_b"] == "score_logistic"
    shown = _review_b_text(at)  # the Review page: B's charts on the group's rows, under A's
    assert "Model B: `score_logistic`" in shown, shown
    assert "above: A, `score_gbm`" in shown
    figures = list(at.get("plotly_chart"))
    assert len(figures) >= 6  # A's four charts and B's two
    # the link of this view reopens it on a fresh server: the scope and both models
    state = {key: at.session_state[key] for key in ("w_scope", "w_filter", "w_review_b")}
    params = links.encode_state(state, "review")
    assert params["rb"] == "score_logistic"
    assert params["scope"] == "filter"
    fresh = AppTest.from_file(APP, default_timeout=TIMEOUT)
    fresh.query_params.update({**params, "demo": "adult"})
    fresh.run()
    assert not fresh.exception, [e.value for e in fresh.exception]
    assert fresh.session_state["w_filter"] == state["w_filter"]
    assert "Model B: `score_logistic`" in _review_b_text(fresh)
    # "Show A only" removes B; a link naming no column says so and shows A alone
    fresh.button(key="review_b_hide").click().run()
    assert _review_b_text(fresh) == ""
    bad = AppTest.from_file(APP, default_timeout=TIMEOUT)
    bad.query_params.update({**params, "demo": "adult", "rb": "no_such_column"})
    bad.run()
    assert not bad.exception, [e.value for e in bad.exception]
    assert "is not a column of this data" in " ".join(w.value for w in bad.warning)
    assert _review_b_text(bad) == ""

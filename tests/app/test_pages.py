"""AppTest tests of every dashboard page (app.py routes with st.navigation over pages/)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mcviz_app_testdata import synthetic_csv
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 120


def new_app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    return at.run()


def shown(markdown: str) -> str:
    """The text a reader sees: data-derived text is shown with Markdown escapes (and U+2060)."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def no_exceptions(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def upload(at: AppTest, raw: bytes, name: str = "predictions.csv") -> AppTest:
    """Drop a file on the Data page's uploader (shown at once: one action)."""
    at.file_uploader(key="w_upload").set_value((name, raw, "text/csv"))
    return at.run()


def test_data_page_loads_the_adult_demo():
    at = new_app()
    no_exceptions(at)
    assert metrics(at)["Rows read"] == "48,842"
    assert at.query_params["demo"] == "adult"


def test_letter_demo_is_multiclass():
    at = new_app()
    at.selectbox(key="w_demo").set_value("letter").run()
    no_exceptions(at)
    assert metrics(at)["Rows kept"] == "20,000"
    at.switch_page("pages/calibration.py").run()
    no_exceptions(at)
    assert "Kuiper D" in metrics(at)


def test_upload_and_column_mapping():
    at = upload(new_app(), synthetic_csv())
    no_exceptions(at)
    assert metrics(at)["Rows read"] == "3,000"
    assert at.query_params["sha"] == hashlib.sha256(synthetic_csv()).hexdigest()
    # map "group" away from the covariates and look at the calibration page
    key = next(w.key for w in at.multiselect if w.key and w.key.startswith("map_covs"))
    at.multiselect(key=key).set_value(["x"]).run()
    no_exceptions(at)
    assert metrics(at)["Covariates"] == "1"
    at.switch_page("pages/calibration.py").run()
    no_exceptions(at)
    assert float(metrics(at)["Kuiper D"]) > 0


def test_bad_file_shows_a_message_next_to_the_score_widget():
    at = upload(new_app(), synthetic_csv(bad_scores=3))
    no_exceptions(at)
    messages = [shown(e.value) for e in at.error]
    assert any("lie outside [0, 1]" in m and "'score'" in m for m in messages), messages
    # the drop-invalid checkbox fixes it and the summary reports the dropped rows
    key = next(w.key for w in at.checkbox if w.key and w.key.startswith("map_drop"))
    at.checkbox(key=key).check().run()
    no_exceptions(at)
    assert metrics(at)["Rows dropped"] == "3"


def test_text_in_the_score_column_stops_with_its_message(bad_score_frame):
    # Issue 31: a `score` column with one non-number was replaced by another [0, 1] column
    # (x0) without a word; now the mapping keeps `score` and the loader's message names it.
    frame = bad_score_frame(500)
    at = upload(new_app(), frame.to_csv(index=False).encode())
    no_exceptions(at)
    messages = [shown(e.value) for e in at.error]
    assert any("column 'score'" in m and "not numbers" in m and "--drop-invalid" in m
               for m in messages), messages
    assert at.selectbox(key=next(w.key for w in at.selectbox
                                 if w.key and w.key.startswith("map_score"))).value == "score"
    # the checkbox drops the row and analyses `score`; the role line says so
    key = next(w.key for w in at.checkbox if w.key and w.key.startswith("map_drop"))
    at.checkbox(key=key).check().run()
    no_exceptions(at)
    assert metrics(at)["Rows dropped"] == "1"
    roles = [shown(m.value) for m in at.markdown if "Columns:" in m.value]
    assert roles, [m.value for m in at.markdown]
    assert "score 'score', label 'label', unweighted" in roles[0], roles


def test_label_dependent_weights_void_the_p_values_on_every_page():
    # Issue 31: low-prevalence weights (Appendix B) depend on the labels: no page may show a
    # Brownian or classical p-value as if it held.
    at = new_app()
    key = next(w.key for w in at.selectbox if w.key and w.key.startswith("map_weighting"))
    at.selectbox(key=key).set_value("low-prevalence").run()
    no_exceptions(at)
    void = "not valid with label-dependent weights — use the null draws"
    assert any(void in w.value for w in at.warning), [w.value for w in at.warning]
    for page in ("calibration", "review", "variables", "subpopulations", "report"):
        at.switch_page(f"pages/{page}.py").run()
        no_exceptions(at)
        assert any(void in w.value for w in at.warning), (page, [w.value for w in at.warning])
        # issue 39: the magnitudes come from the reweighting, the unweighted D/σ beside them
        said = [w.value for w in at.warning if "Magnitudes come from the low-prevalence" in w.value]
        assert said, (page, [w.value for w in at.warning])
        assert "unweighted, D/σ is" in said[0]
        if page == "calibration":
            assert metrics(at)["p-value"] == "not valid"


def test_unreadable_file_shows_a_message():
    at = upload(new_app(), b"\x00\x01 not a table", name="junk.csv")
    no_exceptions(at)
    assert at.error, "expected a readable error message"


def test_calibration_page_compares_two_scores():
    at = new_app()
    at.switch_page("pages/calibration.py").run()
    no_exceptions(at)
    at.selectbox(key="w_score2").set_value("score_logistic").run()
    no_exceptions(at)
    assert sum(m.label == "Kuiper D" for m in at.metric) == 2
    assert at.query_params["score2"] == "score_logistic"


def test_subpopulations_compute_select_and_filter():
    at = new_app()
    at.switch_page("pages/subpopulations.py").run()
    at.number_input(key="w_l").set_value(200)
    at.button[0].click().run()
    no_exceptions(at)
    assert "M/σ₀" in metrics(at)
    # before its null distribution the argmax is stated as untested, never in a success box
    assert any("Worst subpopulation \\(argmax" in s.value for s in at.info)
    argmax = at.session_state["w_selected"]
    other = 5 if argmax != 5 else 6
    at.selectbox(key="w_selected").set_value(other).run()
    no_exceptions(at)
    assert at.query_params["sub"] == str(other)
    assert any(" rows (" in m.value for m in at.markdown)
    at.text_input(key="w_filter").set_value('age >= 40 and sex == "Female"').run()
    no_exceptions(at)
    at.text_input(key="w_filter").set_value("age >>= 40").run()
    assert any("filter" in e.value for e in at.error)


def test_query_parameters_restore_the_view():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update({"page": "subpopulations", "demo": "adult", "l": "150", "m": "100",
                            "seed": "3", "sp": "1", "sub": "7", "bins": "5, 10, 15"})
    at.run()
    no_exceptions(at)
    assert [h.value for h in at.header] == ["Subpopulations"]
    assert at.session_state["w_selected"] == 7
    assert at.session_state["w_l"] == 150
    assert at.query_params["bins"] == "5, 10, 15"


def test_shared_link_to_an_upload_waits_for_the_same_file():
    raw = synthetic_csv()
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    mapping = ('{"covariates":["x"],"drop_invalid":false,"label":"label","nominal":[],'
               '"positive":null,"probabilities":[],"score":"score","weight":null}')
    at.query_params.update({"sha": hashlib.sha256(raw).hexdigest(), "map": mapping})
    at.run()
    no_exceptions(at)
    assert any("Drop the same file" in i.value for i in at.info)
    at.file_uploader[0].set_value(("again.csv", raw, "text/csv"))
    at.run()
    no_exceptions(at)
    assert metrics(at)["Covariates"] == "1"


def test_groupings_page():
    at = new_app()
    at.switch_page("pages/groupings.py").run()
    no_exceptions(at)
    at.radio(key="grouping_kind").set_value("covariate").run()
    no_exceptions(at)
    at.multiselect(key="grouping_columns").set_value(["sex"]).run()
    no_exceptions(at)
    groups = set(at.dataframe[-1].value["group"])
    assert any("Male" in g for g in groups), groups
    at.multiselect(key="grouping_columns").set_value(["race"]).run()
    no_exceptions(at)
    groups = set(at.dataframe[-1].value["group"])
    assert any("White" in g for g in groups), groups  # recomputed for the new column
    columns = set(at.dataframe[-1].value.columns)  # headers in words (#40), not field names
    assert {"rows", "effective rows", "standard error", "mean response"} <= columns, columns
    assert not {"effective_size", "mean_label"} & columns
    agglomerations = list(at.dataframe[0].value["agglomeration"])
    assert "mean over the worst 10% of groups (cvar:0.9)" in agglomerations, agglomerations


def test_variables_page():
    at = new_app()
    at.switch_page("pages/variables.py").run()
    no_exceptions(at)
    # one naming of covariate kinds everywhere: the Variable list says each kind (the ranking
    # table leaves it out to fit the page, #40)
    options = at.selectbox(key="w_variable").options
    kinds = {option.rsplit("(", 1)[-1].rstrip(")") for option in options}
    assert kinds == {"ordinal", "nominal"}, options


def _chart_titles(at: AppTest) -> str:
    return " ".join(json.loads(c.proto.spec)["layout"]["title"]["text"]
                    for c in at.get("plotly_chart"))


def test_switching_between_numeric_variables_redraws_their_curves():
    at = new_app()
    at.switch_page("pages/variables.py").run()
    at.selectbox(key="w_variable").set_value("age").run()
    no_exceptions(at)
    assert "Error and predicted error along age" in _chart_titles(at)
    at.selectbox(key="w_variable").set_value("hours_per_week").run()
    no_exceptions(at)
    titles = _chart_titles(at)
    assert "Error and predicted error along hours_per_week" in titles
    assert "Calibration gap along hours_per_week" in titles
    assert "along age" not in titles


def test_a_page_opened_directly_loads_the_demo():
    """A page script run on its own (as on a fresh server) draws the whole app."""
    at = AppTest.from_file(str(Path(APP).parent / "pages" / "variables.py"),
                           default_timeout=TIMEOUT).run()
    no_exceptions(at)
    assert [h.value for h in at.header] == ["Variables"]
    assert at.sidebar.toggle(key="w_presentation") is not None  # app.py's sidebar
    assert at.sidebar.text_input(key="w_bins").value == "10, 20, 50"
    assert not [i.value for i in at.info if "Load a file" in i.value]
    assert "Kuiper D" in metrics(at)


def test_report_download_content():
    at = upload(new_app(), synthetic_csv(), name="<script>alert(1)</script>.csv")
    at.switch_page("pages/subpopulations.py").run()
    at.number_input(key="w_l").set_value(100)
    at.button[0].click().run()
    at.switch_page("pages/report.py").run()
    no_exceptions(at)
    next(b for b in at.button if b.label == "Build the report").click().run()
    no_exceptions(at)
    html = at.session_state["report_html"].decode()
    assert html.count("Plotly.newPlot(") >= 2
    assert html.count("<script type='text/javascript'>") == 1  # plotly.js inlined once
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;.csv" in html
    assert "Worst subpopulation (argmax" in html
    assert next(d.label for d in at.get("download_button")) == "Download report.html"


def test_presentation_mode_is_in_the_link_and_keeps_pages_working():
    at = new_app()
    at.toggle(key="w_presentation").set_value(True).run()
    no_exceptions(at)
    assert at.query_params["pm"] == "1"
    at.switch_page("pages/calibration.py").run()
    no_exceptions(at)
    assert "Kuiper D" in metrics(at)


def test_variables_page_switches_between_ordinal_and_nominal_variables():
    at = new_app()
    at.switch_page("pages/variables.py").run()
    at.selectbox(key="w_variable").set_value("age").run()
    no_exceptions(at)
    assert at.query_params["var"] == "age"
    at.selectbox(key="w_variable").set_value("occupation").run()
    no_exceptions(at)
    assert at.dataframe, "expected the per-level table"


def test_no_chart_sends_more_than_250_kb():
    at = new_app()
    for page in ("calibration", "variables", "subpopulations"):
        at.switch_page(f"pages/{page}.py").run()
        if page == "subpopulations":
            at.button[0].click().run()
        no_exceptions(at)
        charts = at.get("plotly_chart")
        assert charts, page
        for chart in charts:
            assert len(chart.proto.spec) <= 250_000, (page, len(chart.proto.spec))


def test_reweighting_flows_into_every_statistic():
    at = new_app()
    key = next(w.key for w in at.selectbox if w.key and w.key.startswith("map_weighting"))
    at.selectbox(key=key).set_value("low-prevalence").run()
    no_exceptions(at)
    assert '"weighting":"low-prevalence"' in at.query_params["map"]
    at.switch_page("pages/calibration.py").run()
    no_exceptions(at)
    assert "weighted bins" in " ".join(m.value for m in at.markdown)


def test_reweighting_from_the_subpopulations_page_recomputes_m():
    at = new_app()
    at.switch_page("pages/subpopulations.py").run()
    at.number_input(key="w_l").set_value(100)
    at.button[0].click().run()
    no_exceptions(at)
    unweighted = metrics(at)["M"]
    at.selectbox(key="sub_weighting").set_value("proportional").run()
    no_exceptions(at)
    assert '"weighting":"proportional"' in at.query_params["map"]
    assert '"rho":0.01' in at.query_params["map"]
    assert metrics(at)["M"] != unweighted  # recomputed on the new weights, not stale
    at.switch_page("pages/data.py").run()
    key = next(w.key for w in at.selectbox if w.key and w.key.startswith("map_weighting"))
    assert at.selectbox(key=key).value == "proportional"


def test_real_valued_labels_use_the_appendix_c_sigma():
    rng = np.random.default_rng(4)
    score = rng.uniform(0.05, 0.95, 2000)
    frame = pd.DataFrame({"score": score.round(4),
                          "rate": np.clip(score + rng.normal(0, 0.1, 2000), 0, 1).round(4),
                          "x": rng.uniform(size=2000).round(3)})
    at = upload(new_app(), frame.to_csv(index=False).encode(), name="rates.csv")
    no_exceptions(at)
    assert any("'rate'" in shown(e.value) and "neither 0 nor 1" in shown(e.value)
               for e in at.error)
    key = next(w.key for w in at.checkbox if w.key and w.key.startswith("map_response"))
    at.checkbox(key=key).check().run()
    no_exceptions(at)
    assert not at.error
    assert metrics(at)["Rows kept"] == "2,000"
    for page in ("pages/calibration.py", "pages/variables.py", "pages/subpopulations.py"):
        at.switch_page(page).run()
        no_exceptions(at)
    at.switch_page("pages/calibration.py").run()
    assert float(metrics(at)["Kuiper D"]) > 0
    assert '"response":"continuous"' in at.query_params["map"]


def test_screening_table_opens_and_drills_down(tmp_path, capsys, monkeypatch):
    from mcviz.cli import main

    monkeypatch.setenv("MCVIZ_DATA_ROOTS", str(tmp_path))  # the server reads only its data roots

    rng = np.random.default_rng(8)
    n = 5000
    score = rng.uniform(0.05, 0.95, n).round(3)
    x = rng.uniform(size=n).round(3)
    truth = np.where(x > 0.8, np.minimum(score + 0.2, 1), score)
    data = tmp_path / "logs.parquet"
    pd.DataFrame({"score": score, "label": (rng.random(n) < truth).astype(int), "x": x,
                  "g": rng.choice(["u", "v"], n)}).to_parquet(data, row_group_size=1000)
    out = tmp_path / "screen.parquet"
    assert main(["screen", str(data), "--engine", "duckdb", "--subpopulations", "60",
                 "--out", str(out), "--json"]) == 0
    argmax = json.loads(capsys.readouterr().out)["argmax"]
    at = new_app()
    at.switch_page("pages/screening.py").run()
    no_exceptions(at)
    at.file_uploader(key="screen_upload").set_value(
        ("screen.parquet", out.read_bytes(), "application/octet-stream")).run()
    no_exceptions(at)
    assert metrics(at)["Rows screened"] == "5,000"
    assert argmax["description"] in shown(at.info[0].value)
    # picked for its value among 60: never judged by its own p (no null here)
    assert "Largest of 60: not yet tested against chance." in shown(at.info[0].value)
    assert not at.success
    assert metrics(at)["p-value"] == "not tested"
    # the drill-down opens on the argmax and reads exactly its rows
    assert f"{argmax['size']:,} rows read" in " ".join(m.value for m in at.markdown)
    assert float(metrics(at)["Kuiper D"]) == pytest.approx(argmax["kuiper"], rel=1e-3)
    # a plain Parquet file is a message, not a traceback
    at.file_uploader(key="screen_upload").set_value(
        ("plain.parquet", data.read_bytes(), "application/octet-stream")).run()
    no_exceptions(at)
    assert any("no mcviz screening context" in e.value for e in at.error)


# --------------------------------------------------------------------------------------------
# What the pages draw


def figures(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _title(figure: dict) -> str:
    return figure["layout"].get("title", {}).get("text", "")


def assert_review_grid(at: AppTest, bins: tuple[int, ...] = (10, 20, 50)) -> list[dict]:
    """The four charts: triangle, one reliability panel per bin count, LOESS bands, LCS curve."""
    no_exceptions(at)
    drawn = figures(at)
    assert len(drawn) == 4, [_title(f) for f in drawn]
    cumulative, reliability, curves, lcs = drawn
    assert any(t.get("name", "").startswith("±2σ") and t.get("fill") == "toself"
               for t in cumulative["data"]), "the triangle"
    assert "D/σ" in _title(cumulative)  # headline numbers in the chart's own title
    panels = [a["text"] for a in reliability["layout"]["annotations"] if "bins" in a["text"]]
    assert panels == [f"{k} bins" for k in bins]
    diagonals = [t for t in reliability["data"] if t.get("name") == "perfect calibration"]
    assert len(diagonals) == len(bins)
    bands = [t for t in curves["data"] if t.get("fill") == "toself"]
    assert {t["name"] for t in bands} == {"error rate: 95% band",
                                          "predicted error: 95% band"}
    assert "VECE" in _title(curves)
    assert any(t.get("name", "").startswith("observed rate, local") for t in lcs["data"]), "the LCS curve"
    assert "LCS" in _title(lcs)
    return drawn


def test_review_page_draws_the_four_charts_of_the_full_population():
    at = new_app()
    at.switch_page("pages/review.py").run()
    assert [h.value for h in at.header] == ["Review"]
    drawn = assert_review_grid(at)
    assert "Cumulative differences" in _title(drawn[0])
    # no metric row floats between the charts: every number is in a title
    assert not at.metric


def test_review_page_follows_the_bin_counts_and_the_variable():
    at = new_app()
    at.switch_page("pages/review.py").run()
    at.sidebar.text_input(key="w_bins").set_value("5, 8").run()
    at.selectbox(key="w_variable").set_value("hours_per_week").run()
    drawn = assert_review_grid(at, bins=(5, 8))
    assert "along hours_per_week" in _title(drawn[2])
    assert at.query_params["var"] == "hours_per_week"


def test_review_of_the_argmax_subpopulation_and_its_own_calibration():
    at = new_app()
    at.switch_page("pages/subpopulations.py").run()
    at.number_input(key="w_l").set_value(100)
    at.button[0].click().run()
    argmax = next(s.value for s in at.info if "argmax" in s.value)  # untested: not a success
    at.switch_page("pages/review.py").run()
    at.selectbox(key="w_scope").set_value("argmax").run()
    drawn = assert_review_grid(at)
    assert "Deviation from the full population" in _title(drawn[0])
    assert drawn[0]["data"][0]["name"] == "subpopulation − full population, summed"
    assert any(t.get("legendgroup") == "sub" for t in drawn[1]["data"])  # against the full
    description = argmax.split("\\: ", 1)[1].split(" — ")[0]  # escaped, as the caption shows it
    shown = [c for c in at.caption if c.value.endswith(" of 48,842 rows")]
    assert shown
    # the group is named on hover; the verdict's headline names it and how it was chosen (#40)
    assert all(c.proto.help.strip() for c in shown)
    headline = next(m.value for m in at.markdown if "Next step" in m.value)
    assert "not yet tested against chance" in headline.split("Next step")[0]
    at.toggle(key="w_review_own").set_value(True).run()
    drawn = assert_review_grid(at)
    assert "Own calibration" in _title(drawn[0])
    assert at.query_params["scope"] == "argmax"


def test_review_of_a_filter_a_level_and_a_generated_id():
    at = new_app()
    at.switch_page("pages/review.py").run()
    at.selectbox(key="w_scope").set_value("filter").run()
    at.text_input(key="w_filter").set_value('sex == "Female"').run()
    drawn = assert_review_grid(at)
    assert "n = 16,192" in _title(drawn[2])  # the LOESS curves use the scope's rows only
    at.selectbox(key="w_scope").set_value("level").run()
    at.selectbox(key="w_variable").set_value("sex").run()
    no_exceptions(at)
    assert len(figures(at)) == 4
    at.selectbox(key="w_scope").set_value("sub").run()  # nothing computed yet: a message
    no_exceptions(at)
    assert any("Subpopulations page" in w.value for w in at.warning)  # and the full population


def test_review_link_restores_the_scope():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update({"page": "review", "demo": "adult", "scope": "filter",
                            "filter": "age >= 50", "var": "age"})
    at.run()
    assert [h.value for h in at.header] == ["Review"]
    drawn = assert_review_grid(at)
    assert at.text_input(key="w_filter").value == "age >= 50"
    assert "along age" in _title(drawn[2])
    assert "n = 10,674" in _title(drawn[2])  # the rows with age >= 50 only


@pytest.mark.parametrize("query", [
    {"demo": "adult", "map": "[1,2]"},
    {"demo": "adult", "map": '{"rho":"x","score":"score_gbm"}'},
    {"demo": "adult", "l": "9" * 300, "page": "subpopulations"},
    {"demo": "adult", "zzz": "1", "scope": "nonsense", "page": "review"},
    {"sha": "not-a-digest", "page": "report"},
])
def test_a_malformed_link_is_a_message_not_a_traceback(query):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    at.run()
    no_exceptions(at)
    # the message is escaped Markdown (served: data-derived text shown literally)
    assert any(w.value.replace("\\", "").startswith("Shared link:") for w in at.warning)


def test_report_uses_the_shared_runs_with_every_repeat_and_the_review_grid():
    at = new_app()
    at.switch_page("pages/subpopulations.py").run()
    at.number_input(key="w_l").set_value(100)
    at.number_input(key="w_repeats").set_value(2)
    at.button[0].click().run()
    no_exceptions(at)
    shown = at.dataframe[0].value
    assert list(shown["seed"]) == ["0", "1"] or list(shown["seed"]) == [0, 1]
    at.switch_page("pages/report.py").run()
    no_exceptions(at)
    next(b for b in at.button if b.label == "Build the report").click().run()
    html = at.session_state["report_html"].decode()
    assert "M of every repeat (seeds)" in html
    assert "Review: full population" in html
    assert "class='grid'" in html
    assert all("<" not in option for option in at.selectbox(key="image_chart").options)


def test_upload_is_one_action_and_the_demo_until_then():
    at = new_app()
    assert at.file_uploader(key="w_upload") is not None  # on screen at once
    assert metrics(at)["Rows read"] == "48,842"  # the demo is analysed meanwhile
    at = upload(at, synthetic_csv())
    no_exceptions(at)
    assert metrics(at)["Rows read"] == "3,000"  # no further click
    at.selectbox(key="w_demo").set_value("letter").run()
    assert metrics(at)["Rows read"] == "20,000"


def test_variables_page_shows_weighted_means_beside_weighted_statistics():
    at = new_app()
    key = next(w.key for w in at.selectbox if w.key and w.key.startswith("map_weighting"))
    at.selectbox(key=key).set_value("low-prevalence").run()
    at.switch_page("pages/variables.py").run()
    at.selectbox(key="w_variable").set_value("sex").run()
    no_exceptions(at)
    table = at.dataframe[-1].value
    assert "weighted mean score" in table.columns
    assert "weighted mean response" in table.columns
    from mcviz import load_predictions, read_table
    from mcviz.io import demo_path
    from mcviz.stats.weighting import reweight

    pred = reweight(load_predictions(read_table(demo_path("adult")), score="score_gbm",
                                     label="income_gt_50k"), "low-prevalence")
    female = (pred.covariates["sex"] == "Female").to_numpy()
    expected = np.average(pred.label[female], weights=pred.weight[female])
    row = table[table["level"].str.contains("Female")].iloc[0]
    assert float(row["weighted mean response"]) == pytest.approx(expected, rel=1e-3)

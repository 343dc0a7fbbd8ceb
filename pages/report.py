"""Report page: a self-contained HTML report, CSV tables and PNG/SVG charts."""

import json
import re

import pandas as pd
import streamlit as st

from dashboard import charts, runs, ui
from dashboard import state as s
from dashboard.text import escape_markdown
from mcviz import __version__, cumulative_differences
from mcviz.stats.deviation import subpopulation_deviation
from mcviz.errors import ValidationError
from mcviz.present.figures import deviation_figure, escape_figure, format_number
from mcviz.io import VOID_P_VALUES
from mcviz.present.report import (
    ExportUnavailableError,
    ReportSection,
    chromium_path,
    figure_image,
    html_report,
)

ui.setup_page("report", "Report")
analysis = ui.require_current()
pred = analysis.pred
runs_ = ui.subpopulation_runs(analysis)  # the Subpopulations page's runs, every repeat


def _chart_name(section: str, number: int, figure) -> str:
    """Plain text for the chart picker: the title without its subtitle or markup."""
    title = re.sub(r"<[^>]*>", " ", (figure.layout.title.text or "chart").split("<br>")[0])
    return f"{section} — {number + 1}: {' '.join(title.split())}"[:120]


def _numbers(result) -> tuple[tuple[str, str], ...]:
    return (("Kuiper D", format_number(result.kuiper)), ("KS G", format_number(result.ks)),
            ("σ", format_number(result.sigma)), ("D/σ", format_number(result.kuiper_z)),
            ("p-value", format_number(result.p_value, kind="p") if result.p_value == result.p_value
             else VOID_P_VALUES))


def calibration_section(item: ui.Current) -> ReportSection:
    result = ui.compute("cumulative", item.key, cumulative_differences, item.pred)
    figures = [ui.cumulative_fig(
        result, title=f"Cumulative differences: {item.pred.score_column}",
        cache=f"cum:{item.key}")]
    figures.extend(fig for _, fig in charts.extra_calibration_figures(item))
    tables = (("Classical calibration metrics", charts.metrics_table(item)),)
    return ReportSection(f"Calibration of {item.pred.score_column}", metrics=_numbers(result),
                         figures=tuple(figures), tables=tables)


def subpopulation_section() -> tuple[ReportSection | None, pd.DataFrame | None]:
    if not runs_:
        return None, None
    result = runs_[0].result
    table = result.table
    argmax = result.argmax
    figures = []
    if deviation_figure is not None:
        deviation = ui.compute(f"deviation:{argmax.description}", analysis.key,
                               subpopulation_deviation, pred, argmax.index)
        figures.append(ui.figure(deviation_figure, deviation,
                                 f"dev:{analysis.key}:{argmax.description}"))
    own = ui.compute(f"own:{argmax.description}", analysis.key, runs.own_cumulative, pred,
                     argmax.index)
    figures.append(ui.cumulative_fig(own, title="The subpopulation's own calibration",
                                     cache=f"own:{analysis.key}:{argmax.description}"))
    top = table.sort_values("normalized", ascending=False).head(50)
    section = ReportSection(
        "Multi-calibration over random subpopulations",
        text=(f"Worst subpopulation (argmax, #{argmax.id}): {argmax.description} "
              f"({argmax.size:,} rows).",
              "Path of splits: " + (" → ".join(str(c) for c in argmax.conditions) or "none")),
        metrics=(("M", format_number(result.metric)), ("M/σ₀", format_number(result.metric_z)),
                 ("Multi-ablate", format_number(result.ablate)),
                 ("Expectation", format_number(result.expectation)),
                 ("Subpopulations", f"{result.n_subpopulations:,}")),
        figures=tuple(figures),
        tables=(("Top 50 subpopulations by normalised value", top),
                *((("M of every repeat (seeds)", runs.repeats_table(runs_)),)
                  if len(runs_) > 1 else ())),
    )
    return section, table


def build_sections(report) -> tuple[list[ReportSection], pd.DataFrame | None, list[str]]:
    """Every section of the report (the computations are cached), reporting progress."""
    notes = []
    report(0.0, "calibration")
    sections = [calibration_section(analysis)]
    score2 = st.session_state.get(s.W_SCORE2, ui.NO_SCORE)
    if score2 != ui.NO_SCORE:
        report(0.2, f"calibration of {score2}")
        try:
            sections.append(calibration_section(analysis.with_score(score2)))
        except ValidationError as error:
            notes.append(f"Second score column left out: {error}")
    report(0.4, "variables")
    sections.extend(charts.variables_section(analysis))
    report(0.7, "review grid")
    sections.insert(0, charts.review_section(analysis, runs_))
    # the verdict heads the report, as it heads the Review page and the deck
    sections.insert(0, ReportSection("Verdict", text=tuple(verdict.sentences)))
    sections.extend(ReportSection(extra.title, text=tuple(extra.sentences),
                                  metrics=tuple(extra.facts)) for extra in verdict.sections)
    report(0.9, "subpopulations")
    subpop_section, subpop_table = subpopulation_section()
    if subpop_section is not None:
        sections.append(subpop_section)
    for section in sections:  # plotly renders HTML in its text: data must stay text
        for figure in section.figures:
            escape_figure(figure)
    return sections, subpop_table, notes


verdict = charts.current_verdict(analysis, runs_)
sections, subpop_table, notes = ui.run_with_progress(
    f"report|{analysis.key}|{st.session_state.get(s.W_SCORE2)}|{ui.bin_counts()}|"
    f"{st.session_state.get(s.SUBPOP)}", "Preparing the report", build_sections)
held = st.session_state.get("monitor_report")  # the Monitor page's charts (issue 29)
if held is not None and held[0] == analysis.key:
    from dashboard.monitor import report_section

    sections = [*sections, report_section(held[1])]
    for figure in sections[-1].figures:
        escape_figure(figure)
for note in notes:
    ui.show_warning(note)
if subpop_table is None:
    st.caption("Compute subpopulations on the Subpopulations page to add them to the report.")

source = analysis.source
summary = {
    "source": source["name"] if source["kind"] == "demo" else f"upload: {source['name']}",
    "SHA-256": source.get("digest") or "embedded demo",
    "rows read": f"{pred.report.n_read:,}", "rows kept": f"{pred.report.n_kept:,}",
    "rows dropped": f"{pred.report.n_dropped:,}",
    "weighted": "yes" if pred.weighted else "no",
}
mapping = {k: (", ".join(map(str, v)) if isinstance(v, list | tuple) else v)
           for k, v in json.loads(analysis.mapping.to_json()).items() if v not in (None, [], "")}
settings = {"bin counts": ", ".join(map(str, ui.bin_counts()))}
if st.session_state.get(s.SUBPOP):
    chosen = st.session_state[s.SUBPOP]
    settings.update({"ℓ": chosen["n_subpopulations"], "m": chosen["min_size"],
                     "seed": chosen["seed"], "repeats": chosen.get("repeats", 1),
                     "covariates": ", ".join(chosen["covariates"])})

st.subheader("HTML report")
st.caption("One self-contained file (plotly.js inlined once; works offline) with the dataset "
           "summary, column mapping, settings, every chart and table above, and the argmax "
           "drill-down.")
if st.button("Build the report", type="primary"):
    with st.spinner("Building the report…"):
        st.session_state["report_html"] = html_report(
            sections, summary=summary, mapping=mapping, settings=settings, version=__version__,
        ).encode("utf-8")
if st.session_state.get("report_html"):
    st.download_button("Download report.html", st.session_state["report_html"],
                       file_name="mcviz-report.html", mime="text/html", key="download_report")

st.subheader("Deck")
charts.deck_buttons(analysis, verdict, runs_, key="report_deck")

st.subheader("Tables (CSV)")
if subpop_table is not None:
    ui.csv_download("Subpopulations (CSV)", subpop_table, "subpopulations.csv")
for section in sections:
    for caption, frame in section.tables:
        ui.csv_download(f"{escape_markdown(section.title)}: {escape_markdown(caption)} (CSV)",
                        frame,
                        f"{caption[:40].replace(' ', '_')}.csv",
                        key=f"csv_{section.title}_{caption}")

st.subheader("Charts as PNG or SVG")
images = {_chart_name(section.title, i, fig): fig
          for section in sections for i, fig in enumerate(section.figures)}
if chromium_path() is None:
    st.info("PNG/SVG export needs the chromium browser, which is not installed on this server "
            "(`apt-get install chromium`). Each chart's toolbar camera button still saves an "
            "image from your browser.")
else:
    name = st.selectbox("Chart", list(images), key="image_chart")
    fmt = st.radio("Format", ["png", "svg"], horizontal=True, key="image_format")
    if st.button("Render image"):
        try:
            with st.spinner("Rendering with chromium…"):
                st.session_state["image"] = (name, fmt, figure_image(images[name], fmt))
        except ExportUnavailableError as error:
            ui.show_warning(error)
    image = st.session_state.get("image")
    if image is not None and image[0] == name and image[1] == fmt:
        st.download_button(f"Download {fmt.upper()}", image[2], file_name=f"mcviz-chart.{fmt}",
                           mime="image/png" if fmt == "png" else "image/svg+xml")
ui.sync()

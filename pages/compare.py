"""Compare page: the model in production (A) against a challenger (B) on the same labelled rows.

B is a second score column of the data, or a challenger's file joined on an id column. The
verdict in words (statistics on hover), A and B side by side, the paired cumulative differences
of their losses along a chosen variable, the groups where B is worse or better (a click opens
them in Review), and the net benefit at the decision thresholds.
"""

import streamlit as st

from dashboard import charts, comparing, ui
from dashboard import state as s
from dashboard.text import code, escape_markdown
from mcviz.compare import AVERAGE_SCORE
from mcviz.errors import ValidationError
from mcviz.present.figures import paired_cumulative_figure, paired_residuals_figure
from mcviz.settings import CompareSettings, DecisionSettings
from mcviz.text import display_text

ui.setup_page("compare", "Compare two models")
analysis = ui.require_current()
pred, mapping, frame = analysis.pred, analysis.mapping, analysis.frame
if pred.multiclass:
    st.info("Comparing models needs a binary score (this data has per-class probabilities).")
    st.stop()

FILE_OPTION = "(the challenger's file…)"
candidates = ui.compute("score_candidates", analysis.source_key, ui.score_candidates, frame)
options = [c for c in candidates if c != mapping.score and c != mapping.label]
choices = [*options, FILE_OPTION]
ui.selectbox_state(s.W_SCORE2, choices, options[0] if options else FILE_OPTION)
values, link_messages = comparing.widget_values(st.session_state)
for key, value in values.items():
    st.session_state[key] = value
for message in link_messages:
    ui.show_warning(f"Shared link: {message}")

pick_b, pick_thresholds, pick_findings, pick_holdout, pick_seed = st.columns(
    [2.6, 2.2, 1.2, 1.2, 1], vertical_alignment="bottom")
pick_b.selectbox(f"B, the challenger (A is {display_text(mapping.score)})", choices,
                 key=s.W_SCORE2, help="A second score column of the data, or a file with the "
                 "challenger's scores joined on an id column.")
pick_thresholds.text_input(**DecisionSettings.setting("thresholds").widget(),
                           key=s.W_CMP_THRESHOLDS)
for slot, key, name in ((pick_findings, s.W_CMP_FINDINGS, "n_findings"),
                        (pick_holdout, s.W_CMP_HOLDOUT, "holdout"),
                        (pick_seed, s.W_CMP_SEED, "seed")):
    slot.number_input(**CompareSettings.setting(name).widget(), key=key)

compared, scores_b, name_b = pred, None, st.session_state[s.W_SCORE2]
join_name = None  # B's column when it comes from the challenger's file (not in the data)
if name_b == FILE_OPTION:
    upload = st.file_uploader("The challenger's file (CSV, TSV, Parquet): an id column and B's "
                              "scores", type=["csv", "tsv", "txt", "parquet", "pq", "gz", "zip"],
                              key="w_cmp_upload")
    if upload is None:
        st.info("Drop the challenger's file, or pick a second score column above.")
        st.stop()
    try:
        digest, challenger = ui.read_upload(upload.name, upload.getvalue())
    except ValidationError as error:
        ui.show_error(error)
        st.stop()
    shared = [c for c in challenger.columns if c in frame.columns]
    pick_id, pick_score = st.columns(2)
    id_column = pick_id.selectbox("Id column (in both files)", shared, key="w_cmp_id")
    score_column = pick_score.selectbox("B's score column", list(challenger.columns),
                                        key="w_cmp_score")
    try:
        joined, join = ui.compute(f"compare_join:{digest}", analysis.source_key,
                                  comparing.challenger_scores, frame, challenger,
                                  id_column=id_column, score_b=score_column)
        compared = ui.predictions_for(f"{analysis.source_key}|join:{digest}:{id_column}",
                                      mapping, joined)
    except ValidationError as error:
        ui.show_error(error)
        st.stop()
    ui.caption(join.sentence())
    name_b, scores_b, key = join.score_column, joined[join.score_column], f"join:{digest}"
    join_name = name_b
else:
    scores_b, key = frame[name_b], ""

try:
    request = comparing.request_from_state(st.session_state, name_b)
    with st.spinner("Comparing the two models (the search for groups runs on held-out rows)…"):
        result = ui.compute(f"compare:{key}", analysis.key, comparing.run_comparison, compared,
                            scores_b.to_numpy(), **request.options())
except ValidationError as error:
    ui.show_error(error)
    st.stop()

with st.container(key="verdict"):
    for line in comparing.verdict_lines(result):
        st.markdown(f"{comparing.MARKS[line.kind]} {escape_markdown(line.text)}",
                    help=line.help)
    ui.show_info(f"Next step: {result.next_step}")

st.markdown(f"**A = {code(result.score_a)} · B = {code(result.score_b)}** · {result.n:,} rows")
ui.show_table(comparing.summary_table(result), key="compare_summary")
st.markdown("**Net benefit** (net true positives per 1,000 decisions)")
ui.show_table(comparing.net_benefit_table(result), percent=("decisions changed",),
              key="compare_net")

orders = [p.order_by for p in result.paths]
ui.selectbox_state(s.W_CMP_ORDER, orders, AVERAGE_SCORE)
chosen = st.selectbox("Order the rows by", orders, key=s.W_CMP_ORDER,
                      format_func=display_text)
path = result.paths[orders.index(chosen)]
loss_slot, residual_slot = ui.chart_slots(2)
with loss_slot:
    ui.show_figure(ui.figure(paired_cumulative_figure, path, None), key="compare_paired")
with residual_slot:
    ui.show_figure(ui.figure(paired_residuals_figure, path, None), key="compare_residuals")

for title, found, word in (("Where B is worse (regressions)", result.regressions, "worse"),
                           ("Where B is better (improvements)", result.improvements, "better")):
    st.markdown(f"**{title}**")
    if not found:
        st.caption(f"No group where B is {word} was found.")
        continue
    ui.show_table(comparing.groups_table(found), percent=("share",),
                  help=comparing.GROUP_HELP, key=f"compare_{word}")
    ui.caption(comparing.GAP_NOTE)
    buttons = st.columns(min(len(found), 4))
    for k, finding in enumerate(found):
        label = display_text(f"Open in Review: {finding.description}")
        if buttons[k % len(buttons)].button(label, key=f"compare_open_{word}_{k}"):
            st.session_state.update(comparing.review_state(
                finding, None if name_b == join_name else name_b))
            st.switch_page(ui.page_path("review"))

with st.popover("Deck", icon=":material/download:",
                help="The comparison as 16:9 slides with native, editable charts"):
    st.caption("Title, verdict, the paired cumulative differences, net benefit by threshold, "
               "one slide per regression and improvement, the method.")
    charts.deck_download(lambda: comparing.deck_slides(result, str(analysis.source["name"])),
                         key=f"compare_deck_{comparing.deck_key(request, key)}",
                         file_name="mcviz-compare")

if result.notice:
    with st.expander("Notes"):
        ui.caption(result.notice)
st.markdown("This page's address reopens this comparison (data, columns, settings). Command "
            f"line: {code(comparing.command_line(mapping, request))}")
ui.sync()

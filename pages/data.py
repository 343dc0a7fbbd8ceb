"""Data page: upload or pick a demo, map the columns, see what loading did."""

import pandas as pd
import streamlit as st

from dashboard import state as s
from dashboard import tables, ui
from dashboard.text import code, escape_markdown, grouped_notices
from mcviz import cumulative_differences
from mcviz.errors import ValidationError
from mcviz.io import roles_sentence
from mcviz.text import display_text

ui.setup_page("data", "Data")
drop, demo_slot = st.columns([2, 1])
with drop:  # the uploader is there at once: a dropped file is analysed without another click
    upload = st.file_uploader(
        "Drop a prediction file (CSV, TSV, Parquet; optionally .gz or .zip; up to 1 GB)",
        type=["csv", "tsv", "txt", "parquet", "pq", "gz", "zip"], key="w_upload",
    )
with demo_slot:
    name = st.selectbox("Or analyse an embedded demo", list(ui.DEMOS), key=s.W_DEMO,
                        format_func=ui.DEMOS.get,
                        on_change=lambda: st.session_state.update(demo_picked=True))
current_source = st.session_state.get(s.SOURCE)
if upload is not None and st.session_state.get("adopted_upload") != upload.file_id:
    try:
        file_digest, frame = ui.read_upload(upload.name, upload.getvalue())
    except ValidationError as error:
        ui.show_error(error)
        st.stop()
    st.session_state["adopted_upload"] = upload.file_id
    ui.adopt_upload(upload.name, file_digest, frame)
elif st.session_state.pop("demo_picked", False) or current_source is None or \
        current_source["kind"] == "demo":
    if st.session_state.get(s.PENDING, {}).get("sha") and current_source is None:
        pending = st.session_state[s.PENDING]
        st.info(f"Drop the file with SHA-256 `{pending['sha'][:12]}…` to restore the shared "
                "view.")
        st.stop()
    ui.use_demo(name)
current_source = st.session_state[s.SOURCE]
if current_source["kind"] == "upload":
    demo_slot.caption(f"Analysing the uploaded file **{escape_markdown(current_source['name'])}"
                      f"** (SHA-256 {code(current_source['digest'][:12])}…); pick a demo to "
                      "switch.")

source = st.session_state[s.SOURCE]
frame = st.session_state[s.FRAME]
mapping: ui.ColumnMapping = st.session_state[s.MAPPING]
key = s.source_key(source)
columns = [str(c) for c in frame.columns]

st.subheader("Column mapping")
left, right = st.columns(2)
slots: dict[str, object] = {}
with left:
    multiclass = st.radio(
        "Scores", ["binary", "multiclass"], index=1 if mapping.probabilities else 0,
        key=f"map_mode|{key}", horizontal=True,
        format_func={"binary": "One score column (binary)",
                     "multiclass": "Per-class probability columns (top label)"}.get,
    ) == "multiclass"
    candidates = list(ui.compute("score_candidates", key, ui.score_candidates, frame)) or columns
    if multiclass:
        probabilities = st.multiselect(
            "Probability columns (one per class)", columns,
            default=[c for c in mapping.probabilities if c in columns]
            or [c for c in candidates if c in columns], key=f"map_probs|{key}",
            format_func=display_text,
        )
        score = None
        slots["probabilities"] = st.empty()
    else:
        probabilities = []
        score_options = candidates + [c for c in columns if c not in candidates]
        score = st.selectbox(
            "Score column (probability of the positive class)", score_options,
            index=score_options.index(mapping.score) if mapping.score in score_options else 0,
            key=f"map_score|{key}", format_func=display_text,
        )
        slots["score"] = st.empty()
    label_options = [c for c in columns if c != score and c not in probabilities]
    label = st.selectbox(
        "Label column", label_options,
        index=label_options.index(mapping.label) if mapping.label in label_options else 0,
        key=f"map_label|{key}", format_func=display_text,
    )
    positive = None
    continuous = not multiclass and st.checkbox(
        "Real-valued labels (not 0/1)", value=mapping.response == "continuous",
        key=f"map_response|{key}",
        help="For responses such as rates or fractions: σ then comes from the variance "
             "estimate of the multi-calibration paper (Appendix C, eq. (6)), and every chart "
             "says so.",
    )
    if not continuous and not multiclass and label is not None:
        values = pd.unique(frame[label].dropna().iloc[:200_000])
        texts = sorted({str(v) for v in values})
        if len(texts) <= 20 and not set(texts) <= {"0", "1", "0.0", "1.0", "True", "False"}:
            default = mapping.positive if mapping.positive in texts else texts[-1]
            positive = st.selectbox("Positive class", texts, index=texts.index(default),
                                    key=f"map_positive|{key}|{label}", format_func=display_text)
    slots["label"] = st.empty()
with right:
    numeric = [c for c in columns if pd.api.types.is_numeric_dtype(frame[c])
               and c not in (score, label) and c not in probabilities]
    weight_options = [ui.NO_SCORE, *numeric]
    weight = st.selectbox(
        "Weight column (optional)", weight_options,
        index=weight_options.index(mapping.weight) if mapping.weight in weight_options else 0,
        key=f"map_weight|{key}", format_func=display_text,
    )
    weight = None if weight == ui.NO_SCORE else weight
    slots["weight"] = st.empty()
    used = {score, label, weight, *probabilities}
    covariate_options = [c for c in columns if c not in used]
    covariates = st.multiselect(
        "Covariates", covariate_options,
        default=[c for c in mapping.covariates if c in covariate_options],
        key=f"map_covs|{key}", format_func=display_text,
    )
    numeric_covariates = [c for c in covariates if pd.api.types.is_numeric_dtype(frame[c])]
    nominal = st.multiselect(
        "Treat these ordinal covariates as nominal (unordered levels)", numeric_covariates,
        default=[c for c in mapping.nominal if c in numeric_covariates],
        key=f"map_nominal|{key}", format_func=display_text,
    )
    slots["covariates"] = st.empty()
    schemes = [ui.NO_SCORE, "proportional", "proportional-shifted", "low-prevalence"]
    weighting = st.selectbox(
        "Reweighting (multi-calibration paper, Appendices A and B)", schemes,
        index=schemes.index(mapping.weighting) if mapping.weighting in schemes else 0,
        key=f"map_weighting|{key}",
        help="Multiplies the weights: proportional 1/max(S, ρ), shifted 1/(S + ρ), "
             "low prevalence 1/A for positive labels.",
    )
    weighting = None if weighting == ui.NO_SCORE else weighting
    rho = None
    if weighting in ("proportional", "proportional-shifted"):
        rho = st.number_input("ρ", min_value=0.0, max_value=1.0, step=0.01, format="%.3f",
                              value=float(mapping.rho if mapping.rho is not None else 0.01),
                              key=f"map_rho|{key}") or None
    drop_invalid = st.checkbox("Drop invalid rows (and report them) instead of stopping",
                               value=mapping.drop_invalid, key=f"map_drop|{key}")

new_mapping = ui.ColumnMapping(
    score=score, probabilities=tuple(probabilities), label=label, positive=positive,
    weight=weight, covariates=tuple(covariates), nominal=tuple(nominal),
    drop_invalid=drop_invalid, weighting=weighting, rho=rho,
    response="continuous" if continuous else "binary",
)
if new_mapping != mapping:
    st.session_state[s.MAPPING] = new_mapping
    st.session_state.pop(s.SUBPOP, None)
    mapping = new_mapping
ui.sync()

try:
    pred = ui.predictions_for(key, mapping, frame)
except ValidationError as error:
    column = error.column
    role = ("score" if column == score else "probabilities" if column in probabilities
            else "label" if column == label else "weight" if column == weight
            else "covariates" if column in covariates else None)
    if role is not None and role in slots:
        slots[role].error(escape_markdown(error))
    else:
        ui.show_error(f"The file cannot be analysed with this mapping: {error}")
    ui.sync()
    st.stop()

st.subheader("Validation summary")
st.markdown("**Columns:** " + escape_markdown(roles_sentence(pred)))
ui.void_p_values_notice(pred)
report = pred.report
cells = st.columns(4)
cells[0].metric("Rows read", f"{report.n_read:,}")
cells[1].metric("Rows kept", f"{report.n_kept:,}")
cells[2].metric("Rows dropped", f"{report.n_dropped:,}")
cells[3].metric("Covariates", f"{len(pred.covariate_kinds)}")
if report.dropped:
    st.dataframe(tables.displayed(pd.DataFrame(report.dropped, columns=["reason", "rows"])),
                 hide_index=True)
for warning in report.warnings:
    ui.show_warning(warning)
for notice in grouped_notices(report.notices):  # one caption per reason, not per column
    ui.caption(notice)
if pred.multiclass:
    st.caption(f"Multi-class: {len(pred.classes)} classes; the score is the top-label "
               "probability and the response is 1 when the predicted class is right.")
with st.container():  # full width: the figure's legend needs it
    result = ui.compute("cumulative", s.analysis_key(source, mapping), cumulative_differences, pred)
    ui.show_figure(ui.cumulative_fig(result, title=f"First look: {pred.score_column}",
                                   cache=f"first:{s.analysis_key(source, mapping)}"),
                   key="data_first_look")
    st.page_link(ui.page_path("review"), label="Review: the four charts side by side",
                 icon=":material/dashboard:")
kinds_slot, preview_slot = st.columns([1, 2])
with kinds_slot:
    st.caption("Covariate kinds")
    st.dataframe(tables.displayed(pd.DataFrame({"covariate": list(pred.covariate_kinds),
                                                "kind": list(pred.covariate_kinds.values())})),
                 hide_index=True, height=200)
with preview_slot, st.container(key="scrolls_sideways_preview"):  # the file's own columns:
    st.caption("Preview (first 20 rows of the file; scroll sideways for every column)")
    st.dataframe(tables.displayed(frame.head(20)), height=240)  # shown, not the data

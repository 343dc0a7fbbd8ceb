"""Screening page: open a table an engine wrote (screen, search, monitor) and drill into a row."""

import pandas as pd
import streamlit as st

from dashboard import charts, tables, ui
from dashboard.screening import table_view
from dashboard import state as s
from dashboard.text import code, escape_markdown
from mcviz import cumulative_differences
from mcviz.stats.binning import reliability_diagrams
from mcviz.engines.results import load_subpopulation, read_screen
from mcviz.errors import ValidationError
from mcviz.text import display_text

ui.setup_page("screening", "Screening")
st.caption(
    "For data larger than memory: `mcviz screen 'logs/*.parquet' --engine duckdb --out "
    "screen.parquet` measures every subpopulation out of core and writes one row per "
    "subpopulation. Open that table here; the drill-down then reads only the chosen "
    "subpopulation's rows from the screened Parquet files (DuckDB pushes its conditions into "
    "the scan), so those files must be on the machine that runs this app."
)
upload = st.file_uploader("Table written by `mcviz screen --out`, or by `mcviz search` / "
                          "`mcviz monitor` with `--engine duckdb|spark --out` (.parquet)",
                          type=["parquet"], key="screen_upload")
if upload is None:
    st.info("Upload a screening table to see its subpopulations.")
    st.stop()
raw = upload.getvalue()
table_key = s.digest(raw)
try:
    screen = ui.compute("screen_table", table_key, read_screen, raw)
except ValidationError as error:
    ui.show_error(error)
    st.stop()

table = screen.table
view = table_view(screen)
cells = st.columns(len(view.metrics))
for cell, (label, value, hover) in zip(cells, view.metrics, strict=True):
    cell.metric(label, value, help=hover)
st.info(view.headline)
st.caption(f"Engine {escape_markdown(screen.engine)} · files: "
           + ", ".join(code(f) for f in screen.files[:5])
           + (f" and {len(screen.files) - 5} more" if len(screen.files) > 5 else ""))
st.dataframe(tables.displayed(view.shown), hide_index=True, height=300,
             column_config={c: st.column_config.NumberColumn(format="%.4g")
                            for c in ("kuiper", "sigma", "kuiper_z", "normalized",
                                      "D/σ (held out)") if c in view.shown})

row = st.selectbox("Drill down into", view.rows, key=f"screen_row|{table_key}",
                   format_func=lambda r: ("★ " if r == view.rows[0] else "")
                   + display_text(f"#{table['id'].iloc[r]} · {table['description'].iloc[r]}"))
with st.spinner("Reading the subpopulation's rows…"):
    try:
        pred = ui.compute("screen_rows", table_key, load_subpopulation, screen, row=int(row))
    except ValidationError as error:
        ui.show_error(error)
        st.stop()

screened = table.iloc[row]
own = ui.compute("screen_own", f"{table_key}:{row}", cumulative_differences, pred)
st.markdown(f"**{escape_markdown(screened['description'])}** · {pred.n:,} rows read")
if pred.report.n_dropped:
    ui.show_warning(f"{pred.report.n_dropped:,} invalid rows of this subpopulation were left out: "
                    + "; ".join(f"{reason} ({count:,})" for reason, count in pred.report.dropped))
if screen.kind == "screen":
    st.dataframe(pd.DataFrame({
        "": ["screened", "recomputed from the rows read"],
        "rows": [int(screened["size"]), pred.n],
        "Kuiper D": [float(screened["kuiper"]), own.kuiper],
        "σ": [float(screened["sigma"]), own.sigma],
    }), hide_index=True)
else:
    st.caption(f"{int(screened['size']):,} rows in the table, {pred.n:,} read now.")
ui.cumulative_metrics(own, p_note=view.p_note)
ui.show_figure(ui.cumulative_fig(own, title="The subpopulation's own calibration",
                                 cache=f"screen_cum:{table_key}:{row}",
                                 p_note=view.p_note.split(":")[0]),
               key=f"screen_cum_{row}")
reliability = ui.compute("screen_reliability", f"{table_key}:{row}", reliability_diagrams, pred,
                         n_bins=list(ui.bin_counts()), kind="equal_width", n_bootstrap=0)
ui.show_figure(charts.reliability_fig(reliability, f"screen_rel:{table_key}:{row}"),
               key=f"screen_rel_{row}")

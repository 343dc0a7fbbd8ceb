"""Screening page: open a table written by `mcviz screen` and drill into any subpopulation."""

import pandas as pd
import streamlit as st

from dashboard import charts, tables, ui
from dashboard import state as s
from dashboard.text import code, escape_markdown
from mcviz import cumulative_differences
from mcviz.stats.binning import reliability_diagrams
from mcviz.engines.results import load_subpopulation, read_screen
from mcviz.errors import ValidationError
from mcviz.present.figures import format_number
from mcviz.text import display_text

ui.setup_page("screening", "Screening")
st.caption(
    "For data larger than memory: `mcviz screen 'logs/*.parquet' --engine duckdb --out "
    "screen.parquet` measures every subpopulation out of core and writes one row per "
    "subpopulation. Open that table here; the drill-down then reads only the chosen "
    "subpopulation's rows from the screened Parquet files (DuckDB pushes its conditions into "
    "the scan), so those files must be on the machine that runs this app."
)
upload = st.file_uploader("Screening table written by `mcviz screen --out` (.parquet)",
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
cells = st.columns(4)
cells[0].metric("M", format_number(screen.metric),
                help="max over subpopulations of Dₖ σ₀ / σₖ (eq. (4))")
cells[1].metric("Mode", "exact" if screen.exact else "histogram",
                help=None if screen.exact else f"M may be up to {screen.metric_bound:.3g} higher")
cells[2].metric("Rows screened", f"{screen.n:,}")
cells[3].metric("Subpopulations", f"{len(table) - 1:,}")
argmax = table.iloc[screen.argmax]
COUNT = len(table) - 1
UNTESTED = (f"chosen from {COUNT:,} screened subpopulations for its value: not yet tested "
            "against chance (a screen computes no null distribution, and the rows' own p-value "
            "is no test of a group picked for being extreme)")
st.info(f"Worst subpopulation (argmax, #{argmax['id']}): "
        f"**{escape_markdown(argmax['description'])}** — {argmax['size']:,} rows. "
        f"Largest of {COUNT:,}: not yet tested against chance.")
st.caption(f"Engine {escape_markdown(screen.engine)} · files: "
           + ", ".join(code(f) for f in screen.files[:5])
           + (f" and {len(screen.files) - 5} more" if len(screen.files) > 5 else ""))

top = table.sort_values("normalized", ascending=False).head(50)
st.dataframe(tables.displayed(top[["id", "description", "size", "kuiper", "sigma", "kuiper_z",
                                   "normalized"]]),
             hide_index=True, height=300,
             column_config={c: st.column_config.NumberColumn(format="%.4g")
                            for c in ("kuiper", "sigma", "kuiper_z", "normalized")})

rows = [screen.argmax, *(int(r) for r in top.index if r != screen.argmax)]
row = st.selectbox("Drill down into", rows, key=f"screen_row|{table_key}",
                   format_func=lambda r: ("★ " if r == screen.argmax else "")
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
st.dataframe(pd.DataFrame({
    "": ["screened", "recomputed from the rows read"],
    "rows": [int(screened["size"]), pred.n],
    "Kuiper D": [float(screened["kuiper"]), own.kuiper],
    "σ": [float(screened["sigma"]), own.sigma],
}), hide_index=True)
ui.cumulative_metrics(own, p_note=UNTESTED)
ui.show_figure(ui.cumulative_fig(own, title="The subpopulation's own calibration",
                                 cache=f"screen_cum:{table_key}:{row}",
                                 p_note=("largest" if row == screen.argmax else "one")
                                 + f" of {COUNT:,}: not yet tested against chance"),
               key=f"screen_cum_{row}")
reliability = ui.compute("screen_reliability", f"{table_key}:{row}", reliability_diagrams, pred,
                         n_bins=list(ui.bin_counts()), kind="equal_width", n_bootstrap=0)
ui.show_figure(charts.reliability_fig(reliability, f"screen_rel:{table_key}:{row}"),
               key=f"screen_rel_{row}")

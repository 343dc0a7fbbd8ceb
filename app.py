"""mcviz dashboard entry point (the Data, Calibration, ... pages are added by the dashboard)."""

import streamlit as st

from mcviz import cumulative_differences, load_demo

st.set_page_config(page_title="mcviz", layout="wide")
st.title("mcviz — where is this classifier miscalibrated?")
st.caption(
    "Demo: UCI Adult (Becker & Kohavi 1996, CC BY 4.0), out-of-fold gradient-boosting scores."
)


@st.cache_data
def _demo_metrics():
    result = cumulative_differences(load_demo("adult"))
    return result


result = _demo_metrics()
columns = st.columns(5)
for column, (name, value) in zip(
    columns,
    [("Kuiper D", result.kuiper), ("KS G", result.ks), ("σ", result.sigma),
     ("D/σ", result.kuiper_z), ("p-value", result.p_value)],
    strict=True,
):
    column.metric(name, f"{value:.4g}")

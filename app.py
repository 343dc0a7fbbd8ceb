"""mcviz dashboard: `streamlit run app.py` (binds to 127.0.0.1; see README to serve on a network)."""

import streamlit as st

from mcviz import __version__, ui

st.set_page_config(page_title="mcviz", page_icon="📈", layout="wide")
ui.init_session()
presenting = ui.presentation()

PAGES = [
    st.Page("pages/data.py", title="Data", icon="📄", url_path="data", default=True),
    st.Page("pages/calibration.py", title="Calibration", icon="📈", url_path="calibration"),
    st.Page("pages/variables.py", title="Variables", icon="🧭", url_path="variables"),
    st.Page("pages/subpopulations.py", title="Subpopulations", icon="🎯",
            url_path="subpopulations"),
    st.Page("pages/groupings.py", title="Groupings", icon="🧩", url_path="groupings"),
    st.Page("pages/report.py", title="Report", icon="📝", url_path="report"),
]
navigation = st.navigation(PAGES, position="top" if presenting else "sidebar")

requested = st.session_state.pop("requested_page", None)
if requested and requested != navigation.url_path:
    target = next((p for p in PAGES if p.url_path == requested), None)
    if target is not None:
        st.switch_page(target)

link_message = ui.apply_pending()

with st.sidebar:
    st.toggle("Presentation mode", key=ui.W_PRESENTATION,
              help="Larger fonts and lines, one chart per row, no sidebar clutter.")
    if not presenting:
        analysis = ui.current()
        if analysis is not None:
            pred = analysis.pred
            source = analysis.source
            st.caption(
                f"**{source['name']}** · {pred.n:,} rows · score "
                f"`{pred.score_column}` · label `{pred.label_column}`"
                + (f" · weight `{pred.weight_column}`" if pred.weighted else "")
            )
        st.text_input("Reliability bin counts", key=ui.W_BINS,
                      help="Three bin counts for the reliability diagrams, e.g. 10, 20, 40.")
        st.caption("The page URL is a shareable link: it holds the data source (a demo or the "
                   "uploaded file's hash), the column mapping and the settings.")
        st.caption(f"mcviz {__version__}")

if presenting:
    st.html("<style>html, body, [class*='st-'] p, .stMarkdown, .stMetric {font-size: 1.3rem;}"
            " [data-testid='stMetricValue'] {font-size: 2.6rem;}</style>")
if link_message:
    st.info(link_message)

try:
    navigation.run()
finally:
    ui.sync_query_params(st.session_state.get(ui.PAGE, navigation.url_path or "data"))

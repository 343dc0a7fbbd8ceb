"""mcviz dashboard: `streamlit run app.py` (127.0.0.1 only; README: serving on a network).

The router: st.navigation over pages/ and the shared sidebar. A page script opened before this
ran (a fresh server, AppTest's switch_page) runs this file itself (dashboard.ui.setup_page).
"""

import streamlit as st

from dashboard import state as s
from dashboard import ui
from mcviz import __version__

st.set_page_config(page_title="mcviz", page_icon=":material/show_chart:", layout="wide")
ui.init_session()
st.session_state[s.APP_RAN] = True
presenting = ui.presentation()

PAGES = [
    st.Page("pages/data.py", title="Data", icon=":material/upload_file:", url_path="data",
            default=True),
    st.Page("pages/review.py", title="Review", icon=":material/dashboard:", url_path="review"),
    st.Page("pages/calibration.py", title="Calibration", icon=":material/show_chart:",
            url_path="calibration"),
    st.Page("pages/variables.py", title="Variables", icon=":material/tune:", url_path="variables"),
    st.Page("pages/subpopulations.py", title="Subpopulations", icon=":material/filter_alt:",
            url_path="subpopulations"),
    st.Page("pages/groupings.py", title="Groupings", icon=":material/category:",
            url_path="groupings"),
    st.Page("pages/screening.py", title="Screening", icon=":material/storage:",
            url_path="screening"),
    st.Page("pages/report.py", title="Report", icon=":material/description:",
            url_path="report"),
]
navigation = st.navigation(PAGES, position="top" if presenting else "sidebar")

requested = st.session_state.pop("requested_page", None)
if requested and requested != navigation.url_path:
    target = next((p for p in PAGES if p.url_path == requested), None)
    if target is not None:
        st.switch_page(target)

link_message = ui.apply_pending()

TOGGLE_HELP = "Larger fonts and tables, the review grid on one 1920×1080 screen."
if presenting:  # no sidebar at all: the toggle sits in the top bar, beside the navigation
    st.container(key="presentation_toggle").toggle("Presentation mode", key=s.W_PRESENTATION,
                                                   help=TOGGLE_HELP)
    summary = st.empty()
else:
    with st.sidebar:
        st.toggle("Presentation mode", key=s.W_PRESENTATION, help=TOGGLE_HELP)
        summary = st.empty()  # filled after the page ran (an upload changes it)
        st.text_input("Reliability bin counts", key=s.W_BINS,
                      help="Up to three bin counts for the reliability diagrams, e.g. 10, 20, 50.")
        st.caption("The page URL is a shareable link: it holds the data source (a demo or the "
                   "uploaded file's hash), the column mapping and the settings.")
        st.caption(f"mcviz {__version__}")


def show_summary() -> None:
    analysis = ui.current()
    if presenting or analysis is None:
        return
    pred = analysis.pred
    weight = f" · weight `{pred.weight_column}`" if pred.weighted else ""
    summary.caption(f"**{analysis.source['name']}** · {pred.n:,} rows · score "
                    f"`{pred.score_column}` · label `{pred.label_column}`{weight}")


if presenting:
    st.html("<style>.stMarkdown p, .stCaption p, label p {font-size: 1.3rem !important;}"
            " [data-testid='stMetricValue'] div {font-size: 2.8rem !important;}"
            " [data-testid='stMetricLabel'] p {font-size: 1.3rem !important;}"
            " [data-testid='stTable'] td, [data-testid='stTable'] th"
            " {font-size: 1.3rem !important; padding: 0.4rem 0.8rem !important;}"
            " [data-testid='stMainBlockContainer'] {padding-top: 3.2rem !important;"
            " padding-bottom: 1rem !important;}"
            " h1 {font-size: 1.8rem !important; padding: 0 !important;}"
            " .st-key-presentation_toggle {position: fixed; top: 0.7rem; right: 4rem;"
            " width: auto !important; z-index: 999991;}"
            # a sidebar opened before the switch would otherwise stay on screen, empty
            " [data-testid='stSidebar'], [data-testid='stSidebarCollapsedControl']"
            " {display: none !important;}</style>")
if link_message:
    st.info(link_message)
for message in st.session_state.pop(s.LINK_MESSAGES, ()):
    st.warning(f"Shared link: {message}")

try:
    navigation.run()
finally:
    st.session_state[s.APP_RAN] = False
    show_summary()
    ui.sync_query_params(st.session_state.get(s.PAGE, navigation.url_path or "data"))

"""mcviz dashboard: `streamlit run app.py` (127.0.0.1 only; README: Serving mcviz to others).

The router: st.navigation over pages/ and the shared sidebar. A page script opened before this
ran (a fresh server, AppTest's switch_page) runs this file itself (dashboard.navigation.setup_page).
"""

from pathlib import Path

import streamlit as st

from dashboard import state as s
from dashboard import ui
from dashboard.text import code, escape_markdown
from mcviz import __version__

# An emoji icon: Streamlit draws it as a data: URL (a :material/ icon is fetched from Google).
st.set_page_config(page_title="mcviz", page_icon="📈", layout="wide")
ui.init_session()
presenting = ui.presentation()

HERE = Path(__file__).resolve().parent  # also when a page script runs this file (runpy)
PAGE_LIST = [  # file and url path, title, icon
    ("data", "Data", ":material/upload_file:"),
    ("review", "Review", ":material/dashboard:"),
    ("calibration", "Calibration", ":material/show_chart:"),
    ("variables", "Variables", ":material/tune:"),
    ("subpopulations", "Subpopulations", ":material/filter_alt:"),
    ("groupings", "Groupings", ":material/category:"),
    ("screening", "Screening", ":material/storage:"),
    ("monitor", "Monitor", ":material/monitoring:"),
    ("fix", "Fix", ":material/build:"),
    ("compare", "Compare", ":material/compare_arrows:"),
    ("report", "Report", ":material/description:"),
]
# The default page is served at / only (Streamlit gives it the URL path ""), so /data would show
# "Page not found": a hidden copy of the Data page answers at /data (listed last, so
# st.switch_page / st.page_link by file still pick the visible one). The default's own url_path
# is then another name (a page's identity is its url_path: two "data" would collide).
PAGES = [st.Page(HERE / "pages" / f"{name}.py", title=title, icon=icon,
                 url_path="start" if name == "data" else name, default=name == "data")
         for name, title, icon in PAGE_LIST]
PAGES.append(st.Page(HERE / "pages" / "data.py", title="Data", icon=PAGE_LIST[0][2],
                     url_path="data", visibility="hidden"))
navigation = st.navigation(PAGES, position="top" if presenting else "sidebar")

# A page script that ran first (dashboard.navigation.setup_page) asks for itself: Streamlit matched the
# address to it (a fresh server), or not (AppTest), and then it is switched to.
in_place = st.session_state.pop(s.RUN_IN_PLACE, None)
requested = in_place or st.session_state.pop("requested_page", None)
if requested and requested != (navigation.url_path or "data"):
    target = next((p for p in PAGES if p.url_path == requested), None)
    if target is not None:
        st.switch_page(target)
if navigation.url_path == "data":  # the hidden copy: on to the listed Data page (at /), so the
    st.switch_page(PAGES[0], query_params={  # navigation shows where the reader is; same link
        key: st.query_params.get_all(key) for key in st.query_params})

link_message = ui.apply_pending()

TOGGLE_HELP = "Larger fonts, lines and tables for a projector (1920×1080)."
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
    weight = f" · weight {code(pred.weight_column)}" if pred.weighted else ""
    summary.caption(f"**{escape_markdown(analysis.source['name'])}** · {pred.n:,} rows · score "
                    f"{code(pred.score_column)} · label {code(pred.label_column)}{weight}")


if presenting:
    st.html("<style>.stMarkdown p, .stCaption p, label p {font-size: 1.3rem !important;}"
            # alerts (the Fix page's verdict) and expander labels read like the text around them
            " [data-testid='stAlertContainer'] p, [data-testid='stExpander'] summary p"
            " {font-size: 1.3rem !important;}"
            " [data-testid='stWidgetLabel'] + div input, [data-testid^='stBaseButton'] p"
            # widget values: select boxes (an input), multiselect tags, the open list, inputs
            " , [data-testid='stSelectbox'] input, [data-testid='stMultiSelect'] input,"
            " [data-testid='stMultiSelectTagsContainer'] [data-tag] span, [role='option'],"
            " [data-testid='stNumberInput'] input, [data-testid='stTextInput'] input,"
            " [data-testid='stTextArea'] textarea, [data-testid='stDateInput'] input"
            " {font-size: 1.1rem !important;}"
            # the uploader's limits and file types ("1GB per file · CSV, ...")
            " [data-testid='stFileUploaderDropzoneInstructions'] span,"
            " [data-testid='stFileUploaderDropzoneInstructions'] small"
            " {font-size: 1.1rem !important;}"
            " [data-testid='stTopNavLink'] p {font-size: 1.1rem !important;}"
            # the page links end before the fixed toggle (the rest go to the "more" menu)
            " [data-testid='stTopNav'] {max-width: calc(100vw - 20rem) !important;}"
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
    st.warning("Shared link: " + escape_markdown(message))

st.session_state[s.APP_RAN] = True  # the page script sees that this file ran
try:
    ui.run_page(navigation)  # a refusal no page caught is a message, never a traceback
finally:
    st.session_state[s.APP_RAN] = False
    show_summary()
    ui.sync_query_params(st.session_state.get(s.PAGE, navigation.url_path or "data"))

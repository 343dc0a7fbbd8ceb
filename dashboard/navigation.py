"""Session, page set-up and links: every page address works on a fresh server.

:func:`init_session` restores a shared link once per session (the codec is plain Python in
:mod:`dashboard.links`), :func:`setup_page` starts every page script (running ``app.py`` first
when a page address is opened before it), :func:`sync` writes the view back into the URL.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import streamlit as st

from dashboard import links
from dashboard import state as s
from dashboard.janitor import OUT_OF_MEMORY, release_memory
from dashboard.widgets import show_error
from mcviz.errors import ValidationError

APP = Path(__file__).resolve().parents[1] / "app.py"
LINK_SUBPOP = "link_subpop_pending"  # a link's sp=1, not yet checked against the budget


def init_session() -> None:
    """Restore a shared link once per session and keep widget values across pages."""
    state = st.session_state
    if not state.get(s.RESTORED):
        state[s.RESTORED] = True
        params = {k: st.query_params.get(k) for k in st.query_params}
        decoded = links.decode_params(params)
        for key, value in decoded.restored.items():
            state[key] = value
        if state.pop(s.AUTO_SUBPOP, False):  # checked against the budget once data is loaded
            state[LINK_SUBPOP] = True
        state[s.LINK_MESSAGES] = decoded.messages
        if decoded.page:
            state["requested_page"] = decoded.page
    for key in s.WIDGET_KEYS:
        if key in state:
            state[key] = state[key]  # interrupt the widget clean-up between pages
        elif key in s.DEFAULTS:
            state[key] = s.DEFAULTS[key]


def setup_page(url_path: str, title: str) -> None:
    """Start a page script: the shared set-up, then the page's header.

    Streamlit runs ``pages/<x>.py`` on its own -- skipping ``app.py`` -- when a session opens
    ``/<x>`` before any session on the server ran ``app.py`` (and AppTest's ``switch_page`` does
    the same). Then this runs ``app.py`` itself, which draws the navigation and the sidebar and
    runs this page through them, and stops: every page address shows the whole app.
    """
    if not st.session_state.get(s.APP_RAN):
        st.session_state[s.RUN_IN_PLACE] = url_path
        runpy.run_path(str(APP), run_name="__main__")
        st.stop()
    st.session_state[s.PAGE] = url_path
    sync_query_params(url_path)
    st.header(title)


def run_page(navigation: Any) -> None:
    """Run the page; a refusal or an out-of-memory failure no page caught is a message.

    The backstop of every page: a :class:`~mcviz.errors.ValidationError` (the budget's refusal,
    a bounded text box) or a :class:`MemoryError` raised outside the guarded computations is
    shown as an error box with what to do, and the memory is handed back, never a traceback.
    Streamlit's own control flow (``st.stop``, reruns) passes through.
    """
    try:
        navigation.run()
    except ValidationError as error:
        release_memory()
        show_error(error)
    except MemoryError:
        release_memory()
        show_error(OUT_OF_MEMORY)


def page_path(name: str) -> str:
    """Absolute path of ``pages/<name>.py`` (for st.page_link / st.switch_page from any script)."""
    return str(APP.parent / "pages" / f"{name}.py")


def sync_query_params(page: str) -> None:
    """Write the current view into the URL (the shareable link)."""
    wanted = links.encode_state(st.session_state, page)
    existing = {k: st.query_params.get(k) for k in st.query_params}
    if existing != wanted:
        st.query_params.from_dict(wanted)


def sync() -> None:
    """Write the current view into the URL (call after a page changed the state)."""
    sync_query_params(st.session_state.get(s.PAGE, "data"))

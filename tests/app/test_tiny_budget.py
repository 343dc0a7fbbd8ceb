"""AppTest: a memory budget below the demos' size is a message on every page, never an exception.

``MCVIZ_MEMORY_BUDGET=10MB`` refuses the Adult demo's read (6.7 MiB decompressed, a quarter of
the budget allowed for reading); the landing page and the Monitor page (which reads the flights
demo) showed Streamlit's exception element before.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.mark.parametrize("page", [None, "pages/monitor.py", "pages/review.py"])
def test_a_budget_below_the_demo_is_a_message(monkeypatch, page):
    monkeypatch.setenv("MCVIZ_MEMORY_BUDGET", "10MB")
    st.cache_resource.clear()  # a demo read under the default budget by an earlier test
    try:
        at = AppTest.from_file(APP, default_timeout=240).run()
        if page is not None:
            at.switch_page(page).run()
    finally:
        st.cache_resource.clear()
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(e.value for e in at.error).replace("\\", "")  # Markdown escapes
    assert "The demo 'adult' cannot be loaded" in shown
    assert "MCVIZ_MEMORY_BUDGET" in shown

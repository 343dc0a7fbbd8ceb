"""Fixtures of the browser tests: one served app and one chromium per test module."""

from __future__ import annotations

import pytest
from browser_kit import launched, served


@pytest.fixture(scope="module")
def app_url():
    """The base address of a fresh ``streamlit run app.py`` (stopped after the module)."""
    with served() as (_, base):
        yield base


@pytest.fixture(scope="module")
def browser(app_url):
    """Debian's chromium (never ``playwright install``), after the app is up."""
    with launched() as chromium:
        yield chromium

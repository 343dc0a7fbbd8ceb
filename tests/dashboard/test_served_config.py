"""Served-app configuration (issue #20 item 5): config.toml and README's serving section."""

from __future__ import annotations

import tomllib
from pathlib import Path

from mcviz.io.readers import default_max_bytes

ROOT = Path(__file__).resolve().parents[2]


def test_users_see_a_message_and_the_log_keeps_the_details(monkeypatch):
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    # Streamlit 1.67 accepts "full", "stacktrace", "type", "none": only the last two keep
    # tracebacks (and the server's paths in them) out of the browser.
    assert config["client"]["showErrorDetails"] in ("type", "none")
    assert config["client"]["toolbarMode"] == "viewer"
    assert config["server"]["address"] == "127.0.0.1"
    assert config["server"]["enableXsrfProtection"] is True
    monkeypatch.delenv("MCVIZ_MEMORY_BUDGET", raising=False)
    # the upload limit (MiB) is the loader's own limit on a file's bytes
    assert config["server"]["maxUploadSize"] * 2**20 == default_max_bytes()


def test_readme_says_how_to_serve_to_others():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Serving mcviz to others", 1)[1].split("\n## ", 1)[0]
    for needed in ("--server.address", "reverse proxy", "st.login", "MCVIZ_DATA_ROOTS",
                   "MCVIZ_MEMORY_BUDGET", "/media", "showErrorDetails"):
        assert needed in section, needed

"""Real browser: a file whose `score` column holds a non-number stops with a message naming it.

Issue 31: the dashboard used to analyse another [0, 1] column (``x0``) as the score without a
word. Now the upload shows the loader's message (the one the command line prints) next to the
score widget, and offers the drop-invalid checkbox.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_browser import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    _free_port,
    _require_browser,
    start_app,
    stop_app,
    wait_idle,
)

pytestmark = pytest.mark.browser


def bad_score_csv(n: int = 2000) -> bytes:
    rng = np.random.default_rng(0)
    score = rng.uniform(0.05, 0.95, n)
    frame = pd.DataFrame({"x0": rng.uniform(0, 1, n), "score": score.round(4).astype(str),
                          "label": (rng.random(n) < score).astype(int),
                          "x1": rng.normal(size=n)})
    frame.loc[7, "score"] = "oops"
    return frame.to_csv(index=False).encode()


def test_bad_score_upload_names_the_score_column(tmp_path):
    _require_browser()
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    path = tmp_path / "bad_score.csv"
    path.write_bytes(bad_score_csv())
    port = _free_port()
    process = start_app(port)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
            page.get_by_role("heading", name="Data").first.wait_for(timeout=60_000)
            wait_idle(page)
            page.locator("input[type=file]").set_input_files(str(path))
            page.get_by_text("Analysing the uploaded file").wait_for(timeout=120_000)
            wait_idle(page)
            error = page.get_by_test_id("stAlertContentError").first
            error.wait_for(timeout=60_000)
            text = error.inner_text()
            page.screenshot(path=ARTIFACTS / "bad-score-upload.png")
            for part in ("column 'score'", "not numbers", "rows 7", "oops"):
                assert part in text, text
            assert "Drop invalid rows" in text, text
            assert page.get_by_test_id("stException").count() == 0
            assert page.get_by_text("First look: x0").count() == 0  # no other column analysed
            browser.close()
    finally:
        stop_app(process)

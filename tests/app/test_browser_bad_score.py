"""Real browser: a file whose `score` column holds a non-number stops with a message naming it.

Issue 31: the dashboard used to analyse another [0, 1] column (``x0``) as the score without a
word. Now the upload shows the loader's message (the one the command line prints) next to the
score widget, and offers the drop-invalid checkbox.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from browser_kit import ARTIFACTS, app_page, wait_idle

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
    path = tmp_path / "bad_score.csv"
    path.write_bytes(bad_score_csv())
    with app_page() as page:
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

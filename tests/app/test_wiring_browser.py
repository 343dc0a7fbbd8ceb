"""Real browser: the guided search names a planted group as its first finding (issue #19).

One server and chromium for the module (conftest's ``app_url`` and ``browser``; Debian's
chromium, never `playwright install`), a new session per test. Screenshots go to
test-artifacts/ (wiring-*.png).
"""

from __future__ import annotations

import pytest
from browser_kit import check_page, open_page, page_at, wait_charts, wait_idle
from wiring_testdata import PLANTED_WORDS, planted_csv

pytestmark = pytest.mark.browser


def test_planted_group_is_the_first_finding(tmp_path, app_url, browser):
    path = tmp_path / "planted.csv"
    path.write_bytes(planted_csv(100_000, shift=0.1))  # region == r7 (2%) under-predicted by 0.1
    with page_at(browser, app_url) as page:
        page.locator("input[type=file]").set_input_files(str(path))
        page.get_by_text("Analysing the uploaded file").wait_for(timeout=120_000)
        wait_idle(page)

        open_page(page, "Subpopulations")
        page.get_by_text("searched", exact=True).click()
        wait_idle(page)
        page.get_by_role("button", name="Compute").click()
        first = page.get_by_text("1. Among rows with").first
        first.wait_for(timeout=180_000)
        wait_idle(page)
        text = first.inner_text()
        assert text.startswith(f"1. Among rows with {PLANTED_WORDS} ("), text
        assert "more than predicted" in text
        assert page.get_by_text("Minimum detectable effect").count() >= 1
        wait_charts(page, 2)
        check_page(page, "wiring-01-searched")

        page.set_viewport_size({"width": 1920, "height": 1080})
        page.get_by_text("Presentation mode").click()
        wait_idle(page)
        page.get_by_text("1. Among rows with").first.wait_for(timeout=120_000)
        check_page(page, "wiring-02-searched-presentation")


NULL_DRAWS = 19
"""The null distribution's draws set on the Subpopulations page (the fewest it takes)."""


def _wired_pages(page, prefix: str) -> None:
    """Subpopulations with its null, Calibration with CORP, Review with CORP (the pages as they
    open, Variables included, are test_pages_browser's test_every_page_holds, in both modes)."""
    open_page(page, "Subpopulations")
    wait_idle(page)
    if page.get_by_text("Null median of M/σ₀").count() == 0:  # else held from the first pass
        if page.get_by_text("Not yet tested against chance").count() == 0:
            page.get_by_role("button", name="Compute", exact=True).click()
            wait_idle(page, timeout=300_000)
            page.get_by_text("Not yet tested against chance").first.wait_for(timeout=300_000)
        # the fewest draws the widget takes (19, not 200): the page's wiring is what is tested
        # here (the null's numbers are test_wiring_subpopulations' and tests/stats'); 200 draws
        # over the demo's 1,000 subpopulations cost 6.7 s of CPU (h23t)
        draws = page.get_by_role("spinbutton", name="Null draws")
        draws.fill(str(NULL_DRAWS))
        draws.press("Enter")
        # the cost estimate is of those draws (the rerun took the value)
        page.get_by_text(f"null distribution of M: {NULL_DRAWS} draws").first.wait_for(
            timeout=120_000)
        wait_idle(page)
        page.get_by_role("button", name="Compute the null distribution").click()
        page.get_by_text("Null median of M/σ₀").first.wait_for(timeout=180_000)
    assert page.get_by_text(f"{NULL_DRAWS} draws of").count() >= 1  # the null of those draws
    wait_idle(page)
    wait_charts(page, 2)
    check_page(page, f"{prefix}subpopulations-null")

    open_page(page, "Calibration")
    page.get_by_text("CORP (isotonic, no bins)").first.click()
    wait_idle(page)
    page.get_by_text("no bins to choose").first.wait_for(timeout=120_000)
    assert page.get_by_text("Calibration-curve summaries").count() == 1
    wait_charts(page, 3)
    check_page(page, f"{prefix}calibration-corp")

    open_page(page, "Review")
    # the toggle is labelled "CORP" since accae61 (the label fits at 1440)
    page.get_by_text("CORP", exact=True).first.click()
    wait_idle(page)
    wait_charts(page, 4)
    assert page.locator(".gtitle").filter(has_text="CORP reliability").count() == 1
    check_page(page, f"{prefix}review-corp")


def test_wired_pages_at_1440_and_in_presentation_mode(app_url, browser):
    """The demo: every page this work changed, at 1440x900, then 1920x1080 presentation."""
    with page_at(browser, app_url) as page:
        _wired_pages(page, "wiring-1440-")
        page.set_viewport_size({"width": 1920, "height": 1080})
        page.get_by_text("Presentation mode").click()
        wait_idle(page)
        _wired_pages(page, "wiring-1920-presentation-")

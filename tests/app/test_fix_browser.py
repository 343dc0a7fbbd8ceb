"""Real browser on the Fix page: a fresh server's /fix on planted data, fit and judge, the
before/after charts of a finding and the decision curve, no exception and no legend over an
axis title."""

from __future__ import annotations

import pytest
from test_browser import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    _free_port,
    _require_browser,
    check_page,
    start_app,
    stop_app,
    wait_charts,
    wait_idle,
)

from mcviz.recalibration.simulate import planted_fix_data

pytestmark = pytest.mark.browser


def test_fix_page_in_a_real_browser(tmp_path):
    _require_browser()
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    csv_path = tmp_path / "planted.csv"
    planted_fix_data(20_000, seed=3).drop(columns="truth").to_csv(csv_path, index=False)
    port = _free_port()
    process = start_app(port)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
            page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
            page.get_by_role("heading", name="Data").first.wait_for(timeout=120_000)
            wait_idle(page)
            page.locator("input[type=file]").set_input_files(str(csv_path))
            page.get_by_text("Analysing the uploaded file").wait_for(timeout=120_000)
            wait_idle(page)
            page.get_by_role("link", name="Fix", exact=True).first.click()
            page.get_by_role("heading", name="Fix").first.wait_for(timeout=120_000)
            wait_idle(page)
            check_page(page, "fix-00-before-fit")
            page.get_by_role("button", name="Fit and judge the fix").click()
            page.get_by_text("Decision curve").first.wait_for(timeout=300_000)
            wait_idle(page, timeout=300_000)
            wait_charts(page, 5)  # 2 cumulative, 2 reliability, the decision curve
            assert page.get_by_text("The findings fix removes").count() == 1
            check_page(page, "fix-01-full-population")
            scope = page.get_by_test_id("stSelectbox").filter(has_text="Scope")
            scope.scroll_into_view_if_needed()
            scope.get_by_role("combobox").click()
            page.get_by_role("option").nth(1).click()
            wait_idle(page, timeout=300_000)
            wait_charts(page, 5)
            check_page(page, "fix-02-finding")
            browser.close()
    finally:
        stop_app(process)

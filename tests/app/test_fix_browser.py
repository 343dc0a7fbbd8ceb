"""Real browser on the Fix page: a fresh server's /fix on planted data, fit and judge, the
before/after charts of a finding and the decision curve, no exception and no legend over an
axis title; then Review, with the fix in its verdict and the grid on the first screen."""

from __future__ import annotations

import pytest
from browser_kit import (
    app_page,
    check_page,
    open_page,
    wait_charts,
    wait_charts_settled,
    wait_idle,
)
from test_pages_browser import PAGE_JS, assert_grid_on_the_first_screen

from mcviz.recalibration.simulate import planted_fix_data

pytestmark = pytest.mark.browser


def test_fix_page_in_a_real_browser(tmp_path):
    csv_path = tmp_path / "planted.csv"
    planted_fix_data(20_000, seed=3).drop(columns="truth").to_csv(csv_path, index=False)
    with app_page() as page:
        page.locator("input[type=file]").set_input_files(str(csv_path))
        page.get_by_text("Analysing the uploaded file").wait_for(timeout=120_000)
        wait_idle(page)
        open_page(page, "Fix")
        wait_idle(page)
        check_page(page, "fix-00-before-fit")
        page.get_by_role("button", name="Fit and judge the fix").click()
        page.get_by_text("Decision curve").first.wait_for(timeout=300_000)
        wait_idle(page, timeout=300_000)
        wait_charts(page, 5)  # 2 cumulative, 2 reliability, the decision curve
        # the headline in words once (#40), its numbers once in the caption below it
        assert page.get_by_text("of the worst subpopulation's miscalibration").count() == 1
        assert page.get_by_text("In numbers:").count() == 1
        check_page(page, "fix-01-full-population")
        # the fix judged as a challenger is (#43): the Compare page's verdict and tables
        judged = page.get_by_text("Judged as a challenger").first
        judged.scroll_into_view_if_needed()
        judged.click()
        page.get_by_text("Largest cumulative gap between observed and predicted").first.wait_for(
            timeout=60_000)
        wait_idle(page)
        check_page(page, "fix-01b-as-challenger")
        scope = page.get_by_test_id("stSelectbox").filter(has_text="Scope")
        scope.scroll_into_view_if_needed()
        scope.get_by_role("combobox").click()
        page.get_by_role("option").nth(1).click()
        wait_idle(page, timeout=300_000)
        wait_charts(page, 5)
        check_page(page, "fix-02-finding")

        # Review after the fix was judged: its section joins the verdict, and the verdict and
        # the whole grid still fit the first 1440x900 screen (test_pages_browser's layout check)
        open_page(page, "Review")
        page.locator(".st-key-verdict").wait_for(timeout=300_000)
        wait_charts(page, 4, timeout=300_000)
        wait_idle(page, timeout=300_000)
        wait_charts_settled(page)  # plotly's automargin redraw, the fonts
        page.evaluate("() => { const m = document.querySelector('[data-testid=stMain]');"
                      " if (m) m.scrollTop = 0; window.scrollTo(0, 0); }")
        expander = page.locator(".st-key-verdict [data-testid=stExpander] summary").first
        assert "Fix" in expander.inner_text()
        assert_grid_on_the_first_screen(page.evaluate(PAGE_JS))
        check_page(page, "fix-03-review")

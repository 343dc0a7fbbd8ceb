"""Real-browser test: Debian's chromium (via Playwright) drives `streamlit run app.py`.

Never runs `playwright install`: the browser is /usr/bin/chromium. Without it the test skips,
except in CI (env CI == "true"), where a missing browser is a failure. Screenshots of every page
are saved under test-artifacts/.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pandas as pd
import pytest
from browser_kit import (
    ARTIFACTS,
    check_page,
    open_page,
    page_at,
    served,
    wait_charts,
    wait_idle,
)
from mcviz_app_testdata import synthetic_csv

pytestmark = pytest.mark.browser

# The review grid in presentation mode, measured from the top of the page (scrolled to 0):
# the charts' top, their bottoms in order, and the verdict's top.
PRESENTATION_GRID_JS = """
() => {
  const main = document.querySelector('[data-testid=stMain]');
  if (main) main.scrollTop = 0;
  window.scrollTo(0, 0);
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  const rects = plots.map(p => p.getBoundingClientRect());
  const verdict = document.querySelector('.st-key-verdict');
  return {top: Math.min(...rects.map(r => r.top)),
          bottoms: rects.map(r => r.bottom).sort((a, b) => a - b),
          verdict: verdict ? verdict.getBoundingClientRect().top : null};
}
"""


NAV_BESIDE_TOGGLE_JS = """() => {
  const items = [...document.querySelectorAll("[data-testid=stTopNav] .rc-overflow-item")]
    .filter(e => getComputedStyle(e).opacity !== "0" && e.getBoundingClientRect().width > 0);
  const toggle = document.querySelector(".st-key-presentation_toggle").getBoundingClientRect();
  return {shown: items.length, toggle: toggle.left,
          right: Math.max(...items.map(e => e.getBoundingClientRect().right))};
}"""


SESSIONS: list[str] = []
"""The tests that opened a session on the module's server (conftest's ``app_url``), in order."""


@contextlib.contextmanager
def fresh_server(app_url: str):
    """The module's server while no session has used it (then it is fresh: the next test opens
    the dashboard on it), else a server of its own."""
    if SESSIONS:
        with served() as (_, base):
            yield base
    else:
        yield app_url


def test_page_address_on_a_fresh_server(app_url, browser):
    """/review opened first on a server no session has used: the whole app, not the page alone."""
    with served() as (_, fresh), page_at(browser, fresh, "/review?demo=adult&var=age",
                                         heading="Review") as page:
        navigation = page.get_by_test_id("stSidebarNav")
        for title in ("Data", "Review", "Calibration", "Subpopulations", "Report"):
            assert navigation.get_by_role("link", name=title, exact=True).count() == 1
        assert page.get_by_text("Presentation mode").count() == 1
        assert page.get_by_text("Reliability bin counts").count() == 1
        wait_charts(page, 4)
        check_page(page, "00-fresh-server-review")
        assert "page=review" in page.url
        # the next run (a widget changed) stays on the page, inside the app
        page.get_by_test_id("stSidebar").get_by_test_id("stTextInputField").fill("5, 8")
        page.keyboard.press("Enter")
        wait_idle(page)
        page.get_by_text("Reliability (5, 8 bins)").first.wait_for(timeout=60_000)
        assert page.get_by_role("heading", name="Review").count() == 1
        assert navigation.get_by_role("link", name="Data", exact=True).count() == 1
        check_page(page, "00-fresh-server-review-rerun")

        # two score columns side by side at 1440 px: no headline number cut
        open_page(page, "Calibration")
        page.get_by_test_id("stSelectbox").first.click()
        page.get_by_role("option", name="score_logistic").click()
        wait_idle(page)
        wait_charts(page, 6)
        cut = page.evaluate("""() => [...document.querySelectorAll(
            '[data-testid=stMetricValue] div')].filter(e => e.scrollWidth > e.clientWidth + 1)
            .map(e => e.textContent)""")
        assert not cut, f"headline numbers cut: {cut}"
        check_page(page, "00-compare-two-scores")

    # /data first on another fresh server (the default page is served at / only: Streamlit
    # showed "Page not found" over it), then / and /?page=data: the Data page, no box, and
    # Data marked as the current page (at /data no page was)
    with fresh_server(app_url) as base, page_at(browser, base, "/data?demo=adult") as page:
        SESSIONS.append("page address")
        for address in ("/data", "/", "/?page=data"):
            if address != "/data":
                page.goto(base + address, wait_until="domcontentloaded")
                page.get_by_role("heading", name="Data").first.wait_for(timeout=120_000)
            wait_idle(page)
            page.wait_for_timeout(500)  # the box comes with the run's navigation message
            navigation = page.get_by_test_id("stSidebarNav")
            data_link = navigation.get_by_role("link", name="Data", exact=True)
            assert data_link.count() == 1
            # the navigation shows where the reader is (/data moves on to the listed page at /)
            assert data_link.get_attribute("aria-current") == "page", address
            assert page.get_by_text("Column mapping").count() >= 1, address
            check_page(page, "00-fresh-server-data" + address.replace("/", "-").replace("?", "-"))


def test_dashboard_in_a_real_browser(tmp_path, app_url, browser):
    """The whole dashboard in one session, on the module's server (a new session at /: after
    test_page_address_on_a_fresh_server's /data session when both run)."""
    csv_path = tmp_path / "predictions.csv"
    csv_path.write_bytes(synthetic_csv(20_000))
    SESSIONS.append("dashboard")
    with page_at(browser, app_url, accept_downloads=True) as page:
        # the demo is analysed at once; no Deploy button or developer menu
        assert page.get_by_text("Validation summary").count() == 1
        assert page.get_by_test_id("stAppDeployButton").count() == 0
        menu = page.get_by_test_id("stMainMenu")
        if menu.count():  # the viewer menu has no developer entries
            menu.click()
            assert page.get_by_text("Clear cache").count() == 0
            page.keyboard.press("Escape")
        check_page(page, "01-data-demo")

        # upload in one action: the uploader is on screen; dropping a file analyses it
        page.locator("input[type=file]").set_input_files(str(csv_path))
        page.get_by_text("Analysing the uploaded file").wait_for(timeout=120_000)
        wait_idle(page)
        wait_charts(page, 1)
        check_page(page, "02-data-upload")

        open_page(page, "Subpopulations")
        page.get_by_role("button", name="Compute").click()
        argmax = page.get_by_text("Worst subpopulation (argmax").first
        argmax.wait_for(timeout=120_000)
        wait_charts(page, 4)
        check_page(page, "03-subpopulations")
        # the table's CSV is written when asked for (not on every rerun of the page); clicked
        # once the page is idle (a click during a rerun can land on a button being redrawn)
        wait_idle(page)
        with page.expect_download(timeout=60_000) as info:
            page.get_by_role("button", name="Download all subpopulations (CSV)").click()
        table = pd.read_csv(info.value.path())
        assert info.value.suggested_filename == "subpopulations.csv"
        assert {"id", "description", "size", "kuiper_z"} <= set(table.columns)
        assert len(table) > 10
        assert table["size"].min() > 0
        wait_idle(page)

        # every page at 1440x900 (its layout, no exception) is test_pages_browser's
        # test_every_page_holds, each opened by its address; here the review grid of the
        # argmax subpopulation of the uploaded file
        open_page(page, "Review")
        page.get_by_test_id("stSelectbox").first.click()
        page.get_by_role("option", name="Worst subpopulation").click()
        wait_idle(page)
        wait_charts(page, 4)
        check_page(page, "12-review-argmax")

        open_page(page, "Report")
        page.get_by_role("button", name="Build the report").click()
        download_button = page.get_by_role("button", name="Download report.html")
        download_button.wait_for(timeout=180_000)
        with page.expect_download(timeout=60_000) as info:
            download_button.click()
        report = Path(info.value.path()).read_text(encoding="utf-8")
        assert report.count("Plotly.newPlot(") >= 6
        assert "Review: " in report
        assert "class='grid'" in report
        assert "Worst subpopulation (argmax" in report
        (ARTIFACTS / "report.html").write_text(report, encoding="utf-8")
        assert "sha=" in page.url
        assert "sp=1" in page.url

        # presentation mode at 1920x1080: every page again. The verdict and the top row of
        # the review grid show on the first screen and the 2x2 chart grid itself fits one
        # screen's height (one scroll shows it whole). Issue #26 chose 440 px charts there to
        # keep a data area of at least 35% of each chart (test_review_browser checks it), so
        # verdict + grid no longer fit 1080 px; one screen is required at 1440x900 normal.
        page.set_viewport_size({"width": 1920, "height": 1080})
        open_page(page, "Review")
        page.get_by_text("Presentation mode").click()
        wait_idle(page)
        assert "pm=1" in page.url
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        for width in (1280, 1920):  # the larger page links end before the fixed toggle
            page.set_viewport_size({"width": width, "height": 1080 if width == 1920 else 720})
            # the top navigation re-measures its links after a resize (rc-overflow hides them,
            # opacity 0, while it measures; until its resize observer fires the wider layout's
            # links still show: once, at 1280 px, 11 links ending at 1199 px, past the toggle at
            # 988): wait until it has settled, up to 30 s, then assert (past 30 s, the
            # assertions below report what the navigation shows)
            with contextlib.suppress(PlaywrightTimeout):
                page.wait_for_function(f"(n => n.shown >= 3 && n.right < n.toggle)"
                                       f"(({NAV_BESIDE_TOGGLE_JS})())", timeout=30_000)
            links = page.evaluate(NAV_BESIDE_TOGGLE_JS)
            assert links["shown"] >= 3, (width, links)
            assert links["right"] < links["toggle"], (width, links)
        # every page in presentation mode is test_pages_browser's (test_every_page_holds, the
        # toggle at 1920x1080 on each page); here the toggle carries across the navigation
        open_page(page, "Calibration")
        wait_idle(page)
        wait_charts(page, 3)
        check_page(page, "20-presentation-calibration")
        assert "pm=1" in page.url
        open_page(page, "Review")
        wait_charts(page, 4)
        grid = page.evaluate(PRESENTATION_GRID_JS)
        page.screenshot(path=ARTIFACTS / "30-presentation-review-screen.png")
        assert len(grid["bottoms"]) == 4, grid
        height = grid["bottoms"][-1] - grid["top"]
        assert height <= 1080, f"the 2x2 review grid needs {height} px at 1920x1080"
        assert grid["verdict"] is not None, grid
        assert grid["verdict"] < 1080, grid
        assert grid["bottoms"][1] <= 1080, f"the top row ends at {grid['bottoms'][1]} px"

"""Real-browser test: Debian's chromium (via Playwright) drives `streamlit run app.py`.

Never runs `playwright install`: the browser is /usr/bin/chromium. Without it the test skips,
except in CI (env CI == "true"), where a missing browser is a failure. Screenshots of every page
are saved under test-artifacts/.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
from mcviz_app_testdata import synthetic_csv

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

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

def _require_browser() -> None:
    missing = None
    if not Path(CHROMIUM).exists():
        missing = f"chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "the playwright Python package is not installed"
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser test cannot run in CI: {missing}")
        pytest.skip(missing)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_app(port: int) -> subprocess.Popen:
    """`streamlit run app.py` headless on 127.0.0.1:port; returns once /_stcore/health is ok."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited: {process.stdout.read().decode()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return process
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError("streamlit did not become healthy within 60 s")


def stop_app(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


def open_page(page, title: str) -> None:
    """Click a page in the navigation (sidebar, or the top bar in presentation mode)."""
    page.get_by_role("link", name=title, exact=True).first.click()
    page.get_by_role("heading", name=title).first.wait_for(timeout=120_000)


def wait_idle(page, timeout: float = 120_000) -> None:
    """Wait until the app stops running (the "Running..." status widget disappears)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    status = page.locator("[data-testid=stStatusWidgetRunningIcon], "
                          "[data-testid=stStatusWidgetRunningManIcon]").first
    # the widget shows up shortly after a run starts; a quick run may never show it
    with contextlib.suppress(PlaywrightTimeout):
        status.wait_for(state="visible", timeout=1_000)
    status.wait_for(state="hidden", timeout=timeout)


def wait_charts(page, count: int = 1, timeout: float = 120_000) -> None:
    """Wait until at least ``count`` plotly charts are drawn (charts in hidden tabs excluded)."""
    page.locator(".js-plotly-plot >> visible=true").nth(count - 1).wait_for(timeout=timeout)



OVERLAPS_JS = """
() => {
  const box = e => e.getBoundingClientRect();
  const hit = (a, b) => a.width > 0 && b.width > 0 && a.left < b.right && b.left < a.right
                        && a.top < b.bottom && b.top < a.bottom;
  const found = [];
  document.querySelectorAll('.js-plotly-plot').forEach((plot, i) => {
    const legends = [...plot.querySelectorAll('g.legend rect.bg')].map(box);
    const titles = [...plot.querySelectorAll('text[class$="title"]')]
        .filter(t => /^[xy][0-9]*title$/.test(t.getAttribute('class')) && t.textContent);
    for (const legend of legends) {
      for (const title of titles) {
        if (hit(legend, box(title))) found.push(`chart ${i}: legend over ${title.textContent}`);
      }
    }
  });
  return found;
}
"""


def check_page(page, name: str) -> None:
    """No exception element; no legend box over an axis-title box; save a screenshot."""
    wait_idle(page)
    exceptions = page.get_by_test_id("stException")
    assert exceptions.count() == 0, f"{name}: {exceptions.first.inner_text()[:500]}"
    assert page.get_by_text("Page not found").count() == 0, name
    overlaps = page.evaluate(OVERLAPS_JS)
    page.screenshot(path=ARTIFACTS / f"{name}.png")  # what one screen shows
    # the whole page: Streamlit scrolls inside its main element, so grow the viewport to it
    viewport = page.viewport_size
    height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    if height > viewport["height"]:
        page.set_viewport_size({"width": viewport["width"], "height": min(height, 8000)})
        page.wait_for_timeout(500)
        page.screenshot(path=ARTIFACTS / f"{name}-full.png")
        page.set_viewport_size(viewport)
        page.wait_for_timeout(300)
    assert not overlaps, f"{name}: {overlaps}"


def test_page_address_on_a_fresh_server():
    """/review opened first on a server no session has used: the whole app, not the page alone."""
    _require_browser()
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    port = _free_port()
    process = start_app(port)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
            page.goto(f"http://127.0.0.1:{port}/review?demo=adult&var=age",
                      wait_until="domcontentloaded")
            page.get_by_role("heading", name="Review").first.wait_for(timeout=120_000)
            wait_idle(page)
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
            browser.close()
    finally:
        stop_app(process)


PAGES = ("Data", "Review", "Calibration", "Variables", "Subpopulations", "Groupings",
         "Screening", "Report")
CHARTS = {"Data": 1, "Review": 4, "Calibration": 3, "Variables": 2, "Groupings": 2}


def visit_pages(page, *, start: int, prefix: str = "", skip: tuple[str, ...] = ()) -> None:
    """Open every page in turn; check and screenshot each (named NN-<prefix><page>.png)."""
    for number, title in enumerate(PAGES, start=start):
        if title in skip:
            continue
        open_page(page, title)
        wait_idle(page)
        if title in CHARTS:
            wait_charts(page, CHARTS[title])
        check_page(page, f"{number:02d}-{prefix}{title.lower()}")


def test_dashboard_in_a_real_browser(tmp_path):
    _require_browser()
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    csv_path = tmp_path / "predictions.csv"
    csv_path.write_bytes(synthetic_csv(20_000))
    port = _free_port()
    process = start_app(port)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1440, "height": 900},
                                          accept_downloads=True)
            page = context.new_page()
            page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
            page.get_by_role("heading", name="Data").first.wait_for(timeout=60_000)
            wait_idle(page)
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
            # the table's CSV is written when asked for (not on every rerun of the page)
            with page.expect_download(timeout=60_000) as info:
                page.get_by_role("button", name="Download all subpopulations (CSV)").click()
            table = pd.read_csv(info.value.path())
            assert info.value.suggested_filename == "subpopulations.csv"
            assert {"id", "description", "size", "kuiper_z"} <= set(table.columns)
            assert len(table) > 10
            assert table["size"].min() > 0
            wait_idle(page)

            visit_pages(page, start=4, skip=("Subpopulations", "Data"))

            # the review grid of the argmax subpopulation
            open_page(page, "Review")
            page.get_by_test_id("stSelectbox").first.click()
            page.get_by_role("option", name="Worst subpopulation (argmax)").click()
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
            visit_pages(page, start=20, prefix="presentation-")
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
            browser.close()
    finally:
        stop_app(process)

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

import pytest
from mcviz_app_testdata import synthetic_csv

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = pytest.mark.browser


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
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title).click()
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
            context = browser.new_context(viewport={"width": 1500, "height": 2400},
                                          accept_downloads=True)
            page = context.new_page()
            page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
            page.get_by_role("heading", name="Data").first.wait_for(timeout=60_000)

            # upload a CSV through the file input
            page.get_by_text("Upload a file").click()
            page.locator("input[type=file]").set_input_files(str(csv_path))
            page.get_by_text("Validation summary").wait_for(timeout=120_000)
            wait_idle(page)
            wait_charts(page, 1)
            page.screenshot(path=ARTIFACTS / "01-data.png", full_page=True)

            open_page(page, "Calibration")
            wait_idle(page)
            wait_charts(page, 3)
            page.screenshot(path=ARTIFACTS / "02-calibration.png", full_page=True)

            open_page(page, "Variables")
            wait_idle(page)
            wait_charts(page, 2)
            page.screenshot(path=ARTIFACTS / "03-variables.png", full_page=True)

            open_page(page, "Subpopulations")
            page.get_by_role("button", name="Compute").click()
            argmax = page.get_by_text("Worst subpopulation (argmax").first
            argmax.wait_for(timeout=120_000)
            wait_idle(page)
            description = argmax.inner_text()
            assert "rows" in description
            # the drill-down opens on the argmax by default
            drill = page.get_by_text("Drill-down").first
            assert drill.is_visible()
            wait_charts(page, 4)
            page.screenshot(path=ARTIFACTS / "04-subpopulations.png", full_page=True)

            open_page(page, "Groupings")
            wait_idle(page)
            wait_charts(page, 2)
            page.screenshot(path=ARTIFACTS / "05-groupings.png", full_page=True)

            open_page(page, "Report")
            page.get_by_role("button", name="Build the report").click()
            download_button = page.get_by_role("button", name="Download report.html")
            download_button.wait_for(timeout=120_000)
            with page.expect_download(timeout=60_000) as info:
                download_button.click()
            report = Path(info.value.path()).read_text(encoding="utf-8")
            assert report.count("Plotly.newPlot(") >= 2
            assert "Worst subpopulation (argmax" in report
            assert "predictions.csv" in report
            (ARTIFACTS / "report.html").write_text(report, encoding="utf-8")
            page.screenshot(path=ARTIFACTS / "06-report.png", full_page=True)

            # the URL is a shareable link holding the file's hash and the settings
            assert "sha=" in page.url
            assert "sp=1" in page.url

            # presentation mode: navigation on top, larger fonts, one chart per row
            open_page(page, "Calibration")
            wait_idle(page)
            page.get_by_text("Presentation mode").click()
            wait_idle(page)
            wait_charts(page, 2)
            assert "pm=1" in page.url
            page.screenshot(path=ARTIFACTS / "07-presentation.png", full_page=True)

            # a copied address opens inside the app (its navigation and sidebar), on the demo
            fresh = browser.new_context(viewport={"width": 1500, "height": 1400}).new_page()
            fresh.goto(f"http://127.0.0.1:{port}/variables?demo=adult",
                       wait_until="domcontentloaded")
            fresh.get_by_role("heading", name="Variables").first.wait_for(timeout=60_000)
            wait_idle(fresh)
            navigation = fresh.get_by_test_id("stSidebarNav")
            assert navigation.get_by_role("link", name="Subpopulations").count() == 1
            assert fresh.get_by_text("Presentation mode").count() == 1
            wait_charts(fresh, 2)
            fresh.screenshot(path=ARTIFACTS / "08-opened-by-address.png", full_page=True)
            browser.close()
    finally:
        stop_app(process)

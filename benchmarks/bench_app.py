"""Dashboard timings measured in a real browser (Playwright driving Debian's chromium).

Runs `streamlit run app.py` on a free 127.0.0.1 port, drops a 1,000,000-row, 12-column Parquet
file on the Data page and prints a table: upload to the upload's first chart, upload to the
review grid (the four charts of the Review page drawn), page switches once computed, and
computing ℓ = 1000 subpopulations (plus rendering). Every action is timed from a page at rest
(:func:`rest`): the previous step's charts drawn.
Usage: python benchmarks/bench_app.py [rows]
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def make_parquet(path: Path, n: int) -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "age": rng.integers(18, 90, n).astype(np.int16),
        "income": rng.lognormal(10, 1, n).round(0),
        "tenure": rng.exponential(5, n).round(2),
        "visits": rng.poisson(3, n).astype(np.int16),
        "region": pd.Categorical(rng.choice(["north", "south", "east", "west"], n)),
        "plan": pd.Categorical(rng.choice(["basic", "plus", "pro"], n)),
        "device": pd.Categorical(rng.choice(["ios", "android", "web"], n)),
        "score2": rng.uniform(0, 1, n).round(4),
        "balance": rng.normal(0, 1000, n).round(1),
        "flag": rng.integers(0, 2, n).astype(bool),
    })
    score = rng.beta(2, 5, n)
    truth = np.where((frame["age"] > 60) & (frame["plan"] == "pro"), np.minimum(score * 1.5, 1),
                     score)
    frame["score"] = score.round(5)
    frame["label"] = (rng.uniform(size=n) < truth).astype(np.int8)
    frame.to_parquet(path, index=False)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_app(port: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    for _ in range(200):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                return process
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise SystemExit("streamlit did not start")


def idle(page, timeout: float = 120_000) -> None:
    """Wait until no script run is in progress (the "Running..." widget is gone)."""
    running = page.locator("[data-testid=stStatusWidgetRunningIcon], "
                           "[data-testid=stStatusWidgetRunningManIcon]").first
    page.wait_for_timeout(100)
    running.wait_for(state="hidden", timeout=timeout)


def rest(page) -> None:
    """Let the page come to rest before the next timed action: charts drawn, then 0.5 s.

    A script run ends before the browser has drawn its charts (and before the server's
    post-run garbage collection); timing the next action from there would add the previous
    step's drawing to it. A user does not act within milliseconds of a chart appearing.
    """
    if page.locator(".js-plotly-plot >> visible=true").count():
        page.locator(".js-plotly-plot >> visible=true").first.wait_for(timeout=120_000)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.wait_for_timeout(500)


def switch(page, title: str, *, chart: bool = True) -> float:
    rest(page)
    start = time.perf_counter()
    page.get_by_role("link", name=title, exact=True).first.click()
    page.get_by_role("heading", name=title).first.wait_for(timeout=120_000)
    idle(page)
    if chart:
        page.locator(".js-plotly-plot >> visible=true").first.wait_for(timeout=120_000)
    return time.perf_counter() - start


def choose(page, label: str, text: str, chart_title: str | None = None) -> float:
    """Type ``text`` into the selectbox labelled ``label`` and take the first match; seconds
    from the choice until its result is on the page (a chart titled ``chart_title``, or else a
    drill-down naming another subpopulation) and the app is idle again."""
    heading = page.get_by_test_id("stExpander").locator("strong").first
    before = None if chart_title is not None else heading.inner_text()
    rest(page)
    page.get_by_test_id("stSelectbox").filter(has_text=label).first.click()
    page.keyboard.type(text)
    start = time.perf_counter()
    page.keyboard.press("Enter")
    if chart_title is not None:
        page.locator(".js-plotly-plot", has_text=chart_title).first.wait_for(timeout=120_000)
    else:
        while heading.inner_text() == before:
            if time.perf_counter() - start > 120:
                raise TimeoutError("the drill-down did not change")
            page.wait_for_timeout(10)
    idle(page)
    return time.perf_counter() - start


def measure(page, port: int, path: Path, n: int) -> list[tuple[str, float, float | None]]:
    rows = []
    size_mb = path.stat().st_size / 1e6
    page.goto(f"http://127.0.0.1:{port}/")
    page.get_by_role("heading", name="Data").first.wait_for(timeout=60_000)
    idle(page)
    page.locator("[data-testid=stPlotlyChart] .js-plotly-plot").first.wait_for(timeout=120_000)
    rest(page)  # the demo's first chart drawn: timing starts on a page at rest
    start = time.perf_counter()  # the uploader is on screen at once: one action
    page.locator("input[type=file]").set_input_files(str(path))
    # the upload's own chart (its title gives n): the demo's stays on screen until replaced
    page.locator(".js-plotly-plot", has_text=f"n = {n:,}").first.wait_for(timeout=180_000)
    rows.append((f"upload {n:,} rows x 12 cols ({size_mb:.0f} MB) to first chart",
                 time.perf_counter() - start, None))
    idle(page)
    page.get_by_role("link", name="Review", exact=True).first.click()
    page.get_by_role("heading", name="Review").first.wait_for(timeout=120_000)
    page.locator(".js-plotly-plot >> visible=true").nth(3).wait_for(timeout=300_000)
    idle(page, 300_000)
    rows.append(("  ... upload to the review grid drawn (4 charts)",
                 time.perf_counter() - start, 5.0))
    rows.append(("switch to Data (computed)", switch(page, "Data"), 1.0))
    rows.append(("switch to Review (computed)", switch(page, "Review"), 1.0))
    rows.append(("Calibration page, first visit (computes)", switch(page, "Calibration"), None))
    rows.append(("switch to Calibration (computed)", switch(page, "Calibration"), 1.0))
    rows.append(("Variables page, first visit (ranks every variable)", switch(page, "Variables"),
                 None))
    rows.append(("pick another variable (computes its curves)",
                 choose(page, "Variable", "income", "Error and predicted error along income"),
                 None))
    rows.append(("pick the first variable again (computed)",
                 choose(page, "Variable", "age (", "Error and predicted error along age"), 1.0))
    switch(page, "Subpopulations", chart=False)
    rest(page)
    start = time.perf_counter()
    page.get_by_role("button", name="Compute").click()
    page.get_by_text("Worst subpopulation (argmax").first.wait_for(timeout=300_000)
    rows.append(("compute ℓ=1000 subpopulations (to the argmax text)",
                 time.perf_counter() - start, 3.0))
    idle(page, 300_000)
    rows.append(("  ... plus rendering the drill-down", time.perf_counter() - start, None))
    rows.append(("drill into another subpopulation (computes)",
                 choose(page, "Drill down into", "#1 ·"), None))
    rows.append(("back to the argmax (computed)", choose(page, "Drill down into", "★"), 1.0))
    rows.append(("switch to Calibration (computed)", switch(page, "Calibration"), 1.0))
    rows.append(("switch to Subpopulations (computed)", switch(page, "Subpopulations"), 1.0))
    return rows


def main() -> None:
    from playwright.sync_api import sync_playwright

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "predictions.parquet"
        make_parquet(path, n)
        port = free_port()
        process = start_app(port)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = browser.new_page(viewport={"width": 1500, "height": 1200})
                try:
                    rows = measure(page, port, path, n)
                except Exception:
                    (ROOT / "test-artifacts").mkdir(exist_ok=True)
                    page.screenshot(path=str(ROOT / "test-artifacts" / "bench-failure.png"))
                    raise
                finally:
                    browser.close()
        finally:
            process.terminate()
            process.wait(timeout=20)
    print(f"{'step':<62} {'seconds':>8} {'target':>7}")
    for name, seconds, target in rows:
        print(f"{name:<62} {seconds:>8.2f} {'' if target is None else f'≤ {target:g}':>7}")


if __name__ == "__main__":
    main()

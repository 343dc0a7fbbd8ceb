"""What every real-browser test shares: the served app, Debian's chromium, the page checks.

Never runs ``playwright install``: the browser is /usr/bin/chromium. Without it a test skips,
except in CI (env CI == "true"), where a missing browser is a failure. A server is
``streamlit run app.py`` headless on 127.0.0.1 and a free port, its output in
test-artifacts/server-<port>.log (a file: a pipe nobody reads can fill and stall the server).

* :func:`start_app` / :func:`stop_app`, or the context :func:`served` (options: the session TTL,
  the janitor's sweep, an address-space cap, extra environment);
* :func:`launched` (chromium), :func:`app_page` (a server, chromium and one page opened at an
  address and waited for), :func:`page_at` (that page in a new session of a running server);
* :func:`open_page`, :func:`wait_idle`, :func:`wait_charts`, :func:`wait_charts_settled`,
  :func:`check_page` (no exception element, no legend over an axis title, a screenshot).
"""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
START_SECONDS = 60
FULL_SCREENSHOTS = os.environ.get("MCVIZ_FULL_SCREENSHOTS") == "1"
"""Also save each checked page whole (``<name>-full.png``: the viewport grown to the page's
height, then restored) for a person to look at. Off by default: it asserts nothing and costs
1-2 s of relayout per page (about two minutes over the browser tests)."""


def require_browser() -> None:
    """Skip (fail in CI) when chromium or the playwright package is missing."""
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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def healthy(base: str) -> bool:
    """Whether the server at ``base`` answers its health check."""
    try:
        with urllib.request.urlopen(base + "/_stcore/health", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def start_app(port: int, *, ttl: int | None = None, sweep: int | None = None,
              cap: int | None = None, env: Mapping[str, str | None] = ()) -> subprocess.Popen:
    """`streamlit run app.py` on 127.0.0.1:port; returns once /_stcore/health answers.

    ``ttl``: ``server.disconnectedSessionTTL`` (s); ``sweep``: ``MCVIZ_SWEEP_SECONDS``; ``cap``:
    the server's address-space limit in bytes (``RLIMIT_AS``, as ``prlimit --as`` sets it);
    ``env``: variables set (a value of None removes the variable).
    """
    environment = {**os.environ, "PYTHONPATH": str(ROOT),
                   "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    if sweep is not None:
        environment["MCVIZ_SWEEP_SECONDS"] = str(sweep)
    for name, value in dict(env).items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
               "--server.address", "127.0.0.1", "--server.headless", "true",
               "--server.fileWatcherType", "none"]
    if ttl is not None:
        command += ["--server.disconnectedSessionTTL", str(ttl)]

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / f"server-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=out,
                                   stderr=subprocess.STDOUT,
                                   preexec_fn=limit if cap is not None else None)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_SECONDS
    while not healthy(base):
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited: {log.read_text(errors='replace')[-2000:]}")
        if time.monotonic() > deadline:
            stop_app(process)
            raise RuntimeError(f"streamlit did not become healthy within {START_SECONDS} s")
        time.sleep(0.3)
    return process


def stop_app(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@contextlib.contextmanager
def served(**options) -> Iterator[tuple[subprocess.Popen, str]]:
    """A server for a block (browser checked first): ``(process, base URL)``; stopped after."""
    require_browser()
    port = free_port()
    process = start_app(port, **options)
    try:
        yield process, f"http://127.0.0.1:{port}"
    finally:
        stop_app(process)


@contextlib.contextmanager
def launched() -> Iterator:
    """Debian's chromium through Playwright, closed after the block."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        new_context = browser.new_context

        def watched_context(**options):
            """A context whose pages record the app's run state (:data:`RUN_STATE_JS`)."""
            context = new_context(**options)
            context.add_init_script(RUN_STATE_JS)
            # an action (click, upload) waits for its element as long as the pages' headings
            # (Playwright's 30 s timed out under load 30-40 on main and here: a menu click, an
            # upload right after the page's first run)
            context.set_default_timeout(120_000)
            return context

        browser.new_context = watched_context
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def app_page(path: str = "/", *, heading: str = "Data", width: int = 1440, height: int = 900,
             timeout: float = 120_000, **context_options) -> Iterator:
    """A fresh server, chromium, and one page at ``path`` once its ``heading`` shows."""
    ARTIFACTS.mkdir(exist_ok=True)
    with served() as (_, base), launched() as browser:
        page = browser.new_context(viewport={"width": width, "height": height},
                                   **context_options).new_page()
        page.goto(base + path, wait_until="domcontentloaded")
        page.get_by_role("heading", name=heading).first.wait_for(timeout=timeout)
        wait_idle(page)
        yield page


@contextlib.contextmanager
def page_at(browser, base: str, path: str = "/", *, heading: str = "Data", width: int = 1440,
            height: int = 900, timeout: float = 120_000, **context_options) -> Iterator:
    """A page in a fresh browser context (a new session: someone opening a link) of the server
    at ``base``, at ``path`` once its ``heading`` shows; the context is closed after."""
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": width, "height": height},
                                  **context_options)
    try:
        page = context.new_page()
        page.goto(base + path, wait_until="domcontentloaded")
        page.get_by_role("heading", name=heading).first.wait_for(timeout=timeout)
        wait_idle(page)
        yield page
    finally:
        context.close()


def open_page(page, title: str) -> None:
    """Click a page in the navigation (sidebar, or the top bar in presentation mode)."""
    # the link is waited for as long as the heading (30 s, Playwright's default, was too short
    # under load right after a new session opened)
    page.get_by_role("link", name=title, exact=True).first.click(timeout=120_000)
    page.get_by_role("heading", name=title).first.wait_for(timeout=120_000)


RUN_STATE_FUNCTION = """
() => {
  if (window.__mcvizRuns) return;
  // the app root's data-test-script-state (initial / running / rerunRequested / notRunning, as
  // Streamlit's own e2e wait_for_app_run reads it): when it last changed, and the last input
  const runs = window.__mcvizRuns = {changed: performance.now(), input: -Infinity};
  const input = () => { runs.input = performance.now(); };
  for (const name of ['pointerdown', 'keydown', 'input', 'change'])
    window.addEventListener(name, input, true);
  new MutationObserver(() => { runs.changed = performance.now(); }).observe(
      document, {attributes: true, subtree: true, attributeFilter: ['data-test-script-state']});
}
"""
RUN_STATE_JS = f"({RUN_STATE_FUNCTION})()"
"""An init script (added to every context :func:`launched` makes): ``window.__mcvizRuns``
holds when the app root's run state last changed and when the last input event came."""

IDLE_JS = """
([quiet, answer]) => {
  const runs = window.__mcvizRuns, now = performance.now();
  const root = document.querySelector('[data-testid=stApp]');
  if (!runs || !root || root.getAttribute('data-test-script-state') !== 'notRunning')
    return false;
  // no run since the last input: that input may still ask for one (wait `answer` ms for it)
  return now - runs.changed >= quiet && (runs.changed > runs.input || now - runs.input >= answer);
}
"""
QUIET_MS = 300
"""How long the app must have been idle (no run state change) before :func:`wait_idle` returns."""
ANSWER_MS = 1_000
"""How long an input that started no run is given to start one (the old fixed wait)."""


def wait_idle(page, timeout: float = 120_000) -> None:
    """Wait until the app stops running: its root says ``notRunning`` and has said so for
    :data:`QUIET_MS`, and the last input (click, key, upload) is followed by a run, or is
    :data:`ANSWER_MS` old (an input that asks for no run).

    Before, a fixed 1 s wait for the "Running..." widget ran on every call (Streamlit shows
    it only once a run is 500 ms old, so a quick run never showed it and the call lost 1 s).
    """
    if not page.evaluate("() => Boolean(window.__mcvizRuns)"):  # a context not from launched()
        page.evaluate(RUN_STATE_FUNCTION)
    page.wait_for_function(IDLE_JS, arg=[QUIET_MS, ANSWER_MS], timeout=timeout)


def wait_charts(page, count: int = 1, timeout: float = 120_000) -> None:
    """Wait until at least ``count`` plotly charts are drawn (charts in hidden tabs excluded)."""
    page.locator(".js-plotly-plot >> visible=true").nth(count - 1).wait_for(timeout=timeout)


CHARTS_SETTLED_JS = """
([quiet, token]) => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')].filter(
      p => p.getBoundingClientRect().width > 0);
  const round = r => [r.left, r.top, r.width, r.height].map(Math.round);
  // each visible chart's box, its plot area (plotly's margins: automargin redraws move them)
  // and every text's box (a redraw that only moves labels shows here)
  const now = performance.now(), shape = JSON.stringify([
      document.fonts ? document.fonts.status : '',
      plots.map(p => {
        const z = p._fullLayout && p._fullLayout._size;
        return [round(p.getBoundingClientRect()), z ? [z.l, z.r, z.t, z.b, z.w, z.h] : null,
                [...p.querySelectorAll('svg text')].map(t => round(t.getBoundingClientRect()))];
      })]);
  const seen = window.__mcvizCharts;
  if (!seen || seen.token !== token || seen.shape !== shape) {
    window.__mcvizCharts = {token, shape, since: now};
    return false;
  }
  return plots.every(p => p._fullLayout) && (!document.fonts || document.fonts.status ===
      'loaded') && now - seen.since >= quiet;
}
"""
"""True once the visible charts (their boxes, plot areas and texts) and the fonts have not
changed for ``quiet`` ms (polled every animation frame; ``token`` starts a new watch)."""
SETTLED_MS = 400
"""How long the charts must hold still before their layout is measured."""
_SETTLE_TOKENS = iter(range(1, 10**9))


def wait_charts_settled(page, timeout: float = 120_000) -> None:
    """Wait until the visible charts hold still for :data:`SETTLED_MS` (plotly's automargin
    redraw, fonts loading, a resize): their layout is measured after.

    Before, a fixed 1 s wait stood here (``wait_for_timeout(1_000)``, about 30 of them over the
    browser tests); a probe of Review, Calibration, Variables and Compare at 1440 and 1920 px
    (h23t) saw the charts drawn in their final boxes and margins at once, and one change after
    (the fonts loaded, 270 ms later), which this wait also waits for. Measured: 0.42 s a call
    (9 calls of test_pages_browser at load 14); a chart moved every 250 ms for 2 s was waited
    for (2.4 s), a still one not (0.46 s).
    """
    page.wait_for_function(CHARTS_SETTLED_JS, arg=[SETTLED_MS, next(_SETTLE_TOKENS)],
                           timeout=timeout)


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
    if FULL_SCREENSHOTS and height > viewport["height"]:
        page.set_viewport_size({"width": viewport["width"], "height": min(height, 8000)})
        page.wait_for_timeout(500)
        page.screenshot(path=ARTIFACTS / f"{name}-full.png")
        page.set_viewport_size(viewport)
        page.wait_for_timeout(300)
    assert not overlaps, f"{name}: {overlaps}"

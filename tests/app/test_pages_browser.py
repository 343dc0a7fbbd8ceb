"""Every page at 1440×900 and at 1920×1080 in presentation mode, in a real browser (issue #40).

One server for the module (Debian's chromium via Playwright, never `playwright install`); each
page is opened by its address in a fresh browser context (a colleague opening a link) at
1440×900 and checked, then the same session is switched to presentation mode by its toggle at
1920×1080 (the address gains ``pm=1``) and checked again: one page load instead of two (a
chromium page load costs 5-10 CPU s on these machines; opening the ``pm=1`` addresses
themselves is test_review_browser's, test_compare_browser's and test_browser's). A page fails
on: an exception element; two texts of a chart that overlap (a legend over a title or
over another text included); a legend box over a chart's plot area (where the data are); a
table (a canvas grid) wider than its box or whose cells' text needs more than its columns
give; a chart whose data area is below 35% of its height; a chart
title, subtitle or (horizontal) axis title running past its chart's edge; one axis with the
same tick label twice; a widget label, select box value, toggle, button, caption or tab cut by
its box; and, at 1440×900, a Review grid (verdict included) that does not end on the first
screen — for the full population, the argmax subpopulation, a searched finding, a period
opened from Monitor and after a fix was judged (their sections join the verdict). Screenshots
of the first screen go to test-artifacts/pages-<size>-<page>.png. The pages include Compare
with both models and Review with B beside A (``review-ab``).
"""

from __future__ import annotations

import pytest
from browser_kit import ARTIFACTS, FULL_SCREENSHOTS, wait_idle

pytestmark = pytest.mark.browser

PAGE_JS = """
() => {
  const box = e => e.getBoundingClientRect();
  const visible = e => {
    const r = box(e);
    if (r.width < 1 || r.height < 1) return false;
    for (let n = e; n && n.nodeType === 1; n = n.parentNode) {
      const s = getComputedStyle(n);
      if (s.display === 'none' || s.visibility === 'hidden' || s.opacity === '0') return false;
    }
    return true;
  };
  const problems = [];
  document.querySelectorAll('.js-plotly-plot').forEach((plot, i) => {
    if (!visible(plot)) return;
    const full = plot._fullLayout;
    const rect = box(plot);
    const title = plot.querySelector('g.g-gtitle text');
    const name = title ? title.textContent.slice(0, 40) : `chart ${i}`;
    // a rotated label's bounding box is not its footprint: rotated ticks are left out
    const texts = [...plot.querySelectorAll('svg text')].filter(
        t => t.textContent.trim() && visible(t) &&
             !/rotate\\(-?[1-9]/.test(t.getAttribute('transform') || ''));
    for (let a = 0; a < texts.length; a++) {
      for (let b = a + 1; b < texts.length; b++) {
        const p = box(texts[a]), q = box(texts[b]);
        const dx = Math.min(p.right, q.right) - Math.max(p.left, q.left);
        const dy = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
        if (dx > 1 && dy > 1) problems.push(`${name}: texts overlap: '` +
          `${texts[a].textContent.slice(0, 30)}' / '${texts[b].textContent.slice(0, 30)}'`);
      }
    }
    const legends = [...plot.querySelectorAll('g.legend rect.bg')].filter(visible).map(box);
    for (const legend of legends) {
      for (const t of texts) {
        if (t.closest('g.legend')) continue;
        const q = box(t);
        if (legend.left < q.right - 1 && q.left < legend.right - 1 && legend.top < q.bottom - 1
            && q.top < legend.bottom - 1)
          problems.push(`${name}: the legend covers '${t.textContent.slice(0, 30)}'`);
      }
    }
    if (full && full._size) {  // no legend box over the plot area (it covered data, #40)
      const z = full._size;
      const area = {left: rect.left + z.l, top: rect.top + z.t,
                    right: rect.left + z.l + z.w, bottom: rect.top + z.t + z.h};
      for (const legend of legends) {
        if (legend.left < area.right - 1 && area.left < legend.right - 1 &&
            legend.top < area.bottom - 1 && area.top < legend.bottom - 1)
          problems.push(`${name}: the legend lies over the plot area`);
      }
    }
    if (full && full._size.h / full.height < 0.35)
      problems.push(`${name}: data area ${(100 * full._size.h / full.height).toFixed(0)}% ` +
                    `of ${full.height} px`);
    if (title) {
      for (const t of [title, ...title.querySelectorAll('tspan')]) {
        const q = box(t);
        if (q.width > 0 && (q.left < rect.left - 1 || q.right > rect.right + 1))
          problems.push(`${name}: title cut: '${t.textContent.slice(0, 50)}'`);
      }
    }
    for (const t of texts) {  // axis titles (x, x2, y, ...) inside the chart's box
      if (!/^[xy]\\d*title$/.test(t.getAttribute('class') || '')) continue;
      const q = box(t);
      if (q.left < rect.left - 1 || q.right > rect.right + 1 || q.top < rect.top - 1 ||
          q.bottom > rect.bottom + 1)
        problems.push(`${name}: axis title cut: '${t.textContent.slice(0, 50)}'`);
    }
    plot.querySelectorAll('g.subplot').forEach(sub => {
      for (const axis of ['xtick', 'ytick']) {
        const labels = [...sub.querySelectorAll(`g.${axis} text`)].filter(visible)
            .map(t => t.textContent.trim()).filter(Boolean);
        const twice = labels.filter((v, k) => labels.indexOf(v) !== k);
        if (twice.length) problems.push(`${name}: tick label repeated on one axis: ${twice}`);
      }
    });
  });
  const widgets = ['[data-testid=stWidgetLabel] p', '[data-testid=stSelectbox] input',
                   '[data-baseweb=select] div[value]', '[data-testid=stCaptionContainer] p',
                   '[data-testid=stButton] button p', '[data-testid=stPopover] button p',
                   '[data-testid=stTab] p', '[data-testid=stMetricValue] div',
                   '[data-testid=stMetricLabel] p', '[data-testid=stCheckbox] p'];
  for (const e of document.querySelectorAll(widgets.join(','))) {
    if (!visible(e)) continue;
    if (e.scrollWidth > e.clientWidth + 1) {
      const text = (e.value || e.textContent || '').slice(0, 50);
      problems.push(`cut widget text: '${text}' (${e.scrollWidth} > ${e.clientWidth} px)`);
    }
  }
  // tables: st.dataframe draws its cells on a canvas (glide-data-grid). The grid's scroller
  // must not scroll sideways (a column past the table's edge), and the cells' text — read
  // from the accessible table glide keeps in the DOM, measured in the grid's font — must fit
  // the columns' total width (the scroller's content; each column's own width is not in the
  // DOM: dashboard.tables.content_widths sizes each to its longest text, tested there).
  // Two tables may scroll sideways, their captions say so (their container's key starts with
  // "scrolls_sideways"): the Data page's preview of the file's own columns, and the
  // Subpopulations table, whose last column holds the filters (the drill-down says the
  // chosen one in words).
  const measure = document.createElement('canvas').getContext('2d');
  document.querySelectorAll('[data-testid=stDataFrame]').forEach((grid, i) => {
    if (!visible(grid) || grid.closest('[class*="st-key-scrolls_sideways"]')) return;
    const scroller = grid.querySelector('.dvn-scroller');
    const table = grid.querySelector('table');
    if (!scroller || !table) return;
    const rows = [...table.querySelectorAll('tr')].map(r => [...r.children].map(
        c => (c.textContent || '').trim()));
    const first = rows.length > 1 ? rows[1][0] || '' : '';
    if (scroller.scrollWidth > scroller.clientWidth + 2)
      problems.push(`table ${i} ('${first.slice(0, 30)}'): wider than its box ` +
                    `(${scroller.scrollWidth} > ${scroller.clientWidth} px): a column runs ` +
                    'past the edge');
    measure.font = `14px ${getComputedStyle(grid).fontFamily || 'sans-serif'}`;
    const need = [];
    rows.forEach(row => row.forEach((text, c) => {
      need[c] = Math.max(need[c] || 0, measure.measureText(text).width + 16);
    }));
    const total = need.reduce((a, b) => a + b, 0);
    if (total > scroller.scrollWidth + 4)
      problems.push(`table ${i} ('${first.slice(0, 30)}'): cells cut (their text needs ` +
                    `${total.toFixed(0)} px, the columns have ${scroller.scrollWidth})`);
  });
  const verdict = document.querySelector('.st-key-verdict');
  const plots = [...document.querySelectorAll('.js-plotly-plot')].filter(visible).map(box);
  return {problems, plots: plots.length,
          bottom: plots.length ? Math.max(...plots.map(r => r.bottom)) : null,
          verdict: verdict ? box(verdict).top : null};
}
"""

SIZES = {"normal": (1440, 900, ""), "presentation": (1920, 1080, "&pm=1")}
PAGES = (  # address, the charts it draws at least
    ("data?demo=adult", 1), ("review?demo=adult", 4), ("calibration?demo=adult", 3),
    ("variables?demo=adult", 2), ("subpopulations?demo=adult&sp=1&l=100", 2),
    ("groupings?demo=adult", 2), ("screening?demo=adult", 0), ("monitor?demo=flights", 1),
    ("fix?demo=adult", 0), ("report?demo=adult", 0),
    ("compare?demo=adult&score2=score_logistic&cthr=0.3", 2),  # both models (A and B)
    ("review?demo=adult&scope=filter&filter=capital_gain%20%E2%89%A5%20100&rb=score_logistic", 6))
REVIEW_SCOPES = {  # scope: (the address opened first, the button clicked there, then Review)
    # the full population at 1440x900 is test_review_browser's test_review_layout_holds (the
    # verdict and the grid on the first screen) and test_every_page_holds[review-normal] here;
    # the grid after a fix was judged is test_fix_browser's (on its planted data)
    "argmax": ("review?demo=adult&sp=1&l=100&scope=argmax", None),
    "finding": ("review?demo=flights&smode=searched&sp=1&scope=sub&ssub=1", None),
    "monitor": ("monitor?demo=flights", "Open in Review")}


def _visit(browser, url: str, size: str, charts: int, name: str, then=None) -> dict:
    """Open ``url`` in a fresh context, wait for ``charts`` charts (``then(page)`` acts first,
    e.g. a button that leads to another page), check the page and save screenshots."""
    width, height, _ = SIZES[size]
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    try:
        page.goto(url)
        page.locator("[data-testid=stMain] h1, [data-testid=stMain] h2").first.wait_for(
            timeout=180_000)
        if then is not None:
            then(page)
        return _check(page, charts, name, height)
    finally:
        page.context.close()


def _check(page, charts: int, name: str, height: int) -> dict:
    """Wait for ``charts`` charts and the end of the run; the layout (PAGE_JS) and screenshots."""
    if charts:
        page.locator(".js-plotly-plot >> visible=true").nth(charts - 1).wait_for(
            timeout=180_000)
    wait_idle(page, timeout=180_000)
    page.wait_for_timeout(1_000)  # plotly's automargin redraw
    exceptions = page.get_by_test_id("stException")
    assert exceptions.count() == 0, f"{name}: {exceptions.first.inner_text()[:500]}"
    layout = page.evaluate(PAGE_JS)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"{name}.png")
    tall = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    if FULL_SCREENSHOTS and tall > height:
        width = page.viewport_size["width"]
        page.set_viewport_size({"width": width, "height": min(tall, 6000)})
        page.wait_for_timeout(800)
        page.screenshot(path=ARTIFACTS / f"{name}-full.png")
        page.set_viewport_size({"width": width, "height": height})
    return layout


def _present(page) -> None:
    """Switch the open page to presentation mode at 1920×1080 by the sidebar's toggle."""
    width, height, _ = SIZES["presentation"]
    page.set_viewport_size({"width": width, "height": height})
    page.get_by_test_id("stSidebar").get_by_text("Presentation mode", exact=True).click()
    page.get_by_test_id("stSidebar").wait_for(state="hidden", timeout=60_000)
    page.locator("[data-testid=stMain] h1, [data-testid=stMain] h2").first.wait_for(
        timeout=180_000)


def _name(address: str) -> str:
    """A page's name in test ids and screenshots: Review with both models is "review-ab"."""
    name = address.split("?")[0]
    return f"{name}-ab" if "rb=" in address else name


@pytest.mark.parametrize(("address", "charts"), PAGES, ids=[_name(p[0]) for p in PAGES])
def test_every_page_holds(app_url, browser, address, charts):
    page_name = _name(address)
    page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
    try:
        page.goto(f"{app_url}/{address}")
        page.locator("[data-testid=stMain] h1, [data-testid=stMain] h2").first.wait_for(
            timeout=180_000)
        normal = _check(page, charts, f"pages-normal-{page_name}", 900)
        assert not normal["problems"], "1440x900:\n" + "\n".join(normal["problems"])
        _present(page)
        assert "pm=1" in page.url, page.url  # the link says so
        shown = _check(page, charts, f"pages-presentation-{page_name}", 1080)
        assert not shown["problems"], "presentation mode, 1920x1080:\n" + "\n".join(
            shown["problems"])
    finally:
        page.context.close()


@pytest.mark.parametrize("scope", list(REVIEW_SCOPES))
def test_review_grid_on_the_first_screen_for_every_scope(app_url, browser, scope):
    """The verdict and the whole grid on the first 1440×900 screen: for the argmax, a searched
    finding, and a filter opened from Monitor (its section in the verdict)."""
    address, button = REVIEW_SCOPES[scope]
    name = f"pages-review-scope-{scope}"
    if button is None:
        layout = _visit(browser, f"{app_url}/{address}", "normal", 4, name)
    else:
        layout = _visit(browser, f"{app_url}/{address}", "normal", 0, name,
                        then=lambda page: _then_review(page, button))
    assert_grid_on_the_first_screen(layout)


def assert_grid_on_the_first_screen(layout: dict, height: int = 900) -> None:
    """PAGE_JS's ``layout`` of a Review page: the verdict, at least 4 charts ending within
    ``height`` px, no layout problem."""
    assert layout["verdict"] is not None
    assert layout["plots"] >= 4
    assert layout["bottom"] <= height, f"the grid ends at {layout['bottom']:.0f} px"
    assert not layout["problems"], "\n".join(layout["problems"])


def _then_review(page, button: str) -> None:
    """Press Monitor's ``button`` ("Open in Review") and come to Review."""
    pressed = page.get_by_role("button", name=button)
    pressed.wait_for(timeout=300_000)
    wait_idle(page, timeout=300_000)
    pressed.click()
    page.locator(".st-key-verdict").wait_for(timeout=300_000)
    page.locator(".js-plotly-plot >> visible=true").nth(3).wait_for(timeout=300_000)
    wait_idle(page, timeout=300_000)
    expander = page.locator(".st-key-verdict [data-testid=stExpander] summary").first
    assert "Monitoring" in expander.inner_text()

"""Real browser on the Monitor page: a fresh server's /monitor, a click on a heat-map cell picks
that series and period, and "Open in Review" opens the Review grid for it."""

from __future__ import annotations

import pytest
from browser_kit import app_page, check_page, wait_charts, wait_idle

pytestmark = pytest.mark.browser

CELL_JS = """
([row, column]) => {
  const plot = document.querySelector('.js-plotly-plot');
  plot.scrollIntoView({block: 'end'});
  const layout = plot._fullLayout, trace = plot._fullData[3];
  const periods = layout.xaxis._categories.length;
  const index = row * periods + column;
  const x = layout.xaxis.d2p(trace.x[index]) + layout._size.l;
  const y = layout.yaxis.d2p(trace.y[index]) + layout._size.t;
  const box = plot.getBoundingClientRect();
  return [box.left + x, box.top + y, trace.y[index], trace.x[index]];
}
"""


def test_clicking_a_cell_picks_its_series_and_opens_review():
    with app_page("/monitor", heading="Monitor") as page:
        wait_charts(page, 2)
        check_page(page, "monitor")
        page.get_by_text("NYC flights 2013").first.wait_for(timeout=10_000)
        # row 17 is origin == EWR (labelled in words, #40); column 30 is a week of July 2013
        x, y, row_label, period = page.evaluate(CELL_JS, [17, 30])
        assert "origin is EWR" in row_label
        page.mouse.click(x, y)  # a click opens Review on that series and period (#40)
        page.get_by_role("heading", name="Review").first.wait_for(timeout=120_000)
        wait_idle(page)
        from urllib.parse import parse_qs, urlparse

        query = parse_qs(urlparse(page.url).query)
        assert query["page"] == ["review"]
        week = f"departure >= {period} and departure < "
        assert query["filter"][0].startswith(f"origin == EWR and {week}"), query["filter"]
        wait_charts(page, 1)
        # the cell was picked for its colour: judged by the monitor's adjusted p (#40)
        page.get_by_text("one of 20 monitored series").first.wait_for(timeout=30_000)
        check_page(page, "monitor-review")

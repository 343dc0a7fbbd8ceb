"""Real browser on the Compare page: a fresh server's /compare link (Adult demo, the GBM against
the logistic model) opened in presentation mode (``pm=1`` in the address) at 1920x1080; no
exception, no legend over an axis title, the verdict, both charts and a group to open in Review.

The same link at 1440x900 (and switched to presentation mode by its toggle), and Review with
both models (the link "Open in Review" gives), are test_pages_browser's test_every_page_holds
[compare] and [review-ab]: the same checks and what these pages show (its ``HOLDS``), on one
page load each. One server and chromium for the module (conftest's ``app_url`` and
``browser``)."""

from __future__ import annotations

import pytest
from browser_kit import check_page, page_at, wait_charts, wait_idle

pytestmark = pytest.mark.browser

LINK = "/compare?demo=adult&score2=score_logistic&cthr=0.3"


def test_compare_link_in_presentation_mode(app_url, browser):
    width, height = 1920, 1080
    with page_at(browser, app_url, LINK + "&pm=1", heading="Compare two models", width=width,
                 height=height) as page:
        page.get_by_text("Next step:").first.wait_for(timeout=300_000)
        wait_idle(page, timeout=300_000)
        wait_charts(page, 2)
        assert page.get_by_text("B predicts worse than A overall").count() == 1
        # the groups' buttons come after the charts: wait for them (timing under load)
        opener = page.get_by_role("button", name="Open in Review: capital_gain")
        opener.first.wait_for(timeout=120_000)
        assert opener.count() >= 1
        check_page(page, f"compare-{width}x{height}")

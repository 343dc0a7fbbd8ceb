"""Real browser on the Compare page: a fresh server's /compare link (Adult demo, the GBM against
the logistic model) at 1440x900, then in presentation mode at 1920x1080; no exception, no legend
over an axis title, the verdict, both charts and a group to open in Review.

One server and chromium for the module (conftest's ``app_url`` and ``browser``): the first case
opens its link on the fresh server, the others open theirs in a new browser context (a new
session, as a colleague opening the link; a fresh server per case cost about 15 s each)."""

from __future__ import annotations

import pytest
from browser_kit import check_page, page_at, wait_charts, wait_idle

pytestmark = pytest.mark.browser

LINK = "/compare?demo=adult&score2=score_logistic&cthr=0.3"


@pytest.mark.parametrize(("width", "height", "presentation"),
                         [(1440, 900, False), (1920, 1080, True)])
def test_compare_page_in_a_real_browser(app_url, browser, width, height, presentation):
    link = LINK + ("&pm=1" if presentation else "")
    with page_at(browser, app_url, link, heading="Compare two models", width=width,
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


def test_review_with_both_models_in_a_real_browser(app_url, browser):
    # the link "Open in Review" gives on the Compare page: the group as the scope, B beside A
    from urllib.parse import quote

    link = f"/review?demo=adult&scope=filter&filter={quote('capital_gain ≥ 100')}&rb=score_logistic"
    with page_at(browser, app_url, link, heading="Review", width=1440, height=900) as page:
        page.get_by_text("Model B:").first.wait_for(timeout=300_000)
        wait_idle(page, timeout=300_000)
        wait_charts(page, 6)  # A's four charts and B's two
        assert page.get_by_role("button", name="Show A only").count() == 1
        check_page(page, "review-both-models-1440x900")

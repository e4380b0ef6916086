"""Every page at a desktop (1280 px) and a phone (390 px) width, after loading the samples
and asking two questions: nothing is wider than the page, every chart fits its column,
and a screenshot of each page lands in tests/screenshots/ (screens-<page>-<width>.png)
for a person to look at.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from browser_helpers import FITS_JS, ask, browser, require_chromium, select_row, shot, start_app  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.slow]
require_chromium()
WIDTHS = [(1280, 900), (390, 844)]
TALL = 2400  # screenshots: Streamlit scrolls inside the page, so a tall window shows it all
NOT_WIDER_JS = """() => {
    const main = document.querySelector('[data-testid=stMain], [data-testid=stAppScrollToBottomContainer]');
    return main.scrollWidth <= main.clientWidth + 1 && document.documentElement.scrollWidth <= innerWidth + 1;
}"""


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    yield from start_app(tmp_path_factory)


def open_page(browser, url: str, width: int, height: int):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(url)
    return context, page


@pytest.mark.parametrize("width,height", WIDTHS, ids=[f"{w}px" for w, _ in WIDTHS])
def test_every_page_fits_the_width_after_samples_and_two_questions(app_url, browser, width, height):
    context, page = open_page(browser, app_url, width, height)
    try:
        page.get_by_placeholder("Ask a question about your documents").wait_for()
        load = page.get_by_role("button", name="Load the sample documents")
        if load.count():
            load.click()
            page.get_by_text("ragkit_user_guide.md: added").wait_for()
        page.get_by_text("Ask anything about your documents").wait_for()
        questions = ["Which file types does ragkit accept?", "What is the size limit for them?"]
        for number, question in enumerate(questions, 1):
            ask(page, question)
            captions = page.get_by_test_id("stChatMessage").get_by_text("extractive answer (offline)")
            expect(captions).to_have_count(number)
        page.wait_for_function(NOT_WIDER_JS)
        page.set_viewport_size({"width": width, "height": TALL})
        shot(page, f"screens-chat-{width}")

        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{app_url}/documents")
        select_row(page, "ragkit_user_guide.md")
        page.get_by_text("Preview passages").click()
        page.get_by_text("Passage 1 ·").wait_for()
        page.wait_for_function(NOT_WIDER_JS)
        if width >= 1280:  # on a phone the table scrolls sideways inside itself
            grid = page.get_by_test_id("stDataFrame").locator(".dvn-scroller").first
            assert grid.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "the table fits without a sideways scroll"
        page.set_viewport_size({"width": width, "height": TALL})
        shot(page, f"screens-documents-{width}")

        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{app_url}/stats")
        page.get_by_text("How close the best passage came to the question").wait_for()
        # seven charts, all drawn (the token chart is an empty state: every answer was extractive)
        expect(page.get_by_test_id("stVegaLiteChart")).to_have_count(7)
        page.wait_for_function(FITS_JS)
        page.wait_for_function(NOT_WIDER_JS)
        page.set_viewport_size({"width": width, "height": TALL})
        page.wait_for_function(FITS_JS)
        shot(page, f"screens-stats-{width}")
    finally:
        context.close()

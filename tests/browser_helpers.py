"""Shared pieces of the browser tests: the app under test, headless Chromium, page actions.

Needs Debian's chromium (/usr/bin/chromium) and the playwright package (its driver
only: `playwright install` is never run). Test modules call require_chromium() first
and import the fixtures they use (browser, page) from here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from conftest import REPO, free_port, serve

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = Path(__file__).parent / "screenshots"
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
HEADINGS = {"Chat": "Chat with your documents", "Documents": "Documents", "Stats": "Stats"}


def require_chromium() -> None:
    """Skip the calling test module without Chromium (fail instead in CI, CI=true)."""
    if Path(CHROMIUM).exists():
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI needs Chromium for the browser tests, not found at {CHROMIUM}", pytrace=False)
    pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)


def start_app(tmp_path_factory, **extra_env):
    """Run the app on a loopback port with its own data dir; yields its URL."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["RAGKIT_DATA_DIR"] = str(tmp_path_factory.mktemp("e2e-data"))
    env.update(extra_env)
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.headless", "true",
               "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false"]
    with open(tmp_path_factory.mktemp("e2e-log") / "streamlit.log", "w") as log:
        with serve(command, url + "/_stcore/health", 90, "the app", cwd=REPO, env=env, stdout=log,
                   stderr=subprocess.STDOUT):
            yield url


@pytest.fixture(scope="module")
def browser():
    """Headless Debian Chromium driven by Playwright, one per test module."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=30_000)  # a busy machine redraws slowly: 5 s (the default) is not enough

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, request):
    """A fresh browser context and tab per test (a failed test leaves FAILED-<test>.png)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    tab = context.new_page()
    tab.set_default_timeout(120_000)  # a busy machine indexes and answers slowly
    yield tab
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        shot(tab, f"FAILED-{request.node.name[:80]}")
    context.close()


def shot(page, name: str) -> None:
    """A full-page screenshot in tests/screenshots/."""
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def nav_links(page):
    """The sidebar's links to the app's pages (drawn by streamlit_app.py with st.page_link)."""
    return page.get_by_test_id("stSidebar").get_by_test_id("stPageLink-NavLink")


def go(page, name: str, attempts: int = 4) -> None:
    """Open a page from the sidebar navigation and wait for its heading. A click that lands
    while the app redraws the page after a rerun can be lost (a user clicks again): so does
    this. The heading is what is waited on: Chat's address ("/") is a prefix of every
    page's, so an address check would pass on a lost click."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    heading = page.get_by_role("heading", name=HEADINGS[name], exact=True)
    for attempt in range(attempts):
        nav_links(page).filter(has_text=name).click()
        try:
            heading.wait_for(timeout=30_000)
            return
        except PlaywrightTimeout:
            if attempt == attempts - 1:
                raise


def upload(page, *paths) -> None:
    """Drop files on the Documents page's uploader (not the chat box's hidden file input)."""
    page.get_by_test_id("stFileUploader").locator("input[type=file]").set_input_files([str(p) for p in paths])


def wait_ingested(page, filename: str) -> None:
    """Wait for the file's final result (not its progress bar, which also starts with its name)."""
    done = re.compile(rf"{re.escape(filename)}: (added|already in the knowledge base|replaced by version)")
    page.get_by_text(done).first.wait_for()


def session_in_url(page) -> str:
    """The conversation id in the address bar (read from the page: Streamlit changes the URL
    with history.replaceState, which page.url may not have seen yet)."""
    return page.evaluate("new URL(location.href).searchParams.get('session')")


# True when every chart is drawn and fits inside its column and nothing is wider than the page.
FITS_JS = """() => {
    const charts = [...document.querySelectorAll('[data-testid=stVegaLiteChart]')];
    if (!charts.length) return false;
    const main = document.querySelector('[data-testid=stMain], [data-testid=stAppScrollToBottomContainer]');
    if (main.scrollWidth > main.clientWidth + 1) return false;
    return charts.every(chart => {
        const drawn = chart.querySelector('canvas, svg');
        if (!drawn || drawn.getBoundingClientRect().width < 50) return false;
        const column = chart.closest('[data-testid=stColumn]') || chart.closest('[data-testid=stMainBlockContainer]');
        const box = drawn.getBoundingClientRect(), room = column.getBoundingClientRect();
        return box.left >= room.left - 1 && box.right <= room.right + 1;
    });
}"""


def fill_and_submit(page, label: str, value: str, button: str, done: str, attempts: int = 3) -> None:
    """Type ``value`` into the field ``label``, press ``button`` and wait for the text ``done``.
    A rerun that redraws the form between typing and pressing (seen once in a run of the suite, right
    after a selection in the documents table) drops what was typed and the press: the user
    then sees the field empty again and types it once more, and so does this helper, with a
    warning in the test report so that a redraw that becomes the rule does not go unseen."""
    field = page.get_by_label(label, exact=True)
    for attempt in range(1, attempts + 1):
        try:
            field.fill(value)
            expect(field).to_have_value(value, timeout=5_000)
            page.get_by_role("button", name=button).click()
            page.get_by_text(done).first.wait_for(timeout=20_000)
        except (AssertionError, PlaywrightTimeoutError):
            if field.input_value() == value:  # still typed: the press is being handled, slowly
                page.get_by_text(done).first.wait_for()
                return
            warnings.warn(f"{label!r}: what was typed was dropped by a redraw (attempt {attempt} of {attempts})",
                          stacklevel=2)
            continue
        return
    raise AssertionError(f"{label!r} was emptied by a redraw {attempts} times; {done!r} never showed")


def filter_documents(page, text: str, heading: re.Pattern, attempts: int = 5) -> None:
    """Type ``text`` into the Documents page's filter, press Enter and wait for the heading
    matching ``heading``. A redraw between typing and pressing (a finished ingest refreshing
    the page) drops both, as in ``fill_and_submit``: the user types again, and so does this
    helper, with a warning in the test report."""
    field = page.get_by_placeholder("title, file name or tag")
    shown = page.get_by_role("heading", name=heading)
    for attempt in range(1, attempts + 1):
        field.fill(text)
        field.press("Enter")
        try:
            shown.wait_for(timeout=30_000)
            return
        except PlaywrightTimeoutError:
            if attempt == attempts:
                raise
            warnings.warn(f"the filter {text!r} was dropped by a redraw (attempt {attempt} of {attempts})",
                          stacklevel=2)


def ask(page, question: str) -> None:
    """Type a question into the chat box and send it."""
    box = page.get_by_placeholder("Ask a question about your documents")
    box.fill(question)
    box.press("Enter")


def table_row_of(page, text: str) -> int:
    """The documents table's row (0-based) whose cells show ``text``.

    The grid is drawn on a canvas; the accessible copy of the table inside it holds each
    cell's text with its position (data-testid glide-cell-<column>-<row>)."""
    cell = page.get_by_test_id("stDataFrame").locator("td[role=gridcell]").filter(has_text=text).first
    cell.wait_for(state="attached")
    return row_of_cell(cell)


def row_of_cell(cell) -> int:
    """The 0-based table row of an accessible grid cell (its data-testid ends with the row)."""
    return int(cell.get_attribute("data-testid").rsplit("-", 1)[1])


def select_row(page, text: str) -> None:
    """Select the documents table's row that shows ``text``, and only it, with the keyboard, and
    wait for the detail panel and the selected row (never by screen position: the row is found by
    its content). A table redrawn with a new row between finding the row and selecting it (a busy
    machine) moves the row, so the row under the cursor was selected instead: that row is
    unselected again and the cursor moved to where the wanted row is now."""
    grid = page.get_by_test_id("data-grid-canvas")
    selected = page.get_by_test_id("stDataFrame").locator("tr[aria-selected=true]")
    grid.focus()
    page.keyboard.press("ArrowRight")  # the grid's cursor enters the first row
    cursor = 0

    def toggle(row: int) -> None:  # Shift+Space selects the cursor's row, or unselects it
        nonlocal cursor
        grid.focus()
        for _ in range(abs(row - cursor)):
            page.keyboard.press("ArrowDown" if row > cursor else "ArrowUp")
        cursor = row
        page.keyboard.press("Shift+Space")

    for _ in range(3):
        # the rows first, then the toggles: each toggle redraws the table and the list with it
        wrong_rows = [row_of_cell(row.locator("td[role=gridcell]").first)
                      for row in selected.filter(has_not_text=text).all()]
        for wrong in wrong_rows:
            toggle(wrong)
        if selected.filter(has_text=text).count() == 0:
            toggle(table_row_of(page, text))
            page.get_by_text("Preview passages").wait_for()
        try:
            expect(selected).to_have_count(1, timeout=10_000)
            expect(selected).to_contain_text(text, timeout=10_000)
            return
        except AssertionError:
            continue
    expect(selected).to_have_count(1)
    expect(selected).to_contain_text(text)




# An init script (page.add_init_script) that writes down, from the first paint on, everything
# the sidebar's page list ever showed and whether "Page not found" ever appeared: the checks
# then cover the seconds before the app's script has run, not only the final page.
WATCH_JS = """(() => {
  const seen = window.__ragkitSeen = new Set();
  const look = () => {
    for (const link of document.querySelectorAll('[data-testid=stSidebarNav] a, [data-testid=stSidebarNavLink]'))
      seen.add('nav: ' + link.textContent.trim());
    if (document.body && document.body.textContent.includes('Page not found')) seen.add('Page not found');
  };
  new MutationObserver(look).observe(document, {childList: true, subtree: true, characterData: true});
})();"""


def seen_since_load(page) -> list[str]:
    """What WATCH_JS wrote down in this tab (sorted)."""
    return sorted(page.evaluate("[...(window.__ragkitSeen || [])]"))

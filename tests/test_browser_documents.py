"""The documents half of issue 19 in a real headless Chromium: a citation opens at its PDF
page with the highlight drawn (checked in the screenshot's pixels) and the original
downloads; a second knowledge base is asked without hits from the first; XLSX + PPTX + CSV
+ an unsupported file dropped together give four result rows; a web page from a local
server; a scanned PDF made here is read by OCR; bulk delete; the Documents page keeps the
conversation in its URL and counts what its filter shows.

Screenshots (tests/screenshots/): viewer-pdf-1280.png, viewer-pdf-390.png,
documents-kb-1280.png, documents-four-files-1280.png, documents-bulk-390.png.
"""

from __future__ import annotations

import io
import re

import pytest
from playwright.sync_api import expect

from browser_helpers import (  # noqa: F401 (fixtures)
    ask,
    browser,
    filter_documents,
    go,
    page,
    require_chromium,
    session_in_url,
    shot,
    start_app,
    table_row_of,
    upload,
    wait_ingested,
)
from conftest import FIXTURES
from doc_makers import ARTICLE, make_pptx, make_scanned_pdf, make_xlsx, serve_folder
from ragkit.app.viewer import highlight_on_white

pytestmark = pytest.mark.browser
require_chromium()


@pytest.fixture(scope="module")
def app_url(tmp_path_factory, browser):
    """The app, allowed to fetch pages from this machine (the test's own web server), opened
    once until its chat box shows: loading the model at first start takes minutes on a busy
    machine, more than a step of a test may wait, whichever test comes first."""
    app = start_app(tmp_path_factory, RAGKIT_URL_ALLOW_PRIVATE="true")
    url = next(app)
    context = browser.new_context()
    warm = context.new_page()
    warm.goto(url)
    warm.get_by_placeholder("Ask a question about your documents").wait_for(timeout=600_000)
    context.close()
    yield url
    next(app, None)  # stops the app


def highlighted_pixels(png: bytes) -> int:
    """Pixels of the highlight colour (on white paper) in a screenshot."""
    from PIL import Image

    target = highlight_on_white()
    pixels = Image.open(io.BytesIO(png)).convert("RGB").getdata()
    return sum(1 for pixel in pixels if all(abs(a - b) <= 10 for a, b in zip(pixel, target)))


PAGE_IMAGE = "[role=dialog] [data-testid=stImage] img"


def page_image_loaded(page, other_than: str = "") -> str:
    """Wait until the viewer's page image is loaded and is not the one at ``other_than``
    (a turned page); its address."""
    page.wait_for_function(
        "([selector, old]) => { const img = document.querySelector(selector);"
        " return img !== null && img.complete && img.naturalWidth > 0 && img.src !== old; }",
        arg=[PAGE_IMAGE, other_than])
    return page.locator(PAGE_IMAGE).get_attribute("src")


def open_documents(page, app_url: str) -> None:
    page.goto(f"{app_url}/documents")
    page.get_by_role("heading", name="Documents", exact=True).wait_for()


def result_row(page, pattern: str):
    return page.get_by_test_id("stAlert").filter(has_text=re.compile(pattern)).first


@pytest.mark.slow
def test_a_citation_opens_at_its_pdf_page_highlighted_and_the_original_downloads(app_url, page):
    page.goto(app_url)
    page.get_by_placeholder("Ask a question about your documents").wait_for()
    go(page, "Documents")
    upload(page, FIXTURES / "report_en.pdf")
    wait_ingested(page, "report_en.pdf")
    go(page, "Chat")
    ask(page, "Who founded Aurora Analytics?")
    answer = page.get_by_test_id("stChatMessage").last
    answer.get_by_text("Marta Silva").first.wait_for()
    answer.get_by_role("button", name=re.compile(r"Open page \d+")).first.click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_text(re.compile(r"Page 1 of \d+")).wait_for()
    dialog.get_by_text("The cited sentences are highlighted.").wait_for()
    cited_page = page_image_loaded(page)
    assert highlighted_pixels(page.locator(PAGE_IMAGE).screenshot()) > 500, "the highlight is drawn on the page"
    dialog.get_by_text(re.compile(r"Page 1 of \d+")).scroll_into_view_if_needed()
    shot(page, "viewer-pdf-1280")

    with page.expect_download() as download:
        dialog.get_by_role("button", name="Download the original").click()
    assert open(download.value.path(), "rb").read() == (FIXTURES / "report_en.pdf").read_bytes()
    assert download.value.suggested_filename == "report_en.pdf"

    dialog.get_by_role("button", name="Next page").click()
    dialog.get_by_text(re.compile(r"Page 2 of \d+")).wait_for()
    dialog.get_by_text("The citation is on page 1.").wait_for()
    next_page = page_image_loaded(page, other_than=cited_page)
    assert highlighted_pixels(page.locator(PAGE_IMAGE).screenshot()) == 0, "nothing is cited on page 2"
    page.set_viewport_size({"width": 390, "height": 844})
    dialog.get_by_role("button", name="Previous page").click()
    dialog.get_by_text("The cited sentences are highlighted.").wait_for()
    page_image_loaded(page, other_than=next_page)
    assert highlighted_pixels(page.locator(PAGE_IMAGE).screenshot()) > 100, "back on page 1, highlighted again"
    dialog.get_by_text(re.compile(r"Page 1 of \d+")).scroll_into_view_if_needed()
    shot(page, "viewer-pdf-390")


def select_rows(page, texts: list[str]) -> None:
    """Select the table rows showing each of ``texts`` with the keyboard (the page must be
    freshly opened: the grid's cursor starts on the first row)."""
    grid = page.get_by_test_id("data-grid-canvas")
    grid.focus()
    page.keyboard.press("ArrowRight")
    cursor = 0
    for row in sorted(table_row_of(page, text) for text in texts):
        for _ in range(row - cursor):
            page.keyboard.press("ArrowDown")
        cursor = row
        page.keyboard.press("Shift+Space")


@pytest.mark.slow
def test_knowledge_bases_files_of_every_kind_and_bulk_delete(app_url, page, tmp_path):
    # --- a second knowledge base, asked without hits from the first ---
    open_documents(page, app_url)
    upload(page, FIXTURES / "report_en.pdf")
    wait_ingested(page, "report_en.pdf")
    page.get_by_role("button", name="New", exact=True).click()
    page.get_by_label("Name of the new knowledge base", exact=True).fill("Lighthouse")
    page.get_by_role("button", name="Create", exact=True).click()
    page.get_by_text("Knowledge base Lighthouse created").wait_for()
    page.get_by_text("No documents in Lighthouse yet").wait_for()
    expect(page.get_by_label("Name of the new knowledge base", exact=True)).to_be_hidden()  # the popover closed
    notes = tmp_path / "keeper.md"
    notes.write_text("# Keeper's log\n\nThe keeper of Skerry Point records 42 storms every winter, "
                     "and the founder of the lighthouse trust is Agnes Mowat.\n", encoding="utf-8")
    upload(page, notes)
    wait_ingested(page, "keeper.md")
    page.get_by_role("heading", name=re.compile(r"Lighthouse · 1 document · 1 passage")).wait_for()
    shot(page, "documents-kb-1280")

    go(page, "Chat")
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_test_id("stMultiSelect").filter(has_text="Knowledge bases").click()
    page.get_by_role("option", name="Lighthouse").click()
    page.keyboard.press("Escape")
    ask(page, "Who founded Aurora Analytics?")
    answer = page.get_by_test_id("stChatMessage").last
    answer.get_by_text(re.compile(r"extractive answer|not in your documents")).first.wait_for()
    expect(answer).not_to_contain_text("report_en.pdf")
    expect(answer).not_to_contain_text("Marta Silva")
    ask(page, "How many storms does the keeper record?")
    answer = page.get_by_test_id("stChatMessage").last
    answer.get_by_text("keeper.md · page 1").first.wait_for()
    expect(answer).not_to_contain_text("report_en.pdf")

    # --- four files dropped together: four result rows (one refused with its reason) ---
    go(page, "Documents")
    workbook, deck = make_xlsx(tmp_path / "register.xlsx"), make_pptx(tmp_path / "plan.pptx")
    table = tmp_path / "tides.csv"
    table.write_text("day,high tide\nMonday,06:10\nTuesday,06:55\n", encoding="utf-8")
    program = tmp_path / "setup.exe"
    program.write_bytes(b"MZ\x90\x00 not a document")
    upload(page, workbook, deck, table, program)
    for pattern in (r"register\.xlsx: added \(2 pages", r"plan\.pptx: added \(2 pages", r"tides\.csv: added",
                    r"setup\.exe: unsupported file type \.exe"):
        result_row(page, pattern).wait_for()
    four = re.compile(r"(register\.xlsx|plan\.pptx|tides\.csv|setup\.exe):")
    rows = page.get_by_test_id("stAlert").filter(has_text=four)
    expect(rows).to_have_count(4)
    shot(page, "documents-four-files-1280")

    # --- a web page by address, from a local server ---
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "lighthouse.html").write_text(ARTICLE, encoding="utf-8")
    with serve_folder(tmp_path / "site") as base:
        page.get_by_label("Web page", exact=True).fill(f"{base}/lighthouse.html")
        page.get_by_role("button", name="Add the page", exact=True).click()
        # the address is shown inert (a word joiner after each ':' keeps it from becoming a link)
        result_row(page, r"127\.0\.0\.1.*/lighthouse\.html: added").wait_for()

    # --- the heading counts what the filter shows; bulk delete with one confirmation ---
    filter_documents(page, "tides", re.compile(r"Lighthouse · 1 of 5 documents"))
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()  # the address keeps the knowledge base (?kb=); the grid's cursor starts on the first row
    page.get_by_role("heading", name=re.compile(r"Lighthouse · 5 documents")).wait_for()
    select_rows(page, ["register.xlsx", "tides.csv"])
    page.get_by_role("heading", name="2 documents selected").wait_for()
    page.get_by_role("button", name="Delete 2 documents").click()
    page.get_by_role("button", name="Yes, delete them").click()
    page.get_by_text(re.compile(r"2 documents deleted \((register\.xlsx|tides\.csv)")).wait_for()
    page.get_by_role("heading", name=re.compile(r"Lighthouse · 3 documents")).wait_for()
    page.get_by_role("heading", name="2 documents selected").wait_for(state="detached")  # nothing left chosen
    shot(page, "documents-bulk-390")


@pytest.mark.slow
def test_a_scanned_pdf_made_here_is_read_by_ocr_and_answers(app_url, page, tmp_path):
    scan = make_scanned_pdf(tmp_path / "scanned_memo.pdf",
                            ["Memo: the ferry to Inchcolm leaves at 07:45", "from the north pier every Sunday."])
    open_documents(page, app_url)
    upload(page, scan)
    result_row(page, r"scanned_memo\.pdf: added .*1 page read by OCR \(p\. 1\)").wait_for()
    go(page, "Chat")
    ask(page, "When does the ferry to Inchcolm leave?")
    answer = page.get_by_test_id("stChatMessage").last
    answer.get_by_text(re.compile(r"scanned_memo\.pdf")).first.wait_for()
    expect(answer).to_contain_text(re.compile(r"07\W{0,2}45"))  # a word joiner may follow the colon


def test_the_documents_page_keeps_the_conversation_through_a_reload(app_url, page):
    page.goto(app_url)
    page.get_by_placeholder("Ask a question about your documents").wait_for()
    conversation = session_in_url(page)
    assert conversation
    go(page, "Documents")
    page.wait_for_function("id => new URL(location.href).searchParams.get('session') === id", arg=conversation)
    page.reload()
    page.get_by_role("heading", name="Documents", exact=True).wait_for()
    go(page, "Chat")
    page.wait_for_function("id => new URL(location.href).searchParams.get('session') === id", arg=conversation)
    assert session_in_url(page) == conversation

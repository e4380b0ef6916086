"""End to end in a real headless Chromium against the app started by the test.

Upload a PDF and a DOCX through the file input, ask a question, watch the streamed
answer and the source panel, ask a follow-up that needs contextualization, reload and
find the conversation again. Screenshots go to tests/screenshots/.

Needs Debian's chromium (/usr/bin/chromium) and the playwright package (its driver
only: `playwright install` is never run). Without the browser the tests are skipped,
except in CI (CI=true), where that is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, free_port, serve

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = Path(__file__).parent / "screenshots"
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
HEADINGS = {"Chat": "Chat with your documents", "Documents": "Documents", "Stats": "Stats"}
pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
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
def app_url(tmp_path_factory):
    """The app as a user starts it: offline, extractive answers."""
    yield from start_app(tmp_path_factory)


@pytest.fixture(scope="module")
def llm_app_url(tmp_path_factory):
    """The app configured with a (local, real HTTP) OpenAI-compatible server that streams slowly."""
    from openai_server import FakeOpenAIServer, Reply

    answer = "Breakfast is served from 06:00 to 09:30 station time [1], in the Orbital Kitchen [1]."
    with FakeOpenAIServer(lambda body: Reply(answer, chunk_chars=3, chunk_delay_s=0.08)) as server:
        yield from start_app(tmp_path_factory, OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.base_url,
                             RAGKIT_CHAT_MODEL="test-model")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    tab = context.new_page()
    tab.set_default_timeout(60_000)
    yield tab
    context.close()


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def go(page, name: str) -> None:
    page.get_by_test_id("stSidebarNavLink").filter(has_text=name).click()
    page.wait_for_url(f"**/{'' if name == 'Chat' else name.lower()}*")
    page.get_by_role("heading", name=HEADINGS[name], exact=True).wait_for()


def upload(page, *paths) -> None:
    """Drop files on the Documents page's uploader (not the chat box's hidden file input)."""
    page.get_by_test_id("stFileUploader").locator("input[type=file]").set_input_files([str(p) for p in paths])


def wait_ingested(page, filename: str) -> None:
    """Wait for the file's final result (not its progress bar, which also starts with its name)."""
    done = re.compile(rf"{re.escape(filename)}: (added|already in the knowledge base|replaced by version)")
    page.get_by_text(done).first.wait_for()


def ask(page, question: str) -> None:
    box = page.get_by_placeholder("Ask a question about your documents")
    box.fill(question)
    box.press("Enter")


def test_upload_ask_follow_up_and_reload(app_url, page):
    page.goto(app_url)
    page.get_by_text("Your knowledge base is empty").wait_for()
    page.get_by_placeholder("Ask a question about your documents").wait_for()
    shot(page, "01-empty-state")

    go(page, "Documents")
    upload(page, FIXTURES / "report_en.pdf", FIXTURES / "handbook.docx")
    page.get_by_text("report_en.pdf: added").wait_for()
    page.get_by_text("handbook.docx: added").wait_for()
    page.get_by_text("2 documents").wait_for()
    page.get_by_test_id("stDataFrame").wait_for()
    time.sleep(1)  # the table is drawn on a canvas after the element appears
    shot(page, "02-documents")

    go(page, "Chat")
    ask(page, "Who founded Aurora Analytics?")
    page.get_by_text("Marta Silva").first.wait_for()
    page.get_by_text("report_en.pdf · page 1").first.wait_for()
    ask(page, "Where does it plan to open an office?")
    page.get_by_text("Searched as:").first.wait_for()
    page.get_by_text("Osaka").first.wait_for()
    page.get_by_text("report_en.pdf · page 3").first.wait_for()
    session_url = page.url
    assert "session=" in session_url
    shot(page, "03-conversation")

    page.reload()
    page.get_by_text("Where does it plan to open an office?").first.wait_for()
    page.get_by_text("Who founded Aurora Analytics?").first.wait_for()
    assert page.url == session_url
    shot(page, "04-after-reload")


def test_generated_answer_streams_token_by_token(llm_app_url, page):
    page.goto(llm_app_url)
    page.get_by_text("generated by").first.wait_for()
    go(page, "Documents")
    upload(page, FIXTURES / "handbook.docx")
    page.get_by_text("handbook.docx: added").wait_for()
    go(page, "Chat")
    page.get_by_placeholder("Ask a question about your documents").wait_for()
    page.evaluate("""() => {
        window.__answerLengths = [];
        new MutationObserver(() => {
            const bubbles = document.querySelectorAll('[data-testid="stChatMessage"]');
            if (bubbles.length) window.__answerLengths.push(bubbles[bubbles.length - 1].innerText.length);
        }).observe(document.body, {subtree: true, childList: true, characterData: true});
    }""")
    ask(page, "When does the kitchen serve breakfast?")
    page.get_by_test_id("stChatMessage").get_by_text("generated by test-model").first.wait_for()
    lengths = page.evaluate("window.__answerLengths")
    assert len(set(lengths)) > 5, f"the answer should grow piece by piece, saw lengths {sorted(set(lengths))}"
    page.get_by_text("handbook.docx · page 1").first.wait_for()
    shot(page, "07-generated-answer")


def test_uploaded_markup_is_shown_as_text_never_run(app_url, page, tmp_path):
    hostile = tmp_path / "hostile.md"
    hostile.write_text(
        "# Hostile\n\nThe secret code word is pelican. <script>window.__pwned = 1</script> "
        "<img src=x onerror=\"window.__pwned = 2\"> [click](javascript:window.__pwned=3)\n", encoding="utf-8")
    page.goto(app_url)
    go(page, "Documents")
    upload(page, hostile)
    page.get_by_text("hostile.md: added").wait_for()
    go(page, "Chat")
    ask(page, "What is the secret code word?")
    page.get_by_text("pelican").first.wait_for()
    time.sleep(1)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("[data-testid=stChatMessage] script").count() == 0
    shot(page, "05-hostile-document")


def test_indexing_goes_on_when_the_user_leaves_the_documents_page(app_url, page, tmp_path):
    notes = tmp_path / "long_notes.md"
    notes.write_text("\n\n".join(f"Paragraph {n}: the harbour crane number {n} lifts {n * 7} tonnes of cargo "
                                   f"every day, and its operator logs the weather, the tide and the ship names."
                                   for n in range(400)), encoding="utf-8")
    page.goto(app_url)
    page.get_by_placeholder("Ask a question about your documents").wait_for()
    go(page, "Documents")
    upload(page, notes)
    page.get_by_text(re.compile(r"long_notes\.md \(1/1\): (?!done)")).wait_for()  # still indexing
    go(page, "Chat")
    time.sleep(1)
    go(page, "Documents")
    page.get_by_text("long_notes.md: added").wait_for()
    page.get_by_text(re.compile(r"Knowledge base · \d+ documents? · \d+ passages")).wait_for()
    page.get_by_role("button", name="Dismiss").click()
    page.get_by_text("long_notes.md: added").wait_for(state="detached")


def test_stats_page_draws_charts(app_url, page):
    page.goto(app_url)
    page.get_by_placeholder("Ask a question about your documents").wait_for()
    go(page, "Documents")
    upload(page, FIXTURES / "report_en.pdf")
    wait_ingested(page, "report_en.pdf")
    go(page, "Chat")
    ask(page, "Who founded Aurora Analytics?")
    page.get_by_text("Marta Silva").first.wait_for()
    go(page, "Stats")
    page.get_by_text("Documents by type").wait_for()
    page.locator("[data-testid=stVegaLiteChart]").first.wait_for()
    assert page.locator("[data-testid=stVegaLiteChart]").count() >= 4
    shot(page, "06-stats")


def select_first_row(page) -> None:
    """Tick the first row's selection box: the table is a canvas grid, so this clicks by position."""
    table = page.get_by_test_id("stDataFrame")
    table.wait_for()
    time.sleep(1)  # the grid is drawn on its canvas after the element appears
    box = table.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + 35 + 17)
    page.get_by_text("Preview passages").wait_for()


def test_documents_table_edit_tags_and_delete_with_confirmation(app_url, page):
    page.goto(app_url)
    page.get_by_placeholder("Ask a question about your documents").wait_for()
    go(page, "Documents")
    upload(page, FIXTURES / "tea_garden_zh.pdf", FIXTURES / "report_en.pdf")
    wait_ingested(page, "tea_garden_zh.pdf")
    wait_ingested(page, "report_en.pdf")
    heading = page.get_by_role("heading", name=re.compile(r"Knowledge base · \d+ documents?")).inner_text()
    before = int(re.search(r"(\d+) documents?", heading).group(1))
    select_first_row(page)
    title = page.get_by_role("heading", level=3).last.inner_text()
    page.get_by_label("Tags", exact=True).fill("e2e-tag, 测试")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("details saved").wait_for()
    shot(page, "08-document-details")

    # Saving keeps the row selected (the notice above the table moved it, so no second click).
    page.get_by_text("Preview passages").wait_for()
    assert page.get_by_role("heading", level=3).last.inner_text() == title
    page.get_by_role("button", name="Delete document").click()
    confirm = page.get_by_role("button", name="Yes, delete")
    confirm.wait_for()
    confirm.click()
    page.get_by_text(": deleted").wait_for()
    page.get_by_text(f"Knowledge base · {before - 1} document").wait_for()

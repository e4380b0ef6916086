"""Hostile documents, questions and file names stay inert text in a real Chromium.

A document sentence carrying every way Markdown or HTML could load a remote resource
(nested-bracket and reference images, <img>, entities, autolinks, bare URLs, shortcodes)
is made the best answer to a question, which itself carries an image. The app is then
used as a person would: the file dropped into the chat box, the question asked, the
answer and its source panel read, the conversation listed in the sidebar, the document
filter opened, the document's passages previewed, the stats drawn. A local HTTP server
records every request: it must get none (but the test's own control request), and the
browser must not fetch anything but the app itself.

A password-protected app shows a login and nothing else, even for a page's own URL.
"""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import expect

from browser_helpers import (  # noqa: F401 (fixtures)
    WATCH_JS,
    ask,
    browser,
    go,
    nav_links,
    page,
    require_chromium,
    seen_since_load,
    select_row,
    shot,
    start_app,
)

pytestmark = pytest.mark.browser
require_chromium()

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082")
HOSTILE_FILENAME = "pelican_![n](x.png).md"
PASSWORD = "correct horse battery staple"


class Recorder(ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 that answers everything with a tiny PNG and notes each path."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _RecordingHandler)
        self.paths: list[str] = []

    @property
    def url(self) -> str:
        """http://127.0.0.1:<port>"""
        return f"http://127.0.0.1:{self.server_address[1]}"


class _RecordingHandler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's naming)
        self.server.paths.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Access-Control-Allow-Origin", "*")
        self.end_headers()
        self.wfile.write(PNG)

    do_POST = do_HEAD = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def recorder():
    """The request-recording server, running for the module."""
    server = Recorder()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """The app as a user starts it: offline, extractive answers."""
    yield from start_app(tmp_path_factory)


def hostile_document(url: str) -> str:
    """A Markdown file whose title and best sentence try every way to fetch ``url``."""
    return (
        f"# Pelican vault ![title]({url}/title.png)\n\n"
        "The weather in the harbour was calm all week and the ships left on time.\n\n"
        "The pelican vault code is kept by the night keeper "
        f"(badge ![a [b] c]({url}/nested.png?q=1) and ![x][r] and <img src=\"{url}/tag.png\"> and "
        f"&lt;img src=&quot;{url}/entity.png&quot;&gt; and {url}/bare.png and <{url}/auto.png> and "
        "www.example.com and :streamlit: and :material/home: and $x^2$ and :red[alarm]) every night.\n\n"
        f"[r]: {url}/ref.png\n\n"
        "The canteen serves soup on Fridays and bread every morning.\n"
    )


def drop_into_chat(page, path) -> None:
    """Attach a file to the chat box and send it (the chat page adds it to the knowledge base)."""
    page.get_by_test_id("stChatInput").locator("input[type=file]").set_input_files(str(path))
    page.get_by_test_id("stChatInputSubmitButton").click()


def preview_document(page, filename: str) -> None:
    """Select the documents table's row of ``filename`` (by its content, with the keyboard: the
    grid is a canvas) and open its passage preview."""
    select_row(page, filename)
    page.get_by_text("Preview passages").click()


def test_hostile_markup_never_makes_the_browser_fetch_anything(app_url, recorder, page, tmp_path):
    outside: list[str] = []
    page.on("request", lambda request: None if request.url.startswith((app_url, "data:", "blob:"))
            else outside.append(request.url))
    page.goto(app_url)
    page.get_by_placeholder("Ask a question about your documents").wait_for()
    # The recorder works and the page can reach it: this request, and only this one, must arrive.
    assert page.evaluate("url => fetch(url).then(r => r.status)", f"{recorder.url}/control") == 200
    assert recorder.paths == ["/control"]

    document = tmp_path / HOSTILE_FILENAME
    document.write_text(hostile_document(recorder.url), encoding="utf-8")
    drop_into_chat(page, document)
    page.get_by_text(f"{HOSTILE_FILENAME}: added").wait_for()

    question = f"![q]({recorder.url}/q.png) vault keeper?"
    assert len(question) <= 48, "the whole question becomes the conversation's title (a sidebar button)"
    ask(page, question)
    answer = page.get_by_test_id("stChatMessage").last
    answer.get_by_text(f"{HOSTILE_FILENAME} · page 1").first.wait_for()  # the source panel
    answer.get_by_text("extractive answer (offline)").wait_for()
    assert "(badge ![a [b] c](" in answer.inner_text(), "the answer shows the markup as text"
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_role("button", name=re.compile(r"!\[q\]\(http.*vault keeper\?")).wait_for()
    shot(page, "09-hostile-answer")

    go(page, "Documents")
    preview_document(page, HOSTILE_FILENAME)
    page.get_by_role("heading", name=re.compile(r"Pelican vault !\[title\]")).wait_for()
    page.get_by_text("(badge ![a [b] c](").first.wait_for()
    go(page, "Stats")
    page.locator("[data-testid=stVegaLiteChart]").nth(3).wait_for()
    page.wait_for_load_state("networkidle")

    assert page.locator(f"img[src*='{recorder.url}'], a[href*='{recorder.url}']").count() == 0
    assert recorder.paths == ["/control"], "hostile markup made the browser fetch a URL"
    assert [url for url in outside if not url.startswith(f"{recorder.url}/control")] == []


@pytest.fixture(scope="module")
def locked_app_url(tmp_path_factory):
    """The app started with RAGKIT_APP_PASSWORD."""
    yield from start_app(tmp_path_factory, RAGKIT_APP_PASSWORD=PASSWORD)


def test_a_password_protected_app_shows_nothing_before_login(locked_app_url, page):
    page.add_init_script(WATCH_JS)
    page.goto(f"{locked_app_url}/documents")  # a page's own URL leads to the login too
    password = page.get_by_label("Password", exact=True)
    password.wait_for()
    expect(nav_links(page)).to_have_count(0)
    expect(page.get_by_text(re.compile("Knowledge base|Conversations|Answer mode|Tags for new files"))).to_have_count(0)

    password.fill("wrong")
    page.get_by_role("button", name="Log in").click()
    page.get_by_text("Wrong password.").wait_for()

    password.fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Documents", exact=True).wait_for()  # the page the link asked for
    expect(nav_links(page)).to_have_text([re.compile(f"{name}$") for name in ("Chat", "Documents", "Stats")])
    assert seen_since_load(page) == [], "no page list of Streamlit's and no 'Page not found', ever"
    go(page, "Chat")
    page.get_by_role("heading", name="Chat with your documents").wait_for()

    page.get_by_role("button", name="Log out").click()
    page.get_by_label("Password", exact=True).wait_for()
    page.get_by_role("heading", name="Chat with your documents").wait_for(state="detached")
    expect(nav_links(page)).to_have_count(0)
    assert seen_since_load(page) == []

"""The chat page's answer actions and its fit and finish, in a real headless Chromium.

Copy, regenerate, edit and resend, thumbs with a comment (counted on the Stats page);
searching conversations; a deleted conversation's address never reused; ?session kept
across pages; only the app's own page links in the sidebar, from the first paint; the
finished answer brought into view; sources in readable contrast with their match in
words; the OS dark theme; the chat placeholder whole on a phone; the Documents heading
counting what its search leaves.
"""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from contextlib import contextmanager

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
    session_in_url,
    shot,
    start_app,
)
from conftest import FIXTURES, REPO, environment_without_settings
from ragkit.app.history import THUMBS_UP, HistoryManager

pytestmark = pytest.mark.browser
require_chromium()
# The caption under every finished offline answer (found or not)
ANSWERED = re.compile(r"^(extractive answer \(offline\)|not in your documents) · [\d.]+ s$")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A data dir holding the report (PDF) and the handbook (DOCX), added with the CLI."""
    data = tmp_path_factory.mktemp("chat-data")
    env = environment_without_settings()
    subprocess.run([sys.executable, "-m", "ragkit", "--data-dir", str(data), "ingest",
                    str(FIXTURES / "report_en.pdf"), str(FIXTURES / "handbook.docx")],
                   cwd=REPO, env=env, check=True, capture_output=True, timeout=900)
    return data


@pytest.fixture(scope="module")
def app_url(tmp_path_factory, data_dir):
    yield from start_app(tmp_path_factory, RAGKIT_DATA_DIR=str(data_dir))


@pytest.fixture(scope="module")
def notes_app_url(tmp_path_factory):
    """An app whose one document is technical notes writing arrows and a closing tag."""
    data = tmp_path_factory.mktemp("notes-data")
    notes = tmp_path_factory.mktemp("notes") / "release.md"
    notes.write_text("# Release notes\n\nThe release pipeline runs build --> test --> ship, and every page "
                     "template ends with </script> before the footer.\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "ragkit", "--data-dir", str(data), "ingest", str(notes)],
                   cwd=REPO, env=environment_without_settings(), check=True, capture_output=True, timeout=900)
    yield from start_app(tmp_path_factory, RAGKIT_DATA_DIR=str(data))


@contextmanager
def new_tab(browser, name: str, width=1400, height=1000, **options):
    """A tab in a context of its own (size, permissions, colour scheme); FAILED-<name>.png
    when the block fails."""
    context = browser.new_context(viewport={"width": width, "height": height}, **options)
    tab = context.new_page()
    tab.set_default_timeout(120_000)
    try:
        yield tab
    except BaseException:
        shot(tab, f"FAILED-{name}")
        raise


def ask_and_wait(page, question: str) -> None:
    """Ask in the open conversation and wait until one more answer is finished."""
    done = page.get_by_test_id("stMainBlockContainer").get_by_text(ANSWERED)
    before = done.count()
    ask(page, question)
    expect(done).to_have_count(before + 1, timeout=120_000)  # the first answer loads the model


def last_turn_id(page) -> str:
    """The id of the last answer's turn, read from its actions row (key actions-<id>)."""
    row = page.get_by_test_id("stChatMessage").last.locator("[class*='st-key-actions-']")
    return re.search(r"st-key-actions-(\d+)", row.get_attribute("class")).group(1)


def open_chat(page, app_url: str) -> None:
    page.goto(app_url)
    page.get_by_placeholder("Ask a question about your documents").wait_for()


def test_copy_regenerate_edit_and_rate_an_answer(app_url, data_dir, browser):
    with new_tab(browser, "answer-actions", permissions=["clipboard-read", "clipboard-write"]) as page:
        open_chat(page, app_url)
        ask_and_wait(page, "Who founded Aurora Analytics?")
        answer = page.get_by_test_id("stChatMessage").last
        expect(answer).to_contain_text("Marta Silva")
        session = session_in_url(page)

        answer.locator(".ragkit-copy").click()
        expect(answer.locator(".ragkit-copy")).to_contain_text("Copied")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert "Marta Silva" in copied and re.search(r"\[1\] .+, report_en\.pdf, p\. \d", copied)

        first_id = last_turn_id(page)
        page.get_by_role("button", name="Regenerate").click()
        expect(page.locator(f".st-key-actions-{first_id}")).to_have_count(0)
        expect(page.get_by_test_id("stMainBlockContainer").get_by_text(ANSWERED)).to_have_count(1)
        regenerated_id = last_turn_id(page)
        assert regenerated_id != first_id
        expect(page.get_by_test_id("stChatMessage").last).to_contain_text("Marta Silva")

        page.get_by_role("button", name="Edit question").click()
        editor = page.get_by_label("Edit your question")
        expect(editor).to_have_value("Who founded Aurora Analytics?")
        editor.fill("？？!!")  # refused by the engine: back in the editor with the reason, nothing replaced
        page.get_by_role("button", name="Send", exact=True).click()
        page.get_by_text("only punctuation").wait_for()
        expect(editor).to_have_value("？？!!")
        assert last_turn_id(page) == regenerated_id
        editor.fill("Where does Aurora Analytics plan to open an office?")
        page.get_by_role("button", name="Send", exact=True).click()
        expect(page.locator(f".st-key-actions-{regenerated_id}")).to_have_count(0)
        main = page.get_by_test_id("stMainBlockContainer")
        expect(main.get_by_test_id("stChatMessage")).to_have_count(2)  # one question, one answer
        expect(main.get_by_test_id("stChatMessage").first).to_contain_text("Where does Aurora Analytics plan")
        expect(main.get_by_test_id("stChatMessage").last).to_contain_text("Osaka")
        expect(main.get_by_text("Who founded Aurora Analytics?")).to_have_count(0)

        answer = main.get_by_test_id("stChatMessage").last
        thumb_up = answer.get_by_test_id("stFeedback").get_by_role("radio").first
        thumb_up.click()
        expect(thumb_up).to_have_attribute("aria-checked", "true")
        answer.get_by_role("button", name=re.compile("Add a comment")).click()
        page.get_by_label("What was good or wrong about this answer?").fill("Right office, thanks")
        page.get_by_role("button", name="Save comment").click()
        expect(answer).to_contain_text("Your comment: Right office, thanks")
        shot(page, "chat-answer-actions")

        page.reload()
        answer = page.get_by_test_id("stChatMessage").last
        expect(answer).to_contain_text("Your comment: Right office, thanks")
        expect(answer.get_by_test_id("stFeedback").get_by_role("radio").first).to_have_attribute("aria-checked", "true")
        history = HistoryManager(data_dir / "sessions.sqlite3")
        try:
            turns = history.turns(session, include_replaced=True)
            kept = history.export_markdown(session)
        finally:
            history.close()
        assert [turn.replaced_by is None for turn in turns] == [False, False, True]
        assert (turns[-1].feedback, turns[-1].feedback_comment) == (THUMBS_UP, "Right office, thanks")
        assert "*Replaced: this answer was regenerated below.*" in kept

        go(page, "Stats")
        helpful = page.get_by_test_id("stMetric").filter(has=page.get_by_text("Helpful 👍", exact=True))
        expect(helpful.get_by_test_id("stMetricValue")).to_have_text(re.compile(r"^[1-9]\d*$"))


def test_conversation_search_lists_the_matches_and_opens_one(app_url, page):
    word = f"quokka{uuid.uuid4().hex[:6]}"  # a word no other conversation holds
    open_chat(page, app_url)
    ask_and_wait(page, f"Does the handbook mention a {word}?")
    wanted = session_in_url(page)
    page.get_by_role("button", name="New conversation").click()
    page.wait_for_function(f"new URL(location.href).searchParams.get('session') !== '{wanted}'")
    expect(page.get_by_test_id("stMainBlockContainer").get_by_test_id("stChatMessage")).to_have_count(0)
    ask_and_wait(page, "When is breakfast served?")

    search = page.get_by_placeholder("Search conversations")
    search.fill(word)
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text(f"1 conversation with “{word}”").wait_for()
    sidebar.get_by_role("button", name=re.compile("Does the handbook mention")).click()
    page.wait_for_function(f"new URL(location.href).searchParams.get('session') === '{wanted}'")
    expect(page.get_by_test_id("stMainBlockContainer").get_by_test_id("stChatMessage").first).to_contain_text(word)

    search.fill(f"{word} breakfast")
    sidebar.get_by_text("No conversation holds all of these words.").wait_for()


def test_a_deleted_conversation_is_never_reopened_under_its_address(app_url, page):
    open_chat(page, app_url)
    ask_and_wait(page, "Who founded Aurora Analytics?")
    deleted = session_in_url(page)
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_role("button", name="Delete").click()
    page.get_by_role("button", name="Yes, delete").click()
    page.wait_for_function(f"new URL(location.href).searchParams.get('session') !== '{deleted}'")
    expect(page.get_by_test_id("stMainBlockContainer").get_by_test_id("stChatMessage")).to_have_count(0)
    ask_and_wait(page, "When is breakfast served?")
    assert session_in_url(page) != deleted, "the next question went to a new conversation"

    page.goto(f"{app_url}/?session={deleted}")  # an old link, or the Back button
    page.get_by_text("That conversation was deleted; this is a new one.").wait_for()
    assert session_in_url(page) not in (deleted, None)
    expect(page.get_by_test_id("stMainBlockContainer").get_by_test_id("stChatMessage")).to_have_count(0)


def test_the_conversation_stays_in_the_address_on_every_page(app_url, page):
    page.add_init_script(WATCH_JS)
    open_chat(page, app_url)
    expect(nav_links(page)).to_have_text([re.compile(f"{name}$") for name in ("Chat", "Documents", "Stats")])
    ask_and_wait(page, "Where does Aurora Analytics plan to open an office?")
    session = session_in_url(page)
    for name in ("Documents", "Stats"):
        go(page, name)
        page.wait_for_function(f"new URL(location.href).searchParams.get('session') === '{session}'")
        page.reload()
        page.get_by_role("heading", name=name, exact=True).wait_for()
        go(page, "Chat")
        page.wait_for_function(f"new URL(location.href).searchParams.get('session') === '{session}'")
        expect(page.get_by_test_id("stMainBlockContainer").get_by_test_id("stChatMessage").last).to_contain_text("Osaka")
    assert seen_since_load(page) == [], "Streamlit's own page list (helper modules included) never showed"


def test_the_finished_answer_is_in_view_with_sources_in_words_and_readable(app_url, browser):
    with new_tab(browser, "answer-in-view", width=1280, height=720) as page:
        open_chat(page, app_url)
        for question in ("Who founded Aurora Analytics?", "When does the kitchen serve breakfast?",
                         "Where does Aurora Analytics plan to open an office?"):
            ask_and_wait(page, question)
        # In view: the answer's end above the chat box or, for an answer taller than the
        # window, its start at the top of the window.
        page.wait_for_function("""() => {
            const messages = document.querySelectorAll(
                '[data-testid=stMainBlockContainer] [data-testid=stChatMessage]');
            const answer = messages[messages.length - 1].getBoundingClientRect();
            const floor = document.querySelector('[data-testid=stBottom]').getBoundingClientRect().top;
            return answer.bottom <= floor + 1 || (answer.top >= -1 && answer.top <= 64);
        }""")
        sources = (page.get_by_test_id("stChatMessage").last.get_by_test_id("stExpander").filter(has_text="Sources")
                   .get_by_test_id("stExpanderDetails"))
        expect(sources).to_contain_text(re.compile("strong match|partial match|weak match"))
        expect(sources).to_contain_text(re.compile(r"holds \d+ of the question's \d+ key words"))
        expect(sources).not_to_contain_text("BM25")
        expect(sources).not_to_contain_text("semantic")
        lowest = sources.evaluate(CONTRAST_JS)
        assert lowest >= 4.5, f"source text contrast {lowest:.2f}:1 is below WCAG AA (4.5:1)"


# The lowest contrast ratio (WCAG) of any text in the element against the page background.
CONTRAST_JS = """(root) => {
    const rgba = (css) => css.match(/[\\d.]+/g).map(Number);
    const luminance = ([r, g, b]) => {
        const lin = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
        return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
    };
    const page = rgba(getComputedStyle(document.querySelector('[data-testid=stApp]')).backgroundColor);
    let lowest = 21;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
        const node = walker.currentNode;
        if (!node.textContent.trim() || !node.parentElement.checkVisibility()) continue;
        const [r, g, b, a = 1] = rgba(getComputedStyle(node.parentElement).color);
        let alpha = a;  // the text's own alpha times every enclosing element's opacity
        for (let element = node.parentElement; element; element = element.parentElement)
            alpha *= Number(getComputedStyle(element).opacity);
        const seen = [r, g, b].map((c, i) => c * alpha + page[i] * (1 - alpha));
        const [hi, lo] = [luminance(seen), luminance(page)].sort((x, y) => y - x);
        lowest = Math.min(lowest, (hi + 0.05) / (lo + 0.05));
    }
    return lowest;
}"""

BACKGROUND_LUMINANCE_JS = """() => {
    const [r, g, b] = getComputedStyle(document.querySelector('[data-testid=stApp]')).backgroundColor
        .match(/[\\d.]+/g).map(Number);
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}"""


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_the_app_follows_the_systems_colour_scheme(app_url, browser, scheme):
    with new_tab(browser, f"theme-{scheme}", color_scheme=scheme) as page:
        open_chat(page, app_url)
        if scheme == "dark":
            page.wait_for_function(f"({BACKGROUND_LUMINANCE_JS})() < 0.2")
        else:
            page.wait_for_function(f"({BACKGROUND_LUMINANCE_JS})() > 0.8")
        shot(page, f"chat-theme-{scheme}")


def test_the_chat_placeholder_is_whole_on_a_phone(app_url, browser):
    with new_tab(browser, "placeholder-390", width=390, height=844, is_mobile=True, has_touch=True) as page:
        open_chat(page, app_url)
        box = page.get_by_test_id("stChatInputTextArea")
        room, needed = box.evaluate("""(box) => {
            const style = getComputedStyle(box);
            const context = document.createElement('canvas').getContext('2d');
            context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
            const room = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
            return [room, context.measureText(box.placeholder).width];
        }""")
        assert needed <= room, f"the placeholder needs {needed:.0f} px, the box has {room:.0f} px"
        shot(page, "chat-390")


def test_the_documents_heading_counts_what_the_search_leaves(app_url, page):
    page.goto(f"{app_url}/documents")
    heading = page.get_by_role("heading", name=re.compile("^Default ·"))  # the knowledge base shown
    expect(heading).to_contain_text("2 documents")
    page.get_by_placeholder("title, file name or tag").fill("handbook")
    page.get_by_placeholder("title, file name or tag").press("Enter")
    expect(heading).to_contain_text(re.compile(r"Default · 1 of 2 documents · \d+ passages?$"))


def test_copy_keeps_an_answer_that_writes_arrows_and_closing_tags(notes_app_url, browser):
    """The browser's HTML sanitizer drops an attribute holding "-->" or "</script": the text to
    copy must still reach the clipboard whole, not as "undefined"."""
    with new_tab(browser, "copy-markup", permissions=["clipboard-read", "clipboard-write"]) as page:
        open_chat(page, notes_app_url)
        ask_and_wait(page, "What does the release pipeline run?")
        answer = page.get_by_test_id("stChatMessage").last
        expect(answer).to_contain_text("build --> test --> ship")
        answer.locator(".ragkit-copy").click()
        expect(answer.locator(".ragkit-copy")).to_contain_text("Copied")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert "build --> test --> ship" in copied and "</script>" in copied, copied

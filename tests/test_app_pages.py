"""Page tests with Streamlit's AppTest: empty state, asking, sources, errors (no tracebacks),
untrusted names and questions shown as inert text, the upload queue, filters you can see,
conversations that can be told apart, the document panel and the store's health banner."""

import re
import time

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from conftest import FIXTURES, REPO
from inert_markdown import PLAIN_TAGS, assert_inert, parse, visible
from ragkit.app.history import SessionInfo
from ragkit.app.render import escape_line
from ragkit.app.stats import conversation_labels

TIMEOUT = 120


@pytest.fixture
def app(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_DATA_DIR", str(tmp_path / "appdata"))
    monkeypatch.chdir(REPO)
    monkeypatch.syspath_prepend(str(REPO))  # the pages import their helpers as pages._widgets
    st.cache_resource.clear()  # one service per data dir
    at = AppTest.from_file(str(REPO / "streamlit_app.py"), default_timeout=TIMEOUT)
    at.run()
    yield at
    st.cache_resource.clear()


def service():
    """The app's service (the same cached object the pages use)."""
    from pages._service import service_future

    return service_future().result()


def shown(markdown: str) -> str:
    """What a reader sees of a Markdown value (escapes resolved, invisible joiners dropped)."""
    return " ".join(visible(parse(markdown)[0]).split())


def texts(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [h.value for h in at.subheader]
    parts += [e.value for kind in ("info", "success", "warning", "error") for e in getattr(at, kind)]
    return "\n".join(shown(str(p)) for p in parts)


def settle(at):
    """Wait for this session's queued files (on the queue itself, not a clock), then rerun the
    page the way the progress fragment does once they are done."""
    ids = at.session_state["ingest-jobs"] if "ingest-jobs" in at.session_state else []
    if ids:
        assert service().uploads.wait(ids, timeout_s=TIMEOUT)
        at.run()
    assert not at.exception
    return at


def ask(at, question):
    at.chat_input[0].set_value(question).run()
    return at


def button(at, label):
    return next(b for b in at.button if b.label == label)


def session(at) -> str:
    """The conversation the chat page shows."""
    return at.session_state["session_id"]


def load_samples(at):
    button(at, "Load the sample documents").click().run()
    assert not at.exception
    settle(at)


def test_first_start_shows_empty_state_and_answer_mode(app):
    assert not app.exception
    assert "knowledge base is empty" in texts(app)
    assert any(b.label == "Load the sample documents" for b in app.button)
    assert "extractive, offline" in texts(app)


def test_samples_are_indexed_by_the_queue_and_the_empty_state_goes_at_once(app):
    button(app, "Load the sample documents").click().run()
    assert not app.exception
    jobs = service().uploads.jobs(app.session_state["ingest-jobs"])
    assert [job.filename for job in jobs] == [p.name for p in service().sample_files()]
    if not all(job.done for job in jobs):  # the run right after the click: progress instead of the box
        assert "knowledge base is empty" not in texts(app)
        assert app.get("progress")
    settle(app)
    assert "knowledge base is empty" not in texts(app)
    assert "ragkit_user_guide.md: added" in texts(app)
    assert "Ask anything about your documents" in texts(app)


def test_samples_then_question_shows_answer_and_cited_sources(app):
    load_samples(app)
    ask(app, "Which file types does ragkit accept?")
    assert not app.exception
    page = texts(app)
    assert "PDF" in page and "DOCX" in page
    assert "ragkit_user_guide.md · page" in page  # the source panel
    assert any("Sources" in e.label for e in app.expander)


def test_punctuation_question_gets_the_engines_message_and_nothing_else(app):
    load_samples(app)
    ask(app, "？？？!!")
    assert not app.exception
    assert any("only punctuation" in shown(w.value) for w in app.warning)
    assert not app.get("chat_message"), "no question bubble for a question the engine refused"
    source = (REPO / "pages" / "chat.py").read_text()
    assert "check_question" not in source, "the engine checks questions; the page only shows its QuestionError"


def test_file_dropped_into_chat_is_queued_then_added_or_refused_with_reason(app):
    app.chat_input[0].upload("corrupt.pdf", (FIXTURES / "corrupt.pdf").read_bytes(), "application/pdf").run()
    settle(app)
    assert any("not a readable PDF" in shown(e.value) for e in app.error)
    app.chat_input[0].upload("handbook.docx", (FIXTURES / "handbook.docx").read_bytes()).run()
    settle(app)
    assert any("handbook.docx: added" in shown(s.value) for s in app.success)


def test_a_question_sent_with_a_file_is_answered_once_the_file_is_indexed(app):
    chat = app.chat_input[0].upload("vault.md", b"# Vault\n\nThe vault keeper is Ana Lima.\n", "text/markdown")
    chat.set_value("Who is the vault keeper?").run()
    assert not app.exception
    settle(app)
    page = texts(app)
    assert "vault.md: added" in page
    assert "Ana Lima" in page and "vault.md · page 1" in page


def test_unreachable_model_falls_back_with_a_clear_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RAGKIT_LLM_MAX_RETRIES", "0")
    monkeypatch.setenv("RAGKIT_DATA_DIR", str(tmp_path / "appdata"))
    monkeypatch.chdir(REPO)
    monkeypatch.syspath_prepend(str(REPO))
    st.cache_resource.clear()
    at = AppTest.from_file(str(REPO / "streamlit_app.py"), default_timeout=TIMEOUT).run()
    try:
        assert "generated by" in texts(at)
        assert "each can pick its own on the Chat page" in texts(at)  # the sidebar names only the default
        load_samples(at)
        ask(at, "Which file types does ragkit accept?")
        assert not at.exception
        assert any("unreachable" in shown(w.value) for w in at.warning)
        assert "extractive answer" in texts(at)
    finally:
        st.cache_resource.clear()


def test_documents_and_stats_pages_render(app):
    load_samples(app)
    ask(app, "What is ragkit?")
    app.switch_page("pages/documents.py").run()
    assert not app.exception
    assert "2 documents" in texts(app)
    app.switch_page("pages/stats.py").run()
    assert not app.exception
    assert [m.label for m in app.metric][:2] == ["Documents", "Passages"]
    assert app.metric[0].value == "2"


def test_stats_says_no_model_tokens_instead_of_an_empty_chart_and_names_conversations(app):
    load_samples(app)
    ask(app, "What is ragkit?")
    app.switch_page("pages/stats.py").run()
    assert not app.exception
    assert any("No model tokens used yet" in shown(i.value) for i in app.info)
    charts = [e for e in app.get("vega_lite_chart")]
    assert len(charts) == 7  # type, tag, passages, tokens, questions over time, latency, best score: no token chart
    assert "Token usage" not in texts(app)


def test_stats_advises_reindex_on_a_store_without_current_sentence_vectors(app):
    from ragkit.models.sentence_vectors import STORED_META

    load_samples(app)
    app.switch_page("pages/stats.py").run()
    assert "ragkit reindex" not in texts(app)  # a new store keeps its sentence vectors
    service().kb.catalog.set_meta(STORED_META, "none")  # as a store indexed before they were kept
    app.run()
    assert not app.exception
    assert any("python -m ragkit reindex" in shown(i.value) for i in app.info)


def test_the_filter_is_shown_above_the_input_and_clear_removes_it(app):
    load_samples(app)
    guide = next(doc for doc in service().kb.documents() if doc.filename == "ragkit_user_guide.md")
    assert "Searching" not in texts(app)
    app.sidebar.multiselect(key=f"filter-docs-{session(app)}").set_value([guide.id]).run()
    assert "Searching 1 of 2 documents ·" in texts(app)
    app.sidebar.multiselect(key=f"filter-tags-{session(app)}").set_value(["sample"]).run()
    assert "Searching 1 of 2 documents ·" in texts(app)
    button(app, "clear").click().run()
    assert not app.exception
    assert "Searching" not in texts(app)
    assert app.sidebar.multiselect(key=f"filter-docs-{session(app)}").value == []
    assert app.sidebar.multiselect(key=f"filter-tags-{session(app)}").value == []


def test_conversations_with_the_same_title_can_be_told_apart(app):
    load_samples(app)
    ask(app, "What is ragkit?")
    button(app, "New conversation").click().run()
    ask(app, "What is ragkit?")
    labels = [b.label for b in app.sidebar.button if b.label.startswith("What is ragkit")]
    assert len(labels) == 2 and labels[0] != labels[1]


def test_conversation_labels_add_the_date_then_a_number_only_when_titles_repeat():
    start = time.mktime((2026, 3, 4, 9, 5, 0, 0, 0, -1))
    sessions = [SessionInfo("a", "Budget", 1, start, start), SessionInfo("b", "Budget", 2, start + 3600, start),
                SessionInfo("c", "Budget", 1, start + 3600, start), SessionInfo("d", "Travel", 1, start, start),
                SessionInfo("e", "", 0, start, start)]
    labels = conversation_labels(sessions)
    assert labels == {"a": "Budget · Mar 04 09:05", "b": "Budget · Mar 04 10:05", "c": "Budget · Mar 04 10:05 (2)",
                      "d": "Travel", "e": "Untitled conversation"}


def test_document_panel_keeps_lines_pluralises_and_the_upload_hint_is_clean(app):
    app.switch_page("pages/documents.py").run()
    uploader = app.get("file_uploader")[0]
    assert list(uploader.proto.type) == []  # no type filter: an unsupported file gets a result row with the reason
    assert "Drop PDF, DOCX, XLSX, PPTX, TXT, MD, HTML, CSV or image (PNG, JPG…) files, or add a web page" in texts(app)
    text = "# Opening hours\n\n| day | hours |\n| Monday | 9-17 |\n\n- bring your badge\n"
    job = service().uploads.submit("hours.md", text.encode())
    assert service().uploads.wait([job.id], timeout_s=TIMEOUT)
    app.session_state["selected-documents"] = [job.result.document.id]
    app.run()
    assert not app.exception
    assert "1 passage ·" in texts(app) and "1 passages" not in texts(app)
    popover_text = texts(app)
    assert "and its 1 passage?" in popover_text
    preview = next(m.value for m in app.markdown if "Monday" in m.value)
    assert "blockquote" in parse(preview)[0] and parse(preview)[0].count("<br") == 1  # one quote, lines kept
    lines = [line.removeprefix(">").strip() for line in preview.split("\n")]
    assert [shown(line) for line in lines if line] == [
        "# Opening hours", "| day | hours |", "| Monday | 9-17 |", "- bring your badge"]
    for line in filter(None, lines):
        assert_inert(line, PLAIN_TAGS)  # each line is inert text: no heading, table or list


def test_highlights_cover_whole_words():
    from pages._widgets import highlight_markdown

    marked = highlight_markdown("The keeper's log names the vault keeper gate.", "keeper gate")
    assert marked == "The :orange-background[keeper's] log names the vault :orange-background[keeper gate]\\."
    assert highlight_markdown("这个茶园很大", "茶园") == "这个:orange-background[茶园]很大"


@pytest.mark.parametrize("page", ["pages/chat.py", "pages/documents.py", "pages/stats.py"])
def test_a_damaged_store_is_said_on_every_page(tmp_path, monkeypatch, page):
    monkeypatch.setenv("RAGKIT_DATA_DIR", str(tmp_path / "appdata"))
    monkeypatch.chdir(REPO)
    monkeypatch.syspath_prepend(str(REPO))
    st.cache_resource.clear()
    try:
        service().kb.health = ["2 passages of report.pdf have no vectors ![x](http://127.0.0.1:9/x.png); run repair"]
        at = AppTest.from_file(str(REPO / "streamlit_app.py"), default_timeout=TIMEOUT).run()
        at.switch_page(page).run()  # AppTest runs only the page from now on: the page itself shows the banner
        assert not at.exception
        warning = next(w.value for w in at.warning if "no vectors" in w.value)
        assert shown(warning).startswith("2 passages of report.pdf have no vectors ![x]")
        assert_inert(warning, PLAIN_TAGS)
    finally:
        st.cache_resource.clear()


def test_hostile_file_name_and_question_are_shown_as_text(app):
    name = "pelican_![n](x.png)<img src=y>.md"
    app.chat_input[0].upload(name, b"# Vault\n\nThe vault keeper is Ana.\n", "text/markdown").run()
    settle(app)
    added = [s.value for s in app.success if "pelican" in s.value]
    assert added and f"{name}: added" in shown(added[0])
    assert_inert(added[0].split(" — ", 1)[1], PLAIN_TAGS)  # after the status icon and word

    question = "![q](http://127.0.0.1:9/q.png) vault keeper?"
    ask(app, question)
    assert not app.exception
    title = next(b.label for b in app.sidebar.button if "vault keeper" in b.label)
    assert title == escape_line(question), "a conversation title is a button label: Markdown, images included"
    assert shown(title) == question
    assert_inert(title, PLAIN_TAGS)
    bubbles = [m.value for m in app.markdown if "vault keeper" in shown(m.value)]
    assert bubbles and all(re.search(r"(?<!\\)!\[", value) is None for value in bubbles)


def test_each_answer_shows_how_it_was_answered_collapsed(app):
    load_samples(app)
    ask(app, "Which file types does ragkit accept?")
    trace = next(e for e in app.expander if "How this was answered" in e.label)
    assert not trace.proto.expanded
    steps = shown(trace.markdown[0].value)
    assert "Searched" in steps and "Answered" in steps


def test_an_answer_not_in_the_documents_lists_closest_matches_never_as_sources(app):
    load_samples(app)
    ask(app, "What is the boiling point of mercury on Mars?")
    assert not app.exception
    assert "not in your documents" in texts(app)
    closest = next(e for e in app.expander if "Closest matches (not used as sources)" in e.label)
    assert not any(e.label.startswith(":material/attach_file: Sources") for e in app.expander)
    headings = [shown(m.value) for m in closest.markdown if " · page " in shown(m.value)]
    assert headings and not any(re.match(r"\[\d+\]", text) for text in headings)  # no [n]: not sources
    trace = shown(next(e for e in app.expander if "How this was answered" in e.label).markdown[0].value)
    assert "Not found" in trace


def test_each_conversation_picks_and_remembers_its_model_and_no_key_is_shown(tmp_path, monkeypatch):
    from ragkit_dev.devserver import Reply, ScriptedOpenAIServer, default_responder

    def responder(body):  # grades and rewrites as usual; an answer the sample guide supports
        if "response_format" in body:
            return default_responder(body)
        return Reply("ragkit accepts PDF, Word (DOCX), plain text (TXT), Markdown (MD), HTML and CSV files [1].")

    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-test-key")
    monkeypatch.setenv("RAGKIT_CHAT_MODEL", "test-model")
    monkeypatch.setenv("RAGKIT_DATA_DIR", str(tmp_path / "appdata"))
    monkeypatch.chdir(REPO)
    monkeypatch.syspath_prepend(str(REPO))
    st.cache_resource.clear()
    with ScriptedOpenAIServer(responder) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        at = AppTest.from_file(str(REPO / "streamlit_app.py"), default_timeout=TIMEOUT).run()
        try:
            load_samples(at)
            picker = at.sidebar.selectbox[0]
            assert picker.label == "Answer with" and picker.options == ["test-model · 127.0.0.1", "extractive, offline"]
            assert picker.value == "test-model@127.0.0.1"
            picker.set_value("extractive").run()
            first = at.session_state["session_id"]
            ask(at, "Which file types does ragkit accept?")
            assert "extractive answer (offline)" in texts(at)
            assert service().history.session_model(first) == "extractive"

            button(at, "New conversation").click().run()
            assert at.sidebar.selectbox[0].value == "test-model@127.0.0.1"  # a new conversation starts on the default
            ask(at, "Which file types does ragkit accept?")
            assert "generated by test-model" in texts(at)

            next(b for b in at.sidebar.button if b.key == f"session-{first}").click().run()
            assert at.sidebar.selectbox[0].value == "extractive", "the first conversation kept its model"
            everything = texts(at) + " ".join(str(w.label) for w in at.sidebar.button)
            assert "sk-secret" not in everything and "sk-secret" not in str(at.sidebar.selectbox[0].options)
        finally:
            st.cache_resource.clear()


def test_a_source_shows_the_section_it_stands_under_above_the_passage(app):
    from test_section_paths import HANDBOOK_MD

    chat = app.chat_input[0].upload("handbook.md", HANDBOOK_MD.encode(), "text/markdown")
    chat.set_value("Where are the fire exits?").run()
    settle(app)
    panel = next(e for e in app.expander if e.label.startswith(":material/attach_file: Sources"))
    trails = [shown(c.value) for c in panel.markdown]
    assert any("Staff Handbook › Safety › Fire exits" in trail for trail in trails)

"""Streamlit glue shared by the pages: the cached service, and widgets used on several pages.

Only the app (streamlit_app.py and pages/) imports this module: ragkit itself never
imports Streamlit nor writes Streamlit's Markdown directives. The service (embedding
model, Chroma store, graph) is built once per process in a background thread, so the
first page renders while the model is still loading.

Every piece of data reaches Streamlit through ragkit.app.render's escaping: Streamlit
renders Markdown (images included) in st.markdown, captions, alerts, expander, button
and popover labels and progress texts.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import streamlit as st

from ragkit.answering.citations import match_strength
from ragkit.answering.marks import answer_spans
from ragkit.app.history import HistoryManager
from ragkit.app.jobs import IngestJob
from ragkit.app.render import escape_line, escape_markdown, safe_answer_markdown
from ragkit.app.service import RagService
from ragkit.config import load_settings
from ragkit.errors import DatabaseUnreachable, RagkitError, SettingsError
from ragkit.lang.text import is_cjk_text, match_spans
from ragkit.models.chat import model_status
from ragkit.types import Source, Turn

log = logging.getLogger(__name__)
_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragkit-loader")

STATUS_ICON = {
    "added": ":material/check_circle:",
    "new_version": ":material/autorenew:",
    "unchanged": ":material/pause_circle:",
    "refused": ":material/block:",
}
STATUS_TEXT = {"added": "Added", "new_version": "New version", "unchanged": "Unchanged", "refused": "Refused"}


UPLOAD_TYPES = [".pdf", ".docx", ".txt", ".md", ".html", ".htm", ".csv", ".xlsx", ".pptx", ".png", ".jpg",
                ".jpeg", ".webp", ".bmp", ".tif", ".tiff"]  # Streamlit lists .htm as HTML
UPLOAD_TYPES_LABEL = "PDF, DOCX, XLSX, PPTX, TXT, MD, HTML, CSV or image (PNG, JPG…)"
JOBS_KEY, RESULTS_KEY = "ingest-jobs", "indexing-results"
_WORD_CHAR = re.compile(r"[^\W_]")
_APOSTROPHE = "'\u2019"
_SPACES = re.compile(r"\s+")
_LINE_BREAKS = re.compile(r"\r\n?|[\v\f\x1c-\x1e\x85\u2028\u2029]")  # what str.splitlines also splits at


def _in_word(char: str) -> bool:
    """A letter or digit of a script that separates words by spaces (not CJK)."""
    return bool(_WORD_CHAR.match(char)) and not is_cjk_text(char)


def _whole_word_spans(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans widened to whole words (keeper -> keeper's) and joined across single spaces, so a
    highlight never starts or stops inside a word (its background has padding: a visible gap)."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if _in_word(text[start]):
            while start > 0 and (_in_word(text[start - 1]) or (text[start - 1] in _APOSTROPHE and start > 1
                                                                and _in_word(text[start - 2]))):
                start -= 1
        if _in_word(text[end - 1]):
            while end < len(text) and (_in_word(text[end]) or (text[end] in _APOSTROPHE and end + 1 < len(text)
                                                               and _in_word(text[end + 1]))):
                end += 1
        if out and (start <= out[-1][1] or (text[out[-1][1]:start] == " ")):
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out


def _marks(text: str, query: str, answer: bool, topic: str = "") -> list[tuple[int, int, str]]:
    """The highlighted spans of ``text`` with their mark: the answer's (with ``answer``) first,
    then the query's words where they do not overlap an answer span."""
    found = [(a, b, "answer") for a, b in _whole_word_spans(text, answer_spans(text, query, topic))] if answer else []
    for start, end in _whole_word_spans(text, match_spans(text, query)):
        if not any(start < b and a < end for a, b, _ in found):
            found.append((start, end, "word"))
    return sorted(found)


def _marked_line(line: str, marks: list[tuple[int, int, str]]) -> str:
    """One line as escaped Markdown with its marks: the answer in bold on green, query words
    on orange; runs of whitespace read as one space."""
    out, cursor = [], 0
    for start, end, mark in marks:
        out.append(escape_line(_SPACES.sub(" ", line[cursor:start])))
        piece = escape_line(_SPACES.sub(" ", line[start:end]))
        out.append(f":green-background[**{piece}**]" if mark == "answer" else f":orange-background[{piece}]")
        cursor = end
    out.append(escape_line(_SPACES.sub(" ", line[cursor:])))
    return "".join(out)


def highlight_markdown(text: str, query: str, answer: bool = False, topic: str = "") -> str:
    """Escaped text (one line) with the query's words on Streamlit's highlighted background;
    with ``answer`` (``query`` is a question), what it asks for (a name, a date, a number) in
    bold on green: the part of a source that answers, not only the words it repeats (``topic``:
    the document's title, whose words do not tell which sentence answers)."""
    text = " ".join(text.split())
    return _marked_line(text, _marks(text, query, answer, topic))


def quote_markdown(text: str, query: str = "", answer: bool = False, topic: str = "") -> str:
    """Text as an inert Markdown block quote that keeps its lines (headings, table rows, list
    items stay on their own lines; blank lines separate paragraphs), query words highlighted
    (and, with ``answer``, the answer: see highlight_markdown). The marks are found in the
    whole text, so a name a line break splits ("led by Dr.⏎Amelia Hart") is still found."""
    text = _LINE_BREAKS.sub("\n", text)
    marks = _marks(text, query, answer, topic) if query else []  # line breaks kept: a table row is a sentence
    lines: list[str] = []
    offset = 0
    for raw in text.split("\n"):
        begin = offset + len(raw) - len(raw.lstrip())
        line, offset = raw.strip(), offset + len(raw) + 1
        if not line:
            if lines and lines[-1] != ">":
                lines.append(">")
            continue
        if lines and lines[-1] != ">":
            lines[-1] += "  "  # a hard line break
        stop = begin + len(line)
        clipped = [(max(a, begin) - begin, min(b, stop) - begin, mark)
                   for a, b, mark in marks if a < stop and b > begin]
        lines.append("> " + _marked_line(line, clipped))
    while lines and lines[-1] == ">":
        lines.pop()
    return "\n".join(lines)


@st.cache_resource(show_spinner=False)
def _service_future() -> Future:
    """Start building the service once per process."""
    return _EXECUTOR.submit(lambda: RagService(load_settings()))


def shared_service() -> RagService:
    """The process's service, for callers outside a page run (the HTTP API's routes): the same
    one the pages use, built once, waited for (RagkitError when it cannot be built). A database
    that did not answer is asked again, as the pages' "Try again" does."""
    future = _service_future()
    if future.done() and isinstance(future.exception(), DatabaseUnreachable):
        _service_future.clear()
        future = _service_future()
    return future.result()


def start_loading() -> None:
    """Kick off the background load (call early in the entry script)."""
    _service_future()


def get_service() -> RagService:
    """The shared service (each page calls it once per run): shows a spinner while the model
    loads, stops the page on errors, and says so when the store is damaged."""
    future = _service_future()
    try:
        if not future.done():
            with st.spinner("Loading the embedding model and the knowledge base… (first start only)"):
                future.result()
        service = future.result()
    except RagkitError as exc:  # the library says what failed in words; details are in the log
        st.error(f"ragkit cannot start: {escape_markdown(str(exc))}")
        if isinstance(exc, DatabaseUnreachable):  # a server that may come back: the next run tries again
            _service_future.clear()
            st.button("Try again", icon=":material/refresh:")
        st.stop()
    render_health(service)
    return service


def render_model_status() -> None:
    """Sidebar note on the active answer mode and how to change it."""
    try:
        status = model_status(load_settings())
    except SettingsError as exc:
        st.sidebar.error(escape_markdown(str(exc)))
        return
    if status.mode == "llm":
        st.sidebar.success(f"**Answer mode:** generated by {escape_line(status.model)}", icon=":material/smart_toy:")
        st.sidebar.caption("The default for new conversations; each can pick its own on the Chat page (*Answer with*).")
    else:
        st.sidebar.info(
            "**Answer mode:** extractive, offline. Answers quote your documents.",
            icon=":material/cloud_off:",
        )
        st.sidebar.caption(
            "For generated answers, start the app with `OPENAI_API_KEY` set "
            "(and `OPENAI_BASE_URL`, `RAGKIT_CHAT_MODEL` for other OpenAI-compatible servers)."
        )


def render_health(service: RagService) -> None:
    """The knowledge base's warnings about a damaged store, as a banner (every page)."""
    for note in service.kb.health:
        st.warning(escape_line(note), icon=":material/warning:")


# ----- background indexing (the upload queue) -------------------------------------------


def track_jobs(jobs: list[IngestJob]) -> None:
    """Show these queued files' progress, then their results, on the pages of this browser session."""
    if not st.session_state.get(JOBS_KEY):
        st.session_state[RESULTS_KEY] = []  # a new round of uploads replaces the last results
    st.session_state[JOBS_KEY] = list(st.session_state.get(JOBS_KEY) or []) + [job.id for job in jobs]


def queue_samples(service: RagService, kb_id: str = "") -> None:
    """Button callback: send the sample documents to the upload queue (into ``kb_id``)."""
    track_jobs(service.queue_samples(kb_id))


def indexing_running(service: RagService) -> bool:
    """True while files of this session are being indexed; once all are done, their results
    move to the session's results (shown by render_indexing)."""
    ids = st.session_state.get(JOBS_KEY) or []
    if not ids:
        return False
    jobs = service.uploads.jobs(ids)
    if any(not job.done for job in jobs):
        return True
    st.session_state[RESULTS_KEY] = list(st.session_state.get(RESULTS_KEY) or []) + [
        (job.result.status, job.result.message) for job in jobs]
    st.session_state[JOBS_KEY] = []
    service.uploads.forget(ids)
    return False


@st.fragment(run_every=0.5)
def _indexing_progress(service: RagService) -> None:
    """Per-file progress bars, redrawn twice a second; the whole page reruns when all are done."""
    jobs = service.uploads.jobs(st.session_state.get(JOBS_KEY) or [])
    if all(job.done for job in jobs):
        st.rerun(scope="app")  # the page then shows the results (and the new documents)
    for number, job in enumerate(jobs, start=1):
        stage = "done" if job.done else escape_line(job.stage)
        st.progress(job.fraction, text=f"{escape_line(job.filename)} ({number}/{len(jobs)}): {stage}")
    st.caption("Indexing continues if you leave this page; the results wait for you here.")


def dismiss_results() -> None:
    """Forget the results of this session's last uploads (the Dismiss button, or a new message)."""
    st.session_state[RESULTS_KEY] = []


def render_indexing(service: RagService) -> None:
    """This session's files being indexed (progress), or their results once done, which stay
    until dismissed: they may arrive while the user is on another page."""
    if indexing_running(service):
        _indexing_progress(service)
        return
    results = st.session_state.get(RESULTS_KEY) or []
    for status, message in results:
        box = {"added": st.success, "new_version": st.info, "unchanged": st.info, "refused": st.error}[status]
        box(f"{STATUS_ICON[status]} **{STATUS_TEXT[status]}** — {escape_markdown(message)}")
    if results:
        st.button("Dismiss", icon=":material/close:", type="tertiary", key="dismiss-upload-results",
                  on_click=dismiss_results)


# ----- answers ----------------------------------------------------------------------------


def answer_caption(turn: Turn) -> str:
    """Mode, model and latency under an answer (as escaped Markdown)."""
    if turn.mode == "llm":
        mode = f"generated by {escape_line(turn.model)}"
    elif turn.mode == "not_found":
        mode = "not in your documents" + (f" · checked by {escape_line(turn.model)}" if turn.model else "")
    else:
        mode = "extractive answer (offline)"
    seconds = turn.timings.get("total_ms", 0.0) / 1000
    return f"{mode} · {seconds:.1f} s"


def source_heading(source: Source, bold: bool = False, numbered: bool = True) -> str:
    """'[n] title · file · page p' as escaped Markdown, optionally with '[n] title' in bold."""
    label = f"\\[{source.n}\\] {escape_line(source.title)}" if numbered else escape_line(source.title)
    if source.web:  # a web search result: marked, its address as text (never a rendered link)
        return f"{f'**{label}**' if bold else label} · {WEB_BADGE} · {escape_line(source.url)}"
    return f"{f'**{label}**' if bold else label} · {escape_line(source.filename)} · page {source.page}"


WEB_BADGE = ":blue-badge[:material/public: web]"


def render_source(source: Source, query: str, numbered: bool = True, key: str = "") -> None:
    """One source: where it is from, the passage it relies on (query words highlighted, and in
    a cited one the part that answers), and how well it matches in words (the numbers on
    hover); with ``key``, a button that opens it in the source viewer."""
    from pages._viewer import source_button

    st.markdown(source_heading(source, bold=True, numbered=numbered))
    # where in the document: the headings above the passage (not a path that only repeats the
    # title); body text, not a caption: a caption's grey falls below WCAG AA contrast
    if source.section_trail and source.section_trail != source.title:
        st.markdown(f":material/segment: {escape_line(source.section_trail)}")
    if source.web:
        st.caption("A web search result: not in your documents, not added to them.")
    elif key:
        source_button(source, key)
    # the answer's part of a cited passage is marked; a passage it did not use (closest matches) is not
    st.markdown(quote_markdown(source.quote, query, answer=source.cited, topic=source.title))
    strength = match_strength(query, source, _service_future().result().settings)
    st.markdown(f"{MATCH_BADGE[strength.label]} {strength.detail}", help=strength.scores)


# A match in words, as a small coloured badge (the words, not the colour, carry the meaning).
MATCH_BADGE = {"strong match": ":green-badge[strong match]", "partial match": ":orange-badge[partial match]",
               "weak match": ":gray-badge[weak match]"}


def render_source_panel(sources: list[Source], question: str, searched_as: str, expanded: bool = False,
                        key: str = "") -> None:
    """The citation panel of one answer: cited sources, then what was also retrieved (with
    ``key``, each opens in the source viewer)."""
    from pages._viewer import source_button

    if not sources:
        return
    cited = [s for s in sources if s.cited]
    others = [s for s in sources if not s.cited]
    label = (f":material/attach_file: Sources — {len(cited)} cited, {len(others)} also retrieved" if cited
             else f":material/attach_file: Sources — {len(others)} retrieved")
    query = searched_as or question
    with st.expander(label, expanded=expanded):
        if searched_as and searched_as != question:
            st.markdown(f":material/search: Searched as: {escape_line(searched_as)}")
        for source in cited:
            render_source(source, query, key=key and f"{key}-{source.n}")
        if others and cited:
            st.markdown("**Also retrieved**")
            settings = _service_future().result().settings
            for source in others:
                strength = match_strength(query, source, settings)
                with st.container(horizontal=True, vertical_alignment="center", gap="small"):
                    st.markdown(f"{source_heading(source)} · {MATCH_BADGE[strength.label]}",
                                help=f"{strength.detail} · {strength.scores}", width="content")
                    if key and not source.web:
                        source_button(source, f"{key}-{source.n}", compact=True)
        elif others:
            for source in others:
                render_source(source, query, key=key and f"{key}-{source.n}")


def render_closest(sources: list[Source], query: str, expanded: bool = False, key: str = "") -> None:
    """For an answer that is not in the documents: the closest passages, never as [n] sources."""
    if not sources:
        return
    label = f":material/search_off: Closest matches (not used as sources) — {len(sources)}"
    with st.expander(label, expanded=expanded):
        st.caption("The answer is not in your documents; these passages came closest.")
        for source in sources:
            render_source(source, query, numbered=False, key=key and f"{key}-c{source.n}")


def render_trace(turn: Turn) -> None:
    """A collapsed, readable account of the steps that produced an answer."""
    steps = turn.trace
    if not steps:
        return
    with st.expander(":material/route: How this was answered", expanded=False):
        st.markdown("\n".join(f"{number}. **{escape_line(step.step)}** — {escape_line(step.detail)}"
                               for number, step in enumerate(steps, start=1)))


def render_turn(turn: Turn, latest: bool = False, actions: Callable[[Turn], None] | None = None,
                question: Callable[[Turn], None] | None = None) -> None:
    """A question and its answer with the source panel (or the closest matches) and its trace.
    ``question`` draws the question instead (an editor); ``actions`` draws what can be done
    with the answer (copy, regenerate, feedback), under it."""
    with st.chat_message("user"):
        if question is not None:
            question(turn)
        else:
            st.markdown(escape_markdown(turn.question))
    with st.chat_message("assistant"):
        if turn.error and turn.mode == "llm":  # a later model of the chain answered
            st.info(f"Answered by {escape_line(turn.model)} after the model before it failed "
                    f"({escape_line(turn.error)}).", icon=":material/swap_horiz:")
        elif turn.error:
            st.warning(f"The model could not answer ({escape_line(turn.error)}); "
                       "showing the extractive answer instead.",
                       icon=":material/warning:")
        st.markdown(safe_answer_markdown(turn.answer))
        st.caption(answer_caption(turn))
        if actions is not None:
            actions(turn)
        key = f"source-{turn.id}" if turn.id is not None else ""
        if turn.found:
            render_source_panel(turn.sources, turn.question, turn.standalone_question, expanded=latest, key=key)
        else:
            render_closest(turn.closest, turn.standalone_question or turn.question, key=key)
        render_trace(turn)


def render_feedback_summary(history: HistoryManager, person: str | None = None) -> None:
    """The readers' verdict on the answers (Stats page): thumbs up and down, and the latest
    comments with the question each was about (only from ``person``'s own conversations,
    with a login that knows people)."""
    st.subheader("Answer feedback")
    counts = history.feedback_counts()
    if not counts.up + counts.down:
        st.caption("No answer rated yet: the thumbs under each answer on the Chat page count here.")
        return
    with st.container(horizontal=True, gap="medium"):
        st.metric("Helpful 👍", counts.up)
        st.metric("Not helpful 👎", counts.down)
        st.metric("With a comment", counts.comments)
    comments = history.feedback_comments(limit=5, owner=person)
    if comments:
        with st.expander(f"Latest comments ({len(comments)})"):
            for _, turn in comments:
                thumb = "👍" if turn.feedback == 1 else "👎"
                st.markdown(f"{thumb} **{escape_line(turn.feedback_comment)}** — on “{escape_line(turn.question)}”")


def conversation_in_view() -> str | None:
    """The conversation the Chat page shows (or will show after a click in its sidebar), for
    the page links: every page keeps it in its address, so a reload of any page and the way
    back to Chat reopen it."""
    return (st.session_state.get("switch-to") or st.query_params.get("session")
            or st.session_state.get("session_id"))

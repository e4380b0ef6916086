"""Web search, agentic mode's last resort (``RAGKIT_WEB_SEARCH_URL``, off by default).

Asked only when the knowledge base does not answer: where the default path would say
"not found" (the grade found the evidence insufficient and no search round is left), an
agentic turn with a provider configured searches the web once. Its results become
passages of this turn only (``Hit.url`` set, never stored in the knowledge base) and go
through the same grade, answer and citation check as the documents' passages; an answer
citing them says so, and every source list marks them as web. A provider that fails
(unreachable, too slow, not its JSON API) or finds nothing degrades to "not found", with
the reason in the message and the trace.

    grade / rewrite_query ─(not found; agentic, web configured, not searched)→ web_search
    web_search ─┬─ results ─────→ grade (then extract or generate as usual)
                └─ none, failed → record ("not found", with why)
    check_citations ─(cites a web result)→ note_web → record

Why agentic mode only: the default mode answers from the user's documents alone (and its
eval figures stay those of the documents); agentic mode is the one that may take more
steps to answer, and the issue places web search in it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal
from urllib.parse import urlparse

from langgraph.runtime import Runtime

from ..errors import WebSearchFailed
from ..passages import Hit, Passage
from ..text import count_tokens
from ..websearch import WebResult, search_web
from . import events, prompts
from .answering import not_found
from .context import RagContext
from .rounds import after_rewrite
from .state import RagState, language, step
from .sufficiency import after_grade


def searches_web(state: RagState, context: RagContext) -> bool:
    """True when this turn may still search the web: agentic mode, a provider configured,
    not searched yet."""
    return state.chat_mode == "agentic" and bool(context.settings.web_search_url) and not state.web_searched


def after_grade_or_web(state: RagState, runtime: Runtime[RagContext]) -> Literal[
        "generate", "extract", "rewrite_query", "not_found", "web_search"]:
    """``sufficiency.after_grade``, with the web searched where it would say "not found"."""
    following = after_grade(state, runtime)
    return "web_search" if following == "not_found" and searches_web(state, runtime.context) else following


def after_rewrite_or_web(state: RagState, runtime: Runtime[RagContext]) -> Literal[
        "retrieve", "not_found", "web_search"]:
    """``rounds.after_rewrite``, with the web searched where it would say "not found"."""
    following = after_rewrite(state)
    return "web_search" if following == "not_found" and searches_web(state, runtime.context) else following


def web_search(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Search the web for the question as understood; its results are this round's
    passages. None, or a failing provider: "not found", saying why."""
    settings = runtime.context.settings
    question = state.best.question if state.best else state.standalone_question
    runtime.stream_writer(events.status("Your documents do not answer it: searching the web…"))
    where = urlparse(settings.web_search_url or "").netloc
    try:
        results = search_web(settings, question)
        reason = f"no result from {where} for “{question}”" if not results else ""
    except WebSearchFailed as exc:
        results, reason = [], str(exc)
    if results:
        hosts = ", ".join(dict.fromkeys(urlparse(r.url).netloc for r in results))
        detail = (f"the documents do not answer it: {len(results)} results from {where} for “{question}” "
                  f"({hosts}); used for this answer only, not added to the knowledge base")
        return {"hits": web_hits(results), "web_searched": True, "standalone_question": question,
                "trace": step("Searched the web", detail)}
    searched = replace(state, web_searched=True)
    update = not_found(searched, runtime)
    note = prompts.WEB_FAILED_NOTE[language(state)].format(reason=reason.rstrip("."))
    runtime.stream_writer(events.token(note))
    return update | {"answer": update["answer"] + note, "web_searched": True,
                     "trace": step("Searched the web", f"failed: {reason}") + update["trace"]}


def after_web(state: RagState) -> Literal["grade", "record"]:
    """Web results are graded like passages; a failed search has already said "not found"."""
    return "record" if state.answer else "grade"


def web_hits(results: list[WebResult]) -> list[Hit]:
    """The results as passages of this turn (ranked by the provider's order)."""
    hits = []
    for rank, result in enumerate(results):
        passage = Passage(text=result.content, page=1, position=rank, start=0, end=len(result.content),
                          tokens=count_tokens(result.content), doc_id=f"web-{rank + 1}")
        hits.append(Hit(passage, title=result.title, filename=urlparse(result.url).netloc, doc_type="web",
                        score=round(1.0 - rank / (2 * len(results)), 4), url=result.url))
    return hits


def after_check(state: RagState) -> Literal["note_web", "record"]:
    """An answer that cites a web result says so."""
    return "note_web" if any(source.web and source.cited for source in state.sources) else "record"


def note_web(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Say under the answer that its web sources are web search results, not documents."""
    note = prompts.WEB_NOTE[language(state)]
    runtime.stream_writer(events.token(note))
    cited = [s for s in state.sources if s.web and s.cited]
    return {"answer": state.answer + note,
            "trace": step("Cited the web", ", ".join(f"[{s.n}] {s.url}" for s in cited))}

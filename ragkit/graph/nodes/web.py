"""Web search, agentic mode's last resort (``RAGKIT_WEB_SEARCH_URL``, off by default).

Asked only when the knowledge base does not answer: where the default path would say
"not found" (the grade found the evidence insufficient and no search round is left), an
agentic turn with a provider configured searches the web once (``routes.searches_web``).
Its results become passages of this turn only (``Hit.url`` set, never stored in the
knowledge base) and go through the same grade, answer and citation check as the documents'
passages; an answer citing them says so (``note_web``), and every source list marks them as
web. A provider that fails (unreachable, too slow, not its JSON API) or finds nothing
degrades to "not found", with the reason in the message and the trace. The research
subgraph searches the web for a part its rounds left missing the same way
(``agentic.web``).

Why agentic mode only: the default mode answers from the user's documents alone (and its
eval figures stay those of the documents); agentic mode is the one that may take more
steps to answer.
"""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlparse

from langgraph.runtime import Runtime

from ragkit import events
from ragkit.errors import WebSearchFailed
from ragkit.graph.context import RagContext
from ragkit.graph.nodes.answer import not_found
from ragkit.graph.state import RagState, language, step
from ragkit.lang.text import count_tokens
from ragkit.models import prompts
from ragkit.retrieval.websearch import WebResult, search_web
from ragkit.types import Hit, Passage


def web_search(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Search the web for the question as understood; its results are this round's
    passages. None, or a failing provider: "not found", saying why."""
    settings = runtime.context.settings
    question = state.best.question if state.best else state.standalone_question
    runtime.stream_writer(events.status("Your documents do not answer it: searching the web…"))
    where = urlparse(settings.web_search_url or "").netloc
    results, reason = ask_web(settings, question)
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


def ask_web(settings, query: str) -> tuple[list[WebResult], str]:
    """The provider's results for ``query``, or none and why (it failed, or found nothing)."""
    try:
        results = search_web(settings, query)
    except WebSearchFailed as exc:
        return [], str(exc)
    where = urlparse(settings.web_search_url or "").netloc
    return results, "" if results else f"no result from {where} for “{query}”"




def web_hits(results: list[WebResult], first: int = 1) -> list[Hit]:
    """The results as passages of this turn (ranked by the provider's order), numbered
    from ``first`` (another search's results in the same turn keep their own ids)."""
    hits = []
    for rank, result in enumerate(results):
        passage = Passage(text=result.content, page=1, position=rank, start=0, end=len(result.content),
                          tokens=count_tokens(result.content), doc_id=f"web-{first + rank}")
        hits.append(Hit(passage, title=result.title, filename=urlparse(result.url).netloc, doc_type="web",
                        score=round(1.0 - rank / (2 * len(results)), 4), url=result.url))
    return hits




def note_web(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Say under the answer that its web sources are web search results, not documents."""
    partly = any(not source.web and source.cited for source in state.sources)
    note = (prompts.WEB_PART_NOTE if partly else prompts.WEB_NOTE)[language(state)]
    runtime.stream_writer(events.token(note))
    cited = [s for s in state.sources if s.web and s.cited]
    return {"answer": state.answer + note,
            "trace": step("Cited the web", ", ".join(f"[{s.n}] {s.url}" for s in cited))}
















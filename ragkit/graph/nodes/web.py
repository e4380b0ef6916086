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
    check_citations / extract_hops ─(cites a web result)→ note_web → record

On the multi-hop path (``hops.py``) a part still uncovered after the knowledge-base rounds
(a comparison's side, or the chain's last hop) is searched on the web by ``web_hops``:
the side's sub-question, or the bridge query of the hop that reached nothing (the bridge
name and the question). Its best result joins the evidence as that part's passage, the
parts are judged again, and the turn is answered hop by hop as before; a failing
provider leaves the part missing, with the reason in the answer and the trace.

    hop_round ─(no bridges left, a part missing; web configured, not searched)→ web_hops
    web_hops → extract_hops / generate

Why agentic mode only: the default mode answers from the user's documents alone (and its
eval figures stay those of the documents); agentic mode is the one that may take more
steps to answer, and the issue places web search in it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal
from urllib.parse import urlparse

from langgraph.runtime import Runtime

from ragkit import events
from ragkit.errors import WebSearchFailed
from ragkit.graph.agentic.hops import (
    after_hop,
    answer_evidence,
    hops_kept,
    judge_parts,
    left_unsaid,
    side_link,
    sufficiency_step,
)
from ragkit.graph.context import RagContext
from ragkit.graph.nodes.answer import not_found
from ragkit.graph.nodes.grade import after_grade
from ragkit.graph.nodes.retrieve import after_rewrite
from ragkit.graph.state import HopLink, RagState, language, step
from ragkit.lang.text import count_tokens, plural
from ragkit.models import prompts
from ragkit.retrieval.websearch import WebResult, search_web
from ragkit.types import Hit, Passage


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


def after_web(state: RagState) -> Literal["grade", "record"]:
    """Web results are graded like passages; a failed search has already said "not found"."""
    return "record" if state.answer else "grade"


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


def after_check(state: RagState) -> Literal["next_model", "note_web", "record"]:
    """A model answer the citation check rejected goes to the chain's next model; an
    answer that cites a web result says so."""
    if state.mode == "llm" and state.error and not state.answer:
        return "next_model"
    return "note_web" if any(source.web and source.cited for source in state.sources) else "record"


def note_web(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Say under the answer that its web sources are web search results, not documents."""
    partly = any(not source.web and source.cited for source in state.sources)
    note = (prompts.WEB_PART_NOTE if partly else prompts.WEB_NOTE)[language(state)]
    runtime.stream_writer(events.token(note))
    cited = [s for s in state.sources if s.web and s.cited]
    return {"answer": state.answer + note,
            "trace": step("Cited the web", ", ".join(f"[{s.n}] {s.url}" for s in cited))}


# ----- the multi-hop path ------------------------------------------------------------------


def uncovered(state: RagState, context: RagContext) -> list[tuple[int, str]]:
    """The parts the knowledge-base rounds left missing, each with what the web is asked:
    a comparison's side by its sub-question (its index among the sides); the chain's next
    hop (index -1) by the bridge query of the last bridge followed (the bridge name and
    the question), else by the question. A chain's hop is missing when its part was judged
    not covered, or when the bridges followed reached no passage and the question still
    has words no passage says."""
    missing = {part.part for part in state.parts if not part.sufficient}
    if len(state.sub_questions) > 1:
        return [(index, part) for index, part in enumerate(state.sub_questions) if part in missing]
    question = state.standalone_question
    dead_end = not state.parts and bool(state.followed) and not state.bridges and bool(
        left_unsaid(question, state.links, context.passages.idf(question)))
    if not missing and not dead_end:
        return []
    return [(-1, f"{state.followed[-1]} {question}" if state.followed else question)]


def web_hops(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Search the web for each part the knowledge base left missing; its best result
    becomes that part's passage (never stored), and the parts are judged again."""
    context = runtime.context
    settings = context.settings
    where = urlparse(settings.web_search_url or "").netloc
    runtime.stream_writer(events.status("Part of the question is not in your documents: searching the web…"))
    links, evidence, details, failures, found = list(state.links), list(state.evidence), [], [], 1
    from_web: list[Hit] = []
    for index, query in uncovered(state, context):
        results, reason = ask_web(settings, query)
        if not results:
            failures.append(reason.rstrip("."))
            details.append(f"“{query}”: failed: {reason}")
            continue
        hits = web_hits(results, found)
        from_web += hits
        found += len(hits)
        evidence = merge_web(evidence, hits)
        links = with_web_link(state, links, index, query, hits[0])
        details.append(f"“{query}”: {plural(len(results), 'result')} from {where} ("
                       + ", ".join(dict.fromkeys(urlparse(r.url).netloc for r in results)) + ")")
    searched = replace(state, links=links, evidence=evidence, web_searched=True)
    parts = judge_parts(searched, context, evidence, links)
    idf = context.passages.idf(state.standalone_question)
    hits = answer_evidence(replace(searched, parts=parts), settings.agentic_evidence, idf)
    question = state.standalone_question
    if len(state.sub_questions) == 1 and not hops_kept(question, links, idf) and from_web:
        # the web's page says nothing about the bridge it was searched for: no hop, but an
        # answer to the question may be on it; graded next, as the default path's web search is
        hits = from_web
    detail = "; ".join(details) + ("; used for this answer only, not added to the knowledge base"
                                   if len(failures) < len(details) else "")
    return {"links": links, "evidence": evidence, "parts": parts, "hits": hits, "web_searched": True,
            "web_failure": "; ".join(failures),
            "trace": step("Searched the web", detail)
            + sufficiency_step(parts)}


def merge_web(evidence: list[Hit], hits: list[Hit]) -> list[Hit]:
    """The evidence with a web search's results after it (they rank below the documents')."""
    seen = {hit.id for hit in evidence}
    return evidence + [hit for hit in hits if hit.id not in seen]


def with_web_link(state: RagState, links: list[HopLink], index: int, query: str, hit: Hit) -> list[HopLink]:
    """The chain with a web result as a part's passage: a comparison's side ``index``
    replaced (its knowledge-base passage did not cover it), or the chain's next hop."""
    if index >= 0:
        part = state.sub_questions[index]
        kept = [link for link in links if link is not side_link(links, part)]
        return [HopLink(part, hit, "", 1), *kept]
    last = max(links, key=lambda link: link.round, default=None)
    entity = state.followed[-1] if state.followed else query
    return [*links, HopLink(entity, hit, last.hit.id if last else "", (last.round if last else 0) + 1)]


def after_hop_or_web(state: RagState, runtime: Runtime[RagContext]) -> Literal[
        "hop_round", "extract_hops", "generate", "grade", "web_hops"]:
    """``hops.after_hop``, with the web searched for a part the rounds left missing."""
    following = after_hop(state, runtime)
    if following != "hop_round" and searches_web(state, runtime.context) and uncovered(state, runtime.context):
        return "web_hops"
    return following


def after_web_hops(state: RagState, runtime: Runtime[RagContext]) -> Literal["extract_hops", "generate", "grade"]:
    """The hop-by-hop answer from the evidence with the web's results; a chain the web did
    not extend, or evidence that still covers none of the parts, is graded on the first
    round's passages, as the default path grades them. (No further round: the web is
    searched only once no bridge is left, and adds none.)"""
    following = after_hop(state, runtime)
    return "grade" if following == "hop_round" else following

"""Agentic mode's web search (``RAGKIT_WEB_SEARCH_URL``): a part still uncovered after the
knowledge-base rounds (a comparison's side, or the chain's last hop) is searched on the web:
the side's sub-question, or the bridge query of the hop that reached nothing (the bridge name
and the question). Its best result joins the evidence as that part's passage, the parts are
judged again, and the turn is answered hop by hop as before; a failing provider leaves the
part missing, with the reason in the answer and the trace.
"""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlparse

from langgraph.runtime import Runtime

from ragkit import events
from ragkit.graph.agentic.rounds import (
    answer_evidence,
    hops_kept,
    judge_parts,
    left_unsaid,
    side_link,
    sufficiency_step,
)
from ragkit.graph.agentic.state import AgentState, HopLink
from ragkit.graph.context import RagContext
from ragkit.graph.nodes.web import ask_web, web_hits
from ragkit.graph.state import step
from ragkit.lang.text import plural
from ragkit.types import Hit


def searches_web(state: AgentState, context: RagContext) -> bool:
    """True when the research may still search the web: a provider configured, not searched yet."""
    return bool(context.settings.web_search_url) and not state.web_searched


def uncovered(state: AgentState, context: RagContext) -> list[tuple[int, str]]:
    """The parts the knowledge-base rounds left missing, each with what the web is asked:
    a comparison's side by its sub-question (its index among the sides); the chain's next
    hop (index -1) by the bridge query of the last bridge followed (the bridge name and
    the question), else by the question. A chain's hop is missing when its part was judged
    not covered, or when the bridges followed reached no passage and the question still
    has words no passage says."""
    missing = {part.part for part in state.parts if not part.sufficient}
    if len(state.sub_questions) > 1:
        return [(index, part) for index, part in enumerate(state.sub_questions) if part in missing]
    question = state.question
    dead_end = not state.parts and bool(state.followed) and not state.bridges and bool(
        left_unsaid(question, state.links, context.passages.idf(question)))
    if not missing and not dead_end:
        return []
    return [(-1, f"{state.followed[-1]} {question}" if state.followed else question)]


def web_hops(state: AgentState, runtime: Runtime[RagContext]) -> dict:
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
    idf = context.passages.idf(state.question)
    hits = answer_evidence(replace(searched, parts=parts), settings.agentic_evidence, idf)
    question = state.question
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


def with_web_link(state: AgentState, links: list[HopLink], index: int, query: str, hit: Hit) -> list[HopLink]:
    """The chain with a web result as a part's passage: a comparison's side ``index``
    replaced (its knowledge-base passage did not cover it), or the chain's next hop."""
    if index >= 0:
        part = state.sub_questions[index]
        kept = [link for link in links if link is not side_link(links, part)]
        return [HopLink(part, hit, "", 1), *kept]
    last = max(links, key=lambda link: link.round, default=None)
    entity = state.followed[-1] if state.followed else query
    return [*links, HopLink(entity, hit, last.hit.id if last else "", (last.round if last else 0) + 1)]

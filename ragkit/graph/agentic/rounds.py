"""The research rounds, offline: plan the parts of a question, search them (fanned out, one
``search`` per part or bridge), follow hops, judge each part.

- ``plan``: a comparison ("Which is older, X or Y?") becomes one self-contained
  sub-question per side; anything else is one part, the question.
- ``search``: one part (searched as the default path searches a question, focused the same
  way), or one bridge of the previous round: a document title a passage names (that document
  is searched), else, for a question that describes a thing through another ("the designer
  of the machine …"), a name the passage holds that the question does not.
- ``close_round``: the round's searches joined in their order: every passage merges into
  ``evidence`` by passage id, best score kept; each passage reached on the way is a
  ``HopLink``; the bridges for the next round are found and the parts judged.
- ``finish``: a chain or a comparison whose hops cover a part is answered from its hops
  (``answer.answer_hops`` offline, or the model); anything else is graded by the default
  path from its first round (same passages, same grade), so a single-hop question pays for
  nothing it does not need.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import replace

from langgraph.runtime import Runtime

from ragkit import events
from ragkit.answering.decompose import (
    comparison_sides,
    has_hop_structure,
    mentioned_titles,
    name_candidates,
    side_question,
)
from ragkit.answering.grading import grade_evidence, unsaid, word_idf
from ragkit.graph.agentic.state import AgentState, Bridge, Found, HopLink, PartVerdict, Search
from ragkit.graph.context import RagContext
from ragkit.graph.policy import focus_hits
from ragkit.graph.state import add_time, step
from ragkit.lang.text import split_sentences
from ragkit.types import Hit, SearchFilters, TraceStep


def plan(state: AgentState, runtime: Runtime[RagContext]) -> dict:
    """Split a comparison into one sub-question per side; anything else is one part."""
    question = state.question
    comparison = comparison_sides(question)
    parts = comparison.sub_questions() if comparison else [question]
    detail = ("a comparison: each side searched on its own: " + "; ".join(f"“{p}”" for p in parts)
              if comparison else
              "one part; hops followed where a passage names what the question leads to"
              if has_hop_structure(question) else "one part")
    return {"sub_questions": parts, "rounds": 0, "links": [], "bridges": [], "followed": [], "evidence": [],
            "trace": step("Planned", detail), "round_started": time.perf_counter()}


def part_searches(state: AgentState) -> list[Search]:
    """The first round's searches: one per part, in order."""
    return [Search(index, part, state.filters) for index, part in enumerate(state.sub_questions)]


def bridge_searches(state: AgentState) -> list[Search]:
    """A later round's searches: one per bridge, in order; a named document within itself
    (with the question beside the name), another name over the whole scope."""
    chained = frozenset(link.hit.doc_id for link in state.links)
    return [Search(index, f"{bridge.entity} {state.question}", state.filters, bridge.doc_id, bridge.entity, chained)
            for index, bridge in enumerate(state.bridges)]


def search(task: Search, runtime: Runtime[RagContext]) -> dict:
    """One fanned-out search of a round: a part as the default path searches it, a title
    bridge within its document, a name bridge as the first passage of a document not on the
    chain yet that holds the name."""
    context = runtime.context
    passages, settings = context.passages, context.settings
    if task.doc_id:
        hits = passages.search_document(task.query, task.doc_id, 1)
    elif task.entity:
        hits = [hit for hit in passages.search(task.entity, settings.top_k, task.filters or SearchFilters())
                if hit.doc_id not in task.chained and task.entity.lower() in hit.context.text.lower()][:1]
    else:
        hits = focus_hits(passages, task.query, passages.search(task.query, settings.top_k,
                                                                task.filters or SearchFilters()), settings)
    return {"found": [Found(task.index, tuple(hits))]}


def merge_hits(pool: list[Hit], new: list[Hit]) -> list[Hit]:
    """``pool`` plus ``new`` by passage id, each passage once with its best score, best first."""
    best: dict[str, Hit] = {hit.id: hit for hit in pool}
    for hit in new:
        if hit.id not in best or hit.score > best[hit.id].score:
            best[hit.id] = hit
    return sorted(best.values(), key=lambda hit: -hit.score)


def close_round(state: AgentState, runtime: Runtime[RagContext]) -> dict:
    """Join the round's searches, find the next round's bridges and judge the parts."""
    context = runtime.context
    number = state.rounds + 1
    found = [list(f.hits) for f in sorted(state.found, key=lambda f: f.index)]
    if number == 1:
        links, evidence, queries, searched, first_evidence = first_round(state, context, found)
    else:
        links, evidence, queries, searched = bridge_round(state, number, found)
        first_evidence = state.first_evidence
    all_links = [*state.links, *links]
    idf = context.passages.idf(state.question)
    bridges = find_bridges(state, context, links, all_links, idf)
    single = not bridges and len(state.sub_questions) == 1 and not hops_kept(state.question, all_links, idf)
    # a single hop goes to the default path's grade, which judges it: not graded twice
    parts = [] if single else judge_parts(state, context, evidence, all_links)
    runtime.stream_writer(events.status(f"Round {number}: {len(evidence)} passages"))
    trace = round_steps(state, number, searched, links, bridges, parts, single)
    hits = answer_evidence(replace(state, links=all_links, evidence=evidence, first_evidence=first_evidence,
                                   parts=parts), context.settings.agentic_evidence, idf)
    return {"rounds": number, "links": all_links, "bridges": bridges, "evidence": evidence, "parts": parts,
            "first_evidence": first_evidence, "hits": hits, "found": None,
            "queries": [*state.queries, *queries], "followed": [*state.followed, *(b.entity for b in state.bridges)],
            "trace": trace, "timings": add_time(state, "retrieve_ms", state.round_started),
            "round_started": time.perf_counter()}


def round_steps(state: AgentState, number: int, searched: str, links: list[HopLink], bridges: list[Bridge],
                parts: list[PartVerdict], single: bool) -> list[TraceStep]:
    """The trace of one round: what it searched and reached, the next bridges, the verdicts."""
    found = ", ".join(f"“{link.hit.title}”" for link in links) or "nothing new"
    next_up = ", ".join(f"“{b.entity}”" for b in bridges) or "none"
    trace = step(f"Round {number}", f"searched {searched}; reached {found}; bridges for the next round: {next_up}")
    if single and number > 1:
        trace += step("Hops not kept", "the passages the bridges reached say nothing the first passage left "
                      "unsaid: answered from the first round, as the default path answers")
    if parts:
        trace += sufficiency_step(parts)
    if parts and not bridges and not covers_a_part(parts):
        trace += step("Hops not kept", "the hops cover no part of the question: the first round's passages are "
                      "graded, as the default path grades them")
    return trace


def first_round(state: AgentState, context: RagContext, found: list[list[Hit]]
                ) -> tuple[list[HopLink], list[Hit], list[str], str, list[Hit]]:
    """Each part's passages (``found``, in the parts' order): its best passage, and the best
    passage of every document the question names by title, start the chain. Also returns the
    first part's passages in the default path's order (what a single hop is answered from)."""
    passages = context.passages
    evidence: list[Hit] = []
    links: list[HopLink] = []
    first_hits: list[Hit] = []
    for part, hits in zip(state.sub_questions, found):
        first_hits = first_hits or hits
        evidence = merge_hits(evidence, hits)
        if hits:
            links.append(HopLink(part, hits[0], "", 1))
    titles = passages.document_titles(state.filters or SearchFilters())
    chained = {link.hit.doc_id for link in links}
    for title in mentioned_titles(state.question, titles):
        doc_id = titles[title]
        if doc_id in chained:
            continue
        named = passages.search_document(state.question, doc_id, 1)
        if named:
            links.append(HopLink(title, named[0], "", 1))
            evidence = merge_hits(evidence, named)
            chained.add(doc_id)
    searched = "; ".join(f"“{part}”" for part in state.sub_questions)
    return links, evidence, list(state.sub_questions), searched, first_hits


def bridge_round(state: AgentState, number: int, found: list[list[Hit]]
                 ) -> tuple[list[HopLink], list[Hit], list[str], str]:
    """Each bridge's passage (``found``, in the bridges' order) joins the chain unless its
    document is on it already (an earlier bridge of the round may have reached it)."""
    chained = {link.hit.doc_id for link in state.links}
    evidence, links = list(state.evidence), []
    for bridge, hits in zip(state.bridges, found):
        if hits and hits[0].doc_id not in chained:
            links.append(HopLink(bridge.entity, hits[0], bridge.from_id, number))
            evidence = merge_hits(evidence, hits[:1])
            chained.add(hits[0].doc_id)
    queries = [f"{bridge.entity} {state.question}" for bridge in state.bridges]
    return links, evidence, queries, "; ".join(f"“{b.entity}”" for b in state.bridges)


def find_bridges(state: AgentState, context: RagContext, links: list[HopLink], all_links: list[HopLink],
                 idf: dict[str, float]) -> list[Bridge]:
    """What the next round searches: the documents the new passages name by title (not on
    the chain yet); failing those, for a question with hop structure, the names the new
    passages hold that the question does not. At most ``settings.agentic_bridges``.
    None once the chain says every word of the question (a single part): a passage that
    already answers the question leads nowhere further."""
    if state.rounds + 1 >= context.settings.agentic_rounds:
        return []
    if len(state.sub_questions) == 1 and not left_unsaid(state.question, all_links, idf):
        return []
    titles = context.passages.document_titles(state.filters)
    chained = {link.hit.doc_id for link in all_links}
    tried = set(state.followed) | {b.entity for b in state.bridges}
    question = state.question
    found: list[Bridge] = []
    for link in links:
        for title in mentioned_titles(link.hit.context.text, titles):
            doc_id = titles[title]
            if doc_id not in chained and title not in tried and title not in question:
                found.append(Bridge(title, link.hit.id, doc_id))
                tried.add(title)
    if not found and has_hop_structure(question):
        for link in links:
            for name in name_candidates(link.hit.context.text, question):
                if name not in tried and name != link.hit.title:
                    found.append(Bridge(name, link.hit.id))
                    tried.add(name)
    return found[: context.settings.agentic_bridges]


def left_unsaid(question: str, links: list[HopLink], idf: dict[str, float]) -> list[str]:
    """The question's informative words (see ``informative``) the chain's first passage
    does not say and its later hops have not said yet (see ``hop_says``): what a further
    hop is for."""
    path = chain(links)
    if not path:
        return []
    left = [word for word in unsaid(question, path[0].hit.context.text) if informative(word, idf)]
    for link in path[1:]:
        still = set(unsaid(question, hop_says(link)))
        left = [word for word in left if word in still]
    return left


def hop_says(link: HopLink) -> str:
    """What a later hop says about the thing it was searched for: the whole passage when
    that thing is its document (a title bridge), else only the sentences naming it, less
    the name itself (a passage that names "Hesburgh" in passing says nothing about
    Hesburgh's budget, and a hop searched for "University of Notre Dame" has not said
    "Notre Dame" by naming it)."""
    text = link.hit.context.text
    if link.entity == link.hit.title:
        return text
    name = re.compile(re.escape(link.entity), re.IGNORECASE)
    return "\n".join(name.sub(" ", span.text) for span in split_sentences(text) if name.search(span.text))


# BM25's idf of a word in half of the passages: a word said by more of them (the subject of
# a whole knowledge base, "Notre Dame"; "many", "one") tells no passage from another, so a hop
# that adds only such words is a detour, and a first passage that leaves only them unsaid
# needs no further hop.
COMMON_WORD_IDF = math.log(2)


def informative(word: str, idf: dict[str, float]) -> bool:
    """True for a question word that at most half of the passages say."""
    return word_idf(word, idf) >= COMMON_WORD_IDF - 1e-9


def hops_kept(question: str, links: list[HopLink], idf: dict[str, float]) -> bool:
    """True when the chain's later hops say some of what its first passage left unsaid
    (the designer's birthplace: "born", in the sentence naming the designer); a hop that
    adds none of the question's words about its bridge is a detour, and the first round
    answers alone."""
    path = chain(links)
    if len(path) < 2:
        return False
    first = [word for word in unsaid(question, path[0].hit.context.text) if informative(word, idf)]
    return len(left_unsaid(question, links, idf)) < len(first)


def judge_parts(state: AgentState, context: RagContext, evidence: list[Hit],
                links: list[HopLink]) -> list[PartVerdict]:
    """Each part graded as the default path grades a question: a comparison's sides on the
    passages reached for them, a chain's question on its last hop's passage."""
    passages, settings = context.passages, context.settings
    if len(state.sub_questions) > 1:
        parts = []
        for part in state.sub_questions:
            link = side_link(links, part)
            if link is None:
                parts.append(PartVerdict(part, False, "no passage was found for it"))
                continue
            verdict = grade_evidence(side_question(part), [link.hit], passages, settings)
            parts.append(PartVerdict(part, verdict.sufficient, verdict.reason))
        return parts
    question = state.question
    path = chain(links)
    hits = [joined(path)] if len(path) > 1 else evidence
    bridges = tuple(link.entity for link in path[1:])
    verdict = grade_evidence(question, hits, passages, settings, bridges)
    return [PartVerdict(question, verdict.sufficient, verdict.reason)]


def sufficiency_step(parts: list[PartVerdict]) -> list[TraceStep]:
    """The trace's "Sufficiency" step: each part, covered or missing, and why."""
    return step("Sufficiency", "; ".join(f"“{p.part}”: {'covered' if p.sufficient else 'missing'} ({p.reason})"
                                         for p in parts))


def side_link(links: list[HopLink], part: str) -> HopLink | None:
    """The passage a comparison's side (its sub-question ``part``) reached, or None: sides
    are found by what was searched, not by position (a side may have reached nothing)."""
    return next((link for link in links if link.entity == part and not link.from_id), None)


def joined(path: list[HopLink]) -> Hit:
    """The chain's passages read as one (what a multi-hop question is graded against: no
    single hop holds all its words)."""
    first = path[0].hit
    text = "\n".join(link.hit.context.text for link in path)
    return replace(first, passage=replace(first.passage, text=text, end=first.passage.start + len(text)), parent=None)


def deepest(links: list[HopLink]) -> HopLink | None:
    """The last passage reached (the latest round's first), or None."""
    return max(links, key=lambda link: link.round, default=None)


def covers_a_part(parts: list[PartVerdict]) -> bool:
    """False when the parts were judged and none is covered by the evidence."""
    return not parts or any(part.sufficient for part in parts)


def chain(links: list[HopLink]) -> list[HopLink]:
    """The hops from the question to the last passage reached, in order."""
    by_id = {link.hit.id: link for link in links}
    path: list[HopLink] = []
    link = deepest(links)
    while link is not None and link not in path:
        path.insert(0, link)
        link = by_id.get(link.from_id)
    return path


def answer_evidence(state: AgentState, limit: int, idf: dict[str, float]) -> list[Hit]:
    """The passages the answer draws on: the chain (or each side's passage) first, then the
    rest of the evidence by score; at most ``limit``. A single hop (no hop kept): the
    first round's passages as the default path focused them."""
    if not covers_a_part(state.parts) or (len(state.sub_questions) <= 1
                                          and not hops_kept(state.question, state.links, idf)):
        return state.first_evidence[:limit]
    first: list[Hit] = []
    for link in (state.links if len(state.sub_questions) > 1 else chain(state.links)):
        if link.hit.id not in {hit.id for hit in first}:
            first.append(link.hit)
    first = first[-limit:]  # a chain longer than the limit keeps its last hops, where the answer is
    seen = {hit.id for hit in first}
    return (first + [hit for hit in state.evidence if hit.id not in seen])[:limit]


def finish(state: AgentState, runtime: Runtime[RagContext]) -> dict:
    """What the research leads to: a chain or a comparison whose hops cover a part is
    answered from its hops (offline hop by hop, or by the model); a single hop, or hops that
    cover none of the parts (no better evidence than the first round), is graded by the
    default path ("not found" there when it does not answer either)."""
    context = runtime.context
    answers = covers_a_part(state.parts) and (
        len(state.sub_questions) > 1 or hops_kept(state.question, state.links, context.passages.idf(state.question)))
    if not answers:
        return {"outcome": "grade"}
    return {"outcome": "generate" if context.choice(state).generated else "hops"}

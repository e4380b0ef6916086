"""Agentic rounds: plan the parts of a question, follow hops, judge each part.

    contextualize → plan → hop_round ─┬─ bridges left, rounds left → hop_round
                                      ├─ a chain of hops or a comparison → extract_hops / generate
                                      │   (covering none of its parts: grade, as a single hop)
                                      └─ one passage enough (single hop) → grade (default path)

- ``plan``: a comparison ("Which is older, X or Y?") becomes one self-contained
  sub-question per side; anything else is one part, the question.
- ``hop_round``: the first round searches each part (plus the documents whose titles the
  question names); later rounds search the bridges the previous round found: a document
  title a passage names (that document is searched), else, for a question that describes
  a thing through another ("the designer of the machine …"), the names the passage holds
  that the question does not. Every round's passages merge into ``evidence`` by passage
  id, best score kept; each passage reached on the way is a ``HopLink``.
- ``after_hop``: another round while bridges are left and rounds remain
  (``settings.agentic_rounds``); then the answer. A question that found no hop and is no
  comparison is answered by the default path from its first round (same passages, same
  grade), so a single-hop question pays for nothing it does not need.
- ``extract_hops``: offline, the sentence of each hop in order (the bridge fact, then the
  answer fact), each cited; a comparison shows each side's fact side by side; a part whose
  evidence does not suffice is named as missing.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import replace
from typing import Literal

from langgraph.runtime import Runtime

from ragkit import events
from ragkit.answering.citations import sources_from_hits, validate_markers
from ragkit.answering.compare import side_fact, verdict
from ragkit.answering.decompose import (
    comparison_sides,
    has_hop_structure,
    mentioned_titles,
    name_candidates,
    side_question,
)
from ragkit.answering.extractive import extractive_answer
from ragkit.answering.grading import grade_evidence, unsaid, word_idf
from ragkit.graph.context import RagContext
from ragkit.graph.nodes.retrieve import focus_hits
from ragkit.graph.state import Bridge, HopLink, PartVerdict, RagState, TraceStep, add_time, language, passages, step
from ragkit.lang.text import is_heading, split_sentences
from ragkit.models import prompts
from ragkit.types import Hit, SearchFilters


def plan(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Split a comparison into one sub-question per side; anything else is one part."""
    question = state.standalone_question
    comparison = comparison_sides(question)
    parts = comparison.sub_questions() if comparison else [question]
    detail = ("a comparison: each side searched on its own: " + "; ".join(f"“{p}”" for p in parts)
              if comparison else
              "one part; hops followed where a passage names what the question leads to"
              if has_hop_structure(question) else "one part")
    return {"sub_questions": parts, "rounds": 0, "links": [], "bridges": [], "followed": [], "evidence": [],
            "trace": step("Planned", detail)}


def merge_hits(pool: list[Hit], new: list[Hit]) -> list[Hit]:
    """``pool`` plus ``new`` by passage id, each passage once with its best score, best first."""
    best: dict[str, Hit] = {hit.id: hit for hit in pool}
    for hit in new:
        if hit.id not in best or hit.score > best[hit.id].score:
            best[hit.id] = hit
    return sorted(best.values(), key=lambda hit: -hit.score)


def hop_round(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """One round: the parts (first round) or the bridges found so far (later rounds)."""
    started = time.perf_counter()
    context = runtime.context
    number = state.rounds + 1
    if number == 1:
        links, evidence, queries, searched, first_evidence = first_round(state, context)
    else:
        links, evidence, queries, searched = bridge_round(state, context, number)
        first_evidence = state.first_evidence
    all_links = [*state.links, *links]
    idf = context.passages.idf(state.standalone_question)
    bridges = find_bridges(state, context, links, all_links, idf)
    single = not bridges and len(state.sub_questions) == 1 and not hops_kept(state.standalone_question, all_links,
                                                                             idf)
    # a single hop goes to the default path's grade, which judges it: not graded twice
    parts = [] if single else judge_parts(state, context, evidence, all_links)
    runtime.stream_writer(events.status(f"Round {number}: {len(evidence)} passages"))
    found = ", ".join(f"“{link.hit.title}”" for link in links) or "nothing new"
    next_up = ", ".join(f"“{b.entity}”" for b in bridges) or "none"
    trace = step(f"Round {number}", f"searched {searched}; reached {found}; bridges for the next round: {next_up}")
    if single and number > 1:
        trace += step("Hops not kept", "the passages the bridges reached say nothing the first passage left "
                      "unsaid: answered from the first round, as the default path answers")
    if parts:
        trace += sufficiency_step(parts)
    if parts and not bridges and not covers_a_part(replace(state, parts=parts)):
        trace += step("Hops not kept", "the hops cover no part of the question: the first round's passages are "
                      "graded, as the default path grades them")
    hits = answer_evidence(replace(state, links=all_links, evidence=evidence, first_evidence=first_evidence,
                                   parts=parts),
                           context.settings.agentic_evidence, idf)
    return {"rounds": number, "links": all_links, "bridges": bridges, "evidence": evidence, "parts": parts,
            "first_evidence": first_evidence,
            "hits": hits, "query": state.standalone_question,
            "queries": [*state.queries, *queries], "followed": [*state.followed, *(b.entity for b in state.bridges)],
            "trace": trace, "timings": add_time(state, "retrieve_ms", started)}


def first_round(state: RagState, context: RagContext) -> tuple[list[HopLink], list[Hit], list[str], str, list[Hit]]:
    """Each part searched as the default path searches a question (focused the same way);
    its best passage, and the best passage of every document the question names by title,
    start the chain. Also returns the first part's passages in the default path's order
    (what a single hop is answered from)."""
    settings, passages = context.settings, context.passages
    filters = state.filters or SearchFilters()
    evidence: list[Hit] = []
    links: list[HopLink] = []
    first_hits: list[Hit] = []
    for part in state.sub_questions:
        hits = focus_hits(passages, part, passages.search(part, settings.top_k, filters), settings)
        first_hits = first_hits or hits
        evidence = merge_hits(evidence, hits)
        if hits:
            links.append(HopLink(part, hits[0], "", 1))
    titles = passages.document_titles(filters)
    chained = {link.hit.doc_id for link in links}
    for title in mentioned_titles(state.standalone_question, titles):
        doc_id = titles[title]
        if doc_id in chained:
            continue
        found = passages.search_document(state.standalone_question, doc_id, 1)
        if found:
            links.append(HopLink(title, found[0], "", 1))
            evidence = merge_hits(evidence, found)
            chained.add(doc_id)
    searched = "; ".join(f"“{part}”" for part in state.sub_questions)
    return links, evidence, list(state.sub_questions), searched, first_hits


def bridge_round(state: RagState, context: RagContext, number: int) -> tuple[list[HopLink], list[Hit], list[str], str]:
    """Search each bridge: a named document within itself, another name everywhere (the
    first passage of a document not on the chain yet that holds the name)."""
    settings, passages = context.settings, context.passages
    chained = {link.hit.doc_id for link in state.links}
    evidence, links, queries = list(state.evidence), [], []
    for bridge in state.bridges:
        query = f"{bridge.entity} {state.standalone_question}"
        queries.append(query)
        if bridge.doc_id:
            found = passages.search_document(query, bridge.doc_id, 1)
        else:
            found = [hit for hit in passages.search(bridge.entity, settings.top_k, state.filters or SearchFilters())
                     if hit.doc_id not in chained and bridge.entity.lower() in hit.context.text.lower()][:1]
        if found and found[0].doc_id not in chained:
            links.append(HopLink(bridge.entity, found[0], bridge.from_id, number))
            evidence = merge_hits(evidence, found)
            chained.add(found[0].doc_id)
    return links, evidence, queries, "; ".join(f"“{b.entity}”" for b in state.bridges)


def find_bridges(state: RagState, context: RagContext, links: list[HopLink], all_links: list[HopLink],
                 idf: dict[str, float]) -> list[Bridge]:
    """What the next round searches: the documents the new passages name by title (not on
    the chain yet); failing those, for a question with hop structure, the names the new
    passages hold that the question does not. At most ``settings.agentic_bridges``.
    None once the chain says every word of the question (a single part): a passage that
    already answers the question leads nowhere further."""
    if state.rounds + 1 >= context.settings.agentic_rounds:
        return []
    if len(state.sub_questions) == 1 and not left_unsaid(state.standalone_question, all_links, idf):
        return []
    titles = context.passages.document_titles(state.filters)
    chained = {link.hit.doc_id for link in all_links}
    tried = set(state.followed) | {b.entity for b in state.bridges}
    question = state.standalone_question
    found: list[Bridge] = []
    for link in links:
        for title in mentioned_titles(link.hit.context.text, titles):
            doc_id = titles[title]
            if doc_id not in chained and title not in tried and title not in question:
                found.append(Bridge(title, link.hit.id, doc_id))
                tried.add(title)
    if not found and has_hop_structure(question):
        for link in links:
            for name in name_candidates(_answering_part(link, question), question):
                if name not in tried and name != link.hit.title:
                    found.append(Bridge(name, link.hit.id))
                    tried.add(name)
    return found[: context.settings.agentic_bridges]


def _answering_part(link: HopLink, question: str) -> str:
    """A hop passage's sentences as one text (names are looked for in all of them)."""
    return link.hit.context.text


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


def judge_parts(state: RagState, context: RagContext, evidence: list[Hit], links: list[HopLink]) -> list[PartVerdict]:
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
            asked = side_question(part)
            verdict = grade_evidence(asked, [link.hit], passages, settings)
            parts.append(PartVerdict(part, verdict.sufficient, verdict.reason))
        return parts
    question = state.standalone_question
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


def after_hop(state: RagState, runtime: Runtime[RagContext]) -> Literal["hop_round", "extract_hops", "generate",
                                                                       "grade"]:
    """Another round while bridges are left (the round cap is applied when they are found);
    then a chain or a comparison is answered from its hops, a single hop by the default
    path; so is a chain or comparison whose hops cover none of its parts (they are no
    better evidence than the first round, which the default path grades: "not found" there
    when it does not answer either)."""
    if state.bridges:
        return "hop_round"
    question = state.standalone_question
    context = runtime.context
    if covers_a_part(state) and (len(state.sub_questions) > 1
                                 or hops_kept(question, state.links, context.passages.idf(question))):
        return "generate" if context.choice(state).generated else "extract_hops"
    return "grade"


def covers_a_part(state: RagState) -> bool:
    """False when the parts were judged and none is covered by the evidence."""
    return not state.parts or any(part.sufficient for part in state.parts)


def chain(links: list[HopLink]) -> list[HopLink]:
    """The hops from the question to the last passage reached, in order."""
    by_id = {link.hit.id: link for link in links}
    path: list[HopLink] = []
    link = deepest(links)
    while link is not None and link not in path:
        path.insert(0, link)
        link = by_id.get(link.from_id)
    return path


def answer_evidence(state: RagState, limit: int, idf: dict[str, float]) -> list[Hit]:
    """The passages the answer draws on: the chain (or each side's passage) first, then the
    rest of the evidence by score; at most ``limit``. A single hop (no hop kept): the
    first round's passages as the default path focused them."""
    if not covers_a_part(state) or (len(state.sub_questions) <= 1
                                    and not hops_kept(state.standalone_question, state.links, idf)):
        return state.first_evidence[:limit]
    first: list[Hit] = []
    for link in (state.links if len(state.sub_questions) > 1 else chain(state.links)):
        if link.hit.id not in {hit.id for hit in first}:
            first.append(link.hit)
    first = first[-limit:]  # a chain longer than the limit keeps its last hops, where the answer is
    seen = {hit.id for hit in first}
    return (first + [hit for hit in state.evidence if hit.id not in seen])[:limit]


def extract_hops(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Quote the sentence of each hop in order, each cited (a comparison: each side's fact
    side by side); name the parts the evidence does not cover."""
    started = time.perf_counter()
    context = runtime.context
    hits = answer_evidence(state, context.settings.agentic_evidence, context.passages.idf(state.standalone_question))
    sources = sources_from_hits(hits)
    number = {hit.id: index for index, hit in enumerate(hits, start=1)}
    cjk = language(state) == "zh"
    if len(state.sub_questions) > 1:
        pieces = comparison_pieces(state, context, number)
    else:
        path = [link for link in chain(state.links) if link.hit.id in number]
        pieces = [_bridge_sentence(link.hit, path[i + 1].entity, number[link.hit.id])
                  for i, link in enumerate(path[:-1])]
        pieces.append(_fact(context, state.standalone_question, path[-1].hit, number[path[-1].hit.id]))
    text = ("" if cjk else " ").join(piece for piece in pieces if piece)
    missing = [part.part for part in state.parts if not part.sufficient]
    lang = language(state)
    if missing and not context.always_answer:
        text += prompts.MISSING_NOTE[lang].format(what="; ".join(missing))
        if state.web_failure:
            text += prompts.WEB_FAILED_NOTE[lang].format(reason=state.web_failure)
    answer = validate_markers(text, sources)
    runtime.stream_writer(events.sources(sources, True))
    runtime.stream_writer(events.token(answer))
    cited = sum(source.cited for source in sources)
    return {"answer": answer, "sources": sources, "hits": hits, "closest": [], "found": True, "mode": "extractive",
            "model": "", "usage": {},
            "trace": step("Answered", f"quoted {passages(cited)} hop by hop, offline"
                          + (f"; missing: {'; '.join(missing)}" if missing else "")),
            "timings": add_time(state, "generate_ms", started)}


def comparison_pieces(state: RagState, context: RagContext, number: dict[str, int]) -> list[str]:
    """A comparison's answer: the verdict the two facts allow ("Bertrand Kael.", "Yes.",
    "否。"; else a lead saying the facts follow), then each side's fact, labelled, cited."""
    question = state.standalone_question
    comparison = comparison_sides(question)
    sides = comparison.sides if comparison else tuple(state.sub_questions)
    reached = [(side, part, side_link(state.links, part)) for side, part in zip(sides, state.sub_questions)]
    reached = [(side, part, link) for side, part, link in reached if link is not None]
    sides, links = [side for side, _, _ in reached], [link for _, _, link in reached]
    facts = [side_fact(question, part, side, link.hit, context.passages.embed_sentences)
             for side, part, link in reached]
    both = comparison is not None and len(reached) == len(state.sub_questions)
    decided = verdict(question, comparison, facts, [link.hit for link in links]) if both else ""
    cjk = language(state) == "zh"
    lead = f"{decided}{'。' if cjk else '.'}" if decided else prompts.SIDE_BY_SIDE["zh" if cjk else "en"]
    colon = "：" if cjk else ": "
    return [lead] + [f"{side}{colon}{fact}[{number[link.hit.id]}]"
                     for side, fact, link in zip(sides, facts, links) if fact and link.hit.id in number]


def _bridge_sentence(hit: Hit, entity: str, n: int) -> str:
    """The sentence of ``hit`` that names the next hop's ``entity``, cited."""
    for sentence in split_sentences(hit.context.text):
        if entity.lower() in sentence.text.lower() and not is_heading(sentence.text):
            return f"{sentence.text.strip()}[{n}]"
    return ""


def _fact(context: RagContext, question: str, hit: Hit, n: int) -> str:
    """The best sentences of one passage for ``question`` (the extractive answerer's), cited as ``n``.
    The passage is the chain's last link, so it may fill the chain's budget
    (``extractive_chain_chars_latin``) and its best sentence is never quoted alone: the question's
    words name the first hop, so the sentence that answers seldom outscores the rest of its passage."""
    settings = context.settings.model_copy(update={
        "extractive_chars_latin": max(context.settings.extractive_chars_latin,
                                      context.settings.extractive_chain_chars_latin),
        "extractive_alone_share_latin": 0.0})
    answer = extractive_answer(question, [hit], settings, context.passages.embed_sentences,
                               context.passages.idf(question))
    return re.sub(r"\[1\]", f"[{n}]", answer.text) if answer.sources and answer.sources[0].cited else ""

"""The offline answer of a chain or a comparison: the sentence of each hop in order (the
bridge fact, then the answer fact), each cited; a comparison's verdict and each side's
fact; a part whose evidence does not suffice named as missing."""

from __future__ import annotations

import re
import time

from langgraph.runtime import Runtime

from ragkit import events
from ragkit.answering.citations import sources_from_hits, validate_markers
from ragkit.answering.compare import side_fact, verdict
from ragkit.answering.decompose import comparison_sides
from ragkit.answering.extractive import extractive_answer
from ragkit.graph.agentic.rounds import answer_evidence, chain, side_link
from ragkit.graph.agentic.state import AgentState
from ragkit.graph.context import RagContext
from ragkit.graph.state import add_time, passages, step
from ragkit.lang import language_of
from ragkit.lang.text import is_heading, split_sentences
from ragkit.models import prompts
from ragkit.types import Hit


def answer_hops(state: AgentState, runtime: Runtime[RagContext]) -> dict:
    """Quote the sentence of each hop in order, each cited (a comparison: its verdict and each
    side's fact); name the parts the evidence does not cover."""
    started = time.perf_counter()
    context = runtime.context
    hits = answer_evidence(state, context.settings.agentic_evidence, context.passages.idf(state.question))
    sources = sources_from_hits(hits)
    number = {hit.id: index for index, hit in enumerate(hits, start=1)}
    lang = language_of(state.question)
    if len(state.sub_questions) > 1:
        pieces = comparison_pieces(state, context, number)
    else:
        path = [link for link in chain(state.links) if link.hit.id in number]
        pieces = [bridge_sentence(link.hit, path[i + 1].entity, number[link.hit.id])
                  for i, link in enumerate(path[:-1])]
        pieces.append(last_hop_fact(context, state.question, path[-1].hit, number[path[-1].hit.id]))
    text = lang.joiner.join(piece for piece in pieces if piece)
    missing = [part.part for part in state.parts if not part.sufficient]
    if missing and not context.always_answer:
        text += prompts.MISSING_NOTE[lang.code].format(what="; ".join(missing))
        if state.web_failure:
            text += prompts.WEB_FAILED_NOTE[lang.code].format(reason=state.web_failure)
    answer = validate_markers(text, sources)
    runtime.stream_writer(events.sources(sources, True))
    runtime.stream_writer(events.token(answer))
    cited = sum(source.cited for source in sources)
    return {"answer": answer, "sources": sources, "hits": hits,
            "trace": step("Answered", f"quoted {passages(cited)} hop by hop, offline"
                          + (f"; missing: {'; '.join(missing)}" if missing else "")),
            "timings": add_time(state, "generate_ms", started)}


def comparison_pieces(state: AgentState, context: RagContext, number: dict[str, int]) -> list[str]:
    """A comparison's answer: the verdict the two facts allow ("Bertrand Kael.", "Yes.",
    "否。"; else a lead saying the facts follow), then each side's fact, labelled, cited."""
    question = state.question
    comparison = comparison_sides(question)
    sides = comparison.sides if comparison else tuple(state.sub_questions)
    reached = [(side, part, side_link(state.links, part)) for side, part in zip(sides, state.sub_questions)]
    reached = [(side, part, link) for side, part, link in reached if link is not None]
    sides, links = [side for side, _, _ in reached], [link for _, _, link in reached]
    facts = [side_fact(question, part, side, link.hit, context.passages.embed_sentences)
             for side, part, link in reached]
    both = comparison is not None and len(reached) == len(state.sub_questions)
    decided = verdict(question, comparison, facts, [link.hit for link in links]) if both else ""
    lang = language_of(question)
    lead = f"{decided}{lang.full_stop}" if decided else prompts.SIDE_BY_SIDE[lang.code]
    colon = lang.colon
    return [lead] + [f"{side}{colon}{fact}[{number[link.hit.id]}]"
                     for side, fact, link in zip(sides, facts, links) if fact and link.hit.id in number]


def bridge_sentence(hit: Hit, entity: str, n: int) -> str:
    """The sentence of ``hit`` that names the next hop's ``entity``, cited."""
    for sentence in split_sentences(hit.context.text):
        if entity.lower() in sentence.text.lower() and not is_heading(sentence.text):
            return f"{sentence.text.strip()}[{n}]"
    return ""


def last_hop_fact(context: RagContext, question: str, hit: Hit, n: int) -> str:
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

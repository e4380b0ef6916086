"""Where the conversation graph goes after each node that branches: one function per node,
each a function of the state (and the run's context) naming the next node.

Agentic mode's web search is part of these decisions, not a layer around them: where the
knowledge base leaves the question unanswered ("not found"), an agentic turn with a provider
configured searches the web once first (``searches_web``).
"""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime

from ragkit.graph.chain import answer_attempts, judges_now
from ragkit.graph.context import RagContext
from ragkit.graph.nodes.retrieve import next_query
from ragkit.graph.nodes.route import ROUTES
from ragkit.graph.state import RagState


def searches_web(state: RagState, context: RagContext) -> bool:
    """True when this turn may still search the web: agentic mode, a provider configured,
    not searched yet."""
    return state.chat_mode == "agentic" and bool(context.settings.web_search_url) and not state.web_searched


def after_route(state: RagState) -> Literal["contextualize", "direct"]:
    """The first node of the chosen path."""
    return ROUTES[state.route]


def after_contextualize(state: RagState) -> Literal["agentic", "retrieve"]:
    """Agentic mode researches the question in rounds; default mode searches once."""
    return "agentic" if state.chat_mode == "agentic" else "retrieve"


def after_agentic(state: RagState) -> Literal["grade", "generate", "note_web", "record"]:
    """The research answered hop by hop (saying so when it cites the web), hands its passages
    to the model, or leaves a single hop to the default path's grade."""
    outcome = state.plan.outcome if state.plan else "grade"
    if outcome == "hops":
        return after_answer(state)
    return "generate" if outcome == "generate" else "grade"


def after_grade(state: RagState, runtime: Runtime[RagContext]) -> Literal[
        "generate", "extract", "rewrite_query", "not_found", "web_search"]:
    """Answer when the evidence suffices; otherwise search again while rounds are left, then
    the web (agentic mode), then say it was not found."""
    context = runtime.context
    if state.grade.sufficient or context.always_answer:
        return "generate" if context.choice(state).generated else "extract"
    rounds_left = len(state.queries) <= context.settings.retrieval_retries
    if rounds_left and (next_query(state) or judges_now(context, state)):
        return "rewrite_query"
    return "web_search" if searches_web(state, context) else "not_found"


def after_rewrite(state: RagState, runtime: Runtime[RagContext]) -> Literal["retrieve", "not_found", "web_search"]:
    """Search again with the new query; when there is none, the web (agentic mode), else
    "not found"."""
    if state.query:
        return "retrieve"
    return "web_search" if searches_web(state, runtime.context) else "not_found"


def after_web(state: RagState) -> Literal["grade", "record"]:
    """Web results are graded like passages; a failed search has already said "not found"."""
    return "record" if state.answer else "grade"


def after_generate(state: RagState) -> Literal["check_citations", "next_model"]:
    """A model answer goes to the citation check; a failed one to the next model."""
    return "next_model" if state.error and not state.answer else "check_citations"


def after_next_model(state: RagState) -> Literal["generate", "extract"]:
    """The next model when ``next_model`` moved along the chain, else the extractive answer."""
    tried = answer_attempts(state)
    return "generate" if tried and len(tried) <= state.chain_position else "extract"


def after_check(state: RagState) -> Literal["next_model", "note_web", "record"]:
    """A model answer the citation check rejected goes to the chain's next model; an answer
    that cites a web result says so."""
    if state.error and not state.answer:
        return "next_model"
    return after_answer(state)


def after_answer(state: RagState) -> Literal["note_web", "record"]:
    """An answer that cites a web result says so under it; any other is recorded."""
    return "note_web" if any(source.web and source.cited for source in state.sources) else "record"

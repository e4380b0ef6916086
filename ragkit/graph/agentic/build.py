"""Agentic mode's research, a compiled subgraph of its own (its own state, ``AgentState``),
run by the conversation graph's ``agentic`` node:

    START → plan ─(Send: one search per part)→ search → close_round
    close_round ─┬─ bridges left, rounds left ─(Send: one search per bridge)→ search → close_round
                 ├─ a part missing, web configured, not searched → web_hops → finish
                 └─ otherwise ────────────────────────────────────────────→ finish
    finish ─┬─ a chain or a comparison its hops cover, offline → answer_hops → END
            └─ otherwise (the model writes it, or the default path grades it) → END

The subgraph's stream (statuses, the hop-by-hop answer's sources and text) reaches the
turn's stream through ``agentic``; what it found comes back as the state's ``plan``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from ragkit.graph.agentic.answer import answer_hops
from ragkit.graph.agentic.rounds import bridge_searches, close_round, finish, part_searches, plan, search
from ragkit.graph.agentic.state import AgentState
from ragkit.graph.agentic.web import searches_web, uncovered, web_hops
from ragkit.graph.context import RagContext
from ragkit.graph.state import RagState


def after_plan(state: AgentState) -> list[Send]:
    """The first round: one search per part, all at once."""
    return [Send("search", task) for task in part_searches(state)]


def after_round(state: AgentState, runtime: Runtime[RagContext]) -> list[Send] | Literal["web_hops", "finish"]:
    """Another round while bridges are left (the round cap is applied when they are found),
    one search per bridge; then the web for a part still missing; then the answer."""
    if state.bridges:
        return [Send("search", task) for task in bridge_searches(state)]
    context = runtime.context
    return "web_hops" if searches_web(state, context) and uncovered(state, context) else "finish"


def after_finish(state: AgentState) -> Literal["answer_hops", "__end__"]:
    """The hops answer it offline, or the conversation graph takes it from here."""
    return "answer_hops" if state.outcome == "hops" else END


@lru_cache(maxsize=1)
def research_graph():
    """Compile the research subgraph (once per process: it holds no state between runs)."""
    graph = StateGraph(AgentState, context_schema=RagContext)
    for node in (plan, search, close_round, web_hops, finish, answer_hops):
        graph.add_node(node)
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", after_plan, ["search"])
    graph.add_edge("search", "close_round")
    graph.add_conditional_edges("close_round", after_round, ["search", "web_hops", "finish"])
    graph.add_edge("web_hops", "finish")
    graph.add_conditional_edges("finish", after_finish, ["answer_hops", END])
    graph.add_edge("answer_hops", END)
    return graph.compile()


def agentic(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Research the question in rounds (the subgraph), passing its stream on; its findings
    become the turn's plan and answer passages (and its answer, when the hops gave one)."""
    start = AgentState(question=state.standalone_question, filters=state.filters, model_id=state.model_id,
                       queries=list(state.queries), timings=dict(state.timings))
    final: dict = {}
    for mode, payload in research_graph().stream(start, context=runtime.context, stream_mode=["custom", "values"]):
        if mode == "custom":
            runtime.stream_writer(payload)
        else:
            final = payload
    research = AgentState(**final)
    update = {"plan": research.plan(), "hits": research.hits, "query": state.standalone_question,
              "queries": research.queries, "web_searched": research.web_searched,
              "trace": research.trace, "timings": research.timings}
    if research.outcome == "hops":
        update |= {"answer": research.answer, "sources": research.sources, "closest": [], "found": True,
                   "mode": "extractive", "model": "", "usage": {}}
    return update

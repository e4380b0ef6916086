"""Assembles the conversational RAG graph. Design note for whoever adds to it:

    START → recall → route ─(knowledge base)→ contextualize ─(default)→ retrieve → focus → grade
          route ─(agentic: small talk, thanks, about the app)→ direct → record
          contextualize ─(agentic)→ plan → hop_round ⟲ (bridges left, rounds left)
          hop_round ─┬─ a chain of hops or a comparison → extract_hops → record (or generate)
                     ├─ ... covering none of its parts → grade (the first round's passages)
                     ├─ a part missing, web configured → web_hops → extract_hops (or generate, grade)
                     └─ a single hop ──────────────────→ grade (the default path from here)
    grade ─┬─ weak, rounds left → rewrite_query → retrieve        (the next round; none left: not_found)
           ├─ weak, none left ──→ not_found ─────────────────────→ record → END
           │    (agentic, RAGKIT_WEB_SEARCH_URL set: web_search first ─┬→ grade (its results)
           │                                                           └→ record (none: not found))
           ├─ enough, offline ──→ extract ──→ check_citations ───→ record
           └─ enough, model ────→ generate ─┬→ check_citations (─→ note_web when it cites the web)
                                            └→ next_model (it failed) ─┬→ generate (the chain's next)
                 check_citations (no sentence supported) ─→ next_model └→ extract (none left)

One module per node family; each node is a function ``(state: RagState, runtime:
Runtime[RagContext]) -> dict`` returning the state fields it sets, each route a function
of the state returning the next node's name:

- ``state.py``: ``TurnInput`` and ``RagState`` (the one typed state), ``GradedRound``;
- ``context.py``: ``RagContext``, the run's configuration and dependencies (settings,
  passages, history, model clients); ``retriever.py``: ``PassageRetriever``, the only way
  nodes reach passages (``KnowledgeBase`` satisfies it; the graph never imports ``kb``);
- ``memory.py``: ``recall``, the conversation's running summary of its older turns;
- ``routing.py``: ``route`` (the knowledge base, or in agentic mode ``direct``), ``direct``
  and ``contextualize``;
- ``hops.py`` (agentic mode, with ``decompose.py``): ``plan``, ``hop_round``, ``extract_hops``;
- ``rounds.py``: ``retrieve``, ``focus`` (the answer policy), ``rewrite_query``;
- ``sufficiency.py``: ``grade`` and ``after_grade``, over the measures of ``grading.py``;
- ``answering.py``: ``extract``, ``generate``, ``check_citations`` (with ``checks.py``),
  ``not_found``; ``chain.py``: ``next_model``, the model fallback chain; ``web.py``:
  ``web_search`` and ``note_web`` (agentic mode's web search);
- ``model_io.py``: the answer stream with its deadline, structured replies, the context
  budget, and the model errors (all ``ModelError``);
- ``recording.py``: ``record``; ``prompts.py``: every prompt and fixed reply;
- ``events.py``: the stream's event vocabulary (``standalone``, ``status``, ``sources``,
  ``token``, ``reset``, ``done``), documented there once.

Where new nodes go: a path that answers without retrieval is a route in ``routing.ROUTES``
plus its node, wired below from ``route``; work between understanding the question and
searching (decomposing it) goes between ``contextualize`` and ``retrieve``; another kind of
round (a sub-question, a hop, the web) is a node of ``rounds.py`` that leads back to
``focus``/``grade``; judging several rounds together extends ``sufficiency.after_grade``; a
new answer step sits between the answer nodes and ``check_citations`` or ``record``. New
state fields go in ``RagState`` with a default; new events in ``events.py`` first.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from ragkit.graph.agentic.hops import extract_hops, hop_round, plan
from ragkit.graph.context import RagContext
from ragkit.graph.nodes.answer import check_citations, extract, generate, not_found
from ragkit.graph.nodes.chain import after_generate, after_next_model, next_model
from ragkit.graph.nodes.grade import grade
from ragkit.graph.nodes.memory import recall
from ragkit.graph.nodes.record import record
from ragkit.graph.nodes.retrieve import focus, retrieve, rewrite_query
from ragkit.graph.nodes.route import ROUTES, after_contextualize, after_route, contextualize, direct, route
from ragkit.graph.nodes.web import (
    after_check,
    after_grade_or_web,
    after_hop_or_web,
    after_rewrite_or_web,
    after_web,
    after_web_hops,
    note_web,
    web_hops,
    web_search,
)
from ragkit.graph.state import RagState, TurnInput


def build_graph():
    """Compile the conversational RAG graph (run it with ``context=RagContext(...)``)."""
    graph = StateGraph(RagState, input_schema=TurnInput, context_schema=RagContext)
    for node in (recall, route, direct, contextualize, plan, hop_round, extract_hops, retrieve, focus, grade,
                 rewrite_query,
                 extract, generate, next_model, check_citations, not_found, web_search, web_hops, note_web, record):
        graph.add_node(node)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "route")
    graph.add_conditional_edges("route", after_route, sorted(set(ROUTES.values())))
    graph.add_edge("direct", "record")
    graph.add_conditional_edges("contextualize", after_contextualize, ["plan", "retrieve"])
    graph.add_edge("plan", "hop_round")
    graph.add_conditional_edges("hop_round", after_hop_or_web,
                                ["hop_round", "extract_hops", "generate", "grade", "web_hops"])
    graph.add_conditional_edges("web_hops", after_web_hops, ["extract_hops", "generate", "grade"])
    graph.add_conditional_edges("extract_hops", after_check, ["note_web", "record"])
    graph.add_edge("retrieve", "focus")
    graph.add_edge("focus", "grade")
    graph.add_conditional_edges("grade", after_grade_or_web,
                                ["extract", "generate", "rewrite_query", "not_found", "web_search"])
    graph.add_conditional_edges("rewrite_query", after_rewrite_or_web, ["retrieve", "not_found", "web_search"])
    graph.add_conditional_edges("web_search", after_web, ["grade", "record"])
    graph.add_conditional_edges("generate", after_generate, ["check_citations", "next_model"])
    graph.add_conditional_edges("next_model", after_next_model, ["generate", "extract"])
    graph.add_edge("extract", "check_citations")
    graph.add_conditional_edges("check_citations", after_check, ["next_model", "note_web", "record"])
    graph.add_edge("note_web", "record")
    graph.add_edge("not_found", "record")
    graph.add_edge("record", END)
    return graph.compile()

"""The conversational RAG graph's topology, and nothing else.

    START → recall → route ─┬─ small talk, thanks, about the app (agentic) → direct → record
                            └─ the knowledge base → contextualize
    contextualize ─┬─ default → retrieve → focus → grade
                   └─ agentic → agentic (the research subgraph, ``agentic/``)
                                 ├─ answered hop by hop → (note_web) → record
                                 ├─ the model writes it → generate
                                 └─ a single hop → grade
    grade ─┬─ enough, offline → extract → (note_web) → record
           ├─ enough, a model → generate ─┬→ check_citations ─┬→ (note_web) → record
           │                              └→ next_model       └→ next_model (no sentence supported)
           ├─ weak, rounds left → rewrite_query → retrieve (none left: not_found, or web_search)
           ├─ weak, agentic, web configured → web_search ─┬→ grade (its results)
           │                                              └→ record (none: "not found", with why)
           └─ weak → not_found → record → END
    next_model ─┬→ generate (the chain's next model)
                └→ extract (none left)

Nodes live in ``nodes/`` (one module per family: route, memory, retrieve, grade, answer,
web, record), each a function ``(state: RagState, runtime: Runtime[RagContext]) -> dict``
returning the state fields it sets; every branch is a function of ``routes.py``. The state
is ``state.py``; what a run is given (settings, passages, history, models) is ``context.py``;
the only ways to passages and conversations are the protocols of ``protocols.py``.

Where new things go: a path that answers without retrieval is a route in
``nodes.route.ROUTES`` plus its node; work between understanding the question and
searching goes between ``contextualize`` and ``retrieve``; a new kind of research is a node
of the ``agentic`` subgraph; a new answer step sits between the answer nodes and ``record``.
New state fields go in ``RagState`` with a default; new events in ``ragkit/events.py`` first.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from ragkit.graph import routes
from ragkit.graph.agentic import agentic
from ragkit.graph.context import RagContext
from ragkit.graph.nodes.answer import check_citations, extract, generate, next_model, not_found
from ragkit.graph.nodes.grade import grade
from ragkit.graph.nodes.memory import recall
from ragkit.graph.nodes.record import record
from ragkit.graph.nodes.retrieve import focus, retrieve, rewrite_query
from ragkit.graph.nodes.route import contextualize, direct, route
from ragkit.graph.nodes.web import note_web, web_search
from ragkit.graph.state import RagState, TurnInput

NODES = (recall, route, direct, contextualize, agentic, retrieve, focus, grade, rewrite_query, extract, generate,
         next_model, check_citations, not_found, web_search, note_web, record)


def build_graph():
    """Compile the conversational RAG graph (run it with ``context=RagContext(...)``)."""
    graph = StateGraph(RagState, input_schema=TurnInput, context_schema=RagContext)
    for node in NODES:
        graph.add_node(node)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "route")
    graph.add_conditional_edges("route", routes.after_route, ["contextualize", "direct"])
    graph.add_edge("direct", "record")
    graph.add_conditional_edges("contextualize", routes.after_contextualize, ["agentic", "retrieve"])
    graph.add_conditional_edges("agentic", routes.after_agentic, ["grade", "generate", "note_web", "record"])
    graph.add_edge("retrieve", "focus")
    graph.add_edge("focus", "grade")
    graph.add_conditional_edges("grade", routes.after_grade,
                                ["extract", "generate", "rewrite_query", "not_found", "web_search"])
    graph.add_conditional_edges("rewrite_query", routes.after_rewrite, ["retrieve", "not_found", "web_search"])
    graph.add_conditional_edges("web_search", routes.after_web, ["grade", "record"])
    graph.add_conditional_edges("generate", routes.after_generate, ["check_citations", "next_model"])
    graph.add_conditional_edges("next_model", routes.after_next_model, ["generate", "extract"])
    graph.add_conditional_edges("extract", routes.after_answer, ["note_web", "record"])
    graph.add_conditional_edges("check_citations", routes.after_check, ["next_model", "note_web", "record"])
    graph.add_edge("note_web", "record")
    graph.add_edge("not_found", "record")
    graph.add_edge("record", END)
    return graph.compile()

"""Assembles the graph: contextualize, search, judge the evidence, then answer, search
again, or say it was not found; check what the model wrote; record the turn."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from .nodes import RagNodes
from .state import RagState


def build_graph(nodes: RagNodes):
    """Compile the conversational RAG graph around bound nodes."""
    graph = StateGraph(RagState)
    for name in ("contextualize", "retrieve", "focus", "grade", "rewrite_query", "generate", "extract",
                 "check_citations", "not_found", "record"):
        graph.add_node(name, getattr(nodes, name))
    graph.add_edge(START, "contextualize")
    graph.add_edge("contextualize", "retrieve")
    graph.add_edge("retrieve", "focus")
    graph.add_edge("focus", "grade")
    graph.add_conditional_edges("grade", nodes.after_grade, ["generate", "extract", "rewrite_query", "not_found"])
    graph.add_edge("rewrite_query", "retrieve")
    graph.add_conditional_edges("generate", nodes.after_generate, ["check_citations", "extract"])
    graph.add_edge("extract", "check_citations")
    graph.add_edge("check_citations", "record")
    graph.add_edge("not_found", "record")
    graph.add_edge("record", END)
    return graph.compile()

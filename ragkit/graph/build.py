"""Assembles the graph: contextualize -> retrieve -> generate -> record."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from .nodes import RagNodes
from .state import RagState


def build_graph(nodes: RagNodes):
    """Compile the conversational RAG graph around bound nodes."""
    graph = StateGraph(RagState)
    graph.add_node("contextualize", nodes.contextualize)
    graph.add_node("retrieve", nodes.retrieve)
    graph.add_node("generate", nodes.generate)
    graph.add_node("record", nodes.record)
    graph.add_edge(START, "contextualize")
    graph.add_edge("contextualize", "retrieve")
    graph.add_edge("retrieve", "generate")
    graph.add_edge("generate", "record")
    graph.add_edge("record", END)
    return graph.compile()

"""Agentic mode: the question researched in rounds by a subgraph of its own (``build``)."""

from ragkit.graph.agentic.build import agentic, research_graph

__all__ = ["agentic", "research_graph"]

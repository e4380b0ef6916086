"""The LangGraph conversational RAG graph: contextualize -> retrieve -> generate -> record."""

from .build import build_graph

__all__ = ["build_graph"]

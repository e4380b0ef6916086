"""The LangGraph conversational RAG graph: route → contextualize → retrieval rounds
(retrieve, focus, grade) → answer (extract or generate, checked) or not found → record.
The drawing, the module map and where new nodes go: ``build.py``; the stream's events:
``events.py``."""

from ragkit.graph.build import build_graph
from ragkit.graph.context import RagContext
from ragkit.graph.protocols import PassageRetriever
from ragkit.graph.state import RagState, TurnInput

__all__ = ["build_graph", "RagContext", "PassageRetriever", "RagState", "TurnInput"]

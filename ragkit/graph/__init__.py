"""The LangGraph conversational RAG graph: route → contextualize → retrieval rounds
(retrieve, focus, grade) → answer (extract or generate, checked) or not found → record.
The drawing, the module map and where new nodes go: ``build.py``; the stream's events:
``events.py``."""

from .build import build_graph
from .context import RagContext
from .retriever import PassageRetriever
from .state import RagState, TurnInput

__all__ = ["build_graph", "RagContext", "PassageRetriever", "RagState", "TurnInput"]

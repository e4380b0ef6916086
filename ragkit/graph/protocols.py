"""What the nodes need of the layers below them: the only ways they reach passages and
conversations.

``KnowledgeBase`` satisfies :class:`PassageRetriever` and ``HistoryManager`` satisfies
:class:`ConversationLog` (``ChatEngine`` hands both in); a test, or a source that is not a
knowledge base, can be any object with these methods. The graph imports neither the store
nor the app, so the arrows point one way: ``store`` and ``app`` → ``graph``'s callers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ragkit.types import Hit, Passage, SearchFilters, Turn


class PassageRetriever(Protocol):
    """Ranked passages, and the two measures the nodes judge them with."""

    def search(self, query: str, k: int | None = None, filters: SearchFilters | None = None) -> list[Hit]:
        """The ``k`` best passages for ``query`` within ``filters``, best first."""
        ...

    def search_documents(self, query: str, wanted: dict[str, int]) -> dict[str, list[Hit]]:
        """For each document of ``wanted`` (id -> how many), its best passages for ``query``,
        ranked within it alone; one search over all of them, reading the store as the turn's
        last search left it (no catching up with other processes in between)."""
        ...

    def document_passages(self, doc_id: str) -> list[Passage]:
        """A document's passages in reading order (read, not searched)."""
        ...

    def search_document(self, query: str, doc_id: str, k: int) -> list[Hit]:
        """The ``k`` best passages for ``query`` within one document (ranked within it only)."""
        ...

    def idf(self, text: str) -> dict[str, float]:
        """Inverse document frequency of the search tokens of ``text`` over all passages."""
        ...

    def indexed_passages(self) -> int:
        """How many passages ``idf`` is computed over (the grade reads its topic words' share
        of them back from their idf)."""
        ...

    def embed_sentences(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of short texts (a question and candidate sentences), one row each;
        remembered, so grading and quoting the same sentences embed them once."""
        ...

    def sentence_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of each passage's sentences by passage id (pooled at ingest, see
        ``ragkit.models.sentence_vectors``); passages without current ones are left out."""
        ...

    def document_titles(self, filters: SearchFilters | None = None) -> dict[str, str]:
        """Every title → id of the documents ``filters`` admit: agentic mode follows a passage
        that names another document to that document (``decompose.mentioned_titles``), never
        out of the conversation's knowledge bases or chosen documents."""
        ...


class ConversationLog(Protocol):
    """Where the graph writes a conversation: its running summary and each finished turn (it
    reads the conversation once, before the turn, as ``TurnInput.conversation``)."""

    def set_session_memory(self, session_id: str, memory: dict) -> None:
        """Store the conversation's running summary."""
        ...

    def add_turn(self, session_id: str, turn: Turn) -> Turn:
        """Append a finished turn (one transaction); returns it with its id."""
        ...

"""What the nodes need of a knowledge base: the one way they reach passages.

``KnowledgeBase`` satisfies this protocol (``ChatEngine`` hands it in); a test, or a
source that is not a knowledge base, can be any object with these six methods. The graph
never imports the knowledge base, so the arrow points one way: ``kb`` → ``graph``'s callers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ..passages import Hit
from ..retrieval import SearchFilters


class PassageRetriever(Protocol):
    """Ranked passages, and the two measures the nodes judge them with."""

    def search(self, query: str, k: int | None = None, filters: SearchFilters | None = None) -> list[Hit]:
        """The ``k`` best passages for ``query`` within ``filters``, best first."""
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
        ``ragkit.sentence_vectors``); passages without current ones are left out."""
        ...

    def document_titles(self, filters: SearchFilters | None = None) -> dict[str, str]:
        """Every title → id of the documents ``filters`` admit: agentic mode follows a passage
        that names another document to that document (``decompose.mentioned_titles``), never
        out of the conversation's knowledge bases or chosen documents."""
        ...

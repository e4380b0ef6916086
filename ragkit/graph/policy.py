"""Which retrieved passages an answer may draw on (the answer policy).

The knowledge base returns ranked passages; what an answer uses of them is decided here:
passages far below the best one are dropped, and the top document's best other passage
is added (found by a search within it): the passage holding an answer often lacks the
subject's name, said in an earlier passage, and loses to other documents' passages.
"""

from __future__ import annotations

from dataclasses import replace

from ..passages import Hit
from ..retrieval import SearchFilters


def relevant_hits(hits: list[Hit], min_relative_score: float) -> list[Hit]:
    """Drop hits scoring below ``min_relative_score`` of the best one."""
    if not hits:
        return []
    floor = hits[0].score * min_relative_score
    return [hit for hit in hits if hit.score >= floor]


def add_same_document(kb, query: str, hits: list[Hit], extra: int) -> list[Hit]:
    """``hits`` plus the ``extra`` best further passages of the top hit's document,
    scored no higher than the last hit (they were ranked within one document only)."""
    if not hits or extra <= 0:
        return hits
    seen = {hit.id for hit in hits}
    within = kb.search(query, extra + len(hits), SearchFilters(doc_ids=[hits[0].doc_id]))
    added = [replace(hit, score=min(hit.score, hits[-1].score), same_document=True)
             for hit in within if hit.id not in seen]
    return hits + added[:extra]


def answer_passages(kb, query: str, settings, filters: SearchFilters | None = None) -> list[Hit]:
    """The passages an answer is drawn from: the relevant top-k, then the top document's
    best other passages."""
    hits = relevant_hits(kb.search(query, settings.top_k, filters), settings.min_relative_score)
    return add_same_document(kb, query, hits, settings.same_document_k)

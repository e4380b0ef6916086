"""The answer policy: which of a search's passages an answer may draw on.

The knowledge base returns ranked passages; what an answer uses of them is decided here:
passages far below the best one are dropped, and the top document's best other passage is
added (found by a search within it): the passage holding an answer often lacks the
subject's name, said in an earlier passage, and loses to other documents' passages. In the
default path, the best passage also brings the document it names by title, and that one the
document it names (``add_linked_documents``): a multi-hop question's next document holds few
of the question's words and ranks low.
"""

from __future__ import annotations

from dataclasses import replace

from ragkit.answering.decompose import mentioned_titles
from ragkit.answering.extractive import names
from ragkit.config import Settings
from ragkit.graph.protocols import PassageRetriever
from ragkit.lang.text import plural, title_positions
from ragkit.types import Hit, SearchFilters


def relevant_hits(hits: list[Hit], min_relative_score: float) -> list[Hit]:
    """Drop hits scoring below ``min_relative_score`` of the best one."""
    if not hits:
        return []
    floor = hits[0].score * min_relative_score
    return [hit for hit in hits if hit.score >= floor]


def add_same_document(passages: PassageRetriever, query: str, hits: list[Hit], extra: int) -> list[Hit]:
    """``hits`` plus the ``extra`` best further passages of the top hit's document,
    scored no higher than the last hit (they were ranked within one document only)."""
    if not hits or extra <= 0:
        return hits
    seen = {hit.id for hit in hits}
    within = passages.search_document(query, hits[0].doc_id, extra + len(hits))
    added = [replace(hit, score=min(hit.score, hits[-1].score), same_document=True)
             for hit in within if hit.id not in seen]
    return hits + added[:extra]


def focus_hits(passages: PassageRetriever, query: str, hits: list[Hit], settings: Settings) -> list[Hit]:
    """The passages an answer is drawn from: the relevant ones of a search's ``hits``, then
    the top document's best other passages."""
    return add_same_document(passages, query, relevant_hits(hits, settings.min_relative_score),
                             settings.same_document_k)


def add_linked_documents(passages: PassageRetriever, query: str, hits: list[Hit], extra: int,
                         filters: SearchFilters | None = None) -> list[Hit]:
    """``hits`` plus a chain of at most ``extra`` linked passages: the best passage for
    ``query`` of the first document the top hit's passage names by title
    (``decompose.mentioned_titles``, in the order it names them), then of the first one that
    passage names, and so on; within ``filters``, scored no higher than the last hit. A
    document already among the hits, or one the query names (its own words found it or
    not), is not added."""
    if not hits or extra <= 0:
        return hits
    titles = passages.document_titles(filters)
    present = {hit.doc_id for hit in hits} | {titles[hit.title] for hit in hits if hit.title in titles}
    floor = hits[-1].score
    added: list[Hit] = []
    source = hits[0]
    while len(added) < extra:
        found = _first_linked(passages, query, source.context.text, titles, present)
        if found is None:
            break
        source = replace(found, score=min(found.score, floor), linked=True)
        added.append(source)
        present.add(source.doc_id)
    return hits + added


def _first_linked(passages: PassageRetriever, query: str, text: str, titles: dict[str, str],
                  present: set[str]) -> Hit | None:
    """The best passage for ``query`` of the first document ``text`` names by title that is
    neither in ``present`` nor named by the query (None when there is none). A one-word title
    counts only where no sentence starts (``extractive.names``: "About 300 people came" names
    no document titled "About")."""
    named = sorted((title for title in mentioned_titles(text, titles) if names(title, text)),
                   key=lambda title: title_positions(title, text)[0])
    for title in named:
        if titles[title] in present or title_positions(title, query):
            continue
        best = passages.search_document(query, titles[title], 1)
        if best:
            return best[0]
    return None


def scope(filters: SearchFilters | None) -> SearchFilters:
    """The conversation's knowledge bases only: the searches beside a turn's own (a
    follow-up's rewrites, what answers it outside the chosen documents) stay inside them."""
    return filters.scope_only() if filters else SearchFilters()


def filter_words(filters: SearchFilters) -> str:
    """The documents, tags or types chosen within the knowledge bases, in words ("2 chosen
    documents; tags finance"; "" for none)."""
    parts = []
    if filters.doc_ids:
        parts.append(plural(len(filters.doc_ids), "chosen document"))
    if filters.tags:
        parts.append("tags " + ", ".join(filters.tags))
    if filters.doc_types:
        parts.append("types " + ", ".join(filters.doc_types))
    return "; ".join(parts)

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


def focus_hits(passages: PassageRetriever, query: str, hits: list[Hit], settings: Settings) -> list[Hit]:
    """The passages an answer is drawn from: the relevant ones of a search's ``hits``, then
    the top document's best other passages (agentic mode's parts: no linked documents)."""
    return focused(passages, query, hits, settings, 0)


def focused(passages: PassageRetriever, query: str, hits: list[Hit], settings: Settings, linked: int,
            filters: SearchFilters | None = None) -> list[Hit]:
    """The relevant ones of a search's ``hits``, the top document's ``same_document_k`` best
    other passages, and a chain of at most ``linked`` linked passages (``with_linked``), all
    from one more search: each document's passages ranked as a search limited to it ranks
    them (``PassageRetriever.search_documents``)."""
    hits = relevant_hits(hits, settings.min_relative_score)
    if not hits:
        return hits
    extra = settings.same_document_k
    titles = passages.document_titles(filters) if linked > 0 else {}
    present = {hit.doc_id for hit in hits} | {titles[hit.title] for hit in hits if hit.title in titles}
    wanted = {hits[0].doc_id: extra + len(hits)} if extra > 0 else {}
    if linked > 0:
        wanted |= _chain_documents(passages, query, hits[0].context.text, titles, present)
    within = passages.search_documents(query, wanted) if wanted else {}
    hits = _with_same_document(hits, within.get(hits[0].doc_id, []), extra)
    return with_linked(passages, query, hits, linked, titles, present, within)


def _with_same_document(hits: list[Hit], within: list[Hit], extra: int) -> list[Hit]:
    """``hits`` plus the ``extra`` best further passages of the top hit's document (``within``:
    its passages as ranked within it), scored no higher than the last hit."""
    if extra <= 0:
        return hits
    seen = {hit.id for hit in hits}
    added = [replace(hit, score=min(hit.score, hits[-1].score), same_document=True)
             for hit in within if hit.id not in seen]
    return hits + added[:extra]


def _chain_documents(passages: PassageRetriever, query: str, text: str, titles: dict[str, str],
                     present: set[str]) -> dict[str, int]:
    """The documents a chain from ``text`` may reach in two links (the first document it
    names, and every document that one's passages name), each wanted once."""
    first = linked_candidates(text, query, titles, present)[:1]
    wanted = dict.fromkeys(first, 1)
    for doc_id in first:
        for passage in passages.document_passages(doc_id):
            wanted.update(dict.fromkeys(linked_candidates(passage.text, query, titles, present | {doc_id}), 1))
    return wanted


def add_linked_documents(passages: PassageRetriever, query: str, hits: list[Hit], extra: int,
                         filters: SearchFilters | None = None) -> list[Hit]:
    """``with_linked`` within ``filters``, each linked document searched as it is reached."""
    if not hits or extra <= 0:
        return hits
    titles = passages.document_titles(filters)
    present = {hit.doc_id for hit in hits} | {titles[hit.title] for hit in hits if hit.title in titles}
    return with_linked(passages, query, hits, extra, titles, present, {})


def with_linked(passages: PassageRetriever, query: str, hits: list[Hit], extra: int, titles: dict[str, str],
                present: set[str], within: dict[str, list[Hit]]) -> list[Hit]:
    """``hits`` plus a chain of at most ``extra`` linked passages: the best passage for
    ``query`` of the first document the top hit's passage names by title
    (``decompose.mentioned_titles``, in the order it names them), then of the first one that
    passage names, and so on; scored no higher than the last hit. A document already among
    the hits (``present``), or one the query names (its own words found it or not), is not
    added. ``within``: documents' passages already ranked; any other is searched."""
    floor = hits[-1].score if hits else 0.0
    added: list[Hit] = []
    source = hits[0] if hits else None
    present = set(present)
    while source is not None and len(added) < extra:
        found = _first_linked(passages, query, source.context.text, titles, present, within)
        if found is None:
            break
        source = replace(found, score=min(found.score, floor), linked=True)
        added.append(source)
        present.add(source.doc_id)
    return hits + added


def linked_candidates(text: str, query: str, titles: dict[str, str], present: set[str]) -> list[str]:
    """The documents ``text`` names by title, in the order it names them, that are neither in
    ``present`` nor named by the query. A one-word title counts only where no sentence starts
    (``extractive.names``: "About 300 people came" names no document titled "About")."""
    named = sorted((title for title in mentioned_titles(text, titles) if names(title, text)),
                   key=lambda title: title_positions(title, text)[0])
    return list(dict.fromkeys(titles[title] for title in named
                              if titles[title] not in present and not title_positions(title, query)))


def _first_linked(passages: PassageRetriever, query: str, text: str, titles: dict[str, str],
                  present: set[str], within: dict[str, list[Hit]]) -> Hit | None:
    """The best passage for ``query`` of the first document ``text`` names (``linked_candidates``)
    that has one (None when there is none)."""
    for doc_id in linked_candidates(text, query, titles, present):
        best = within[doc_id] if doc_id in within else passages.search_documents(query, {doc_id: 1}).get(doc_id, [])
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

"""Hybrid retrieval: dense (Chroma) + lexical (BM25) candidates fused by weighted scores.

Plain reciprocal-rank fusion trusts both sides equally, which hurts badly when one side
is weak: the shipped MiniLM model is English-only, so on Chinese text its ranking is
mostly noise (measured on cmrc2018_trial: BM25 alone MRR@10 0.979, plain RRF 0.63).
The weight of the dense side therefore depends on the script of the query
(``dense_weight_cjk`` vs ``dense_weight_latin`` in Settings), and scores, not ranks,
are fused, because even a small rank-fusion weight lets a noisy dense top-1 overturn a
confident lexical one (weighted RRF at 0.1 still fell to MRR@10 0.89).
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ragkit.lang.text import index_tokens, is_cjk_text, question_words, search_tokens, word_runs
from ragkit.lang.topic import topic_words, without_topic
from ragkit.models.sentence_vectors import vectors_current, vectors_stale
from ragkit.retrieval.rerank import make_reranker
from ragkit.types import Hit, Passage, SearchFilters, joined

log = logging.getLogger(__name__)




def dense_weight_for(query: str, latin_weight: float, cjk_weight: float) -> float:
    """How much the dense side counts for this query (by the script it is written in)."""
    return cjk_weight if is_cjk_text(query) else latin_weight


def fuse_scores(
    dense: list[tuple[str, float]], lexical: list[tuple[str, float]], dense_weight: float,
    method: str = "zscore",
) -> list[tuple[str, float]]:
    """Convex combination of normalised scores, best first.

    ``zscore`` (the default): each side's scores become standard scores over the union of
    both sides' candidates, a passage missing from the BM25 list counting as BM25 0 (what
    it is: it holds none of the query's words) and one missing from the dense list as the
    lowest cosine listed (all that is known of it). A side whose scores barely differ (a
    question about a code the embedding model cannot read) then has little to say, and a
    passage standing far above the rest of its side (the one holding that code) keeps that
    margin: min-max scaling would stretch a flat dense list to a full-scale vote.
    ``minmax``: BM25 over its best score, cosines min-max scaled (the earlier method).

    Score fusion (unlike rank fusion) keeps the margin information: a confident lexical
    top hit is not overturned by a weak dense side. With weight 0 (or 1) the result is
    exactly the lexical (or dense) ranking, so a tuned weight is never worse than choosing
    the better retriever.
    """
    lexical_weight = 1.0 - dense_weight
    if method == "zscore":
        fused = _zscore_fusion(dense, lexical, dense_weight)
    else:
        fused = _minmax_fusion(dense, lexical, dense_weight)
    primary, secondary = (dense, lexical) if dense_weight > lexical_weight else (lexical, dense)
    order: dict[str, int] = {}
    for index, (item, _) in enumerate(primary + secondary):  # ties go to the stronger side
        order.setdefault(item, index)
    return sorted(fused.items(), key=lambda pair: (-pair[1], order[pair[0]]))


RRF_K = 60  # the constant of reciprocal rank fusion (Cormack et al. 2009)


def reciprocal_rank_fusion(rankings: list[list[tuple[str, float]]]) -> list[tuple[str, float]]:
    """Several rankings as one: each item scores the sum of 1 / (RRF_K + rank) over them."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, (item, _) in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])


def query_variants(query: str, idf) -> list[str]:
    """Offline, deterministic rewrites of a question for multi-query search (RAG-Fusion):
    the question as asked, its rarer half of words (what discriminates), and its names
    (capitalised phrases, identifiers, quoted phrases; for Chinese its two rarest words)."""
    variants = [query]
    if is_cjk_text(query):
        words = question_words(query)
        weights = {word: max(idf(search_tokens(word)).values() or [0.0]) for word in words}
        ranked = sorted(words, key=lambda word: -weights[word])
        variants += ["".join(w for w in words if w in ranked[: max(1, len(ranked) // 2)]), " ".join(ranked[:2])]
    else:
        words = [w for w in re.findall(r"[\w'’.-]+", query) if search_tokens(w)]
        weights = {w: max(idf(search_tokens(w)).values() or [0.0]) for w in words}
        ranked = sorted(words, key=lambda w: -weights[w])
        keep = set(ranked[: max(1, (len(ranked) + 1) // 2)])
        variants.append(" ".join(w for w in words if w in keep))
        exact = exact_terms(query)
        names = re.findall(r"\b[A-Z][\w'’-]*(?:\s+(?:of\s+|the\s+)?[A-Z][\w'’-]*)*", query)
        names = [n for n in names if n.split()[0].lower() not in ENGLISH_QUESTION_WORDS]
        variants.append(" ".join(dict.fromkeys([*names, *exact.identifiers, *exact.phrases])))
    return [v for v in dict.fromkeys(v.strip() for v in variants) if v and any(ch.isalnum() for ch in v)]


ENGLISH_QUESTION_WORDS = frozenset("what which who whom whose when where why how is are was were do does did the a an "
                                   "in on of for to".split())


def as_relevance(fused: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The fused candidates' scores scaled to [0, 1] over the candidate list (order kept):
    the relevance a hit shows, and what the answer policy's "share of the best" compares
    (standard scores have no fixed scale and can be negative)."""
    if not fused:
        return fused
    high, low = max(score for _, score in fused), min(score for _, score in fused)
    if high - low < 1e-9:
        return [(pid, 1.0) for pid, _ in fused]
    return [(pid, (score - low) / (high - low)) for pid, score in fused]


def _minmax_fusion(dense, lexical, dense_weight: float) -> dict[str, float]:
    lexical_weight = 1.0 - dense_weight
    fused: dict[str, float] = {}
    if lexical and lexical_weight > 0:
        best = max(score for _, score in lexical) or 1.0
        for item, score in lexical:
            fused[item] = lexical_weight * score / best
    if dense and dense_weight > 0:
        high = max(score for _, score in dense)
        low = min(score for _, score in dense)
        spread = high - low
        for item, score in dense:
            scaled = (score - low) / spread if spread > 1e-6 else 1.0
            fused[item] = fused.get(item, 0.0) + dense_weight * scaled
    return fused


def _zscore_fusion(dense, lexical, dense_weight: float) -> dict[str, float]:
    use_lexical, use_dense = dense_weight < 1, dense_weight > 0
    items = list(dict.fromkeys([item for item, _ in lexical if use_lexical] + [item for item, _ in dense if use_dense]))
    if not items:
        return {}
    fused = np.zeros(len(items))
    if lexical and use_lexical:
        scores = dict(lexical)
        fused += (1.0 - dense_weight) * _standard([scores.get(item, 0.0) for item in items])
    if dense and use_dense:
        scores = dict(dense)
        floor = min(scores.values())
        fused += dense_weight * _standard([scores.get(item, floor) for item in items])
    return dict(zip(items, fused.tolist()))


def _standard(values: list[float]) -> np.ndarray:
    """Standard scores; all equal values are all 0."""
    array = np.asarray(values, dtype=np.float64)
    spread = array.std()
    return (array - array.mean()) / spread if spread > 1e-9 else np.zeros_like(array)


class Retriever:
    """Hybrid search over the catalog's passages: BM25 and the vector store, fused."""

    def __init__(self, settings, catalog, store, lexical, embedder: Callable[[], object]):
        self.settings = settings
        self.catalog = catalog
        self.store = store
        self.lexical = lexical
        self._embedder = embedder
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._vectors_lock = threading.Lock()
        self.reranker = None
        self._reranker_chosen, self._sentence_vectors_stored = False, False
        self._reranker_lock = threading.Lock()  # one choice at a time (a search thread's _sync, a reindex)
        self.choose_reranker()
        self.dense_error = ""  # why the last vector search failed ("" when it worked)

    def choose_reranker(self) -> None:
        """Set the reranker the settings name ("auto": the sentence reranker when the catalog
        says its passages' sentence vectors are stored); again after a ``reindex`` here or in
        another process. The one in use is kept while that answer stays the same (a
        CrossEncoder is loaded once, the sentences one keeps what it remembers). A search
        running meanwhile finishes with the reranker it began with."""
        with self._reranker_lock:
            stored = vectors_current(self.catalog)
            if self._reranker_chosen and stored == self._sentence_vectors_stored:
                return
            # "sentences" on a store of another splitter's vectors embeds the candidates' sentences instead
            kept = None if vectors_stale(self.catalog) else self.catalog.sentence_vectors
            self.reranker = make_reranker(self.settings.reranker, self._embedder, self.lexical.idf,
                                          self.settings.rerank_weight, kept,
                                          self.query_vector, sentence_vectors_stored=stored,
                                          weight_cjk=self.settings.rerank_weight_cjk,
                                          kind_bonus=self.settings.rerank_kind_bonus,
                                          topic=self.topic_of,
                                          topicless_cosine=self.settings.rerank_topicless_cosine,
                                          year_ranges=self.settings.rerank_year_ranges)
            self._reranker_chosen, self._sentence_vectors_stored = True, stored  # after: a failure chooses again

    def search(self, query: str, k: int, filters: SearchFilters | None = None,
               documents: list | None = None) -> list[Hit]:
        """The ``k`` best passages for ``query`` (empty for an unsearchable query or a
        filter that admits no document)."""
        if k < 1:
            raise ValueError(f"k must be at least 1, not {k}")
        if not searchable(query):
            return []
        documents = documents if documents is not None else self.catalog.documents()
        allowed = allowed_documents(filters, documents)
        if allowed is not None and not allowed:
            return []
        depth = max(self.settings.candidate_k, k)
        dense, lexical = self._candidates(query, depth, allowed)
        return self._ranked(query, k, depth, allowed, dense, lexical, documents)

    def search_by_document(self, query: str, wanted: dict[str, int], documents: list | None = None
                           ) -> dict[str, list[Hit]]:
        """The best passages of each document of ``wanted`` (its id -> how many), each list
        exactly what a search limited to that one document returns, from one pass of each
        retriever over all of them: the candidates are split by document and each document's
        best ``candidate_k`` of each side are fused, reranked and scaled on their own."""
        if not searchable(query) or not wanted:
            return {}
        documents = documents if documents is not None else self.catalog.documents()
        present = {doc.id for doc in documents}
        wanted = {doc_id: k for doc_id, k in wanted.items() if doc_id in present and k > 0}
        if not wanted:
            return {}
        allowed = set(wanted)
        dense, lexical = self._candidates(query, max(self.lexical.passages_in(allowed), 1), allowed)
        found = {}
        for doc_id, k in wanted.items():
            depth = max(self.settings.candidate_k, k)
            own_dense = [item for item in dense if self.lexical.document_of(item[0]) == doc_id][:depth]
            own_lexical = [item for item in lexical if self.lexical.document_of(item[0]) == doc_id][:depth]
            found[doc_id] = self._ranked(query, k, depth, {doc_id}, own_dense, own_lexical, documents)
        return found

    def _ranked(self, query: str, k: int, depth: int, allowed: set[str] | None, dense: list, lexical: list,
                documents: list) -> list[Hit]:
        """One query's candidates fused, exact matches first, reranked, as the ``k`` best hits."""
        fused = fuse_scores(dense, lexical, self._dense_weight(query), self.settings.fusion)
        if self.settings.multi_query:
            variants = [fused] + [self._fused(variant, depth, allowed)
                                  for variant in query_variants(query, self.lexical.idf) if variant != query]
            fused = reciprocal_rank_fusion(variants) if len(variants) > 1 else fused
        exact = exact_terms(query) if self.settings.exact_first else ExactTerms()
        if exact.identifiers or exact.phrases:
            fused = self._exact_first(fused, exact, depth, allowed)
        read: dict[str, Passage] = {}  # passages already read from the catalog, by id
        reranker = self.reranker  # read once: another thread may choose again meanwhile (KnowledgeBase._sync)
        if reranker is not None:
            fused = self._reranked(reranker, query, fused, exact, read)
        fused = as_relevance(fused)[:k]
        unread = [pid for pid, _ in fused if pid not in read]
        passages = {**read, **(self.catalog.passages(unread) if unread else {})}
        labels = {doc.id: doc for doc in documents}
        dense_scores, lexical_scores = dict(dense), dict(lexical)
        dense_rank = {pid: rank for rank, (pid, _) in enumerate(dense, start=1)}
        lexical_rank = {pid: rank for rank, (pid, _) in enumerate(lexical, start=1)}
        hits = []
        for pid, score in fused:
            passage = passages.get(pid)
            document = labels.get(passage.doc_id) if passage else None
            if passage is None or document is None:
                continue
            hits.append(Hit(passage, document.title, document.filename, document.doc_type, float(score),
                            dense_scores.get(pid), lexical_scores.get(pid), dense_rank.get(pid), lexical_rank.get(pid)))
        if self.settings.parent_passages:
            self._add_parents(hits)
        return hits

    def _add_parents(self, hits: list[Hit]) -> None:
        """Give each hit its parent: the passage with ``parent_passages`` neighbours on each
        side, read from the catalog by document and position (no second index to keep)."""
        reach = self.settings.parent_passages
        by_document: dict[str, list[Passage]] = {}
        for hit in hits:
            if hit.doc_id not in by_document:
                by_document[hit.doc_id] = self.catalog.passages_of(hit.doc_id)
            around = [p for p in by_document[hit.doc_id] if abs(p.position - hit.position) <= reach]
            if len(around) > 1:
                hit.parent = joined(around)

    def _candidates(self, query: str, depth: int, allowed: set[str] | None) -> tuple[list, list]:
        """One query's dense and lexical candidates (passage id, score), best first."""
        backing = dense_weight_for(query, self.settings.neighbour_backing_latin, self.settings.neighbour_backing_cjk)
        lexical = self.lexical.search(index_tokens(query), depth, allowed, backing)
        dense = [(pid, score) for pid, score in self._dense(query, depth, allowed)
                 if self.lexical.has(pid)]  # vectors of a version not (or no longer) current are ignored
        return dense, lexical

    def _dense_weight(self, query: str) -> float:
        return dense_weight_for(query, self.settings.dense_weight_latin, self.settings.dense_weight_cjk)

    def _fused(self, query: str, depth: int, allowed: set[str] | None) -> list[tuple[str, float]]:
        """The fused candidates of one query (a variant of multi-query search)."""
        dense, lexical = self._candidates(query, depth, allowed)
        return fuse_scores(dense, lexical, self._dense_weight(query), self.settings.fusion)

    def _reranked(self, reranker, query: str, fused: list[tuple[str, float]], exact: "ExactTerms",
                  read: dict[str, Passage]) -> list[tuple[str, float]]:
        """The top ``rerank_depth`` candidates in ``reranker``'s order (exact matches stay first);
        the passages it reads go into ``read``."""
        depth = self.settings.rerank_depth
        head, tail = fused[:depth], fused[depth:]
        pinned = len(head) if exact.identifiers or exact.phrases else 0
        if pinned:  # _exact_first put the exact matches in front; they keep their places
            holding = self._exact_holding(head, exact)
            pinned = sum(1 for pid, _ in head if pid in holding)
        rest = head[pinned:]
        if not rest:
            return fused
        read.update(self.catalog.passages([pid for pid, _ in rest]))
        texts = {pid: read[pid].text for pid, _ in rest if pid in read}
        fused_score = dict(rest)  # the reranker orders; the scores stay the fusion's (one scale for all)
        return head[:pinned] + [(pid, fused_score[pid]) for pid, _ in reranker.rerank(query, rest, texts)] + tail

    def _exact_holding(self, items: list[tuple[str, float]], exact: "ExactTerms") -> set[str]:
        texts = self.catalog.passages([pid for pid, _ in items])
        return {pid for pid, passage in texts.items()
                if all(token in search_tokens(passage.text) for token in exact.identifiers)
                and all(phrase in _folded(passage.text) for phrase in exact.phrases)}

    def _exact_first(self, fused: list[tuple[str, float]], exact: "ExactTerms", depth: int,
                     allowed: set[str] | None) -> list[tuple[str, float]]:
        """``fused`` with the passages holding every identifier and quoted phrase of the
        query moved to the front (in their fused order); unchanged when none holds them all."""
        holding: set[str] | None = None
        for token in exact.identifiers:
            found = {pid for pid, _ in self.lexical.search([token], depth, allowed)}
            holding = found if holding is None else holding & found
        candidates = [pid for pid, _ in fused] + sorted((holding or set()) - {pid for pid, _ in fused})
        if holding is not None:
            candidates = [pid for pid in candidates if pid in holding]
        if exact.phrases and candidates:
            texts = self.catalog.passages(candidates)
            candidates = [pid for pid in candidates if pid in texts
                          and all(phrase in _folded(texts[pid].text) for phrase in exact.phrases)]
        if not candidates:
            return fused
        first = set(candidates)
        scores = dict(fused)
        floor = min(scores.values()) if scores else 0.0
        front = [(pid, scores.get(pid, floor)) for pid in candidates]
        return front + [(pid, score) for pid, score in fused if pid not in first]

    def _dense(self, query: str, depth: int, allowed: set[str] | None) -> list[tuple[str, float]]:
        try:
            found = self.store.query(self.search_vector(query), depth, allowed)
        except Exception as exc:  # a damaged vector index, a server gone: keyword search still answers
            log.warning("vector search failed, using keyword search only: %s", exc)
            self.dense_error = self.store.refusal_message(exc) or str(exc).strip() or type(exc).__name__
            return []
        self.dense_error = ""
        return found

    def search_vector(self, query: str) -> np.ndarray:
        """What the vector store is searched with: the query's embedding blended (``dense_topicless``)
        with that of the query without the knowledge base's topic words (``topic.topic_words``),
        normalised; the query's own where it names none."""
        vector, share = self.query_vector(query), self.settings.dense_topicless
        if not share:
            return vector
        rest = without_topic(query, self.topic_of(self.lexical.idf(list(dict.fromkeys(search_tokens(query))))))
        if rest == query:
            return vector
        blend = (1 - share) * vector + share * self.query_vector(rest)
        return blend / max(float(np.linalg.norm(blend)), 1e-12)

    def topic_of(self, idf: dict[str, float]) -> frozenset[str]:
        """The knowledge base's topic words among those of ``idf`` (a query's words' idf)."""
        return topic_words(idf, len(self.lexical), self.settings.grade_topic_share,
                           self.settings.grade_topic_min_passages)

    def query_vector(self, query: str) -> np.ndarray:
        """The query's embedding (the last few are kept: an answer searches twice)."""
        with self._vectors_lock:
            if query in self._vectors:
                self._vectors.move_to_end(query)
                return self._vectors[query]
        vector = self._embedder().embed_query(query)
        with self._vectors_lock:
            self._vectors[query] = vector
            while len(self._vectors) > QUERY_VECTOR_CACHE:
                self._vectors.popitem(last=False)
        return vector


QUERY_VECTOR_CACHE = 32
# Numbers with a word attached are words, not codes: 1950s, 18th, 14-story, 19th-century.
_NOT_IDENTIFIER = re.compile(r"^\d+(?:s|st|nd|rd|th)?(?:-[a-z]{3,})*$")
_QUOTED = re.compile(r'"([^"]{2,200})"|“([^”]{2,200})”|「([^」]{2,200})」|『([^』]{2,200})』')


@dataclass(frozen=True)
class ExactTerms:
    """What a query asks for verbatim: identifier-like tokens (letters and digits mixed,
    as in part numbers, error codes, versions: in their search-token form) and quoted phrases
    (folded: lower case, single spaces)."""

    identifiers: tuple[str, ...] = ()
    phrases: tuple[str, ...] = ()


def exact_terms(query: str) -> ExactTerms:
    """The identifiers and quoted phrases of ``query`` (see ExactTerms)."""
    identifiers = []
    for run in word_runs(query):
        if len(run) >= 3 and any(ch.isdigit() for ch in run) and any(ch.isalpha() for ch in run) \
                and not is_cjk_text(run) and not _NOT_IDENTIFIER.match(run):
            identifiers.extend(token for token in search_tokens(run) if token not in identifiers)
    phrases = []
    for match in _QUOTED.finditer(query):
        phrase = _folded(next(group for group in match.groups() if group))
        if sum(ch.isalnum() for ch in phrase) >= 2 and phrase not in phrases:
            phrases.append(phrase)
    return ExactTerms(tuple(identifiers), tuple(phrases))


def _folded(text: str) -> str:
    return " ".join(text.lower().split())


def searchable(query: str) -> bool:
    """True when a query has a letter or digit to search for."""
    return bool(query) and any(ch.isalnum() for ch in query)


def allowed_documents(filters: SearchFilters | None, documents: list) -> set[str] | None:
    """Ids of the documents a filter admits (None: no restriction)."""
    if filters is None or filters.is_empty():
        return None
    allowed = set()
    for doc in documents:
        if filters.knowledge_bases and doc.kb_id not in filters.knowledge_bases:
            continue
        if filters.doc_ids and doc.id not in filters.doc_ids:
            continue
        if filters.tags and not set(filters.tags) & set(doc.tags):
            continue
        if filters.doc_types and doc.doc_type not in filters.doc_types:
            continue
        allowed.add(doc.id)
    return allowed

"""Sentence vectors made at ingest: each passage's sentences pooled from the pass that embeds
the passage, stored with it, and read by the sentences reranker instead of embedding the
candidates' sentences at every search."""

from __future__ import annotations

import numpy as np
import pytest

from ragkit.lang.text import SENTENCE_SPLITTER_VERSION, split_sentences
from ragkit.models.sentence_vectors import SPLITTER_META, STORED_META, pack, pool_sentences, sentence_spans, unpack
from ragkit.retrieval.rerank import SentenceReranker
from ragkit.store.kb import KnowledgeBase

HARBOUR = ("The harbour of Vestby was dredged in 1911. Its lighthouse keeper, Ola Brekke, served for forty "
           "years. Ferries to the islands leave twice a day. 维斯特比港的灯塔建于一八九零年。")


class CountingEmbedder:
    """The real embedder, counting the texts it is asked to embed (a test's edge)."""

    def __init__(self, inner):
        self.inner, self.embedded = inner, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed_query(self, text):
        self.embedded.append(text)
        return self.inner.embed_query(text)

    def embed_remembered(self, texts):
        self.embedded.extend(texts)
        return self.inner.embed_remembered(texts)


def test_packed_vectors_come_back_within_a_hundredth_of_their_cosine_and_zero_rows_stay_zero():
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(5, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[3] = 0.0  # a sentence past the model's window
    back = unpack(pack(vectors))
    assert back.shape == (5, 384)
    assert not back[3].any()
    kept = [0, 1, 2, 4]
    assert np.allclose(np.sum(back[kept] * vectors[kept], axis=1), 1.0, atol=0.01)
    assert len(pack(vectors)) == 4 + 5 * (4 + 384)


def test_spans_point_at_the_sentences_inside_the_text_that_is_embedded_under_its_section_path():
    text = "Doors open at nine. Tickets cost five euros."
    spans = sentence_spans(text, "Visitors > Hours")
    embedded = "Visitors > Hours\n" + text
    assert [embedded[start:end] for start, end in spans] == [span.text for span in split_sentences(text)]
    assert sentence_spans(text, "") == [(span.start, span.end) for span in split_sentences(text)]


def test_a_sentence_vector_is_the_normalised_mean_of_the_tokens_inside_it():
    hidden = np.array([[9.0, 9.0], [1.0, 0.0], [0.0, 1.0], [3.0, 0.0], [9.0, 9.0]])
    offsets = [(0, 0), (0, 4), (5, 9), (10, 14), (0, 0)]  # [CLS] w1 w2 w3 [SEP]
    pooled = pool_sentences(hidden, offsets, [(0, 9), (10, 14), (20, 30)])
    assert np.allclose(pooled[0], [2 ** -0.5, 2 ** -0.5])  # w1, w2: special tokens left out
    assert np.allclose(pooled[1], [1.0, 0.0])
    assert not pooled[2].any()  # no token there (past the window): zeros, read as missing


def test_each_sentence_vector_matches_its_own_sentence_best_when_embedded_alone(embedder):
    spans = sentence_spans(HARBOUR, "")
    _, pooled = embedder.embed_passages([HARBOUR], [spans])
    alone = embedder.embed_documents([HARBOUR[start:end] for start, end in spans])
    similarity = pooled[0] @ alone.T
    assert pooled[0].shape == (len(spans), embedder.dimension) and len(spans) == 4
    assert list(similarity.argmax(axis=1)) == list(range(len(spans)))


def test_a_new_knowledge_base_stores_one_vector_per_sentence_of_every_passage(kb):
    kb.ingest(HARBOUR.encode(), "vestby.txt")
    passages = kb.catalog.passages_of(kb.documents()[0].id)
    stored = kb.catalog.sentence_vectors([p.id for p in passages])
    assert kb.catalog.get_meta(STORED_META) == "stored"
    assert {pid: len(vectors) for pid, vectors in stored.items()} == {
        p.id: len(split_sentences(p.text)) for p in passages}


def test_searching_embeds_the_question_only_not_the_candidates_sentences(settings, embedder):
    counting = CountingEmbedder(embedder)
    knowledge_base = KnowledgeBase(settings, embedder=counting)
    try:
        vestby = knowledge_base.ingest(HARBOUR.encode(), "vestby.txt").document
        knowledge_base.ingest(b"Bread is baked at dawn. The bakery opens at six.", "bakery.txt")
        assert isinstance(knowledge_base.retriever.reranker, SentenceReranker)
        counting.embedded.clear()
        hits = knowledge_base.search("Who kept the lighthouse of Vestby?")
        assert hits[0].passage.doc_id == vestby.id
        assert counting.embedded == ["Who kept the lighthouse of Vestby?"]
    finally:
        knowledge_base.close()


def test_stored_rows_that_do_not_match_the_sentences_are_embedded_instead(embedder):
    reranker = SentenceReranker(lambda: embedder, 0.75)
    text = "Ferries leave twice a day. The keeper was Ola Brekke."
    wrong = np.ones((5, embedder.dimension), dtype=np.float32)  # another splitter's five sentences
    missing = np.zeros((2, embedder.dimension), dtype=np.float32)
    fresh = reranker.sentence_scores("Who was the keeper?", [text])
    assert reranker.sentence_scores("Who was the keeper?", [text], [wrong]) == pytest.approx(fresh)
    assert reranker.sentence_scores("Who was the keeper?", [text], [missing]) == pytest.approx(fresh)


def test_a_new_version_replaces_the_sentence_vectors_and_deleting_removes_them(kb):
    first = kb.ingest(HARBOUR.encode(), "vestby.txt").document
    old_ids = [p.id for p in kb.catalog.passages_of(first.id)]
    second = kb.ingest(b"The harbour was closed in 1990. Nothing sails from it now.", "vestby.txt")
    new_ids = [p.id for p in kb.catalog.passages_of(second.document.id)]
    assert kb.catalog.sentence_vectors(old_ids) == {}
    assert set(kb.catalog.sentence_vectors(new_ids)) == set(new_ids)
    kb.delete(second.document.id)
    assert kb.catalog.sentence_vectors(new_ids) == {}


def test_an_older_knowledge_base_reranks_nothing_until_reindex_stores_its_sentence_vectors(settings, embedder):
    knowledge_base = KnowledgeBase(settings, embedder=embedder)
    knowledge_base.ingest(HARBOUR.encode(), "vestby.txt")
    ids = [p.id for p in knowledge_base.catalog.passages_of(knowledge_base.documents()[0].id)]
    # as a knowledge base made before sentence vectors were stored
    with knowledge_base.catalog._engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM sentence_vectors")
        conn.exec_driver_sql("DELETE FROM meta WHERE key = ?", (STORED_META,))
    knowledge_base.close()
    older = KnowledgeBase(settings, embedder=embedder)
    try:
        assert older.retriever.reranker is None  # "auto" would embed every candidate's sentences
        assert "python -m ragkit reindex" in older.reindex_advice()
        older.reindex()
        assert isinstance(older.retriever.reranker, SentenceReranker)
        assert set(older.catalog.sentence_vectors(ids)) == set(ids)
        assert older.reindex_advice() is None
    finally:
        older.close()


def test_another_process_reranks_by_sentences_once_a_reindex_stored_their_vectors(settings, embedder, monkeypatch):
    from ragkit.retrieval import hybrid as retrieval

    writer = KnowledgeBase(settings, embedder=embedder)
    writer.ingest(HARBOUR.encode(), "vestby.txt")
    writer.catalog.set_meta(STORED_META, "none")  # as a store indexed before sentence vectors were kept
    writer.close()
    reader, writer = KnowledgeBase(settings, embedder=embedder), KnowledgeBase(settings, embedder=embedder)
    try:
        assert reader.retriever.reranker is None
        made = []
        monkeypatch.setattr(retrieval, "make_reranker", lambda *a, **k: made.append(a) or None)
        reader.search("Who kept the lighthouse?")
        reader.catalog.announce_search_change()  # a generation change that leaves the answer as it was
        reader.search("Who kept the lighthouse?")
        assert made == []  # nothing changed, nothing chosen again
        monkeypatch.undo()
        writer.reindex()
        reader.search("Who kept the lighthouse?")  # catches up as it would with the other's writes
        assert isinstance(reader.retriever.reranker, SentenceReranker)
    finally:
        reader.close()
        writer.close()


def test_vectors_made_under_another_sentence_splitter_rerank_nothing_until_reindex(settings, embedder):
    knowledge_base = KnowledgeBase(settings, embedder=embedder)
    knowledge_base.ingest(HARBOUR.encode(), "vestby.txt")
    assert knowledge_base.catalog.get_meta(SPLITTER_META) == str(SENTENCE_SPLITTER_VERSION)
    assert knowledge_base.reindex_advice() is None
    knowledge_base.catalog.set_meta(SPLITTER_META, str(SENTENCE_SPLITTER_VERSION - 1))  # boundaries drawn otherwise
    knowledge_base.close()
    older = KnowledgeBase(settings, embedder=embedder)
    try:
        assert older.retriever.reranker is None
        assert "split differently" in older.reindex_advice()
        older.reindex()
        assert isinstance(older.retriever.reranker, SentenceReranker)
        assert older.catalog.get_meta(SPLITTER_META) == str(SENTENCE_SPLITTER_VERSION)
    finally:
        older.close()


def test_no_reindex_advice_for_an_empty_store_or_when_reranking_is_off(settings, embedder):
    empty = KnowledgeBase(settings, embedder=embedder)
    try:
        assert empty.reindex_advice() is None
    finally:
        empty.close()
    off = KnowledgeBase(settings.model_copy(update={"reranker": "none"}), embedder=embedder)
    try:
        off.ingest(HARBOUR.encode(), "vestby.txt")
        off.catalog.set_meta(STORED_META, "none")
        assert off.reindex_advice() is None  # nothing would use the vectors
    finally:
        off.close()


def test_auto_reranks_nothing_when_the_model_pools_no_sentence_vectors(settings):
    from ragkit.models.embeddings import HashingEmbedder

    knowledge_base = KnowledgeBase(settings, embedder=HashingEmbedder())
    try:
        knowledge_base.ingest(HARBOUR.encode(), "vestby.txt")
        knowledge_base.ingest(b"Bread is baked at dawn. The bakery opens at six.", "bakery.txt")
        assert knowledge_base.catalog.sentence_vectors(list(knowledge_base.catalog.passage_ids())) == {}
        fused = [("a", 1.0), ("b", 0.5), ("c", 0.1)]
        reranker = knowledge_base.retriever.reranker
        assert reranker.rerank("Who kept the lighthouse?", fused, {"a": "x", "b": "y", "c": "z"}) == fused
    finally:
        knowledge_base.close()


def test_a_full_reindex_with_a_model_that_pools_none_drops_the_earlier_models_vectors(settings, embedder):
    from ragkit.models.embeddings import HashingEmbedder

    knowledge_base = KnowledgeBase(settings, embedder=embedder)
    knowledge_base.ingest(HARBOUR.encode(), "vestby.txt")
    ids = list(knowledge_base.catalog.passage_ids())
    assert knowledge_base.catalog.sentence_vectors(ids)
    hashing = HashingEmbedder()
    knowledge_base.indexer.reindex(hashing)
    try:
        assert knowledge_base.catalog.sentence_vectors(ids) == {}
        assert knowledge_base.catalog.get_meta(STORED_META) == "none"
    finally:
        knowledge_base.close()


def test_a_catalog_from_before_sentence_vectors_is_migrated_and_its_passages_have_none(tmp_path):
    from conftest import add_old_document
    from ragkit.store.catalog import MIGRATIONS, Catalog, _sentence_vectors
    from ragkit.store.db import apply_migrations, open_database

    assert MIGRATIONS[-1] is _sentence_vectors  # version 7: appended, never an edit of an applied one
    path = tmp_path / "registry.sqlite3"
    apply_migrations(open_database(path), "catalog", MIGRATIONS[:-1])
    add_old_document(path)
    catalog = Catalog(path)
    try:
        assert [p.text for p in catalog.passages_of("old1")] == ["Old passage."]
        assert catalog.sentence_vectors(["old1-v1-0"]) == {}
        assert catalog.get_meta(STORED_META) is None  # so "auto" reranks nothing until reindex
    finally:
        catalog.close()


def test_a_store_whose_generation_the_vector_store_never_reaches_chooses_its_reranker_once(kb, monkeypatch):
    # a remote store (a Chroma server) never records the generation it caught up with, and a
    # local one does not while another process holds the write lock: each search then refreshes
    kb.ingest(HARBOUR.encode(), "vestby.txt")
    monkeypatch.setattr(kb.store, "refresh", lambda wait=True, timeout=None: False)
    chosen = []
    monkeypatch.setattr(kb.retriever, "choose_reranker", lambda: chosen.append(1))
    kb.catalog.announce_search_change()
    for _ in range(3):
        kb.search("Who kept the lighthouse?")
    assert len(chosen) == 1


def test_the_reindex_advice_loads_no_model_for_a_store_with_current_sentence_vectors(kb, embedder, monkeypatch):
    from ragkit.store import kb as kb_module

    kb.ingest(HARBOUR.encode(), "vestby.txt")
    kb._embedder = None  # as 'ragkit docs' opens it: listing never loads the model
    monkeypatch.setattr(kb_module, "make_embedder", lambda settings: pytest.fail("the model was loaded"))
    assert kb.reindex_advice() is None
    kb.catalog.set_meta(STORED_META, "none")
    monkeypatch.setattr(kb_module, "make_embedder", lambda settings: embedder)
    assert "python -m ragkit reindex" in kb.reindex_advice()  # only then: would reindex pool sentences?


def test_the_sentences_reranker_reads_no_vectors_of_another_sentence_splitter(settings, embedder):
    knowledge_base = KnowledgeBase(settings, embedder=embedder)
    knowledge_base.ingest(HARBOUR.encode(), "vestby.txt")
    knowledge_base.ingest(b"Bread is baked at dawn. The bakery opens at six.", "bakery.txt")
    knowledge_base.catalog.set_meta(SPLITTER_META, str(SENTENCE_SPLITTER_VERSION - 1))  # boundaries drawn otherwise
    knowledge_base.close()
    counting = CountingEmbedder(embedder)
    older = KnowledgeBase(settings.model_copy(update={"reranker": "sentences"}), embedder=counting)
    try:
        older.search("Who kept the lighthouse of Vestby?")
        assert "Its lighthouse keeper, Ola Brekke, served for forty years." in counting.embedded
    finally:
        older.close()


def test_the_reindex_advice_never_asks_an_embedding_endpoint_nor_fails_on_a_missing_model(kb, monkeypatch):
    from ragkit.errors import EmbeddingError
    from ragkit.store import kb as kb_module

    kb.ingest(HARBOUR.encode(), "vestby.txt")
    kb.catalog.set_meta(STORED_META, "none")  # an endpoint's store keeps no sentence vectors
    kb._embedder = None

    def unreachable(settings):
        raise EmbeddingError("embedding model openai:text-embedding-3-small needs OPENAI_API_KEY")

    monkeypatch.setattr(kb_module, "make_embedder", unreachable)
    assert kb.reindex_advice() is None  # 'ragkit docs' still lists, the Stats page still shows
    kb.settings = kb.settings.model_copy(update={"embedding_model": "openai:text-embedding-3-small"})
    monkeypatch.setattr(kb_module, "make_embedder", lambda settings: pytest.fail("the endpoint was asked"))
    assert kb.reindex_advice() is None

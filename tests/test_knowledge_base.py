"""The knowledge base on a real Chroma store: ingest, search, versions, deletes, restarts."""

import subprocess
import sys

import numpy as np
import pytest

from conftest import FIXTURES, REPO
from ragkit.kb import EmbeddingModelMismatch, KnowledgeBase
from ragkit.retrieval import SearchFilters


def ingest_fixtures(kb):
    results = {}
    for name, tags in [("report_en.pdf", ["finance"]), ("tea_garden_zh.pdf", ["travel"]), ("handbook.docx", [])]:
        results[name] = kb.ingest(FIXTURES / name, tags=tags)
    return results


def test_ingested_pdf_is_found_with_document_and_page(kb):
    results = ingest_fixtures(kb)
    assert {r.status for r in results.values()} == {"added"}
    hits = kb.search("What was the revenue in the third quarter?", k=3)
    assert hits[0].filename == "report_en.pdf"
    assert hits[0].page == 2
    assert "4.2 million euros" in " ".join(hits[0].text.split())
    assert hits[0].lexical_score is not None and hits[0].dense_score is not None


def test_chinese_question_finds_the_chinese_pdf_page(kb):
    ingest_fixtures(kb)
    hits = kb.search("茶园的门票多少钱？", k=3)
    assert hits[0].filename == "tea_garden_zh.pdf" and hits[0].page == 2


def test_docx_table_content_is_searchable(kb):
    ingest_fixtures(kb)
    hits = kb.search("How much is the comet curry?", k=2)
    assert hits[0].filename == "handbook.docx" and "17 credits" in hits[0].text


def test_same_bytes_twice_is_a_no_op(kb):
    first = kb.ingest(FIXTURES / "report_en.pdf")
    chunks = kb.chunk_count()
    again = kb.ingest(FIXTURES / "report_en.pdf")
    assert again.status == "unchanged" and again.document.id == first.document.id
    assert kb.chunk_count() == chunks and len(kb.documents()) == 1


def test_same_name_new_bytes_replaces_chunks_and_bumps_version(kb):
    first = kb.ingest(b"The launch is planned for March.", filename="plan.txt", tags=["ops"])
    second = kb.ingest(b"The launch moved to September. Budget doubled.", filename="plan.txt")
    assert second.status == "new_version"
    assert second.document.id == first.document.id and second.document.version == 2
    assert second.document.tags == ["ops"]
    texts = [c.text for c in kb.document_chunks(first.document.id)]
    assert texts == ["The launch moved to September. Budget doubled."]
    assert all("March" not in hit.text for hit in kb.search("launch March", k=5))


def test_refused_file_leaves_nothing_behind(kb):
    result = kb.ingest(FIXTURES / "corrupt.pdf")
    assert result.status == "refused" and "not a readable PDF" in result.message
    assert kb.documents() == [] and kb.chunk_count() == 0


class ExplodingEmbedder:
    """Wraps the real embedder but fails on the second batch, like a crash mid-ingest."""

    def __init__(self, real):
        self.real, self.name, self.dimension = real, real.name, real.dimension

    def embed_documents(self, texts, batch_size=64, progress=None):
        vectors = self.real.embed_documents(texts[:1])
        raise RuntimeError(f"out of memory after {len(vectors)} vectors")

    def embed_query(self, text):
        return self.real.embed_query(text)


def test_failure_mid_ingest_is_all_or_nothing(settings, embedder):
    kb = KnowledgeBase(settings, embedder=embedder)
    kb.ingest(b"Existing document about whales.", filename="whales.txt")
    broken = KnowledgeBase(settings, embedder=ExplodingEmbedder(embedder))
    result = broken.ingest(FIXTURES / "report_en.pdf")
    assert result.status == "refused" and "out of memory" in result.message
    assert [d.filename for d in broken.documents()] == ["whales.txt"]
    assert broken.chunks.count() == 1


def test_stale_chunks_from_an_interrupted_ingest_are_swept_on_open(settings, embedder):
    kb = KnowledgeBase(settings, embedder=embedder)
    kb.ingest(b"Kept document.", filename="kept.txt")
    from ragkit.store import StoredChunk

    orphan = StoredChunk("ghost-v1-0", "orphan text", {"doc_id": "ghost", "version": 1, "position": 0, "page": 1})
    kb.chunks.add([orphan], np.asarray([embedder.embed_query("orphan text")]))
    reopened = KnowledgeBase(settings, embedder=embedder)
    assert reopened.chunks.count() == 1
    assert all(hit.doc_id != "ghost" for hit in reopened.search("orphan text"))


def test_delete_removes_document_and_chunks(kb):
    results = ingest_fixtures(kb)
    doc = results["report_en.pdf"].document
    kb.delete(doc.id)
    assert kb.document(doc.id) is None
    assert all(hit.doc_id != doc.id for hit in kb.search("revenue third quarter", k=10))
    with pytest.raises(KeyError):
        kb.delete(doc.id)


def test_filters_by_tag_type_and_document(kb):
    results = ingest_fixtures(kb)
    only_travel = kb.search("opening hours", k=10, filters=SearchFilters(tags=["travel"]))
    assert only_travel and {h.filename for h in only_travel} == {"tea_garden_zh.pdf"}
    only_docx = kb.search("opening hours", k=10, filters=SearchFilters(doc_types=["docx"]))
    assert only_docx and {h.filename for h in only_docx} == {"handbook.docx"}
    report_id = results["report_en.pdf"].document.id
    only_report = kb.search("opening hours", k=10, filters=SearchFilters(doc_ids=[report_id]))
    assert only_report and {h.doc_id for h in only_report} == {report_id}
    assert kb.search("anything", filters=SearchFilters(tags=["no-such-tag"])) == []


def test_unsearchable_queries_return_nothing_instead_of_crashing(kb):
    ingest_fixtures(kb)
    for query in ["", "   ", "？？？", "!!!...", "。，、"]:
        assert kb.search(query) == []


def test_answer_passages_add_the_top_documents_passage_that_lacks_the_subjects_name(settings, embedder):
    from ragkit.kb import KnowledgeBase

    narrow = settings.model_copy(update={"top_k": 2, "chunk_tokens": 48, "chunk_overlap_tokens": 0})
    kb = KnowledgeBase(narrow, embedder=embedder)
    try:
        tower = ("长柄艾纳香是菊科艾纳香属的植物，一年生草本，茎直立，高约一米，基部有分枝，全株有腺状短柔毛。\n\n"
                 "下部叶有细柄，叶片倒卵形至倒披针形，边缘有锯齿。\n\n头状花序少数，花黄色，花期1-3月。")
        kb.ingest(tower.encode(), filename="长柄艾纳香.txt")
        kb.ingest("六耳铃是菊科艾纳香属的植物，花期从10月起至翌年5月。".encode(), filename="六耳铃.txt")
        kb.ingest("狭叶艾纳香是菊科艾纳香属的植物，花期3-5月，生于山谷。".encode(), filename="狭叶艾纳香.txt")
        question = "长柄艾纳香的花期约是多久？"
        assert not any("花期1-3月" in hit.text for hit in kb.search(question, k=2))
        embedded = []
        real_embed_query = kb.embedder.embed_query
        kb.embedder.embed_query = lambda text: embedded.append(text) or real_embed_query(text)
        passages = kb.answer_hits("长柄艾纳香的花期是什么时候？") and kb.answer_hits(question)
        assert embedded == ["长柄艾纳香的花期是什么时候？", question]  # one embedding per question, not per search
        assert passages[0].filename == "长柄艾纳香.txt"
        added = [hit for hit in passages if hit.extra.get("same_document")]
        assert len(added) == 1 and "花期1-3月" in added[0].text and added[0].filename == "长柄艾纳香.txt"
        assert added[0].score <= passages[len(passages) - 2].score
    finally:
        kb.embedder.__dict__.pop("embed_query", None)
        kb.close()


def test_update_metadata_changes_tags_and_title_shown_in_results(kb):
    doc = kb.ingest(FIXTURES / "report_en.pdf").document
    kb.update_metadata(doc.id, title="Annual report", tags=["2026", "finance", "2026"])
    assert kb.document(doc.id).tags == ["2026", "finance"]
    assert kb.search("dividend per share")[0].title == "Annual report"
    assert kb.tags() == ["2026", "finance"]


def test_store_survives_a_restart_in_a_new_process(settings, embedder):
    kb = KnowledgeBase(settings, embedder=embedder)
    doc = kb.ingest(FIXTURES / "tea_garden_zh.pdf").document
    kb.close()
    code = (
        "from ragkit.config import Settings; from ragkit.kb import KnowledgeBase;"
        f"kb = KnowledgeBase(Settings(data_dir={str(settings.data_path)!r}));"
        "hits = kb.search('茶园几点开放', k=1); print(hits[0].doc_id, hits[0].page)"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert output.returncode == 0, output.stderr
    assert output.stdout.split() == [doc.id, "2"]


def test_switching_embedding_model_is_detected_not_mixed(settings, embedder):
    KnowledgeBase(settings, embedder=embedder).ingest(b"Some text.", filename="a.txt")

    class OtherModel:
        name, dimension = "other-model", 3

    with pytest.raises(EmbeddingModelMismatch, match="reindex"):
        KnowledgeBase(settings, embedder=OtherModel())


def test_invalid_settings_give_a_clear_message():
    from ragkit.config import SettingsError, load_settings

    with pytest.raises(SettingsError, match="RAGKIT_TOP_K"):
        load_settings(top_k=0)
    with pytest.raises(SettingsError, match="chunk_overlap_tokens"):
        load_settings(chunk_tokens=64, chunk_overlap_tokens=64)


def test_reindex_after_a_model_change_rebuilds_vectors_and_keeps_documents(settings, embedder):
    kb = KnowledgeBase(settings, embedder=embedder)
    doc = kb.ingest(FIXTURES / "report_en.pdf").document
    kb.registry.set_meta("embedding_model", "some-older-model")
    with pytest.raises(EmbeddingModelMismatch):
        KnowledgeBase(settings, embedder=embedder)
    result = subprocess.run([sys.executable, "-m", "ragkit", "--data-dir", str(settings.data_path), "reindex"],
                            capture_output=True, text=True, cwd=REPO, timeout=180)
    assert result.returncode == 0, result.stderr
    assert "re-embedded 3 chunks" in result.stdout
    reopened = KnowledgeBase(settings, embedder=embedder)
    assert reopened.search("dividend per share")[0].doc_id == doc.id
    assert reopened.chunks.count() == 3

"""The knowledge base on a real Chroma store: ingest, search, versions, deletes, restarts."""

import subprocess
import sys

import pytest

from conftest import FIXTURES, REPO
from ragkit.store.kb import EmbeddingModelMismatch, IngestItem, KnowledgeBase
from ragkit.store.lexical import LexicalEntry, LexicalIndex
from ragkit.types import SearchFilters


def ingest_fixtures(kb):
    results = {}
    for name, tags in [("report_en.pdf", ["finance"]), ("tea_garden_zh.pdf", ["travel"]), ("handbook.docx", [])]:
        results[name] = kb.ingest(FIXTURES / name, tags=tags)
    return results


def vector_ids(kb) -> set[str]:
    return {stored.id for stored, _ in kb.store.scan()}


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
    passages = kb.passage_count()
    again = kb.ingest(FIXTURES / "report_en.pdf")
    assert again.status == "unchanged" and again.document.id == first.document.id
    assert kb.passage_count() == passages and len(kb.documents()) == 1


def test_same_name_new_bytes_replaces_passages_and_bumps_version(kb):
    first = kb.ingest(b"The launch is planned for March.", filename="plan.txt", tags=["ops"])
    second = kb.ingest(b"The launch moved to September. Budget doubled.", filename="plan.txt")
    assert second.status == "new_version"
    assert second.document.id == first.document.id and second.document.version == 2
    assert second.document.tags == ["ops"]
    assert [p.text for p in kb.passages(first.document.id)] == ["The launch moved to September. Budget doubled."]
    assert all("March" not in hit.text for hit in kb.search("launch March", k=5))
    assert vector_ids(kb) == {p.id for p in kb.passages(first.document.id)}


def test_files_with_the_same_name_in_different_folders_are_different_documents(kb, tmp_path):
    for project, text in [("projA", "Project A deploys with Ansible."), ("projB", "Project B deploys with Helm.")]:
        (tmp_path / project).mkdir()
        (tmp_path / project / "README.md").write_text(f"# {project}\n\n{text}")
    results = kb.ingest_many([IngestItem.of(tmp_path / p / "README.md") for p in ("projA", "projB")])
    assert [r.status for r in results] == ["added", "added"]
    assert sorted(d.title for d in kb.documents()) == ["projA", "projB"]
    assert kb.search("Helm deploy", k=1)[0].title == "projB"


def test_a_new_version_takes_the_new_title_unless_the_user_chose_one(kb):
    first = kb.ingest(b"# Old heading\n\nText one.", filename="notes.md")
    second = kb.ingest(b"# New heading\n\nText two.", filename="notes.md")
    assert (first.document.title, second.document.title) == ("Old heading", "New heading")
    kb.update_metadata(second.document.id, title="My notes")
    third = kb.ingest(b"# Third heading\n\nText three.", filename="notes.md")
    assert third.document.title == "My notes" and third.document.version == 3


def test_refused_file_leaves_nothing_behind(kb):
    result = kb.ingest(FIXTURES / "corrupt.pdf")
    assert result.status == "refused" and "not a readable PDF" in result.message
    assert kb.documents() == [] and kb.passage_count() == 0 and kb.store.count() == 0


class ExplodingEmbedder:
    """Wraps the real embedder but fails on the second batch, like a crash mid-ingest."""

    def __init__(self, real):
        self.real, self.name, self.dimension = real, real.name, real.dimension

    def embed_passages(self, texts, spans, batch_size=64, progress=None):
        vectors, _ = self.real.embed_passages(texts[:1], spans[:1])
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
    assert broken.store.count() == 1


def test_a_batch_of_files_is_embedded_together_and_each_file_is_all_or_nothing(kb, tmp_path):
    (tmp_path / "good.txt").write_text("Gamma rays are the most energetic light.")
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "also.md").write_text("# Radio\n\nRadio waves are the longest.")
    calls = []
    real = kb.embedder.embed_passages
    kb.embedder.embed_passages = lambda texts, *a, **k: calls.append(len(texts)) or real(texts, *a, **k)
    try:
        results = kb.ingest_many([IngestItem.of(tmp_path / n) for n in ("good.txt", "empty.txt", "also.md")])
    finally:
        del kb.embedder.embed_passages
    assert [r.status for r in results] == ["added", "refused", "added"]
    assert calls == [2]  # one model call for both files' passages
    assert kb.search("longest waves", k=1)[0].filename == "also.md"
    assert vector_ids(kb) == {p.id for d in kb.documents() for p in kb.passages(d.id)}


def test_delete_removes_document_and_passages(kb):
    results = ingest_fixtures(kb)
    doc = results["report_en.pdf"].document
    kb.delete(doc.id)
    assert kb.document(doc.id) is None
    assert all(hit.doc_id != doc.id for hit in kb.search("revenue third quarter", k=10))
    assert all(not pid.startswith(doc.id) for pid in vector_ids(kb))
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


def test_unsearchable_queries_return_nothing_and_k_must_be_positive(kb):
    ingest_fixtures(kb)
    for query in ["", "   ", "？？？", "!!!...", "。，、"]:
        assert kb.search(query) == []
    for bad in (0, -1):
        with pytest.raises(ValueError, match="k must be at least 1"):
            kb.search("revenue", k=bad)


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
        "from ragkit.config import Settings; from ragkit.store.kb import KnowledgeBase;"
        f"kb = KnowledgeBase(Settings(data_dir={str(settings.data_path)!r}));"
        "hits = kb.search('茶园几点开放', k=1); print(hits[0].doc_id, hits[0].page)"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert output.returncode == 0, output.stderr
    assert output.stdout.split() == [doc.id, "2"]


def test_changes_made_by_another_process_are_seen_without_reopening(settings, embedder):
    kb = KnowledgeBase(settings, embedder=embedder)
    kb.ingest(b"Penguins live in the southern hemisphere.", filename="penguins.txt")
    code = (
        "from ragkit.config import Settings; from ragkit.store.kb import KnowledgeBase;"
        f"kb = KnowledgeBase(Settings(data_dir={str(settings.data_path)!r}));"
        "print(kb.ingest(b'Walruses have long tusks made of ivory.', filename='walrus.txt').status)"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=180)
    assert output.stdout.split() == ["added"], output.stderr
    hits = kb.search("tusks ivory", k=1)
    assert hits[0].filename == "walrus.txt" and hits[0].dense_score is not None
    kb.delete(hits[0].doc_id)  # a write after another process wrote must not corrupt the index
    reopened = KnowledgeBase(settings, embedder=embedder)
    assert reopened.health == [] and reopened.store.count() == 1
    assert reopened.store.unreachable(sorted(vector_ids(reopened))) == []
    assert vector_ids(reopened) == {p.id for d in reopened.documents() for p in reopened.passages(d.id)}


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
    kb.catalog.set_meta("embedding_model", "some-older-model")
    with pytest.raises(EmbeddingModelMismatch):
        KnowledgeBase(settings, embedder=embedder)
    result = subprocess.run([sys.executable, "-m", "ragkit", "--data-dir", str(settings.data_path), "reindex"],
                            capture_output=True, text=True, cwd=REPO, timeout=180)
    assert result.returncode == 0, result.stderr
    assert "re-embedded 3 passages" in result.stdout
    reopened = KnowledgeBase(settings, embedder=embedder)
    assert reopened.search("dividend per share")[0].doc_id == doc.id
    assert reopened.store.count() == 3


# ----- the lexical index -------------------------------------------------------------


def lexical_entries(count: int, seed: int) -> list[LexicalEntry]:
    import random

    rng = random.Random(seed)
    words = [f"w{n}" for n in range(200)] + ["茶园", "门票", "园"]
    return [LexicalEntry(f"d{n // 4}-v1-{n % 4}", f"d{n // 4}", [rng.choice(words[: rng.randint(5, 203)])
                                                                  for _ in range(rng.randint(0, 40))])
            for n in range(count)]


def test_lexical_index_after_adds_versions_and_deletes_scores_exactly_like_a_fresh_build():
    entries = lexical_entries(600, seed=3)
    incremental = LexicalIndex(recent_share=0.05, recent_minimum=40)  # forces several compactions
    for doc in sorted({e.doc_id for e in entries}, key=lambda d: int(d[1:])):
        incremental.replace_document(doc, 1, [e for e in entries if e.doc_id == doc])
    incremental.remove_documents(["d3", "d40", "d99"])
    renewed = [LexicalEntry("d7-v2-0", "d7", ["w1", "w1", "门票"]), LexicalEntry("d7-v2-1", "d7", [])]
    incremental.replace_document("d7", 2, renewed)
    kept = [e for e in entries if e.doc_id not in {"d3", "d40", "d99", "d7"}] + renewed
    fresh = LexicalIndex()
    fresh.add(kept)
    for query in (["w1"], ["w1", "w5", "w5", "w150"], ["门票", "茶园", "unknown"], ["w199"]):
        assert incremental.scores(query) == fresh.scores(query)
        assert incremental.search(query, 7) == fresh.search(query, 7)
        assert incremental.search(query, 5, {"d1", "d7"}) == fresh.search(query, 5, {"d1", "d7"})
    assert incremental.idf(["w1", "门票", "never"]) == fresh.idf(["w1", "门票", "never"])


def test_lexical_scores_are_bm25_as_bm25s_computes_it():
    import bm25s

    entries = lexical_entries(300, seed=5)
    ours = LexicalIndex()
    ours.add(entries)
    reference = bm25s.BM25(k1=1.2, b=0.75)
    reference.index([e.terms or ["\u2400"] for e in entries], show_progress=False)
    query = ["w2", "w9", "w9", "园"]
    theirs = reference.get_scores([t for t in query if t in reference.vocab_dict])
    mine = ours.scores(query)
    assert mine and all(abs(mine.get(e.passage_id, 0.0) - theirs[n]) < 1e-5 for n, e in enumerate(entries))


def test_lexical_snapshot_round_trips(tmp_path):
    index = LexicalIndex()
    index.add(lexical_entries(100, seed=9))
    index.remove_documents(["d2"])
    index.save(tmp_path / "lexical.npz")
    loaded = LexicalIndex()
    assert loaded.load(tmp_path / "lexical.npz")
    assert loaded.scores(["w3", "w4"]) == index.scores(["w3", "w4"])
    assert loaded.document_versions() == index.document_versions()
    assert not LexicalIndex().load(tmp_path / "missing.npz")


def test_the_model_loads_in_the_background_while_the_other_files_of_a_batch_are_read(settings, embedder,
                                                                                        tmp_path, monkeypatch):
    import threading

    import ragkit.store.kb

    names = ["first.txt", "second.txt", "third.txt"]
    for name in names:
        (tmp_path / name).write_text(f"The {name} file talks about lighthouse number {len(name)}.")
    last_read = threading.Event()
    loads = []

    def make_embedder(_settings):
        loads.append(threading.current_thread().name)
        # Only done once the last file is being read: loaded after all of them, it would wait here forever.
        assert last_read.wait(timeout=60), "the model was not loaded while the files were read"
        return embedder

    monkeypatch.setattr(ragkit.store.kb, "make_embedder", make_embedder)
    kb = KnowledgeBase(settings)
    try:
        def progress(stage, fraction):
            if stage == "reading":
                last_read.set()

        items = [IngestItem.of(tmp_path / name) for name in names]
        items[-1].progress = progress
        results = kb.ingest_many(items)
        assert [r.status for r in results] == ["added"] * 3
        assert loads == ["ragkit-model-load"]  # once, by the loading thread, not by the ingest itself
    finally:
        kb.close()


def test_a_batch_with_nothing_to_embed_loads_no_model(settings, tmp_path, monkeypatch):
    import ragkit.store.kb

    monkeypatch.setattr(ragkit.store.kb, "make_embedder", lambda _settings: pytest.fail("no model is needed"))
    kb = KnowledgeBase(settings)
    try:
        (tmp_path / "empty.txt").write_text("")
        assert [r.status for r in kb.ingest_many([IngestItem.of(tmp_path / "empty.txt")])] == ["refused"]
    finally:
        kb.close()


def test_saving_a_batch_of_files_takes_as_many_catalog_commits_for_six_files_as_for_two(kb, tmp_path):
    from sqlalchemy import event

    commits = []

    def on_commit(conn):
        if conn.get_execution_options().get("ragkit_write"):
            commits.append(1)

    event.listen(kb.catalog._engine, "commit", on_commit)
    counts = []
    for batch in (2, 6):
        paths = []
        for n in range(batch):
            paths.append(tmp_path / f"batch{batch}-{n}.txt")
            paths[-1].write_text(f"Batch {batch} file {n} describes the harbour crane number {batch * 10 + n}.")
        commits.clear()
        assert {r.status for r in kb.ingest_many([IngestItem.of(path) for path in paths])} == {"added"}
        counts.append(len(commits))
    assert counts[0] == counts[1]  # each file's pending row in its own transaction made it 4 more

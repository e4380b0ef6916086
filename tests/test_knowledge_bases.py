"""Knowledge bases: named sets of documents. Existing data opens as "Default"; a search in
one never returns a passage of another (the chat graph's every search included); names
are checked; deleting one deletes its documents; a conversation remembers its choice;
``repair`` rebuilds them from the vectors; the CLI takes ``--kb``. Plus the kept originals
and bulk actions on documents."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from conftest import FIXTURES, REPO
from ragkit.errors import InputError
from ragkit.types import SearchFilters

HARBOUR = b"# Harbour\n\nThe harbour crane lifts forty tonnes of cargo at high tide. The crane operator is Ines Okafor."
LIGHTHOUSE = b"# Lighthouse\n\nThe lighthouse keeper logs every storm. The crane of the old pier was removed in 1990."


def test_existing_documents_open_in_default_and_new_ones_go_there(kb):
    assert [(b.id, b.name) for b in kb.knowledge_bases()] == [("default", "Default")]
    result = kb.ingest(HARBOUR, filename="harbour.md")
    assert result.document.kb_id == "default"
    assert kb.knowledge_bases()[0].documents == 1


def test_a_catalog_from_before_knowledge_bases_is_migrated_to_default(tmp_path):
    from ragkit.store.catalog import Catalog, _legacy_schema, _passages_and_write_safety
    from ragkit.store.db import apply_migrations, open_database

    path = tmp_path / "registry.sqlite3"
    apply_migrations(open_database(path), "catalog", [_legacy_schema, _passages_and_write_safety])
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO documents (id, filename, title, doc_type, content_hash, version, tags, size_bytes, "
                     "pages, chunks, tokens, created_at, updated_at, source, title_from) VALUES "
                     "('old1', 'a.txt', 'A', 'txt', 'ab12', 1, '[]', 3, 1, 1, 1, 0, 0, 'a.txt', 'file')")
    catalog = Catalog(path)
    assert catalog.document("old1").kb_id == "default"
    assert [(b.name, b.documents) for b in catalog.knowledge_bases()] == [("Default", 1)]


def test_a_search_in_one_knowledge_base_never_returns_another_ones_passages(kb):
    work = kb.create_knowledge_base("Work")
    kb.ingest(HARBOUR, filename="harbour.md")
    kb.ingest(LIGHTHOUSE, filename="lighthouse.md", knowledge_base="Work")
    everywhere = {hit.filename for hit in kb.search("crane", k=10)}
    assert everywhere == {"harbour.md", "lighthouse.md"}
    in_work = kb.search("harbour crane lifts forty tonnes Ines Okafor", k=10,
                        filters=SearchFilters(knowledge_bases=[work.id]))
    assert in_work and {hit.filename for hit in in_work} == {"lighthouse.md"}
    in_default = kb.search("lighthouse keeper storm", k=10, filters=SearchFilters(knowledge_bases=["default"]))
    assert {hit.filename for hit in in_default} == {"harbour.md"}


def test_the_same_file_can_be_in_two_knowledge_bases(kb):
    kb.create_knowledge_base("Work")
    first = kb.ingest(HARBOUR, filename="harbour.md")
    second = kb.ingest(HARBOUR, filename="harbour.md", knowledge_base="work")  # names match in any case
    assert first.status == second.status == "added" and first.document.id != second.document.id
    assert kb.ingest(HARBOUR, filename="harbour.md", knowledge_base="Work").status == "unchanged"


def test_names_are_checked_and_renames_and_deletes_work(kb):
    kb.create_knowledge_base("Research")
    with pytest.raises(InputError, match="already a knowledge base named 'Research'"):
        kb.create_knowledge_base("  research ")
    with pytest.raises(InputError, match="needs a name"):
        kb.create_knowledge_base("   ")
    with pytest.raises(InputError, match="at most 80 characters"):
        kb.create_knowledge_base("x" * 81)
    with pytest.raises(InputError, match="no knowledge base 'Nope'; there are: Default, Research"):
        kb.ingest(HARBOUR, filename="harbour.md", knowledge_base="Nope")
    renamed = kb.rename_knowledge_base("Research", "Studies")
    assert renamed.name == "Studies"
    kb.ingest(LIGHTHOUSE, filename="lighthouse.md", knowledge_base="Studies")
    deleted = kb.delete_knowledge_base("Studies")
    assert [doc.filename for doc in deleted] == ["lighthouse.md"]
    assert [b.name for b in kb.knowledge_bases()] == ["Default"] and not kb.documents()
    assert kb.search("lighthouse keeper", k=5) == []
    with pytest.raises(InputError, match="only knowledge base"):
        kb.delete_knowledge_base("Default")


@pytest.mark.parametrize("mode", ["default", "agentic"])
def test_every_search_of_a_chat_turn_stays_in_the_conversations_knowledge_bases(kb, monkeypatch, mode):
    from ragkit.app.engine import ChatEngine

    work = kb.create_knowledge_base("Work")
    kb.ingest(HARBOUR, filename="harbour.md")
    # names the other knowledge base's document by its title: agentic mode must not follow it there
    kb.ingest(LIGHTHOUSE + b" The keeper's brother works at the Harbour.", filename="lighthouse.md",
              knowledge_base="Work")
    found: set[str] = set()
    search = kb.search

    def recorded_search(query, k=None, filters=None):  # every search of the turn, whichever node makes it
        hits = search(query, k, filters)
        found.update(hit.filename for hit in hits)
        return hits

    monkeypatch.setattr(kb, "search", recorded_search)
    engine = ChatEngine(kb.settings, kb)
    engine.history.set_session_knowledge_bases("s1", [work.id])
    turn = engine.ask("s1", "Who operates the Harbour crane that lifts forty tonnes?", mode=mode)
    assert {s.filename for s in turn.sources + turn.closest} <= {"lighthouse.md"}
    follow_up = engine.ask("s1", "And what does it lift?", mode=mode)
    assert {s.filename for s in follow_up.sources + follow_up.closest} <= {"lighthouse.md"}
    assert turn.filters["knowledge_bases"] == [work.id]
    assert found == {"lighthouse.md"}
    other = engine.ask("s2", "Who operates the Harbour crane that lifts forty tonnes?", mode=mode)
    assert "harbour.md" in {s.filename for s in other.sources}  # a conversation without a choice searches all


def test_repair_rebuilds_knowledge_bases_from_the_vectors(settings, embedder):
    from ragkit.store.kb import KnowledgeBase

    kb = KnowledgeBase(settings, embedder=embedder)
    kb.create_knowledge_base("Work")
    doc = kb.ingest(LIGHTHOUSE, filename="lighthouse.md", knowledge_base="Work").document
    kb.close()
    (settings.data_path / "registry.sqlite3").unlink()
    repaired = KnowledgeBase.for_repair(settings, embedder=embedder)
    repaired.repair()
    assert repaired.document(doc.id).kb_id == doc.kb_id
    assert repaired.knowledge_base(doc.kb_id).name == "Work"
    repaired.close()


def test_repair_keeps_a_renamed_knowledge_base_and_bulk_added_tags(settings, embedder):
    from ragkit.store.kb import KnowledgeBase

    kb = KnowledgeBase(settings, embedder=embedder)
    kb.create_knowledge_base("Work")
    doc = kb.ingest(LIGHTHOUSE, filename="lighthouse.md", knowledge_base="Work").document
    kb.rename_knowledge_base("Work", "Projects")
    kb.add_tags([doc.id], ["coast"])
    kb.close()
    (settings.data_path / "registry.sqlite3").unlink()
    repaired = KnowledgeBase.for_repair(settings, embedder=embedder)
    repaired.repair()
    assert repaired.knowledge_base(doc.kb_id).name == "Projects"
    assert "coast" in repaired.document(doc.id).tags
    repaired.close()


def test_originals_are_kept_once_by_content_and_removed_with_the_last_document(kb):
    kb.create_knowledge_base("Work")
    pdf = (FIXTURES / "report_en.pdf").read_bytes()
    first = kb.ingest(pdf, filename="report_en.pdf").document
    second = kb.ingest(pdf, filename="report_en.pdf", knowledge_base="Work").document
    assert kb.original(first.id) == pdf == kb.original(second.id)
    kept = list((kb.settings.originals_path).rglob("*"))
    assert [p.name for p in kept if p.is_file()] == [first.content_hash]
    kb.delete(first.id)
    assert kb.original(second.id) == pdf  # still needed by the other knowledge base's copy
    kb.delete(second.id)
    assert not [p for p in kb.settings.originals_path.rglob("*") if p.is_file()]


def test_a_new_version_replaces_the_kept_original(kb):
    old = kb.ingest(b"# Notes\n\nFirst draft of the notes.", filename="notes.md").document
    new = kb.ingest(b"# Notes\n\nSecond draft of the notes.", filename="notes.md").document
    assert new.id == old.id and kb.original(new.id) == b"# Notes\n\nSecond draft of the notes."
    assert not (kb.settings.originals_path / old.content_hash[:2] / old.content_hash).exists()


def test_bulk_delete_and_bulk_tags(kb):
    ids = [kb.ingest(f"# Note {n}\n\nHarbour note number {n}.".encode(), filename=f"n{n}.md").document.id
           for n in range(3)]
    kb.update_metadata(ids[0], tags=["old"])
    tagged = kb.add_tags(ids[:2], ["harbour, 2026"])
    assert [doc.tags for doc in tagged] == [["old", "harbour", "2026"], ["harbour", "2026"]]
    with pytest.raises(InputError):
        kb.add_tags(ids, [",".join(f"t{i}" for i in range(120))])
    assert kb.document(ids[2]).tags == []  # nothing changed by the refused request
    deleted = kb.delete_many(ids[:2] + ["gone-already"])
    assert sorted(doc.id for doc in deleted) == sorted(ids[:2])
    assert [doc.id for doc in kb.documents()] == [ids[2]]


def run_cli(data_dir, *args):
    return subprocess.run([sys.executable, "-m", "ragkit", "--data-dir", str(data_dir), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_cli_knowledge_bases(tmp_path):
    data = tmp_path / "data"
    (tmp_path / "harbour.md").write_bytes(HARBOUR)
    (tmp_path / "lighthouse.md").write_bytes(LIGHTHOUSE)
    assert run_cli(data, "kb", "create", "Work").returncode == 0
    assert run_cli(data, "ingest", str(tmp_path / "harbour.md")).returncode == 0
    assert run_cli(data, "ingest", str(tmp_path / "lighthouse.md"), "--kb", "Work").returncode == 0
    listed = json.loads(run_cli(data, "kb", "list", "--json").stdout)
    assert [(b["name"], b["documents"]) for b in listed] == [("Default", 1), ("Work", 1)]
    hits = json.loads(run_cli(data, "search", "harbour crane Ines Okafor", "--kb", "Work", "--json").stdout)
    assert {hit["filename"] for hit in hits} == {"lighthouse.md"}
    docs = run_cli(data, "docs", "--kb", "Work")
    assert "Lighthouse" in docs.stdout and "Work" in docs.stdout and "Harbour" not in docs.stdout
    asked = json.loads(run_cli(data, "ask", "Who operates the crane?", "--kb", "Work", "--session", "w",
                               "--json").stdout)
    assert {s["filename"] for s in asked["sources"] + asked["closest"]} <= {"lighthouse.md"}
    again = json.loads(run_cli(data, "ask", "Who logs the storms?", "--session", "w", "--json").stdout)
    assert again["filters"]["knowledge_bases"] == [listed[1]["id"]]  # remembered for the session
    missing = run_cli(data, "search", "crane", "--kb", "Nope")
    assert missing.returncode == 1 and "no knowledge base 'Nope'" in missing.stderr
    assert run_cli(data, "kb", "rename", "Work", "Office").returncode == 0
    deleted = run_cli(data, "kb", "delete", "Office")
    assert deleted.returncode == 0 and "and 1 document" in deleted.stdout


def test_stats_count_questions_per_day_name_outcomes_in_words_and_keep_raw_similarity(kb, monkeypatch):
    from datetime import timezone

    import pandas as pd

    import ragkit.app.stats
    from ragkit.app.engine import ChatEngine
    from ragkit.app.stats import questions_per_day, turns_frame

    work = kb.create_knowledge_base("Work")
    kb.ingest(HARBOUR, filename="harbour.md")
    kb.ingest(LIGHTHOUSE, filename="lighthouse.md", knowledge_base="Work")
    engine = ChatEngine(kb.settings, kb)
    engine.history.set_session_knowledge_bases("s1", [work.id])
    engine.ask("s1", "What does the lighthouse keeper log?")
    engine.ask("s2", "Who operates the harbour crane?")
    engine.ask("s2", "What is the capital of Mongolia?")

    turns = turns_frame(engine.history)
    assert len(turns) == 3 and "not_found" not in set(turns["outcome"])
    assert "not in the documents" in set(turns["outcome"]) and "quoted from the documents" in set(turns["outcome"])
    answered = turns[turns["mode"] == "extractive"]
    assert (answered["top_score"] == 1.0).all()  # the fused relevance: the best passage of a search is 1.0
    assert answered["best_similarity"].between(0.05, 0.95).all()  # the raw cosine tells questions apart
    assert answered["best_similarity"].nunique() == len(answered)
    assert len(turns_frame(engine.history, work.id)) == 3  # s2 searched every knowledge base, Work included
    assert len(turns_frame(engine.history, "default")) == 2  # s1 searched Work only

    monkeypatch.setattr(ragkit.app.stats, "_local_zone", lambda: timezone.utc)  # days are counted in local time
    today = pd.Timestamp("2026-03-20")
    asked = pd.to_datetime(pd.Series([pd.Timestamp("2026-03-18 09:00", tz="UTC").timestamp(),
                                      pd.Timestamp("2026-03-18 15:00", tz="UTC").timestamp(),
                                      pd.Timestamp("2026-03-20 10:00", tz="UTC").timestamp()]), unit="s")
    per_day = questions_per_day(pd.DataFrame({"asked": asked}), today=today, min_days=5)
    assert list(per_day["day"].dt.strftime("%m-%d")) == ["03-16", "03-17", "03-18", "03-19", "03-20"]
    assert list(per_day["questions"]) == [0, 0, 2, 0, 1]  # days without questions are bars of 0

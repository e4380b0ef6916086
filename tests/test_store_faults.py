"""Faults a user meets, tried for real: a full disk, damaged store files, a lost catalog,
odd characters in the data dir's path, a read-only data dir, an emptied sessions file, a
file where the data dir should be.

Each runs on real files with real processes (the command line, tests/store_worker.py);
the full disk is a real 20 MB tmpfs when this machine lets the tests mount one (root),
else the same failure is injected at the same call (Chroma's add). A read-only data dir is
a read-only mount (root) or a folder without write permission. After each fault, what was
committed before it must still be listed and found, and nothing may be lost.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES, REPO
from ragkit.config import Settings
from ragkit.lang.text import search_tokens
from ragkit.store.kb import KnowledgeBase
from test_store_safety import SMALL_CHUNKS, Worker, assert_consistent, long_text, open_kb, write_file

IS_ROOT = os.geteuid() == 0


def cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragkit", "--data-dir", str(data_dir), *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, timeout=900)


@contextlib.contextmanager
def mounted_tmpfs(path: Path, size_mb: int):
    """A real tmpfs of ``size_mb`` at ``path``; yields False when this machine does not allow it."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path)],
                          capture_output=True) if IS_ROOT else None
    if done is None or done.returncode != 0:
        yield False
        return
    try:
        yield True
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, embedder) -> Path:
    """Two real documents, a user-set title and tags, one conversation: a pristine copy."""
    data_dir = tmp_path_factory.mktemp("indexed") / "data"
    kb = KnowledgeBase(Settings(data_dir=data_dir, _env_file=None), embedder=embedder)
    kb.ingest(FIXTURES / "report_en.pdf", tags=["finance"])
    tea = kb.ingest(FIXTURES / "tea_garden_zh.pdf").document
    kb.close()
    tagged = cli(data_dir, "tag", tea.id, "--title", "Tea garden guide", "--tags", "travel,茶")
    assert tagged.returncode == 0, tagged.stderr
    asked = cli(data_dir, "ask", "What was the revenue?", "--session", "s1")
    assert asked.returncode == 0, asked.stderr
    return data_dir


@pytest.fixture
def copy_of(indexed, tmp_path):
    """A fresh copy of the indexed data dir for one test to damage."""
    def make(target: Path | None = None) -> Path:
        target = target or tmp_path / "data"
        shutil.copytree(indexed, target)
        return target
    return make


# ----- a full disk ------------------------------------------------------------------------


def fill_disk(folder: Path, leave_bytes: int) -> Path:
    filler = folder / "filler"
    filler.write_bytes(b"\0" * max(0, shutil.disk_usage(folder).free - leave_bytes))
    return filler


def test_a_full_disk_refuses_the_files_that_do_not_fit_and_keeps_everything_before(tmp_path, monkeypatch):
    inputs = tmp_path / "in"
    files = [write_file(inputs, f"f{n}.txt", long_text(400, f"topic{n}x")) for n in range(8)]
    with mounted_tmpfs(tmp_path / "disk", 20) as real_disk:
        data_dir = tmp_path / "disk" / "data"
        kept = Worker(data_dir, "ingest", str(write_file(inputs, "kept.txt", long_text(100, "kept"))))
        assert "result added kept.txt" in kept.finish()
        if real_disk:
            filler = fill_disk(tmp_path / "disk", int(3.5e6))
            out = Worker(data_dir, "ingest", *map(str, files)).finish()
            results = [line.split(" ", 3)[1:] for line in out.splitlines() if line.startswith("result ")]
        else:  # no mounting here: the same failure, injected at the same call
            filler = None
            results = _ingest_with_a_full_disk_injected(data_dir, files, monkeypatch)
        assert sorted(name for _, name, _ in results) == sorted(f.name + ":" for f in files)  # one line per file
        refused = [(name, why) for status, name, why in results if status == "refused"]
        assert refused, results
        for name, why in refused:
            assert "disk holding" in why and "is full" in why and str(data_dir) in why, why
        added = {name.rstrip(":") for status, name, _ in results if status == "added"}
        if filler is not None:  # still full: the store opens and answers with what was committed
            still_full = open_kb(data_dir)
            assert still_full.search("kept keeper storm number 7", k=1)[0].filename == "kept.txt"
            still_full.close()
            filler.unlink()
        kb = assert_consistent(data_dir)
        assert {d.filename for d in kb.documents()} == {"kept.txt"} | added
        assert kb.search("kept keeper storm number 7", k=1)[0].dense_score is not None
        first_refused = next(f for f in files if f.name + ":" in {name for name, _ in refused})
        assert kb.ingest(first_refused).status == "added"  # space again: nothing blocks a retry
        kb.close()


def test_a_full_disk_when_saving_a_turn_names_the_file_and_keeps_the_conversation(tmp_path):
    from ragkit.app.history import HistoryManager
    from ragkit.errors import StorageFull
    from ragkit.types import Turn

    with mounted_tmpfs(tmp_path / "disk", 2) as real_disk:
        if not real_disk:
            pytest.skip("mounting a tmpfs needs root; the ingest test above injects the same failure")
        location = tmp_path / "disk" / "sessions.sqlite3"
        history = HistoryManager(location)
        history.add_turn("s1", Turn("first?", "first?", "kept answer", "extractive"))
        filler = fill_disk(tmp_path / "disk", 0)
        with pytest.raises(StorageFull) as refused:
            history.add_turn("s1", Turn("second?", "second?", "a long answer " * 50_000, "extractive"))
        assert str(location) in str(refused.value) and "disk is full" in str(refused.value)
        assert [t.answer for t in history.turns("s1")] == ["kept answer"]  # nothing half-saved
        filler.unlink()
        history.add_turn("s1", Turn("third?", "third?", "after space was freed", "extractive"))
        assert [t.answer for t in history.turns("s1")] == ["kept answer", "after space was freed"]
        history.close()


def _ingest_with_a_full_disk_injected(data_dir: Path, files: list[Path], monkeypatch) -> list[list[str]]:
    import chromadb.errors

    from ragkit.store.kb import IngestItem
    from ragkit.store.vectors import VectorStore

    real_add = VectorStore.add

    def add(self, passages, vectors, documents, kb_names=None):
        if any(documents[p.doc_id].filename not in ("f0.txt", "f1.txt") for p in passages):
            raise chromadb.errors.InternalError("Query error: Database error: error returned from database: "
                                                "(code: 13) database or disk is full")
        return real_add(self, passages, vectors, documents, kb_names)

    monkeypatch.setattr(VectorStore, "add", add)
    kb = open_kb(data_dir)
    results = kb.ingest_many([IngestItem.of(path) for path in files])
    kb.close()
    monkeypatch.setattr(VectorStore, "add", real_add)
    return [[r.status, r.filename + ":", r.message] for r in results]


# ----- damaged store files ----------------------------------------------------------------


@pytest.mark.parametrize("damage", ["cut in half", "overwritten"])
def test_a_damaged_vector_database_leaves_keyword_search_and_repair_rebuilds_it(copy_of, damage):
    data_dir = copy_of()
    chroma_db = data_dir / "chroma" / "chroma.sqlite3"
    if damage == "cut in half":
        with chroma_db.open("r+b") as handle:
            handle.truncate(chroma_db.stat().st_size // 2)
    else:
        chroma_db.write_bytes(b"\x00not sqlite\x00" * 4096)
    listed = cli(data_dir, "docs")
    assert listed.returncode == 0 and "Tea garden guide" in listed.stdout
    assert "vector store" in listed.stderr and "ragkit repair" in listed.stderr
    found = cli(data_dir, "search", "门票价格", "-k", "1", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)[0]["filename"] == "tea_garden_zh.pdf"  # by keywords
    repaired = cli(data_dir, "repair")
    assert repaired.returncode == 0, repaired.stderr
    assert "set the unreadable vector store aside" in repaired.stdout and "re-embedded" in repaired.stdout
    assert list(data_dir.glob("chroma.damaged-*"))  # kept for the user, not deleted
    again = cli(data_dir, "search", "ticket price tea garden", "-k", "1", "--json")
    assert again.returncode == 0 and "warning" not in again.stderr, again.stderr
    assert json.loads(again.stdout)[0]["dense_score"] is not None


def zero_graph_links(data_dir: Path) -> None:
    """Cut every level-0 link of the saved HNSW graph (each element: a 4-byte link count,
    its links, its vector, its label; the element size is in header.bin after a 4-byte
    version and three 8-byte counts): the vectors stay, searches cannot reach them."""
    (level0,) = (data_dir / "chroma").glob("*/data_level0.bin")
    header = (level0.parent / "header.bin").read_bytes()
    count, element = struct.unpack_from("<QQ", header, 4 + 16)
    data = bytearray(level0.read_bytes())
    assert count > 100 and len(data) == count * element, (count, element, len(data))  # the layout is as read
    for start in range(0, len(data), element):
        data[start:start + 4] = b"\0\0\0\0"
    level0.write_bytes(bytes(data))


def test_stored_but_unreachable_vectors_are_reported_and_repair_re_indexes_them(tmp_path):
    data_dir = tmp_path / "data"
    kb = open_kb(data_dir)
    doc = kb.ingest(long_text(2400, "reef").encode(), filename="reef.txt").document  # saved at 1,000
    kb.close()
    zero_graph_links(data_dir)
    kb = open_kb(data_dir)
    assert kb.store.count() == kb.catalog.passage_count() == doc.chunks  # the ids all agree
    assert any("not found by a search for their own vector" in note for note in kb.health), kb.health
    assert kb.search("reef storm number 77", k=1)[0].filename == "reef.txt"  # keywords still work
    report = kb.repair()
    assert report.rebuilt_index and report.unreachable_vectors > 100
    assert report.reembedded_passages == 0 and report.reindexed_passages == doc.chunks  # vectors reused
    assert kb.health == []
    kb.close()
    assert_consistent(data_dir)


def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def inconsistent_arrays(path: Path) -> None:
    with np.load(path, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    arrays["lengths"] = arrays["lengths"][:-1]
    arrays["terms"] = arrays["terms"] + 10**6
    with path.open("wb") as handle:
        np.savez(handle, **arrays)


LEXICAL_DAMAGE = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 3]),
    "empty": lambda p: p.write_bytes(b""),
    "a flipped byte": flip_a_byte,
    "inconsistent arrays": inconsistent_arrays,
    "not a snapshot": lambda p: p.write_bytes(b"PK\x03\x04 something else entirely"),
}


@pytest.mark.parametrize("damage", sorted(LEXICAL_DAMAGE))
def test_a_damaged_lexical_snapshot_is_rebuilt_silently(tmp_path, damage):
    data_dir = tmp_path / "data"
    kb = open_kb(data_dir)
    for n in range(3):
        kb.ingest(long_text(30, f"garden{n}x").encode(), filename=f"g{n}.txt")
    terms = search_tokens("garden1x keeper storm 12")
    before = {pid: round(score, 6) for pid, score in kb.lexical.scores(terms).items()}
    assert kb.search("garden1x keeper storm 12", k=1)[0].filename == "g1.txt"
    kb.close()
    snapshot = data_dir / "lexical.npz"
    LEXICAL_DAMAGE[damage](snapshot)
    listed = subprocess.run([sys.executable, str(Path(__file__).parent / "store_worker.py"), str(data_dir), "open"],
                            capture_output=True, text=True, cwd=REPO, env={**os.environ, **SMALL_CHUNKS}, timeout=300)
    assert listed.returncode == 0 and listed.stdout.strip() == "documents 3", listed.stderr
    assert "Traceback" not in listed.stderr
    kb = open_kb(data_dir)
    assert kb.health == []
    assert {pid: round(score, 6) for pid, score in kb.lexical.scores(terms).items()} == before  # the same BM25
    assert kb.search("garden1x keeper storm 12", k=1)[0].filename == "g1.txt"
    kb.close()
    from ragkit.store.lexical import LexicalIndex

    assert LexicalIndex().load(snapshot)  # rewritten whole


def test_repair_also_runs_with_a_damaged_lexical_snapshot(copy_of):
    data_dir = copy_of()
    (data_dir / "lexical.npz").write_bytes(b"")
    repaired = cli(data_dir, "repair")
    assert repaired.returncode == 0 and "nothing to repair" in repaired.stdout, repaired.stderr


# ----- a lost catalog comes back with the user's titles and tags --------------------------


def test_repair_of_a_lost_catalog_keeps_the_titles_and_tags_the_user_set(copy_of):
    data_dir = copy_of()
    before = {d["id"]: d for d in json.loads(cli(data_dir, "docs", "--json").stdout)}
    (data_dir / "registry.sqlite3").unlink()
    repaired = cli(data_dir, "repair")
    assert repaired.returncode == 0 and "restored 2 documents" in repaired.stdout, repaired.stderr
    after = {d["id"]: d for d in json.loads(cli(data_dir, "docs", "--json").stdout)}
    for doc_id, doc in before.items():
        for field in ("title", "title_from", "tags", "filename", "version", "chunks"):
            assert after[doc_id][field] == doc[field], (field, after[doc_id][field], doc[field])
    assert {tuple(d["tags"]) for d in after.values()} == {("finance",), ("travel", "茶")}


# ----- odd characters in the data dir's path ------------------------------------------------


@pytest.mark.parametrize("name", ["dq?mode=ro", "hash#part", "100%25 sure", "a b?c#d%e"])
def test_databases_stay_inside_a_data_dir_whose_name_holds_url_characters(tmp_path, name):
    parent = tmp_path / "parent"
    data_dir = parent / name
    kb = open_kb(data_dir)
    kb.ingest(b"Quokkas smile at visitors.", filename="quokka.txt")
    kb.close()
    from ragkit.app.history import HistoryManager
    from ragkit.types import Turn

    HistoryManager(data_dir / "sessions.sqlite3").add_turn("s1", Turn("q?", "q?", "a", "extractive"))
    assert sorted(p.name for p in parent.iterdir()) == [name]  # nothing written beside it
    assert {"registry.sqlite3", "sessions.sqlite3"} <= {p.name for p in data_dir.iterdir()}
    assert [d.filename for d in open_kb(data_dir).documents()] == ["quokka.txt"]
    prefix = parent / name.split("?")[0].split("#")[0]
    if prefix != data_dir:  # what the unescaped URL pointed at is still an empty data dir
        assert open_kb(prefix).documents() == []


def test_the_cli_keeps_a_question_mark_data_dir_whole(tmp_path):
    data_dir = tmp_path / "dq?mode=ro"
    added = cli(data_dir, "ingest", FIXTURES / "report_en.pdf")
    assert added.returncode == 0, added.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dq?mode=ro"]
    assert [d["filename"] for d in json.loads(cli(data_dir, "docs", "--json").stdout)] == ["report_en.pdf"]


# ----- a read-only data dir ---------------------------------------------------------------


@contextlib.contextmanager
def read_only(data_dir: Path, tmp_path: Path):
    """``data_dir`` copied onto a read-only mount (root), or with write permission removed."""
    if IS_ROOT:
        with mounted_tmpfs(tmp_path / "ro", 200) as mounted:
            if mounted:
                target = tmp_path / "ro" / "data"
                shutil.copytree(data_dir, target)
                subprocess.run(["mount", "-o", "remount,ro", str(tmp_path / "ro")], check=True)
                yield target, "Read-only file system"
                return
    folders = [data_dir, *[p for p in data_dir.rglob("*") if p.is_dir()]]
    for path in [*folders, *[p for p in data_dir.rglob("*") if p.is_file()]]:
        path.chmod(path.stat().st_mode & ~0o222)
    try:
        yield data_dir, "Permission denied"
    finally:
        for path in folders:
            path.chmod(path.stat().st_mode | 0o200)


def temporary_copies() -> set[Path]:
    import tempfile

    return set(Path(tempfile.gettempdir()).glob("ragkit-readonly-chroma-*"))


@pytest.mark.slow  # ten runs of the command line, each loading the model
def test_a_read_only_data_dir_serves_reads_and_names_the_folder_for_changes(copy_of, tmp_path):
    copies_before = temporary_copies()
    with read_only(copy_of(), tmp_path) as (data_dir, cause):
        listed = cli(data_dir, "docs")
        assert listed.returncode == 0 and "Tea garden guide" in listed.stdout, listed.stderr
        assert "read-only" in listed.stderr and cause in listed.stderr
        found = cli(data_dir, "search", "门票价格", "-k", "1", "--json")
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)[0]["filename"] == "tea_garden_zh.pdf"
        assert json.loads(found.stdout)[0]["dense_score"] is not None  # the vector store is read too
        sessions = cli(data_dir, "sessions")
        assert sessions.returncode == 0 and "s1" in sessions.stdout
        asked = cli(data_dir, "ask", "How much is a ticket to the tea garden?", "--session", "s1")
        assert asked.returncode == 0, asked.stderr
        assert "not saved to the conversation" in asked.stdout and cause in asked.stdout
        for command in (["ingest", FIXTURES / "report_en.pdf"], ["tag", "x", "--tags", "a"], ["delete", "x"],
                        ["repair"]):
            refused = cli(data_dir, *command)
            assert refused.returncode == 1 and "Traceback" not in refused.stderr
            assert str(data_dir) in refused.stderr and cause in refused.stderr, refused.stderr
            assert len(refused.stderr.strip().splitlines()) == 1 or "warning" in refused.stderr
    assert temporary_copies() <= copies_before  # the private copies of the vector store are gone


# ----- the sessions file and the data dir itself --------------------------------------------


@pytest.mark.parametrize("damage", ["emptied", "overwritten", "replaced by another database"])
def test_an_emptied_or_damaged_sessions_file_is_reported_not_shown_as_no_sessions(copy_of, damage):
    data_dir = copy_of()
    sessions = data_dir / "sessions.sqlite3"
    for extra in ("-wal", "-shm"):
        Path(f"{sessions}{extra}").unlink(missing_ok=True)
    if damage == "replaced by another database":
        shutil.copy(data_dir / "registry.sqlite3", sessions)
    else:
        sessions.write_bytes(b"" if damage == "emptied" else b"garbage, not a database " * 100)
    before = sessions.read_bytes()
    listed = cli(data_dir, "sessions")
    assert listed.returncode == 1 and "no sessions yet" not in listed.stdout
    assert "sessions.sqlite3" in listed.stderr and "Restore it from a backup" in listed.stderr
    assert ("empty" in listed.stderr) == (damage == "emptied")
    assert sessions.read_bytes() == before  # left as it was
    assert cli(data_dir, "docs").returncode == 0  # the documents are not affected


@pytest.mark.parametrize("where", ["a file", "inside a file"])
def test_a_data_dir_that_is_a_file_gives_one_clear_line(tmp_path, where):
    target = tmp_path / "notes.txt"
    target.write_text("not a folder")
    data_dir = target if where == "a file" else target / "data"
    for command in (["docs"], ["sessions"], ["search", "anything"]):
        result = cli(data_dir, *command)
        assert result.returncode == 1
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
        assert str(target) in result.stderr and "is a file" in result.stderr
    assert target.read_text() == "not a folder"

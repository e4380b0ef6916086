"""Nothing lost: the store never deletes what it cannot explain.

Faults are real: kill -9 of real processes stopped at chosen points of their work
(tests/store_worker.py), several processes on one data dir, catalog files emptied,
deleted, corrupted or rolled back, vector store files deleted. After each, the catalog
is compared with what Chroma holds, id by id. The embedding model is this suite's edge,
so thousands of passages use the fast, model-free hashing embedder (ragkit.models.embeddings); the
command-line checks use the real model.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO
from ragkit.config import Settings
from ragkit.errors import CatalogError, StoreInconsistent
from ragkit.models.embeddings import HashingEmbedder
from ragkit.store.kb import KnowledgeBase

WORKER = Path(__file__).parent / "store_worker.py"
SMALL_CHUNKS = {"RAGKIT_CHUNK_TOKENS": "64", "RAGKIT_CHUNK_OVERLAP_TOKENS": "0"}


@pytest.fixture
def data_dir(tmp_path) -> Path:
    return tmp_path / "data"


def open_kb(data_dir: Path, embedder=None) -> KnowledgeBase:
    settings = Settings(data_dir=data_dir, chunk_tokens=64, chunk_overlap_tokens=0, _env_file=None)
    return KnowledgeBase(settings, embedder=embedder or HashingEmbedder())


def long_text(paragraphs: int, topic: str) -> str:
    return "\n\n".join(f"{topic} paragraph {n} notes that the {topic} keeper logged storm number {n} "
                       f"at harbour {n % 37} in the year {1700 + n}." for n in range(paragraphs))


def write_file(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def assert_consistent(data_dir: Path) -> KnowledgeBase:
    """Open (which sweeps what is provably stale), then compare the stores id by id."""
    kb = open_kb(data_dir)
    vectors = {stored.id for stored, _ in kb.store.scan()}
    assert vectors == kb.catalog.passage_ids()
    assert kb.store.unreachable(sorted(vectors)) == []  # every vector is found by a search for itself
    for doc in kb.documents():
        assert len(kb.passages(doc.id)) == doc.chunks
    assert kb.catalog.pending_writes() == []
    assert kb.health == []
    return kb


class Worker:
    """tests/store_worker.py in its own process, optionally stopped at a point."""

    def __init__(self, data_dir: Path, *args: str, pause_at: str | None = None):
        pause = ["--pause-at", pause_at] if pause_at else []
        command = [sys.executable, str(WORKER), str(data_dir), *pause, *args]
        self.process = subprocess.Popen(command, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True,
                                        env={**os.environ, **SMALL_CHUNKS, "PYTHONFAULTHANDLER": "1"})

    def wait_for(self, prefix: str) -> str:
        """Read output lines until one starts with ``prefix`` (fails if the process ends first)."""
        for line in self.process.stdout:
            if line.startswith(prefix):
                return line.strip()
        raise AssertionError(f"worker ended without {prefix!r}: {self.process.stderr.read()[-2000:]}")

    def resume(self) -> None:
        self.process.stdin.write("\n")
        self.process.stdin.flush()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def finish(self) -> str:
        out, err = self.process.communicate(timeout=300)
        assert self.process.returncode == 0, f"exit {self.process.returncode}: {err[-6000:]}"
        return out


def vector_rows(data_dir: Path) -> int:
    """Rows in Chroma's own database, read without opening Chroma."""
    with sqlite3.connect(f"file:{data_dir / 'chroma' / 'chroma.sqlite3'}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]


# ----- the catalog is missing, empty, unreadable or older than the vectors --------------


def cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragkit", "--data-dir", str(data_dir), *args],
                          capture_output=True, text=True, cwd=REPO, timeout=300)


@pytest.fixture
def indexed_dir(data_dir, embedder) -> Path:
    """Two real documents indexed with the real model, closed again."""
    kb = KnowledgeBase(Settings(data_dir=data_dir, _env_file=None), embedder=embedder)
    kb.ingest(FIXTURES / "report_en.pdf", tags=["finance"])
    kb.ingest(FIXTURES / "tea_garden_zh.pdf", tags=["travel"])
    kb.update_metadata(kb.documents()[0].id, title="Tea garden guide")
    kb.close()
    return data_dir


def forget_catalog(data_dir: Path, how: str) -> None:
    catalog = data_dir / "registry.sqlite3"
    for extra in ("-wal", "-shm"):
        Path(str(catalog) + extra).unlink(missing_ok=True)
    if how == "emptied":
        catalog.write_bytes(b"")
    elif how == "deleted":
        catalog.unlink()
    else:
        catalog.write_bytes(b"this is not a database, it was overwritten by a backup tool\n" * 80)


@pytest.mark.parametrize("how", ["emptied", "deleted"])
def test_a_lost_catalog_stops_with_a_way_out_and_deletes_nothing(indexed_dir, how):
    before = vector_rows(indexed_dir)
    forget_catalog(indexed_dir, how)
    listing = cli(indexed_dir, "docs")
    assert listing.returncode == 1 and "no documents yet" not in listing.stdout
    assert "registry.sqlite3" in listing.stderr and "ragkit repair" in listing.stderr
    assert "lists no documents" in listing.stderr and "Nothing was deleted" in listing.stderr
    assert vector_rows(indexed_dir) == before == 5

    repaired = cli(indexed_dir, "repair")
    assert repaired.returncode == 0, repaired.stderr
    assert "restored 2 documents" in repaired.stdout
    listed = cli(indexed_dir, "docs", "--json")
    restored = {d["filename"]: d for d in __import__("json").loads(listed.stdout)}
    assert set(restored) == {"report_en.pdf", "tea_garden_zh.pdf"}
    assert restored["report_en.pdf"]["tags"] == ["finance"]
    assert "tea_garden_zh.pdf, p.2" in cli(indexed_dir, "search", "门票价格", "-k", "1").stdout
    assert vector_rows(indexed_dir) == before


def test_an_unreadable_catalog_names_the_file_and_repair_sets_it_aside(indexed_dir):
    forget_catalog(indexed_dir, "overwritten")
    with pytest.raises(CatalogError, match="registry.sqlite3.*cannot be read.*ragkit repair"):
        KnowledgeBase(Settings(data_dir=indexed_dir, _env_file=None))
    repaired = cli(indexed_dir, "repair")
    assert repaired.returncode == 0, repaired.stderr
    assert "set the unreadable catalog aside" in repaired.stdout and "restored 2 documents" in repaired.stdout
    assert list(indexed_dir.glob("registry.sqlite3.unreadable-*"))
    assert vector_rows(indexed_dir) == 5


def test_a_catalog_rolled_back_to_an_older_copy_is_refused_then_repaired(data_dir, tmp_path):
    kb = open_kb(data_dir)
    kb.ingest(b"Saffron is the stigma of a crocus.", filename="saffron.txt")
    kb.close()
    backup = tmp_path / "registry-backup.sqlite3"
    shutil.copy(data_dir / "registry.sqlite3", backup)
    kb = open_kb(data_dir)
    kb.ingest(b"Vanilla is the fruit of an orchid.", filename="vanilla.txt")
    kb.close()
    shutil.copy(backup, data_dir / "registry.sqlite3")
    with pytest.raises(StoreInconsistent, match=r"1 documents that the catalog .* does not list \(vanilla.txt\)"):
        open_kb(data_dir)
    assert vector_rows(data_dir) == 2
    settings = Settings(data_dir=data_dir, chunk_tokens=64, chunk_overlap_tokens=0, _env_file=None)
    report = KnowledgeBase.for_repair(settings, embedder=HashingEmbedder()).repair()
    assert report.restored_documents == ["vanilla.txt"]
    kb = assert_consistent(data_dir)
    assert sorted(d.filename for d in kb.documents()) == ["saffron.txt", "vanilla.txt"]


# ----- crashes: kill -9 at chosen points -----------------------------------------------


@pytest.mark.parametrize("point", ["embed", "add"])
def test_a_writer_killed_mid_ingest_leaves_no_part_of_its_file(data_dir, tmp_path, point):
    kb = open_kb(data_dir)
    kept = kb.ingest(b"The kept document survives every crash.", filename="kept.txt").document
    kb.close()
    big = write_file(tmp_path / "in", "big.txt", long_text(1500, "lighthouse"))
    worker = Worker(data_dir, "ingest", str(big), pause_at=point)
    worker.wait_for(f"paused {point}")
    if point == "add":
        assert vector_rows(data_dir) > 1  # part of the new file's vectors is really in Chroma
    worker.kill()
    kb = assert_consistent(data_dir)
    assert [d.filename for d in kb.documents()] == ["kept.txt"]
    assert kb.search("survives every crash", k=1)[0].doc_id == kept.id
    assert kb.ingest(big).status == "added"  # nothing left over blocks a retry


@pytest.mark.parametrize("point", ["delete_version", "delete_document"])
def test_a_writer_killed_after_its_commit_leaves_only_provably_stale_vectors(data_dir, tmp_path, point):
    path = write_file(tmp_path / "in", "plan.txt", long_text(40, "first"))
    kb = open_kb(data_dir)
    doc = kb.ingest(path).document
    kb.close()
    if point == "delete_version":
        path.write_text(long_text(30, "second"))
        worker = Worker(data_dir, "ingest", str(path), pause_at=point)
    else:
        worker = Worker(data_dir, "delete", doc.id, pause_at=point)
    worker.wait_for(f"paused {point}")
    worker.kill()
    kb = assert_consistent(data_dir)
    if point == "delete_version":
        assert kb.document(doc.id).version == 2 and "second" in kb.passages(doc.id)[0].text
    else:
        assert kb.documents() == []


# ----- another process opens while a writer is saving ----------------------------------


def test_opening_while_another_process_saves_deletes_none_of_its_vectors(data_dir, tmp_path):
    open_kb(data_dir).close()
    big = write_file(tmp_path / "in", "big.txt", long_text(1500, "harbour"))
    writer = Worker(data_dir, "ingest", str(big), pause_at="add")
    writer.wait_for("paused add")
    written = vector_rows(data_dir)
    other = Worker(data_dir, "open")  # a second process (the CLI, another app) opens meanwhile
    assert other.finish().strip() == "documents 0"
    beside = open_kb(data_dir)  # and one in this process
    assert beside.documents() == [] and vector_rows(data_dir) == written
    writer.resume()
    assert "result added big.txt" in writer.finish()
    kb = assert_consistent(data_dir)
    assert kb.documents()[0].chunks == len(kb.catalog.passage_ids()) > 500
    hits = beside.search("storm number 1234", k=1)  # the process that was open sees it too
    assert hits and hits[0].filename == "big.txt" and hits[0].dense_score is not None


def unreachable_by_own_text(kb: KnowledgeBase, filename: str, sample: int) -> tuple[list[str], int]:
    """Sampled passages of a file that a dense search for their own text does not return
    with similarity ≈ 1 among the candidates a search fetches (the hashing embedder gives
    a text the vector it was stored with)."""
    import random

    doc = next(d for d in kb.documents() if d.filename == filename)
    passages = random.Random(7).sample(kb.passages(doc.id), min(sample, doc.chunks))
    missed = []
    for passage in passages:
        hits = kb.store.query(kb.embedder.embed_query(passage.text), kb.settings.candidate_k)
        if not any(pid == passage.id and similarity > 0.99 for pid, similarity in hits):
            missed.append(passage.id)
    return missed, len(passages)


class Readers:
    """Processes opening the data dir one after another, throughout a block (as the app
    and the CLI do beside an ingest); ``spans`` holds each one's (start, end) in
    ``time.monotonic()`` seconds."""

    def __init__(self, data_dir: Path, count: int = 2):
        self.data_dir, self.stop, self.spans, self.failures = data_dir, threading.Event(), [], []
        self.threads = [threading.Thread(target=self._loop) for _ in range(count)]

    def _loop(self) -> None:
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                Worker(self.data_dir, "open").finish()
            except AssertionError as exc:  # the process failed: the test reports it
                self.failures.append(str(exc))
            self.spans.append((started, time.monotonic()))

    def within(self, start: float, end: float) -> int:
        """How many opens started and ended between ``start`` and ``end``."""
        return sum(1 for began, ended in self.spans if began >= start and ended <= end)

    def __enter__(self) -> "Readers":
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(300)


@pytest.mark.slow
def test_passages_stay_reachable_when_other_processes_open_the_store_during_an_ingest(data_dir, tmp_path):
    open_kb(data_dir).close()
    first = write_file(tmp_path / "in", "first.txt", long_text(3000, "lighthouse"))
    killed = Worker(data_dir, "ingest", str(first), pause_at="add")  # leaves an unsaved tail in Chroma's log
    killed.wait_for("paused add")
    killed.kill()
    big = write_file(tmp_path / "in", "big.txt", long_text(6000, "harbour"))
    with Readers(data_dir) as readers:
        started = time.monotonic()
        assert "result added big.txt" in Worker(data_dir, "ingest", str(big)).finish()
        ended = time.monotonic()
    assert readers.failures == []
    assert readers.within(started, ended) >= 2, (readers.spans, started, ended)  # opened during the ingest
    kb = assert_consistent(data_dir)
    assert kb.documents()[0].chunks > 2500
    missed, sampled = unreachable_by_own_text(kb, "big.txt", 400)
    assert missed == [], f"{len(missed)} of {sampled} passages are not found by their own text"


def lock_is_free(data_dir: Path) -> bool:
    """True when no open file of any process (this one included) holds the data dir's write lock."""
    import fcntl

    fd = os.open(data_dir / "write.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # closing lets go of the probe's lock too


def test_a_process_opens_the_vector_store_only_under_the_write_lock(data_dir, tmp_path, monkeypatch):
    """Embedded Chroma writes to its folder when a client opens: a reader that opened while
    a writer saved crashed (SIGSEGV) at its first search."""
    import chromadb

    from ragkit.store.writelock import WriteLock

    kb = open_kb(data_dir)
    kb.ingest(write_file(tmp_path / "in", "notes.txt", long_text(40, "owl")))
    stored = kb.store.count()
    kb.close()
    opened: list[bool] = []  # for each client opened: was the lock free (held by nobody) then
    real = chromadb.PersistentClient
    monkeypatch.setattr(chromadb, "PersistentClient",
                        lambda *args, **kwargs: opened.append(lock_is_free(data_dir)) or real(*args, **kwargs))
    with WriteLock(data_dir / "write.lock").hold():  # as another process saving holds it
        kb = open_kb(data_dir)
        assert [doc.filename for doc in kb.documents()] == ["notes.txt"]  # listing does not wait for it
        assert opened == []  # nor is Chroma opened beside the save
    assert kb.store.count() == stored  # the first read opens it, holding the lock itself
    assert opened == [False]
    kb.close()


def index_level0(data_dir: Path) -> bytes:
    """The bytes of the HNSW index's elements and links (data_level0.bin)."""
    return next((data_dir / "chroma").glob("*/data_level0.bin")).read_bytes()


def test_other_processes_first_reads_never_make_a_reader_reopen(data_dir, tmp_path):
    """Every first read re-applies the tail of Chroma's log its saved index lacks, and saves
    the index files again, often linked differently: a reader keeps searching its own copy
    (announcing each such save made two long-running processes re-open each other's index
    at every search)."""
    kb = open_kb(data_dir)
    kb.ingest(write_file(tmp_path / "in", "notes.txt", long_text(40, "owl")))
    assert kb.search("owl keeper storm") and kb.retriever.dense_error == ""
    generation = kb.catalog.vector_generation
    for _ in range(3):
        assert "documents 1" in Worker(data_dir, "open").finish()  # its first read checks the vectors
    assert kb.catalog.vector_generation == generation
    assert kb.search("owl keeper storm") and kb.store.generation == generation  # nothing re-opened
    kb.close()


def test_a_writer_reopens_before_saving_over_another_process_s_save(data_dir, tmp_path, caplog):
    """A process whose index files another process's first read saved again (see above)
    re-opens before it writes, so its older copy is never saved over them; every passage
    stays reachable."""
    kb = open_kb(data_dir)
    kb.ingest(write_file(tmp_path / "in", "notes.txt", long_text(40, "owl")))
    assert kb.search("owl keeper storm")
    before = index_level0(data_dir)
    for _ in range(30):  # a first read links the re-applied tail differently about half the time
        assert "documents 1" in Worker(data_dir, "open").finish()
        if index_level0(data_dir) != before:
            break
    assert index_level0(data_dir) != before, "no first read of 30 saved a differently linked index"
    with caplog.at_level(logging.INFO, logger="ragkit.store.vectors"):
        kb.ingest(write_file(tmp_path / "in", "gulls.txt", long_text(40, "gull")))
    assert "re-opening it" in caplog.text
    kb.close()
    assert_consistent(data_dir).close()


def test_a_search_while_another_process_saves_waits_for_it_then_answers_by_keywords(data_dir, tmp_path):
    """A read of embedded Chroma beside another process's save crashed the reader (SIGSEGV
    in its query), even on a client that had caught up before the save began."""
    from ragkit.store.writelock import WriteLock

    kb = open_kb(data_dir)
    kb.ingest(write_file(tmp_path / "in", "notes.txt", long_text(40, "owl")))
    assert kb.search("owl keeper storm") and kb.retriever.dense_error == ""
    kb.store.settings = kb.store.settings.model_copy(update={"vector_read_wait_s": 0.2})
    with WriteLock(data_dir / "write.lock").hold():  # as another process saving holds it
        assert kb.search("owl keeper storm number 7")  # keywords still answer
        assert "keywords only" in kb.retriever.dense_error  # no vector was read beside the save
    assert kb.search("owl keeper storm") and kb.retriever.dense_error == ""
    kb.close()


class MissingFrom:
    """A Chroma collection whose searches leave ``target`` out of results no deeper than
    ``depth`` (an approximate index missing a vector that is there; depth 0: at any depth)."""

    def __init__(self, collection, target: str, depth: int):
        self._collection, self._target, self._depth = collection, target, depth

    def __getattr__(self, name):
        return getattr(self._collection, name)

    def query(self, **kwargs):
        result = self._collection.query(**kwargs)
        if self._depth and kwargs["n_results"] > self._depth:
            return result
        for ids, distances in zip(result["ids"], result["distances"]):
            if self._target in ids:
                del distances[ids.index(self._target)]
                ids.remove(self._target)
        return result


def test_a_vector_a_search_of_candidate_k_misses_is_looked_for_deeper_before_it_is_called_unreachable(
        data_dir, tmp_path):
    kb = open_kb(data_dir)
    kb.ingest(write_file(tmp_path / "in", "notes.txt", long_text(150, "owl")))
    ids = sorted(stored.id for stored, _ in kb.store.scan())
    assert len(ids) > kb.settings.candidate_k  # room for a deeper search
    real = kb.store._collection
    kb.store._collection = MissingFrom(real, ids[0], kb.settings.candidate_k)
    assert kb.store.unreachable(ids) == []  # there, found deeper: the index is not damaged
    kb.store._collection = MissingFrom(real, ids[0], 0)
    assert kb.store.unreachable(ids) == [ids[0]]  # found at no depth: reported
    kb.store._collection = real
    kb.close()


def test_a_dead_writers_pending_row_is_cleared_by_the_next_process_that_opens(data_dir, tmp_path):
    open_kb(data_dir).close()
    path = write_file(tmp_path / "in", "notes.txt", long_text(40, "owl"))
    writer = Worker(data_dir, "ingest", str(path), pause_at="begin")  # pending row, no vector yet
    writer.wait_for("paused begin")
    writer.kill()
    from ragkit.store.catalog import Catalog

    assert len(Catalog(data_dir / "registry.sqlite3").pending_writes()) == 1
    assert Worker(data_dir, "open").finish().strip() == "documents 0"  # holding the lock proves the writer gone
    assert Catalog(data_dir / "registry.sqlite3").pending_writes() == []
    kb = assert_consistent(data_dir)
    assert kb.ingest(path).status == "added"


def test_several_processes_writing_and_deleting_at_once_stay_consistent(data_dir, tmp_path):
    open_kb(data_dir).close()
    folders = [[write_file(tmp_path / f"w{w}", f"w{w}-{n}.txt", long_text(60 + 20 * n, f"topic{w}x{n}"))
                for n in range(3)] for w in range(3)]
    first = Worker(data_dir, "ingest", str(folders[0][0]))
    assert "result added" in first.finish()
    doomed = open_kb(data_dir).documents()[0].id
    workers = [Worker(data_dir, "ingest", *map(str, files)) for files in folders[1:]]
    workers.append(Worker(data_dir, "ingest", *map(str, folders[0][1:])))
    workers.append(Worker(data_dir, "delete", doomed))
    workers.append(Worker(data_dir, "open"))
    outputs = [worker.finish() for worker in workers]
    assert sum(out.count("result added") for out in outputs) == 8
    kb = assert_consistent(data_dir)
    assert len(kb.documents()) == 8 and doomed not in {d.id for d in kb.documents()}
    for files in folders:
        for path in files[1:] if files is folders[0] else files:
            topic = path.stem.replace("-", "x")
            assert kb.search(f"topic{topic[1:]} keeper", k=1)[0].filename == path.name


# ----- an ingest does not hold up searches ---------------------------------------------


class GatedEmbedder(HashingEmbedder):
    """Blocks inside the model call of the first large batch until the test opens the gate."""

    def __init__(self):
        self.inside, self.gate = threading.Event(), threading.Event()

    def _embed(self, texts):
        if len(texts) > 8 and not self.gate.is_set():
            self.inside.set()
            assert self.gate.wait(60), "the test never released the embedder"
        return super()._embed(texts)


def test_searches_answer_while_an_ingest_is_embedding(data_dir):
    embedder = GatedEmbedder()
    kb = open_kb(data_dir, embedder)
    kb.ingest(b"Otters hold hands while they sleep.", filename="otters.txt")
    ingest = threading.Thread(target=kb.ingest, args=(long_text(400, "glacier").encode(),),
                              kwargs={"filename": "g.txt"})
    ingest.start()
    try:
        assert embedder.inside.wait(60)
        found = []
        searcher = threading.Thread(target=lambda: found.append(kb.search("otters sleep", k=1)))
        searcher.start()
        searcher.join(30)
        assert not searcher.is_alive() and found[0][0].filename == "otters.txt"  # answered mid-ingest
        assert ingest.is_alive()
    finally:
        embedder.gate.set()
        ingest.join(120)
    assert kb.search("glacier keeper storm", k=1)[0].filename == "g.txt"


# ----- lost or damaged vector store ----------------------------------------------------


def test_a_deleted_vector_store_is_reported_and_repaired_from_the_catalog(data_dir):
    kb = open_kb(data_dir)
    doc = kb.ingest(long_text(30, "comet").encode(), filename="comet.txt").document
    kb.close()
    shutil.rmtree(data_dir / "chroma")
    kb = open_kb(data_dir)
    assert any("missing" in note and "ragkit repair" in note for note in kb.health)
    assert kb.search("comet storm number 7", k=1)[0].doc_id == doc.id  # keywords still work
    again = kb.ingest(long_text(30, "comet").encode(), filename="comet.txt")
    assert again.status == "new_version"  # same bytes, but vectors lost: re-indexed, not "unchanged"
    kb.close()
    kb = assert_consistent(data_dir)
    assert kb.search("comet storm number 7", k=1)[0].dense_score is not None


@pytest.mark.parametrize("damage", ["deleted", "cut short"])
def test_damaged_vector_index_files_are_reported_and_rebuilt(data_dir, damage):
    kb = open_kb(data_dir)
    kb.ingest(long_text(3000, "reef").encode(), filename="reef.txt")  # enough for Chroma to flush its index
    passages = kb.passage_count()
    kb.close()
    for index_file in [*(data_dir / "chroma").glob("*/*.bin"), *(data_dir / "chroma").glob("*/*.pickle")]:
        if damage == "deleted" and index_file.suffix == ".bin":
            index_file.unlink()
        elif damage == "cut short":
            with index_file.open("r+b") as handle:
                handle.truncate(index_file.stat().st_size // 2)
    kb = open_kb(data_dir)
    assert kb.health and "ragkit repair" in kb.health[0]
    assert kb.search("reef storm number 77", k=1)[0].filename == "reef.txt"
    report = kb.repair()
    assert report.rebuilt_index and report.reembedded_passages == passages
    assert kb.health == []
    kb.close()
    kb = assert_consistent(data_dir)
    assert kb.search("reef storm number 77", k=1)[0].dense_score is not None


def test_documents_nothing_survives_of_are_listed_for_upload_and_removed(data_dir):
    kb = open_kb(data_dir)
    kb.ingest(b"Only in one place.", filename="fragile.txt")
    doc = kb.documents()[0]
    kb.close()
    with sqlite3.connect(data_dir / "registry.sqlite3") as conn:
        conn.execute("DELETE FROM passages")
    shutil.rmtree(data_dir / "chroma")
    kb = open_kb(data_dir)
    report = kb.repair()
    assert report.must_upload_again == ["fragile.txt"] and kb.document(doc.id) is None
    assert kb.ingest(b"Only in one place.", filename="fragile.txt").status == "added"


# ----- a data dir written by the previous release ---------------------------------------


def make_previous_release_data_dir(data_dir: Path, embedder, text: str) -> None:
    """The registry schema and vector metadata the previous release wrote."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    data_dir.mkdir(parents=True)
    with sqlite3.connect(data_dir / "registry.sqlite3") as conn:
        conn.execute("""CREATE TABLE documents (id TEXT PRIMARY KEY, filename TEXT NOT NULL, title TEXT NOT NULL,
            doc_type TEXT NOT NULL, content_hash TEXT NOT NULL, version INTEGER NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]', size_bytes INTEGER NOT NULL, pages INTEGER NOT NULL,
            chunks INTEGER NOT NULL, tokens INTEGER NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL)""")
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO documents VALUES ('abc123def456', 'legacy.txt', 'legacy', 'txt', 'h', 2, "
                     "'[\"old\"]', "
                     "10, 1, 1, 12, 1.0, 2.0)")
        conn.execute("INSERT INTO meta VALUES ('embedding_model', ?), ('revision', '3')", (embedder.name,))
    client = chromadb.PersistentClient(path=str(data_dir / "chroma"),
                                       settings=ChromaSettings(anonymized_telemetry=False))
    collection = client.get_or_create_collection("ragkit", embedding_function=None,
                                                 configuration={"hnsw": {"space": "cosine"}})
    meta = {"doc_id": "abc123def456", "page": 1, "position": 0, "start": 0, "end": len(text), "tokens": 12,
            "title": "legacy", "filename": "legacy.txt", "doc_type": "txt"}
    collection.add(ids=["abc123def456-v2-0", "abc123def456-v1-0"], documents=[text, "An interrupted older version."],
                   metadatas=[{**meta, "version": 2}, {**meta, "version": 1}],
                   embeddings=embedder.embed_documents([text, "An interrupted older version."]))
    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient._identifier_to_system.pop(str(data_dir / "chroma"), None)


def test_a_data_dir_from_the_previous_release_opens_with_its_documents(data_dir, embedder):
    make_previous_release_data_dir(data_dir, embedder, "The old release stored this sentence about owls.")
    kb = KnowledgeBase(Settings(data_dir=data_dir, _env_file=None), embedder=embedder)
    assert [d.filename for d in kb.documents()] == ["legacy.txt"]
    assert kb.search("owls", k=1)[0].filename == "legacy.txt"
    assert kb.health == [] and kb.catalog.passage_count() == 1
    assert {stored.id for stored, _ in kb.store.scan()} == {"abc123def456-v2-0"}  # the old version was swept
    assert kb.documents()[0].tags == ["old"] and kb.documents()[0].source == "legacy.txt"

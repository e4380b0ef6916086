"""Replicas of a team deployment: separate processes with data dirs of their own, sharing
one PostgreSQL database (RAGKIT_DATABASE_URL) and one Chroma server (RAGKIT_CHROMA_URL).

Both servers are real and started once per run (tests/servers.py); each test has its own
database and collection. The command-line replicas use the real packaged model (its ONNX
copy is put in each data dir, as a replica that ran before would have it); the crash and
lock tests use store_worker.py and its hashing embedder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import REPO
from ragkit.config import Settings
from ragkit.models.embeddings import HashingEmbedder
from ragkit.store.catalog import HOST, Catalog, PendingWrite
from ragkit.store.kb import KnowledgeBase
from ragkit.store.writelock import DatabaseWriteLock
from test_store_safety import WORKER, long_text, write_file

CONSISTENT_WITHIN_S = 5.0  # the bound for another replica to see a change


class Replica:
    """One replica: ``python -m ragkit`` with a data dir of its own and the shared servers."""

    def __init__(self, data_dir: Path, env: dict[str, str], models: Path | None):
        self.data_dir = data_dir
        self.env = env
        if models is not None:  # the model's ONNX copy, as a replica that ran before has it
            shutil.copytree(models, data_dir / "models" / models.name)

    def popen(self, *args: str) -> subprocess.Popen:
        """Start a command; the caller waits for it."""
        return subprocess.Popen([sys.executable, "-m", "ragkit", "--data-dir", str(self.data_dir), *args],
                                cwd=REPO, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def run(self, *args: str) -> str:
        """Run a command to its end; its output (fails the test on a non-zero exit)."""
        process = self.popen(*args)
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, f"ragkit {' '.join(args)} exited {process.returncode}: {err[-2000:]}"
        return out


@pytest.fixture
def shared_env(database_url, chroma_server) -> dict[str, str]:
    """The environment every replica of this test shares."""
    return {**os.environ, "RAGKIT_DATABASE_URL": database_url, "RAGKIT_CHROMA_URL": chroma_server.url,
            "RAGKIT_COLLECTION": f"t{uuid.uuid4().hex[:12]}"}


@pytest.fixture
def replicas(tmp_path, shared_env, embedder) -> tuple[Replica, Replica]:
    """Replicas A and B of one deployment, with the packaged model."""
    models = getattr(embedder, "_copy_dir", None)
    models = models if models is not None and models.is_dir() else None
    return (Replica(tmp_path / "replica-a", shared_env, models), Replica(tmp_path / "replica-b", shared_env, models))


def team_settings_of(env: dict[str, str], data_dir: Path, **extra) -> Settings:
    """In-process settings of a replica sharing ``env``'s servers."""
    return Settings(data_dir=data_dir, database_url=env["RAGKIT_DATABASE_URL"], chroma_url=env["RAGKIT_CHROMA_URL"],
                    collection=env["RAGKIT_COLLECTION"], _env_file=None, **extra)


# ----- one knowledge base through several replicas ----------------------------------------


def test_documents_and_a_conversation_are_shared_by_command_line_replicas(replicas, tmp_path):
    a, b = replicas
    folder = tmp_path / "in"
    write_file(folder, "pumps.txt", "The Zephyr-9 pump moves 40 litres a minute at the north plant.")
    write_file(folder, "tea.txt", "Longjing tea is grown near West Lake in Hangzhou. It is pan-fired by hand.")
    a.run("ingest", str(folder))
    hits = json.loads(b.run("search", "Zephyr-9 pump", "--json"))  # ingested in A, found in B
    assert hits and hits[0]["filename"] == "pumps.txt"
    a.run("ask", "Where is Longjing tea grown?", "--session", "shared-chat")
    b.run("ask", "How is it processed?", "--session", "shared-chat", "--trace")
    b.run("delete", hits[0]["doc_id"])  # deleted in B, gone in A
    assert [doc["filename"] for doc in json.loads(a.run("docs", "--json"))] == ["tea.txt"]
    exported = json.loads(a.run("sessions", "export", "shared-chat", "--format", "json"))
    assert [turn["question"] for turn in exported["turns"]] == ["Where is Longjing tea grown?",
                                                               "How is it processed?"]
    assert "West Lake" in exported["turns"][0]["answer"]


def test_replicas_ingesting_different_files_at_once_both_succeed(shared_env, tmp_path):
    open_team_kb(shared_env, tmp_path / "a").close()
    first = write_file(tmp_path / "in", "owls.txt", long_text(60, "owl"))
    second = write_file(tmp_path / "in", "foxes.txt", long_text(60, "fox"))
    running = [TeamWorker(shared_env, tmp_path / "b", "ingest", str(first)),
               TeamWorker(shared_env, tmp_path / "c", "ingest", str(second))]
    assert all("result added" in worker.finish() for worker in running)
    kb = open_team_kb(shared_env, tmp_path / "a")
    assert sorted(doc.filename for doc in kb.documents()) == ["foxes.txt", "owls.txt"]
    assert {stored.id for stored, _ in kb.store.scan()} == kb.catalog.passage_ids()
    assert kb.search("fox keeper storm", k=1)[0].filename == "foxes.txt"
    kb.close()


def test_the_same_file_added_through_two_replicas_at_once_ends_as_one_document(shared_env, tmp_path):
    open_team_kb(shared_env, tmp_path / "a").close()
    path = write_file(tmp_path / "in", "minutes.txt", long_text(40, "council"))
    running = [TeamWorker(shared_env, tmp_path / "b", "ingest", str(path)),
               TeamWorker(shared_env, tmp_path / "c", "ingest", str(path))]
    outcomes = sorted(worker.finish().split("\n")[0].split()[1] for worker in running)
    assert outcomes == ["added", "unchanged"]  # the second writer waited its turn and found it there
    kb = open_team_kb(shared_env, tmp_path / "a")
    [doc] = kb.documents()
    assert doc.version == 1 and {stored.id for stored, _ in kb.store.scan()} == kb.catalog.passage_ids()
    kb.close()


def test_a_long_running_replica_sees_another_replicas_changes_without_restarting(shared_env, tmp_path):
    settings_b = team_settings_of(shared_env, tmp_path / "b", chunk_tokens=64, chunk_overlap_tokens=0)
    b = KnowledgeBase(settings_b, embedder=HashingEmbedder())  # open before A writes anything
    assert b.search("heron", k=1) == []
    a = KnowledgeBase(team_settings_of(shared_env, tmp_path / "a", chunk_tokens=64, chunk_overlap_tokens=0),
                      embedder=HashingEmbedder())
    doc = a.ingest(long_text(12, "heron").encode(), filename="herons.txt").document
    assert wait_until(lambda: [hit.doc_id for hit in b.search("heron keeper storm", k=1)] == [doc.id])
    a.delete(doc.id)
    assert wait_until(lambda: b.search("heron keeper storm", k=1) == [])
    a.close()
    b.close()


def wait_until(condition, timeout_s: float = CONSISTENT_WITHIN_S) -> bool:
    """Poll ``condition`` until it holds or the time is up; True when it held."""
    deadline = time.monotonic() + timeout_s
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


# ----- writers exclude each other through the database -------------------------------------


def test_the_database_lock_excludes_writers_and_dies_with_its_holder(database_url, tmp_path):
    url = Settings(database_url=database_url, _env_file=None).database_url
    first, second = DatabaseWriteLock(url), DatabaseWriteLock(url)
    with first.hold() as held:
        assert held and first.held_here
        with second.hold(wait=False) as other:
            assert other is False
        with second.hold(timeout=0.3) as other:
            assert other is False
    with second.hold(wait=False) as other:
        assert other is True
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; sys.path.insert(0, '.'); from ragkit.store.writelock import "
         "DatabaseWriteLock as L; lock = L(sys.argv[1]); h = lock.hold(); h.__enter__(); print('held', flush=True); "
         "time.sleep(600)", url], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with first.hold(wait=False) as other:
            assert other is False  # another process (another machine, for all the server knows) holds it
        holder.kill()
        holder.wait(timeout=30)
        with first.hold(timeout=10) as other:
            assert other is True  # the server let go of a killed holder's lock
    finally:
        holder.kill()


def test_a_pending_write_is_abandoned_only_when_its_writer_is_gone():
    now = time.time()
    elsewhere_live = PendingWrite("d", 1, "db-host-2:4242:abcd", now - 300, "db-host-2", now + 30)
    elsewhere_dead = PendingWrite("d", 1, "db-host-2:4242:abcd", now - 300, "db-host-2", now - 1)
    here_dead = PendingWrite("d", 1, f"{HOST}:999999999:abcd", now, HOST, now + 30)
    here_live = PendingWrite("d", 1, f"{HOST}:{os.getpid()}:other", now, HOST, now + 30)
    assert not elsewhere_live.abandoned() and elsewhere_dead.abandoned()
    assert here_dead.abandoned() and not here_live.abandoned()


class TeamWorker:
    """tests/store_worker.py as a replica of the shared servers, optionally paused at a point."""

    def __init__(self, env: dict[str, str], data_dir: Path, *args: str, pause_at: str | None = None):
        pause = ["--pause-at", pause_at] if pause_at else []
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), str(data_dir), *pause, *args], cwd=REPO, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**env, "RAGKIT_CHUNK_TOKENS": "64", "RAGKIT_CHUNK_OVERLAP_TOKENS": "0"})

    def wait_for(self, prefix: str) -> str:
        for line in self.process.stdout:
            if line.startswith(prefix):
                return line.strip()
        raise AssertionError(f"worker ended without {prefix!r}: {self.process.stderr.read()[-2000:]}")

    def finish(self) -> str:
        out, err = self.process.communicate(input="\n", timeout=300)
        assert self.process.returncode == 0, err[-2000:]
        return out


def open_team_kb(env: dict[str, str], data_dir: Path) -> KnowledgeBase:
    return KnowledgeBase(team_settings_of(env, data_dir, chunk_tokens=64, chunk_overlap_tokens=0),
                         embedder=HashingEmbedder())


def test_a_replica_killed_mid_ingest_leaves_nothing_and_the_next_opener_sweeps_it(shared_env, tmp_path):
    kb = open_team_kb(shared_env, tmp_path / "a")
    kept = kb.ingest(b"The kept document survives the crash of another replica.", filename="kept.txt").document
    kb.close()
    big = write_file(tmp_path / "in", "big.txt", long_text(120, "lighthouse"))
    writer = TeamWorker(shared_env, tmp_path / "b", "ingest", str(big), pause_at="add")
    writer.wait_for("paused add")  # part of its vectors is on the Chroma server, its version pending
    catalog = Catalog(Settings(database_url=shared_env["RAGKIT_DATABASE_URL"], _env_file=None).catalog_location)
    assert len(catalog.pending_writes()) == 1
    writer.process.kill()
    writer.process.wait(timeout=30)
    assert TeamWorker(shared_env, tmp_path / "c", "open").finish().strip() == "documents 1"
    assert catalog.pending_writes() == []
    kb = open_team_kb(shared_env, tmp_path / "a")
    assert {stored.id for stored, _ in kb.store.scan()} == kb.catalog.passage_ids()
    assert [d.filename for d in kb.documents()] == ["kept.txt"]
    assert kb.search("survives the crash", k=1)[0].doc_id == kept.id
    assert kb.ingest(big).status == "added"  # nothing left over blocks a retry
    kb.close()
    catalog.close()


def test_a_live_replicas_half_written_version_is_never_swept(shared_env, tmp_path):
    open_team_kb(shared_env, tmp_path / "a").close()
    path = write_file(tmp_path / "in", "slow.txt", long_text(60, "badger"))
    writer = TeamWorker(shared_env, tmp_path / "b", "ingest", str(path), pause_at="add")
    writer.wait_for("paused add")
    assert TeamWorker(shared_env, tmp_path / "c", "open").finish().strip() == "documents 0"
    writer.process.stdin.write("\n")
    writer.process.stdin.flush()
    assert "result added" in writer.finish()
    kb = open_team_kb(shared_env, tmp_path / "a")
    [doc] = kb.documents()
    assert len(kb.passages(doc.id)) == doc.chunks
    assert {stored.id for stored, _ in kb.store.scan()} == kb.catalog.passage_ids()
    assert kb.catalog.pending_writes() == []
    kb.close()

"""The document catalog: documents, their versions, tags and passages, in one database.

``registry.sqlite3`` in the data dir (or ``RAGKIT_DATABASE_URL``) holds:

- ``documents``: one row per document and its current version;
- ``passages``: the current version's passages, with their text and search tokens (the
  lexical index is built from these; the text lets a lost vector index be re-embedded);
- ``pending_writes``: a document version whose vectors are being written to Chroma and
  not yet committed here; its vectors are not stale while its writer lives. The row
  names the writer's host and a lease the writer renews while it works: a row whose
  lease ran out, or whose writer on this host is no longer running, is abandoned;
- ``removed_documents``: ids of deleted documents, so vectors left by an interrupted
  delete can be proven stale;
- ``knowledge_bases``: named sets of documents (each document belongs to one; a search
  is kept inside the ones it is given). Data from before they existed is "Default";
- ``meta``: the embedding model, a revision counter bumped by every change, and the
  vector generation bumped by every Chroma write.

A version becomes current in one transaction that writes its row and passages and clears
its pending row; nothing else ever makes a version current.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import unicodedata
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sqlalchemy import Connection, text

from ragkit.errors import CatalogError, InputError
from ragkit.ingest.chunking import contextual_text
from ragkit.models.sentence_vectors import pack, unpack
from ragkit.store.db import DatabaseUnreadable, is_postgres, open_migrated, read, read_only_reason, write
from ragkit.types import DEFAULT_KB_ID, DEFAULT_KB_NAME, DocumentRecord, KnowledgeBaseInfo, Passage

HOST = socket.gethostname()
log = logging.getLogger(__name__)
WRITER_ID = f"{HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"  # who wrote a pending row
MAX_KB_NAME_CHARS = 80






def check_kb_name(name: str) -> str:
    """The name trimmed, or InputError saying what is wrong with it."""
    cleaned = " ".join((name or "").split())
    if not cleaned:
        raise InputError("a knowledge base needs a name")
    if len(cleaned) > MAX_KB_NAME_CHARS:
        raise InputError(f"a knowledge base name has at most {MAX_KB_NAME_CHARS} characters, not {len(cleaned)}")
    if any(unicodedata.category(char) in ("Cc", "Cf") for char in cleaned):
        raise InputError("a knowledge base name cannot hold control or formatting characters")
    return cleaned


@dataclass(frozen=True)
class PendingWrite:
    """A document version whose vectors a writer is saving (or was, when it died)."""

    doc_id: str
    version: int
    writer: str
    started_at: float
    host: str = ""
    lease_until: float = 0.0  # the writer renews it while it works

    def abandoned(self, now: float | None = None) -> bool:
        """True when no writer is at work on it any more: it is this very process's and not
        in flight (the caller checks that), its lease ran out, or its writer on this host is
        no longer running. Only meaningful to a holder of the write lock."""
        if self.writer == WRITER_ID or self.lease_until < (time.time() if now is None else now):
            return True
        return self.host == HOST and not _process_running(self.writer)


def _process_running(writer: str) -> bool:
    """Whether the process of a writer id ("host:pid:tag") still runs on this host."""
    try:
        pid = int(writer.split(":")[1])
    except (IndexError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


PENDING_COLUMNS = "doc_id, version, writer, started_at, host, lease_until"


def _legacy_schema(conn: Connection) -> None:
    """Version 1: the registry as first released (adopted as is when it exists)."""
    conn.execute(text(
        """CREATE TABLE IF NOT EXISTS documents (
            id TEXT PRIMARY KEY, filename TEXT NOT NULL, title TEXT NOT NULL,
            doc_type TEXT NOT NULL, content_hash TEXT NOT NULL, version INTEGER NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]', size_bytes INTEGER NOT NULL, pages INTEGER NOT NULL,
            chunks INTEGER NOT NULL, tokens INTEGER NOT NULL,
            created_at REAL NOT NULL, updated_at REAL NOT NULL)"""))
    conn.execute(text("CREATE INDEX IF NOT EXISTS documents_hash ON documents(content_hash)"))
    conn.execute(text("CREATE INDEX IF NOT EXISTS documents_filename ON documents(filename)"))
    conn.execute(text("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"))


def _passages_and_write_safety(conn: Connection) -> None:
    """Version 2: document identity by source, user-edited titles, passages in the
    catalog, pending writes and removed documents (see the module docstring)."""
    conn.execute(text("ALTER TABLE documents ADD COLUMN source TEXT NOT NULL DEFAULT ''"))
    conn.execute(text("UPDATE documents SET source = filename"))
    conn.execute(text("ALTER TABLE documents ADD COLUMN title_from TEXT NOT NULL DEFAULT 'file'"))
    conn.execute(text("CREATE INDEX documents_source ON documents(source)"))
    conn.execute(text(
        """CREATE TABLE passages (
            id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, version INTEGER NOT NULL,
            position INTEGER NOT NULL, page INTEGER NOT NULL, start_char INTEGER NOT NULL,
            end_char INTEGER NOT NULL, tokens INTEGER NOT NULL, text TEXT NOT NULL,
            terms TEXT NOT NULL)"""))
    conn.execute(text("CREATE INDEX passages_doc ON passages(doc_id, position)"))
    conn.execute(text(
        """CREATE TABLE pending_writes (
            doc_id TEXT NOT NULL, version INTEGER NOT NULL, writer TEXT NOT NULL,
            started_at REAL NOT NULL, PRIMARY KEY (doc_id, version))"""))
    conn.execute(text("CREATE TABLE removed_documents (doc_id TEXT PRIMARY KEY, removed_at REAL NOT NULL)"))
    has_documents = conn.execute(text("SELECT COUNT(*) FROM documents")).scalar_one()
    if has_documents:  # a registry from before passages lived here: filled from Chroma on open
        _set_meta(conn, "passages_backfill", "needed")


def _knowledge_bases(conn: Connection) -> None:
    """Version 3: knowledge bases; every document so far belongs to "Default"."""
    conn.execute(text("CREATE TABLE knowledge_bases (id TEXT PRIMARY KEY, name TEXT NOT NULL, "
                      "created_at REAL NOT NULL)"))
    conn.execute(text("CREATE UNIQUE INDEX knowledge_bases_name ON knowledge_bases(lower(name))"))
    conn.execute(text("INSERT INTO knowledge_bases(id, name, created_at) VALUES (:id, :name, :t)"),
                 {"id": DEFAULT_KB_ID, "name": DEFAULT_KB_NAME, "t": time.time()})
    conn.execute(text(f"ALTER TABLE documents ADD COLUMN kb_id TEXT NOT NULL DEFAULT '{DEFAULT_KB_ID}'"))
    conn.execute(text("CREATE INDEX documents_kb ON documents(kb_id)"))


def _writer_leases(conn: Connection) -> None:
    """Version 4: a pending write names its writer's host and a lease the writer renews, so
    replicas on several machines can tell a dead writer's row from a live one's."""
    conn.execute(text("ALTER TABLE pending_writes ADD COLUMN host TEXT NOT NULL DEFAULT ''"))
    conn.execute(text("ALTER TABLE pending_writes ADD COLUMN lease_until REAL NOT NULL DEFAULT 0"))


def _who_changed_what(conn: Connection) -> None:
    """Version 5: who added each document and who changed it last; who deleted a document
    and what it was called."""
    conn.execute(text("ALTER TABLE documents ADD COLUMN added_by TEXT NOT NULL DEFAULT ''"))
    conn.execute(text("ALTER TABLE documents ADD COLUMN changed_by TEXT NOT NULL DEFAULT ''"))
    conn.execute(text("ALTER TABLE removed_documents ADD COLUMN removed_by TEXT NOT NULL DEFAULT ''"))
    conn.execute(text("ALTER TABLE removed_documents ADD COLUMN title TEXT NOT NULL DEFAULT ''"))


def _passage_sections(conn: Connection) -> None:
    """Version 6: each passage's section path (the headings in force where it starts, "A > B");
    passages stored before are left with none ("") until their document is indexed again."""
    conn.execute(text("ALTER TABLE passages ADD COLUMN section TEXT NOT NULL DEFAULT ''"))


def _sentence_vectors(conn: Connection) -> None:
    """Version 7: each passage's sentence vectors (``sentence_vectors``), kept apart from the
    passages so that reading passages never reads them; passages stored before have none
    until their document is indexed again (or ``reindex``)."""
    conn.execute(text("CREATE TABLE sentence_vectors (passage_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, "
                      "vectors BLOB NOT NULL)"))
    conn.execute(text("CREATE INDEX sentence_vectors_doc ON sentence_vectors (doc_id)"))


MIGRATIONS = [_legacy_schema, _passages_and_write_safety, _knowledge_bases, _writer_leases, _who_changed_what,
              _passage_sections, _sentence_vectors]


@dataclass(frozen=True)
class Removal:
    """A deleted document, as the Documents page lists it."""

    doc_id: str
    title: str
    removed_by: str
    removed_at: float


def _set_meta(conn: Connection, key: str, value: str) -> None:
    conn.execute(
        text("INSERT INTO meta(key, value) VALUES (:k, :v) ON CONFLICT(key) DO UPDATE SET value = :v"),
        {"k": key, "v": value},
    )


def _bump(conn: Connection, key: str) -> None:
    conn.execute(text(
        "INSERT INTO meta(key, value) VALUES (:k, '1') ON CONFLICT(key) "
        "DO UPDATE SET value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)"), {"k": key})


class Catalog:
    """Documents and passages in SQLite (or any SQLAlchemy URL); safe across threads and
    processes (every write is one transaction)."""

    def __init__(self, location: str | Path, lease_s: float = 60.0):
        self.location = str(location)
        self.lease_s = lease_s
        self._renewer: threading.Thread | None = None
        self._documents_cache: tuple[int, list[DocumentRecord]] | None = None
        # Pending writes this object is saving right now. A writer holds the data dir's write
        # lock from ``begin_writes`` to its commit, so whoever holds the lock knows every other
        # pending row is abandoned (see ``integrity``).
        self.in_flight: set[tuple[str, int]] = set()
        self._in_flight_lock = threading.Lock()
        try:
            self._engine = open_migrated(location, "catalog", MIGRATIONS)
        except DatabaseUnreadable as exc:
            raise CatalogError(
                f"the document catalog {self.location} cannot be read ({exc}). Nothing was changed. "
                "Restore it from a backup, or move it aside and run `python -m ragkit repair` to rebuild "
                "it from what the vector store holds."
            ) from None

    @property
    def read_only(self) -> str:
        """Why the catalog cannot be changed ("" when it can): it can still be read."""
        return read_only_reason(self._engine)

    # ----- meta --------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """A metadata value, or None."""
        with read(self._engine) as conn:
            return conn.execute(text("SELECT value FROM meta WHERE key = :k"), {"k": key}).scalar()

    def set_meta(self, key: str, value: str) -> None:
        """Store a metadata value."""
        with write(self._engine) as conn:
            _set_meta(conn, key, value)

    @property
    def revision(self) -> int:
        """Counter bumped by every change to documents or passages."""
        return int(self.get_meta("revision") or 0)

    @property
    def vector_generation(self) -> int:
        """Counter bumped before and after every write to the vector store, and when a
        ``reindex`` changed how the store is searched (``announce_search_change``), by any process."""
        return int(self.get_meta("vector_generation") or 0)

    def counters(self) -> tuple[int, int]:
        """(revision, vector generation), read together."""
        with read(self._engine) as conn:
            values = dict(conn.execute(text(
                "SELECT key, value FROM meta WHERE key IN ('revision', 'vector_generation')")).all())
        return int(values.get("revision") or 0), int(values.get("vector_generation") or 0)

    def begin_vector_write(self, outermost: bool = True) -> int:
        """Announce a vector-store write to other processes (they re-open after it) and,
        for the ``outermost`` of nested writes, record that one is under way until
        ``end_vector_write`` says it finished: a write cut short (a killed process, a full
        disk) can leave Chroma's index files half-saved, so the next sweep checks them
        all. Returns the new generation."""
        with write(self._engine) as conn:
            _bump(conn, "vector_generation")
            if outermost:
                _set_meta(conn, "vector_write_open", f"{WRITER_ID} {time.time():.0f}")
            return int(conn.execute(text("SELECT value FROM meta WHERE key = 'vector_generation'")).scalar_one())

    def announce_search_change(self) -> int:
        """Bump the vector generation without a vector write: other processes then catch up
        with how this store is searched (``KnowledgeBase._sync``: its reranker, after
        ``reindex`` stored sentence vectors). Returns the new generation."""
        with write(self._engine) as conn:
            _bump(conn, "vector_generation")
            return int(conn.execute(text("SELECT value FROM meta WHERE key = 'vector_generation'")).scalar_one())

    def end_vector_write(self, finished: bool) -> int:
        """Announce the end of a vector-store write; ``finished``: it completed, so the
        index files are whole again. Returns the new generation."""
        with write(self._engine) as conn:
            _bump(conn, "vector_generation")
            if finished:
                conn.execute(text("DELETE FROM meta WHERE key = 'vector_write_open'"))
            return int(conn.execute(text("SELECT value FROM meta WHERE key = 'vector_generation'")).scalar_one())

    def vector_write_interrupted(self) -> bool:
        """True when a vector-store write began and did not finish (only meaningful to a
        process holding the write lock, which no writer then holds)."""
        return self.get_meta("vector_write_open") is not None

    def vector_write_checked(self) -> None:
        """The index files were checked whole after an interrupted write."""
        with write(self._engine) as conn:
            conn.execute(text("DELETE FROM meta WHERE key = 'vector_write_open'"))

    # ----- documents ---------------------------------------------------------------

    def documents(self) -> list[DocumentRecord]:
        """Every document, most recently updated first (cached until the next change)."""
        with read(self._engine) as conn:
            revision = int(conn.execute(text("SELECT value FROM meta WHERE key = 'revision'")).scalar() or 0)
            cached = self._documents_cache
            if cached is not None and cached[0] == revision:
                return list(cached[1])
            rows = conn.execute(text("SELECT * FROM documents ORDER BY updated_at DESC, id")).mappings().all()
        records = [_record(row) for row in rows]
        self._documents_cache = (revision, records)
        return list(records)

    def document(self, doc_id: str) -> DocumentRecord | None:
        """The document with this id, if any."""
        return next((doc for doc in self.documents() if doc.id == doc_id), None)

    def by_hash(self, digest: str, kb_id: str | None = None) -> DocumentRecord | None:
        """A document with exactly these bytes (in this knowledge base, when given), if any."""
        return self._first_where("content_hash", digest, kb_id)

    def by_source(self, source: str, kb_id: str | None = None) -> DocumentRecord | None:
        """The document stored under this source (in this knowledge base, when given), if any."""
        return self._first_where("source", source, kb_id)

    def hash_in_use(self, digest: str) -> bool:
        """True when any document, in any knowledge base, has these bytes."""
        return self._first_where("content_hash", digest, None) is not None

    def _first_where(self, column: str, value: str, kb_id: str | None) -> DocumentRecord | None:
        # Asked of the (indexed) table: a folder ingest asks for every file, and copying the
        # whole document list each time would grow with the knowledge base.
        scope = "" if kb_id is None else " AND kb_id = :kb"
        with read(self._engine) as conn:
            row = conn.execute(text(f"SELECT * FROM documents WHERE {column} = :value{scope} "  # noqa: S608
                                    "ORDER BY updated_at DESC, id LIMIT 1"),
                               {"value": value, "kb": kb_id}).mappings().first()
        return _record(row) if row is not None else None

    # ----- knowledge bases ---------------------------------------------------------

    def knowledge_bases(self) -> list[KnowledgeBaseInfo]:
        """Every knowledge base with its number of documents, oldest first."""
        with read(self._engine) as conn:
            rows = conn.execute(text(
                "SELECT k.id, k.name, k.created_at, (SELECT COUNT(*) FROM documents d WHERE d.kb_id = k.id) "
                "FROM knowledge_bases k ORDER BY k.created_at, k.id")).all()
        return [KnowledgeBaseInfo(*row) for row in rows]

    def knowledge_base(self, name_or_id: str) -> KnowledgeBaseInfo:
        """The knowledge base with this id or (case-insensitive) name; InputError naming the
        existing ones when there is none."""
        bases = self.knowledge_bases()
        wanted = " ".join((name_or_id or "").split()).lower()
        found = next((b for b in bases if b.id == name_or_id), None) or next(
            (b for b in bases if b.name.lower() == wanted), None)
        if found is None:
            names = ", ".join(b.name for b in bases)
            raise InputError(f"no knowledge base {name_or_id!r}; there are: {names}")
        return found

    def default_knowledge_base(self) -> KnowledgeBaseInfo:
        """Where documents go when no knowledge base is named: "Default", else the oldest."""
        bases = self.knowledge_bases()
        return next((b for b in bases if b.id == DEFAULT_KB_ID), bases[0])

    def create_knowledge_base(self, name: str, kb_id: str | None = None) -> KnowledgeBaseInfo:
        """A new, empty knowledge base; InputError for a bad or taken name."""
        name = check_kb_name(name)
        with write(self._engine) as conn:
            self._check_free(conn, name)
            new_id = kb_id or uuid.uuid4().hex[:8]
            conn.execute(text("INSERT INTO knowledge_bases(id, name, created_at) VALUES (:id, :name, :t)"),
                         {"id": new_id, "name": name, "t": time.time()})
            _bump(conn, "revision")
        return self.knowledge_base(new_id)

    def ensure_knowledge_base(self, kb_id: str, name: str) -> None:
        """Create the knowledge base ``kb_id`` if it is missing (``repair``), under ``name`` or,
        when that is taken or unusable, a name made from it and its id."""
        with read(self._engine) as conn:
            if conn.execute(text("SELECT 1 FROM knowledge_bases WHERE id = :id"), {"id": kb_id}).first():
                return
        for candidate in (name, f"{name} ({kb_id})", f"Restored {kb_id}"):
            try:
                self.create_knowledge_base(candidate, kb_id)
                return
            except InputError:
                continue

    def rename_knowledge_base(self, kb_id: str, name: str) -> KnowledgeBaseInfo:
        """Give a knowledge base a new name; InputError for a bad or taken name."""
        name = check_kb_name(name)
        current = self.knowledge_base(kb_id)
        with write(self._engine) as conn:
            if name.lower() != current.name.lower():
                self._check_free(conn, name)
            conn.execute(text("UPDATE knowledge_bases SET name = :name WHERE id = :id"), {"name": name, "id": kb_id})
            _bump(conn, "revision")
        return self.knowledge_base(kb_id)

    def remove_knowledge_base(self, kb_id: str) -> None:
        """Forget an empty knowledge base (its documents are deleted first, by the indexer)."""
        with write(self._engine) as conn:
            if conn.execute(text("SELECT 1 FROM documents WHERE kb_id = :id LIMIT 1"), {"id": kb_id}).first():
                raise InputError("the knowledge base still holds documents: delete them first")
            conn.execute(text("DELETE FROM knowledge_bases WHERE id = :id"), {"id": kb_id})
            _bump(conn, "revision")

    @staticmethod
    def _check_free(conn: Connection, name: str) -> None:
        taken = conn.execute(text("SELECT name FROM knowledge_bases WHERE lower(name) = lower(:name)"),
                             {"name": name}).scalar()
        if taken is not None:
            raise InputError(f"there is already a knowledge base named {taken!r}: choose another name")

    def update_metadata(self, doc_id: str, title: str | None, tags: list[str] | None,
                        by: str = "") -> DocumentRecord:
        """Change a document's title (marked as the user's) and/or tags (``by``: who)."""
        with write(self._engine) as conn:
            row = conn.execute(text("SELECT * FROM documents WHERE id = :id"), {"id": doc_id}).mappings().first()
            if row is None:
                raise KeyError(f"no document with id {doc_id!r}")
            record = _record(row)
            if title is not None and title.strip() and title.strip() != record.title:
                record.title, record.title_from = title.strip(), "user"
            if tags is not None:
                record.tags = tags
            record.updated_at = time.time()
            record.changed_by = by
            _upsert(conn, record)
            _bump(conn, "revision")
        return record

    # ----- passages ----------------------------------------------------------------

    def passages_of(self, doc_id: str) -> list[Passage]:
        """A document's current passages in reading order."""
        with read(self._engine) as conn:
            rows = conn.execute(
                text("SELECT * FROM passages WHERE doc_id = :d ORDER BY position"), {"d": doc_id}
            ).mappings().all()
        return [_passage(row) for row in rows]

    def passages(self, ids: list[str]) -> dict[str, Passage]:
        """Passages by id (unknown ids are left out)."""
        found: dict[str, Passage] = {}
        with read(self._engine) as conn:
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ", ".join(f":p{i}" for i in range(len(part)))
                rows = conn.execute(
                    text(f"SELECT * FROM passages WHERE id IN ({marks})"),
                    {f"p{i}": pid for i, pid in enumerate(part)},
                ).mappings().all()
                found.update((row["id"], _passage(row)) for row in rows)
        return found

    def sentence_vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        """Stored sentence vectors by passage id (passages without any are left out)."""
        found: dict[str, np.ndarray] = {}
        with read(self._engine) as conn:
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ", ".join(f":p{i}" for i in range(len(part)))
                rows = conn.execute(
                    text(f"SELECT passage_id, vectors FROM sentence_vectors WHERE passage_id IN ({marks})"),  # noqa: S608
                    {f"p{i}": pid for i, pid in enumerate(part)},
                ).all()
                found.update((pid, unpack(bytes(blob))) for pid, blob in rows)
        return found

    def store_sentence_vectors(self, passages: list[Passage], replace_all: bool = False) -> None:
        """Store (or replace) the sentence vectors the passages carry (after ``reindex``);
        ``replace_all``: every other passage's are dropped (another model's)."""
        with write(self._engine) as conn:
            if replace_all:
                conn.execute(text("DELETE FROM sentence_vectors"))
            _insert_sentence_vectors(conn, passages)

    def passage_terms(self, doc_ids: list[str] | None = None) -> list[tuple[str, str, list[str]]]:
        """(passage id, document id, search tokens) of all passages, or of these documents."""
        query = "SELECT id, doc_id, terms FROM passages"
        with read(self._engine) as conn:
            if doc_ids is None:
                rows = conn.execute(text(query + " ORDER BY doc_id, position")).all()
            else:
                rows = []
                for doc_id in doc_ids:
                    rows += conn.execute(text(query + " WHERE doc_id = :d ORDER BY position"), {"d": doc_id}).all()
        return [(pid, doc, terms.split(" ") if terms else []) for pid, doc, terms in rows]

    def passage_ids(self) -> set[str]:
        """Ids of every current passage."""
        with read(self._engine) as conn:
            return {row[0] for row in conn.execute(text("SELECT id FROM passages"))}

    def sample_passage_ids(self, size: int) -> list[str]:
        """Up to ``size`` passage ids for a health probe: half the most recently written
        (what a crash or a concurrent process would have damaged), half spread at random."""
        import random

        if is_postgres(self._engine):  # no rowid there: the newest documents' passages, and a random spread
            with read(self._engine) as conn:
                newest = [row[0] for row in conn.execute(text(
                    "SELECT p.id FROM passages p JOIN documents d ON d.id = p.doc_id "
                    "ORDER BY d.updated_at DESC, p.position LIMIT :n"), {"n": size // 2})]
                spread = [row[0] for row in conn.execute(
                    text("SELECT id FROM passages ORDER BY random() LIMIT :n"), {"n": 2 * size})]
            chosen = list(dict.fromkeys(newest + spread[: max(0, size - len(newest))]))
            return chosen[:size]
        with read(self._engine) as conn:
            newest = [row[0] for row in conn.execute(
                text("SELECT id FROM passages ORDER BY rowid DESC LIMIT :n"), {"n": size // 2})]
            low, high = conn.execute(text("SELECT MIN(rowid), MAX(rowid) FROM passages")).one()
            if low is None:
                return []
            picks = sorted({random.randint(low, high) for _ in range(2 * size)})
            marks = ", ".join(f":r{i}" for i in range(len(picks)))
            spread = [row[0] for row in conn.execute(
                text(f"SELECT id FROM passages WHERE rowid IN ({marks})"),  # noqa: S608 - numbered marks only
                {f"r{i}": pick for i, pick in enumerate(picks)})]
        chosen = list(dict.fromkeys(newest + random.sample(spread, min(len(spread), size - len(newest)))))
        return chosen[:size]

    def passage_count(self) -> int:
        """Number of current passages."""
        with read(self._engine) as conn:
            return int(conn.execute(text("SELECT COUNT(*) FROM passages")).scalar_one())

    # ----- the write protocol ------------------------------------------------------

    def begin_writes(self, versions: list[tuple[str, int]]) -> None:
        """Record that this process is about to write vectors of these (doc, version) pairs, in
        one transaction (a group of files is saved together: one commit, not one per file); the
        caller holds the write lock until it commits each version or gives it up."""
        with self._in_flight_lock:
            self.in_flight.update(versions)
        now = time.time()
        try:
            with write(self._engine) as conn:
                conn.execute(
                    text("INSERT INTO pending_writes(doc_id, version, writer, started_at, host, lease_until) "
                         "VALUES (:d, :v, :w, :t, :h, :lease) ON CONFLICT(doc_id, version) "
                         "DO UPDATE SET writer = :w, started_at = :t, host = :h, lease_until = :lease"),
                    [{"d": doc_id, "v": version, "w": WRITER_ID, "t": now, "h": HOST, "lease": now + self.lease_s}
                     for doc_id, version in versions],
                )
        except BaseException:
            for doc_id, version in versions:
                self.end_write(doc_id, version)
            raise
        self._keep_renewing()

    def end_write(self, doc_id: str, version: int) -> None:
        """Stop writing (doc, version) without committing it: its pending row stays, so its
        vectors stay provably stale until a sweep removes them (``forget_pending``)."""
        with self._in_flight_lock:
            self.in_flight.discard((doc_id, version))

    def _keep_renewing(self) -> None:
        """Renew the leases of this process's pending writes while any is in flight (a
        thread, every third of the lease)."""
        with self._in_flight_lock:
            if self._renewer is not None and self._renewer.is_alive():
                return
            self._renewer = threading.Thread(target=self._renew_leases, name="ragkit-lease", daemon=True)
            self._renewer.start()

    def _renew_leases(self) -> None:
        while True:
            time.sleep(self.lease_s / 3)
            with self._in_flight_lock:
                keys = list(self.in_flight)
                if not keys:
                    self._renewer = None
                    return
            try:
                with write(self._engine) as conn:
                    conn.execute(text("UPDATE pending_writes SET lease_until = :lease "
                                      "WHERE doc_id = :d AND version = :v AND writer = :w"),
                                 [{"d": d, "v": v, "w": WRITER_ID, "lease": time.time() + self.lease_s}
                                  for d, v in keys])
            except Exception as exc:  # noqa: BLE001 - a lost database: the lease runs out, as it should
                log.warning("could not renew the lease of a pending write: %s", exc)

    def forget_pending(self, doc_id: str, version: int) -> None:
        """Drop a pending row once none of its version's vectors are left."""
        self.end_write(doc_id, version)
        with write(self._engine) as conn:
            conn.execute(text("DELETE FROM pending_writes WHERE doc_id = :d AND version = :v"),
                         {"d": doc_id, "v": version})

    def commit_versions(self, versions: list[tuple[DocumentRecord, list[Passage], list[list[str]]]]) -> None:
        """Make each (record, passages, their search tokens) the current version of its
        document, all in one transaction."""
        with write(self._engine) as conn:
            for record, passages, terms in versions:
                _upsert(conn, record)
                _delete_passages(conn, record.id)
                _insert_passages(conn, passages, terms)
                conn.execute(text("DELETE FROM pending_writes WHERE doc_id = :d AND version = :v"),
                             {"d": record.id, "v": record.version})
            _bump(conn, "revision")
        with self._in_flight_lock:
            self.in_flight.difference_update((record.id, record.version) for record, _, _ in versions)

    def remove(self, doc_id: str, by: str = "") -> DocumentRecord:
        """Delete a document and its passages, remembering its id, title and who (``by``)
        deleted it; KeyError when unknown."""
        with write(self._engine) as conn:
            row = conn.execute(text("SELECT * FROM documents WHERE id = :id"), {"id": doc_id}).mappings().first()
            if row is None:
                raise KeyError(f"no document with id {doc_id!r}")
            conn.execute(text("DELETE FROM documents WHERE id = :d"), {"d": doc_id})
            _delete_passages(conn, doc_id)
            conn.execute(text("INSERT INTO removed_documents(doc_id, removed_at, removed_by, title) "
                              "VALUES (:d, :t, :by, :title) ON CONFLICT(doc_id) DO NOTHING"),
                         {"d": doc_id, "t": time.time(), "by": by, "title": row["title"]})
            _bump(conn, "revision")
        return _record(row)

    def pending_writes(self) -> list[PendingWrite]:
        """Every pending write, live or abandoned."""
        with read(self._engine) as conn:
            rows = conn.execute(text(f"SELECT {PENDING_COLUMNS} FROM pending_writes")).all()  # noqa: S608
        return [PendingWrite(*row) for row in rows]

    def removals(self, limit: int = 20) -> list[Removal]:
        """The most recent deletions, newest first."""
        with read(self._engine) as conn:
            rows = conn.execute(text("SELECT doc_id, title, removed_by, removed_at FROM removed_documents "
                                     "ORDER BY removed_at DESC LIMIT :n"), {"n": limit}).all()
        return [Removal(*row) for row in rows]

    def removed_ids(self) -> set[str]:
        """Ids of documents that were deleted."""
        with read(self._engine) as conn:
            return {row[0] for row in conn.execute(text("SELECT doc_id FROM removed_documents"))}

    def snapshot(self) -> tuple[dict[str, int], list[PendingWrite], set[str]]:
        """Current versions, pending writes and removed ids, read at one instant."""
        with read(self._engine) as conn:
            versions = dict(conn.execute(text("SELECT id, version FROM documents")).all())
            pending = [PendingWrite(*row) for row in conn.execute(
                text(f"SELECT {PENDING_COLUMNS} FROM pending_writes")).all()]  # noqa: S608
            removed = {row[0] for row in conn.execute(text("SELECT doc_id FROM removed_documents"))}
        return versions, pending, removed

    def restore(self, record: DocumentRecord, passages: list[Passage], terms: list[list[str]]) -> None:
        """Add a document rebuilt from the vector store (``repair``)."""
        with write(self._engine) as conn:
            _upsert(conn, record)
            _delete_passages(conn, record.id)
            _insert_passages(conn, passages, terms)
            conn.execute(text("DELETE FROM removed_documents WHERE doc_id = :d"), {"d": record.id})
            _bump(conn, "revision")

    def fill_passages(self, passages: list[Passage], terms: list[list[str]]) -> None:
        """Insert passages of current versions (the one-time backfill of an old registry)."""
        with write(self._engine) as conn:
            _insert_passages(conn, passages, terms)
            _bump(conn, "revision")

    def retokenize(self, tokenize) -> int:
        """Recompute every passage's search tokens with ``tokenize(text)`` over its text under
        its section path, as at ingest (after the tokenizer changed); returns the passages done."""
        with read(self._engine) as conn:
            rows = conn.execute(text("SELECT id, text, section FROM passages")).all()
        with write(self._engine) as conn:
            for start in range(0, len(rows), 1000):
                batch = rows[start : start + 1000]
                conn.execute(text("UPDATE passages SET terms = :terms WHERE id = :id"),
                             [{"id": pid, "terms": " ".join(tokenize(contextual_text(body, section or "")))}
                              for pid, body, section in batch])
            _bump(conn, "revision")
        return len(rows)

    def close(self) -> None:
        """Release the database connections."""
        self._engine.dispose()


def _upsert(conn: Connection, record: DocumentRecord) -> None:
    values = record.to_dict()
    values["tags"] = json.dumps(record.tags, ensure_ascii=False)
    columns = ", ".join(values)
    marks = ", ".join(f":{key}" for key in values)
    updates = ", ".join(f"{key} = excluded.{key}" for key in values if key != "id")
    conn.execute(text(f"INSERT INTO documents ({columns}) VALUES ({marks}) ON CONFLICT(id) DO UPDATE SET {updates}"),
                 values)


def _delete_passages(conn: Connection, doc_id: str) -> None:
    conn.execute(text("DELETE FROM passages WHERE doc_id = :d"), {"d": doc_id})
    conn.execute(text("DELETE FROM sentence_vectors WHERE doc_id = :d"), {"d": doc_id})


def _insert_sentence_vectors(conn: Connection, passages: list[Passage]) -> None:
    rows = [{"id": p.id, "doc_id": p.doc_id, "vectors": pack(p.sentence_vectors)}
            for p in passages if p.sentence_vectors is not None]
    if rows:
        conn.execute(text("DELETE FROM sentence_vectors WHERE passage_id = :id"), rows)
        conn.execute(text("INSERT INTO sentence_vectors (passage_id, doc_id, vectors) VALUES (:id, :doc_id, :vectors)"),
                     rows)


def _insert_passages(conn: Connection, passages: list[Passage], terms: list[list[str]]) -> None:
    if not passages:
        return
    _insert_sentence_vectors(conn, passages)
    conn.execute(
        text("INSERT INTO passages(id, doc_id, version, position, page, start_char, end_char, tokens, text, terms, "
             "section) VALUES (:id, :doc_id, :version, :position, :page, :start, :end, :tokens, :text, :terms, "
             ":section)"),
        [{"id": p.id, "doc_id": p.doc_id, "version": p.version, "position": p.position, "page": p.page,
          "start": p.start, "end": p.end, "tokens": p.tokens, "text": p.text, "terms": " ".join(t),
          "section": p.section}
         for p, t in zip(passages, terms)],
    )


def _record(row) -> DocumentRecord:
    values = dict(row)
    values["tags"] = json.loads(values["tags"] or "[]")
    return DocumentRecord(**values)


def _passage(row) -> Passage:
    return Passage(text=row["text"], page=row["page"], position=row["position"], start=row["start_char"],
                   end=row["end_char"], tokens=row["tokens"], doc_id=row["doc_id"], version=row["version"],
                   section=row["section"] or "")

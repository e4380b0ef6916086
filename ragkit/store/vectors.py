"""The vector store: passage vectors in a Chroma collection (on disk, or a Chroma server).

Each vector carries its passage's text and enough metadata (document, version, file,
title, type, hash, source, tags, knowledge base) to rebuild the catalog if it is lost
(``repair``).

How embedded Chroma (1.5) shares its files between processes, and the rules that follow:

- A write goes to Chroma's log (``embeddings_queue`` in ``chroma.sqlite3``), then the
  writing process applies the log to its own in-memory HNSW index and, every
  ``sync_threshold`` (1,000) records, saves that index: only the elements that changed
  in *its* memory are written, at *its* internal slots, plus the id map.
- A process that opens a collection loads the saved index and, at its first read (count,
  get or query), applies every log record newer than the saved watermark to its own
  copy, and saves it too when that was 1,000 records or more. Below that, the watermark
  stays where it was: every process that opens re-applies the same tail of the log.
- Two processes hold differently laid-out copies (elements are placed in insertion order,
  and insertion runs in parallel threads), so when both save, the files end up with slots
  of one copy and links and the id map of the other: passages that are stored, counted and
  listed, but that no nearest-neighbour search can reach. A reader that opened while a
  writer's batch was in the log (after a killed writer, the log holds its unsaved tail)
  saves such a copy.

Opening is no exception: embedded Chroma writes to its folder when a client opens, and a
client's first read saves the index files again. Re-applying the tail in parallel threads
links its elements differently from one process to the next, so data_level0.bin often
differs after a first read that had nothing new to apply. Readers that opened during an
ingest died with SIGSEGV in their first query, under the lock, on index files that crash
any client opening them.

So in this module:

- an embedded client is opened, and makes its first read (the log catch-up), only under
  the data dir's write lock: lazily, at its first read (a process that only lists
  documents never waits for the lock);
- every read and every write holds the lock, on a client that has caught up with every
  other process's writes (the vector generation says when one happened). A read waits for
  another process's save at most ``vector_read_wait_s`` (``vector_first_read_wait_s`` for a first read),
  then raises ``VectorStoreBusy``: searches use keywords only until the save is over;
- before a write (``refresh_for_write``), a client whose index files changed since it last
  read or saved them (another process's first read saved its own copy) re-opens first, so
  it never saves its older copy over them. Readers keep searching their own, consistent
  copy: a first read is not announced, or two long-running processes would re-open each
  other's index at every search.

``unreachable`` checks sampled vectors the way a user would notice: each one's own vector
must find it through the index (``integrity`` runs it at every open; ``repair`` runs it on
every vector and rebuilds the index from the vectors it can still read).
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ragkit.config import Settings, redacted_url
from ragkit.errors import VectorStoreBusy, VectorStoreRefused, VectorStoreUnavailable
from ragkit.store.writelock import WriteLock
from ragkit.types import DocumentRecord, Passage

log = logging.getLogger(__name__)
PAGE_SIZE = 2000  # rows per Chroma get() when scanning the whole collection
WRITE_BATCH = 1000
SAME_VECTOR = 1e-4  # a cosine distance this small means an identical vector (a duplicate passage)
DEEPER_PROBE = 8  # a vector a search for itself missed is looked for again among this many times the results
REFUSAL_PROBE_TIMEOUT_S = 5.0  # asking the Chroma server again whether it refuses ragkit's token








@dataclass(frozen=True)
class StoredVector:
    """What the vector store knows of one passage (without its vector)."""

    id: str
    doc_id: str
    version: int
    metadata: dict


def _crc32(path) -> int:
    """CRC-32 of a file's bytes, read a megabyte at a time."""
    checksum = 0
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            checksum = zlib.crc32(block, checksum)
    return checksum


class VectorStore:
    """Chroma collection access: add, delete, scan, nearest neighbours, reset."""

    def __init__(self, settings: Settings, lock: WriteLock, generation: Callable[[], int] = lambda: 0,
                 read_only: str = ""):
        self.settings = settings
        self.lock = lock
        self.read_only = read_only  # why the data dir cannot be written: then a private copy is read
        self._copy = None  # that copy's TemporaryDirectory (removed by ``close`` or at exit)
        self._generation = generation  # the catalog's vector generation, bumped by every write
        self._files_seen: dict[str, tuple[int, int]] = {}  # the index files as this client last read or saved them
        self._lock = threading.RLock()
        self.generation = -1  # the generation this client has caught up with
        self._caught_up = False
        self._client = None
        self._collection = None
        self.error = ""  # why the store cannot be used ("" when it can)
        self._failed_at: int | None = None  # the generation at which it last failed to open
        self._opened = False  # an embedded store opens at its first read, under the write lock
        if self.remote or self.read_only:  # a server, or a private copy: no other process shares its files
            self._open()

    @property
    def folder(self):
        """Where embedded Chroma keeps its files."""
        return self.settings.data_path / "chroma"

    @property
    def where(self) -> str:
        """The store named for messages: the Chroma server and its address, or the folder."""
        if self.remote:
            return f"the Chroma server (RAGKIT_CHROMA_URL) at {redacted_url(self.settings.chroma_url)}"
        return f"the vector store {self.folder}"

    def server_message(self, exc: BaseException) -> str:
        """What to say when ``exc`` means the Chroma server did not answer or refused ragkit's
        token; "" for any other error."""
        if not self.remote:
            return ""
        refused = self.refusal_message(exc)
        if refused:
            return refused
        text = _plain(exc) if isinstance(exc, Exception) else str(exc)
        return f"{self.where} cannot be reached ({text})" if self._cannot_connect(exc) else ""

    def refusal_message(self, exc: BaseException) -> str:
        """What to say when ``exc`` means the Chroma server refused ragkit's token; "" otherwise.
        Chroma's own token auth answers 403 ``AuthError``; a proxy in front of ``chroma run``
        (which has no auth of its own) answers 401 or 403 in words of its own, which Chroma's
        client passes on as a bare ``Exception``, so that case is told by asking once more."""
        from chromadb.errors import AuthorizationError, ChromaAuthError

        if isinstance(exc, VectorStoreRefused):
            return str(exc)
        if not self.remote or self._cannot_connect(exc):
            return ""
        if not isinstance(exc, (ChromaAuthError, AuthorizationError)) and not self._credentials_refused():
            return ""
        if self.settings.chroma_token is None:
            why = "it asks for a token and RAGKIT_CHROMA_TOKEN is not set"
        else:
            why = "it does not accept the token in RAGKIT_CHROMA_TOKEN"
        return (f"{self.where} refused access: {why}. Set RAGKIT_CHROMA_TOKEN to the server's token and "
                "start the app (or command) again")

    @staticmethod
    def _cannot_connect(exc: BaseException) -> bool:
        import httpx

        text = str(exc)
        return isinstance(exc, httpx.TransportError) or "Could not connect to a Chroma server" in text or (
            isinstance(exc, VectorStoreUnavailable) and ("Connection refused" in text or "timed out" in text))

    def _credentials_refused(self) -> bool:
        """True when the server answers a plain collection listing with 401 or 403."""
        import httpx

        token = self.settings.chroma_token
        headers = {"Authorization": f"Bearer {token.get_secret_value()}"} if token is not None else {}
        url = (f"{self.settings.chroma_url.rstrip('/')}/api/v2/tenants/default_tenant/databases/"
               "default_database/collections?limit=1")
        try:
            return httpx.get(url, headers=headers, timeout=REFUSAL_PROBE_TIMEOUT_S).status_code in (401, 403)
        except httpx.HTTPError:
            return False

    def _open(self) -> None:
        """A new client (it reads the disk afresh); remembers the error when it cannot open."""
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        self._caught_up = False
        self._opened = True
        chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        try:
            if self.settings.chroma_url:
                from urllib.parse import urlparse

                url = urlparse(self.settings.chroma_url)
                if self.settings.chroma_token is not None:  # Chroma's token auth: "Authorization: Bearer <token>"
                    chroma_settings = ChromaSettings(
                        anonymized_telemetry=False, allow_reset=False,
                        chroma_client_auth_provider="chromadb.auth.token_authn.TokenAuthClientProvider",
                        chroma_client_auth_credentials=self.settings.chroma_token.get_secret_value())
                self._client = chromadb.HttpClient(
                    host=url.hostname or "localhost",
                    port=url.port or (443 if url.scheme == "https" else 8000),
                    ssl=url.scheme == "https",
                    settings=chroma_settings,
                )
            else:
                from chromadb.api.shared_system_client import SharedSystemClient

                path = self._read_only_copy() if self.read_only else str(self.folder)
                # Chroma shares one client per path within a process; a fresh one re-reads the disk.
                SharedSystemClient._identifier_to_system.pop(path, None)
                self._client = chromadb.PersistentClient(path=path, settings=chroma_settings)
            self._collection = self._client.get_or_create_collection(
                name=self.settings.collection,
                embedding_function=None,  # never Chroma's default model: it downloads weights
                configuration=self._configuration(),  # used when the collection is created
            )
            self.error = ""
        except Exception as exc:  # noqa: BLE001 - a damaged store must not stop the knowledge base
            self._client = self._collection = None
            self.error = self.refusal_message(exc) or _plain(exc)
            log.warning("%s cannot be opened: %s", self.where, self.error)

    def _read_only_copy(self) -> str:
        """Embedded Chroma writes to its folder on opening, so a data dir that cannot be
        written is read through a private temporary copy of the store (removed by ``close``)."""
        import tempfile

        self.close()
        self._copy = tempfile.TemporaryDirectory(prefix="ragkit-readonly-chroma-")
        target = f"{self._copy.name}/chroma"
        if self.folder.is_dir():
            shutil.copytree(self.folder, target)
        log.info("the data dir cannot be written (%s): reading a copy of its vector store", self.read_only)
        return target

    def close(self) -> None:
        """Remove a read-only data dir's temporary copy (the store cannot be read after)."""
        if self._copy:
            self._client = self._collection = None
            from chromadb.api.shared_system_client import SharedSystemClient

            SharedSystemClient._identifier_to_system.pop(f"{self._copy.name}/chroma", None)
            self._copy.cleanup()
            self._copy = None

    @property
    def remote(self) -> bool:
        """True for a Chroma server (one index shared by every process)."""
        return bool(self.settings.chroma_url)

    @property
    def available(self) -> bool:
        """False when the store could not be opened (see ``error``). An embedded store not
        opened yet counts as available: its first read opens it (under the write lock)."""
        return self._collection is not None or not self._opened

    # ----- staying in step with other processes ----------------------------------

    def refresh(self, wait: bool = True, timeout: float | None = None) -> bool:
        """Catch up with every other process's writes: re-open the client when one wrote
        since this client caught up, and apply Chroma's log under the write lock. With
        ``wait=False`` (or after ``timeout`` seconds) give up while another process holds
        the lock (this client keeps its consistent, older view) and return False."""
        if self.remote:
            if not self.available:  # the server did not answer before: ask again (it may be back)
                with self._lock:
                    self._open()
            if not self._caught_up:
                self._catch_up()
            return True
        if self._caught_up and self._generation() == self.generation:
            return True
        with self.lock.hold(wait=wait, timeout=timeout) as held:
            if not held:
                return False
            with self._lock:
                current = self._generation()
                if self._caught_up and current == self.generation:
                    return True
                if not self._caught_up and self._failed_at == current:
                    raise VectorStoreUnavailable(self.error)  # nothing was written since it failed
                if self._caught_up or self._collection is None:
                    if self._opened:
                        log.info("vector store changed in another process: re-opening it")
                    self._open()
                try:
                    self._catch_up()
                except VectorStoreUnavailable as exc:
                    self._failed_at, self.error = current, str(exc)
                    raise
                self._failed_at = None
                self.generation = current
                self._files_seen = self._index_files()
        return True

    def refresh_for_write(self) -> None:
        """``refresh`` before a write (the caller holds the write lock), re-opening when the
        index files changed since this client last read or saved them: another process's
        first read saved its own copy (see the module docstring), which this client's older
        copy must not be saved over."""
        self.refresh()
        if self._index_files() != self._files_seen:
            log.info("another process saved the vector index since this one read it: re-opening it")
            self.reopen_later()
            self.refresh()

    def note_saved(self) -> None:
        """After a write (the write lock still held): the index files as this client saved them."""
        self._files_seen = self._index_files()

    def _index_files(self) -> dict[str, tuple[int, int]]:
        """Size and CRC-32 of each index file, to tell another process's save from this
        client's. (length.bin differs at every save even when nothing else does, so it is left
        out. CRC-32 reads a 100k-passage index, about 180 MB, in some 60 ms: once before and
        once after a write.)"""
        if self.remote or self.read_only or not self.folder.is_dir():
            return {}
        return {str(path): (path.stat().st_size, _crc32(path))
                for path in sorted(self.folder.glob("*/*.bin")) if path.name != "length.bin"}

    def reopen_later(self) -> None:
        """Make the next ``refresh`` open a new client (after a write failed half-way, the
        rest of it may sit unapplied in Chroma's log)."""
        self.generation = -2
        self._failed_at = None

    def _catch_up(self) -> None:
        if self._collection is None:
            raise self._unavailable(self.error)
        try:
            self._collection.count()  # Chroma's first read applies its log (see the module docstring)
        except Exception as exc:
            raise self._unavailable(self.refusal_message(exc) or _plain(exc)) from exc
        self._caught_up = True

    def _unavailable(self, error: str) -> VectorStoreUnavailable:
        """The error to raise for ``error``: a refused token is told apart (it needs a new setting)."""
        return (VectorStoreRefused if error.startswith(f"{self.where} refused") else VectorStoreUnavailable)(error)

    @property
    def caught_up(self) -> bool:
        """True once this client applied Chroma's log (it can be read)."""
        return self._caught_up

    def _ready(self) -> None:
        """Before a write (the caller holds the write lock): catch up first."""
        if self._caught_up:
            return
        first_wait = self.settings.vector_first_read_wait_s
        if not self.refresh(wait=True, timeout=None if self.lock.held_here else first_wait):
            raise self._busy(first_wait)

    def _busy(self, waited: float) -> VectorStoreBusy:
        return VectorStoreBusy(f"another process has been saving to {self.where} for "
                               f"{waited:.0f} s; searching by keywords only until it is done")

    @contextmanager
    def reading(self, wait: bool = True) -> Iterator[bool]:
        """Hold the store still for the reads of the block, on a client caught up with every
        other process's writes: an embedded store under the data dir's write lock (every
        read of embedded Chroma applies what is in its log, so a read beside another
        process's write applies that writer's batch to this process's copy, and crashed).
        Yields False when ``wait`` is False and another process holds the lock; with ``wait``
        raises VectorStoreBusy once it waited ``vector_first_read_wait_s`` (``vector_read_wait_s`` for a
        client that already caught up)."""
        if self.remote or self.read_only:  # a server, or this process's private copy: nothing to wait for
            self.refresh()
            yield True
            return
        waited = self.settings.vector_read_wait_s if self._caught_up else self.settings.vector_first_read_wait_s
        with self.lock.hold(wait=wait, timeout=None if self.lock.held_here else waited) as held:
            if held:
                self.refresh()
            elif wait:
                raise self._busy(waited)
            yield held

    # ----- reading -----------------------------------------------------------------

    def count(self) -> int:
        """Number of stored vectors."""
        with self.reading():
            return self._collection.count()

    def existing(self, ids: list[str]) -> set[str]:
        """Which of these passage ids have a vector."""
        found: set[str] = set()
        with self.reading():
            for start in range(0, len(ids), PAGE_SIZE):
                found.update(self._collection.get(ids=ids[start : start + PAGE_SIZE], include=[])["ids"])
        return found

    def scan(self, with_text: bool = False) -> Iterator[tuple[StoredVector, str | None]]:
        """Every stored vector's id and metadata (and text), page by page."""
        include = ["metadatas"] + (["documents"] if with_text else [])
        offset = 0
        while True:
            with self.reading():  # a page at a time: the caller's work on a page holds no lock
                page = self._collection.get(include=include, limit=PAGE_SIZE, offset=offset)
            if not page["ids"]:
                return
            for index, pid in enumerate(page["ids"]):
                meta = page["metadatas"][index] or {}
                stored = StoredVector(pid, str(meta.get("doc_id", "")), int(meta.get("version", 0) or 0), meta)
                yield stored, (page["documents"][index] if with_text else None)
            offset += len(page["ids"])

    def query(self, vector: np.ndarray, n_results: int, doc_ids: set[str] | None = None) -> list[tuple[str, float]]:
        """Nearest passages by cosine similarity: (passage id, 1 - distance), best first."""
        with self.reading():
            total = self._collection.count()
            if n_results <= 0 or total == 0:
                return []
            where = {"doc_id": {"$in": sorted(doc_ids)}} if doc_ids is not None else None
            result = self._collection.query(
                query_embeddings=[vector], n_results=min(n_results, total), where=where, include=["distances"]
            )
        return [(pid, 1.0 - float(d)) for pid, d in zip(result["ids"][0], result["distances"][0])]

    def vectors(self, ids: list[str]) -> tuple[dict[str, np.ndarray], list[str]]:
        """The stored vectors of these ids, and the ids whose vector the index has lost
        (listed with metadata, but the index cannot return their vector). Ids with no
        vector at all are in neither."""
        found: dict[str, np.ndarray] = {}
        lost: list[str] = []
        with self.reading():
            for start in range(0, len(ids), PAGE_SIZE):
                self._fetch(ids[start : start + PAGE_SIZE], found, lost)
        return found, lost

    def _fetch(self, ids: list[str], found: dict[str, np.ndarray], lost: list[str]) -> None:
        try:
            page = self._collection.get(ids=ids, include=["embeddings"])
        except Exception:  # one id whose vector the index lost fails the whole call: halve
            if len(ids) == 1:
                lost.append(ids[0])
                return
            middle = len(ids) // 2
            self._fetch(ids[:middle], found, lost)
            self._fetch(ids[middle:], found, lost)
            return
        for pid, vector in zip(page["ids"], page["embeddings"]):
            found[pid] = np.asarray(vector, dtype=np.float32)

    def unreachable(self, ids: list[str]) -> list[str]:
        """Which of these stored vectors a nearest-neighbour search for their own vector
        does not find among as many results as a search fetches (``candidate_k``), nor
        among ``DEEPER_PROBE`` times as many: their vector lost, or cut off from the index's
        graph. (The index is approximate: in a base of near-identical passages a search of
        ``candidate_k`` now and then misses a vector that is there, and a healthy index
        must not be reported damaged, nor rebuilt, for it.)"""
        with self.reading():
            found, lost = self.vectors(ids)
            missed = list(lost)
            total = self.count()
            if not found or not total:
                return missed
            depth = min(self.settings.candidate_k, total)
            missed_here = self._not_found_by_own_vector(list(found.items()), depth)
            deeper = min(depth * DEEPER_PROBE, total)
            if missed_here and deeper > depth:
                missed_here = self._not_found_by_own_vector([(pid, found[pid]) for pid in missed_here], deeper)
        return missed + missed_here

    def _not_found_by_own_vector(self, items: list[tuple[str, np.ndarray]], depth: int) -> list[str]:
        """The ids of ``items`` (id, vector) that a search of ``depth`` for their vector misses."""
        missed = []
        for start in range(0, len(items), 256):
            part = items[start : start + 256]
            result = self._collection.query(query_embeddings=np.stack([v for _, v in part]), n_results=depth,
                                            include=["distances"])
            for (pid, _), ids_found, distances in zip(part, result["ids"], result["distances"]):
                if pid in ids_found:
                    continue
                if len(distances) == depth and distances and distances[-1] <= SAME_VECTOR:
                    continue  # more identical vectors than places: it cannot be told apart, not lost
                missed.append(pid)
        return missed

    # ----- writing (callers hold the write lock; see ``indexer``) ------------------

    def add(self, passages: list[Passage], vectors: np.ndarray, documents: dict[str, DocumentRecord],
            kb_names: dict[str, str] | None = None) -> None:
        """Write passages with their vectors and recovery metadata (``kb_names``: knowledge
        base id -> name, so that ``repair`` can name a knowledge base it restores), in batches."""
        self._ready()
        with self._lock:
            for start in range(0, len(passages), WRITE_BATCH):
                part = passages[start : start + WRITE_BATCH]
                self._collection.add(
                    ids=[p.id for p in part],
                    documents=[p.text for p in part],
                    metadatas=[_metadata(p, documents[p.doc_id], kb_names or {}) for p in part],
                    embeddings=vectors[start : start + WRITE_BATCH],
                )

    def update_document_metadata(self, passage_id: str, document: DocumentRecord, kb_name: str = "") -> None:
        """Record a document's user-set title and tags (and knowledge base) on one of its
        passages (the one ``repair`` reads them from when the catalog is lost)."""
        self._ready()
        with self._lock:
            self._collection.update(ids=[passage_id], metadatas=[_document_metadata(document, kb_name)])

    def delete_ids(self, ids: list[str]) -> None:
        """Delete vectors by passage id."""
        self._ready()
        with self._lock:
            for start in range(0, len(ids), PAGE_SIZE):
                self._collection.delete(ids=ids[start : start + PAGE_SIZE])

    def delete_version(self, doc_id: str, version: int) -> None:
        """Delete every vector of one document version."""
        self._ready()
        with self._lock:
            self._collection.delete(where={"$and": [{"doc_id": doc_id}, {"version": version}]})

    def delete_document(self, doc_id: str) -> None:
        """Delete every vector of a document, whatever its version."""
        self._ready()
        with self._lock:
            self._collection.delete(where={"doc_id": doc_id})

    def recreate(self) -> str:
        """Start over with an empty store when the old one cannot be opened or read
        (``repair`` only, under the write lock: the catalog holds every passage's text,
        so the vectors can be rebuilt). The damaged files are moved aside, not deleted;
        returns where ("" when the collection could simply be dropped)."""
        with self._lock:
            if self.remote:
                self.reset()
                return ""
            if self.available:
                try:
                    self.reset()
                    return ""
                except Exception as exc:  # noqa: BLE001 - any failure: set the files aside below
                    log.warning("cannot drop the damaged collection (%s): moving the store aside", exc)
            self._client = self._collection = None
            from chromadb.api.shared_system_client import SharedSystemClient

            SharedSystemClient._identifier_to_system.pop(str(self.folder), None)
            aside = ""
            if self.folder.exists():
                target = self.folder.with_name(f"chroma.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
                shutil.move(str(self.folder), str(target))
                log.warning("moved the damaged vector store aside to %s", target)
                aside = target.name
            self._open()
            self._catch_up()
            return aside

    def reset(self) -> None:
        """Drop and re-create the collection (reindex and repair re-fill it)."""
        self._ready()
        with self._lock:
            self._client.delete_collection(self.settings.collection)
            self._collection = self._client.get_or_create_collection(
                name=self.settings.collection, embedding_function=None, configuration=self._configuration()
            )

    def _configuration(self) -> dict:
        # Chroma's default graph (16 links, construction depth 100) leaves a few elements of
        # clustered data (near-duplicate passages) with no incoming link: 0-5 of 450 passages
        # not found even when asking for all 450; with 32 and 200, none in the same runs.
        return {"hnsw": {"space": "cosine", "max_neighbors": self.settings.hnsw_max_neighbors,
                         "ef_construction": self.settings.hnsw_ef_construction}}


def _plain(exc: Exception) -> str:
    """Chroma's error in words (its own class names say nothing to a user)."""
    text = str(exc).strip() or type(exc).__name__
    return text.removeprefix("error returned from database: ")


def _document_metadata(document: DocumentRecord, kb_name: str = "") -> dict:
    """What ``repair`` needs to rebuild a document's catalog row; ``kb_name`` only when known
    (an update without it keeps the name already stored)."""
    metadata = {"filename": document.filename, "title": document.title, "title_from": document.title_from,
                "doc_type": document.doc_type, "content_hash": document.content_hash, "source": document.source,
                "tags": json.dumps(document.tags, ensure_ascii=False), "size_bytes": document.size_bytes,
                "pages": document.pages, "created_at": document.created_at, "kb_id": document.kb_id}
    if kb_name:
        metadata["kb_name"] = kb_name
    return metadata


def _metadata(passage: Passage, document: DocumentRecord, kb_names: dict[str, str]) -> dict:
    return {
        "doc_id": passage.doc_id, "version": passage.version, "page": passage.page,
        "position": passage.position, "start": passage.start, "end": passage.end, "tokens": passage.tokens,
        "section": passage.section,
        **_document_metadata(document, kb_names.get(document.kb_id, "")),
    }

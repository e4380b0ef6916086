"""The indexer: the only code that writes passages and vectors (ingest, new version,
delete, reindex, sweep).

A file is all-or-nothing. Reading, chunking, tokenizing and embedding happen without any
lock (searches and other writers go on meanwhile); only saving takes the data dir's
write lock: the version is first recorded as pending in the catalog, its vectors are
written, then one catalog transaction makes it current and clears the pending row. A
crash at any point leaves either the old version or the new one, plus vectors that the
catalog can prove stale (a superseded version, a deleted document, or the pending write
of a dead process), which the next open sweeps.

Many files (a folder, a multi-file upload) are embedded together, a few thousand
passages per model call batch, and saved together; each file still succeeds or fails
as a whole.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .catalog import Catalog, DocumentRecord
from .chunking import chunk_pages, contextual_text, section_paths
from .config import Settings
from .embeddings import Embedder
from .lexical import LexicalEntry, LexicalIndex
from .loaders import LoadedDocument, LoaderError, load_bytes, load_path
from .passages import Passage
from .tags import checked_tags, normalize_tags
from .text import search_tokens
from .vectors import VectorStore

log = logging.getLogger(__name__)

Progress = Callable[[str, float], None]  # (stage message, fraction 0..1)
GROUP_PASSAGES = 2048  # passages embedded and saved together
GROUP_FILES = 256


def _no_progress(stage: str, fraction: float) -> None:
    pass


@dataclass
class IngestResult:
    """What happened to one file: added, unchanged, new_version or refused (with reason)."""

    filename: str
    status: str
    message: str
    document: DocumentRecord | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True unless the file was refused."""
        return self.status != "refused"

    def to_dict(self) -> dict:
        """Plain dict for JSON output."""
        return {
            "filename": self.filename,
            "status": self.status,
            "message": self.message,
            "document": self.document.to_dict() if self.document else None,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class IngestItem:
    """One file to ingest: a path, or bytes with a file name; ``source`` identifies it
    (a second file with the same source is a new version of it)."""

    data: bytes | None = None
    path: Path | None = None
    filename: str = ""
    source: str = ""
    tags: list[str] = field(default_factory=list)
    progress: Progress = _no_progress

    @classmethod
    def of(cls, source: str | Path | bytes, filename: str | None = None, tags: list[str] | None = None,
           progress: Progress | None = None, identity: str | None = None) -> "IngestItem":
        """An item from a path or bytes (+ filename); a path's identity is its full path."""
        tags = checked_tags(tags or [])
        progress = progress or _no_progress
        if isinstance(source, bytes):
            name = Path(filename or "upload").name
            return cls(data=source, filename=name, source=identity or name, tags=tags, progress=progress)
        path = Path(source)
        return cls(path=path, filename=filename or path.name, source=identity or str(path.expanduser().resolve()),
                   tags=tags, progress=progress)


@dataclass
class _Prepared:
    """A file read, chunked and tokenized, waiting for its vectors and its save."""

    item: IngestItem
    loaded: LoadedDocument
    passages: list[Passage]
    terms: list[list[str]]
    started: float
    duplicate: DocumentRecord | None = None
    vectors: np.ndarray | None = None
    contexts: list[str] | None = None  # what is embedded: each passage under its section path


class WriteLock:
    """One writer at a time per data dir: a thread lock plus an exclusive file lock, so
    writers in other processes (a CLI ingest beside the app) wait their turn too."""

    def __init__(self, path: Path):
        self.path = path
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextmanager
    def hold(self, wait: bool = True) -> Iterator[bool]:
        """Hold the lock for the block; with ``wait=False`` yield False at once if it is busy."""
        if not self._thread_lock.acquire(blocking=wait):
            yield False
            return
        try:
            if self._depth == 0:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
                except BlockingIOError:
                    os.close(fd)
                    yield False
                    return
                self._fd = fd
            self._depth += 1
            try:
                yield True
            finally:
                self._depth -= 1
                if self._depth == 0 and self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
                    os.close(self._fd)
                    self._fd = None
        finally:
            self._thread_lock.release()


class Indexer:
    """Writes documents into the catalog, the vector store and the lexical index."""

    def __init__(self, settings: Settings, catalog: Catalog, store: VectorStore, lexical: LexicalIndex,
                 embedder: Callable[[], Embedder], lock: WriteLock):
        self.settings = settings
        self.catalog = catalog
        self.store = store
        self.lexical = lexical
        self._embedder = embedder
        self.lock = lock

    # ----- ingest ------------------------------------------------------------------

    def ingest(self, item: IngestItem) -> IngestResult:
        """Add one file; never raises for a bad file."""
        return self.ingest_many([item])[0]

    def ingest_many(self, items: list[IngestItem]) -> list[IngestResult]:
        """Add many files, embedding and saving them in groups; results in input order."""
        results: list[IngestResult | None] = [None] * len(items)
        group: list[tuple[int, _Prepared]] = []
        for index, item in enumerate(items):
            prepared = self._prepare(item)
            if isinstance(prepared, IngestResult):
                results[index] = prepared
                continue
            if any(p.item.source == item.source or p.loaded.content_hash == prepared.loaded.content_hash
                   for _, p in group):
                self._finish_group(group, results)  # the second copy is then judged against the first
                group = []
            group.append((index, prepared))
            if sum(len(p.passages) for _, p in group) >= GROUP_PASSAGES or len(group) >= GROUP_FILES:
                self._finish_group(group, results)
                group = []
        if group:
            self._finish_group(group, results)
        return [result for result in results if result is not None]

    def _prepare(self, item: IngestItem) -> _Prepared | IngestResult:
        started = time.perf_counter()
        try:
            item.progress("reading", 0.02)
            limits = {"max_bytes": self.settings.max_upload_bytes,
                      "max_unpacked_bytes": self.settings.max_unpacked_bytes}
            loaded = (load_bytes(item.data, item.filename, **limits) if item.path is None
                      else load_path(item.path, **limits))
            loaded.filename = item.filename or loaded.filename
            duplicate = self.catalog.by_hash(loaded.content_hash)
            if duplicate is not None and self._intact(duplicate):
                return self._unchanged(item, loaded, duplicate, started)
            item.progress("chunking", 0.08)
            chunks = chunk_pages(loaded.pages, self.settings.chunk_tokens, self.settings.chunk_overlap_tokens)
            passages = [Passage(c.text, c.page, c.position, c.start, c.end, c.tokens) for c in chunks]
            if not passages:
                raise LoaderError(f"{item.filename}: no text to index")
            # embedded and indexed with their section path above them (headings of the file)
            contexts = [contextual_text(p.text, section) for p, section in
                        zip(passages, section_paths(loaded.pages, chunks))]
            terms = [search_tokens(text) for text in contexts]
            return _Prepared(item, loaded, passages, terms, started, contexts=contexts)
        except LoaderError as exc:
            return _finished(item, IngestResult(item.filename, "refused", str(exc)), started)
        except Exception as exc:
            log.exception("reading %s failed", item.filename)
            return _finished(item, IngestResult(item.filename, "refused",
                                                f"{item.filename}: could not be read ({type(exc).__name__}: {exc})"),
                             started)

    def _intact(self, record: DocumentRecord) -> bool:
        """True when a document's passages and vectors are all there (else re-index it)."""
        passages = self.catalog.passages_of(record.id)
        if len(passages) != record.chunks or not passages:
            return False
        probe = list(dict.fromkeys([passages[0].id, passages[-1].id]))  # one id for a one-passage document
        return self.store.existing(probe) == set(probe)

    def _unchanged(self, item: IngestItem, loaded: LoadedDocument, duplicate: DocumentRecord,
                   started: float) -> IngestResult:
        if item.tags and not set(item.tags) <= set(duplicate.tags):
            duplicate = self.catalog.update_metadata(duplicate.id, None, normalize_tags(duplicate.tags + item.tags))
        same = "" if duplicate.filename == loaded.filename else f" as {duplicate.filename}"
        message = f"{item.filename}: already in the knowledge base{same}"
        result = IngestResult(item.filename, "unchanged", message, duplicate)
        return _finished(item, result, started)

    def _finish_group(self, group: list[tuple[int, _Prepared]], results: list) -> None:
        try:
            self._embed(group)
        except Exception as exc:
            log.exception("embedding failed")
            for index, prepared in group:
                results[index] = _finished(prepared.item, IngestResult(
                    prepared.item.filename, "refused",
                    f"{prepared.item.filename}: could not be indexed ({type(exc).__name__}: {exc})"), prepared.started)
            return
        for index, prepared in group:
            prepared.item.progress("saving", 0.92)
        for (index, prepared), result in zip(group, self._save([p for _, p in group])):
            results[index] = _finished(prepared.item, result, prepared.started)

    def _embed(self, group: list[tuple[int, _Prepared]]) -> None:
        texts = [text for _, prepared in group for text in (prepared.contexts or [p.text for p in prepared.passages])]
        bounds, offset = [], 0
        for _, prepared in group:
            bounds.append((offset, offset + len(prepared.passages)))
            offset += len(prepared.passages)

        def on_batch(done: int, total: int) -> None:
            # The files of a group are embedded together, in batches of similar length (not
            # file by file): each shows the group's progress.
            of_files = f" of {len(group)} files" if len(group) > 1 else ""
            for _, prepared in group:
                prepared.item.progress(f"embedding {done}/{total} passages{of_files}", 0.1 + 0.8 * done / max(total, 1))

        vectors = self._embedder().embed_documents(texts, self.settings.embedding_batch_size, on_batch)
        for (_, prepared), (low, high) in zip(group, bounds):
            prepared.vectors = vectors[low:high]

    @contextmanager
    def _vector_write(self) -> Iterator[None]:
        """Hold the write lock around changes to the vector store, announcing them to other
        processes before (a writer must re-open first) and after (a reader that opened
        meanwhile must re-open to see them)."""
        with self.lock.hold():
            self.fresh()
            self.store.generation = self.catalog.bump_vector_generation()
            try:
                yield
            finally:
                self.store.generation = self.catalog.bump_vector_generation()

    def _save(self, group: list[_Prepared]) -> list[IngestResult]:
        """Under the write lock: pending rows, vectors, one commit, then old versions out."""
        with self._vector_write():
            plans, outcomes = [], {}
            for prepared in group:
                duplicate = self.catalog.by_hash(prepared.loaded.content_hash)
                if duplicate is not None and self._intact(duplicate):  # another writer was quicker
                    outcomes[id(prepared)] = self._unchanged(prepared.item, prepared.loaded, duplicate,
                                                             prepared.started)
                    continue
                plans.append(self._plan(prepared))
            if plans:
                try:
                    self._write(plans)
                except Exception as exc:
                    log.exception("saving failed")
                    for prepared, _, _ in plans:
                        outcomes[id(prepared)] = IngestResult(
                            prepared.item.filename, "refused",
                            f"{prepared.item.filename}: could not be saved ({type(exc).__name__}: {exc})")
                else:
                    for prepared, record, previous in plans:
                        outcomes[id(prepared)] = _saved(prepared.item, record, previous, prepared.loaded.notes)
        return [outcomes[id(prepared)] for prepared in group]

    def _plan(self, prepared: _Prepared) -> tuple[_Prepared, DocumentRecord, DocumentRecord | None]:
        item, loaded = prepared.item, prepared.loaded
        previous = self.catalog.by_source(item.source)
        if previous is None:
            broken = self.catalog.by_hash(loaded.content_hash)  # same bytes, but vectors lost: re-index it
            previous = broken
        doc_id = previous.id if previous else uuid.uuid4().hex[:12]
        version = previous.version + 1 if previous else 1
        keep_title = previous is not None and previous.title_from == "user"
        stamp = time.time()
        record = DocumentRecord(
            id=doc_id, source=item.source, filename=item.filename,
            title=previous.title if keep_title else loaded.title,
            title_from="user" if keep_title else "file",
            doc_type=loaded.doc_type, content_hash=loaded.content_hash, version=version,
            tags=normalize_tags((previous.tags if previous else []) + item.tags),
            size_bytes=loaded.size_bytes, pages=loaded.page_count, chunks=len(prepared.passages),
            tokens=sum(p.tokens for p in prepared.passages),
            created_at=previous.created_at if previous else stamp, updated_at=stamp,
        )
        prepared.passages = [replace(p, doc_id=doc_id, version=version) for p in prepared.passages]
        return prepared, record, previous

    def _write(self, plans: list[tuple[_Prepared, DocumentRecord, DocumentRecord | None]]) -> None:
        for _, record, _ in plans:
            self.catalog.begin_write(record.id, record.version)
        records = {record.id: record for _, record, _ in plans}
        passages = [p for prepared, _, _ in plans for p in prepared.passages]
        vectors = np.vstack([prepared.vectors for prepared, _, _ in plans])
        try:
            self.store.add(passages, vectors, records)
            self.catalog.commit_versions([(record, prepared.passages, prepared.terms) for prepared, record, _ in plans])
        except BaseException:
            for _, record, _ in plans:
                self.store.delete_version(record.id, record.version)
                self.catalog.abandon_write(record.id, record.version)
            raise
        for prepared, record, previous in plans:
            if previous is not None and previous.version != record.version:
                self.store.delete_version(record.id, previous.version)
            self.lexical.replace_document(record.id, record.version, [
                LexicalEntry(p.id, p.doc_id, t) for p, t in zip(prepared.passages, prepared.terms)])

    # ----- delete, reindex ---------------------------------------------------------

    def delete(self, doc_id: str) -> DocumentRecord:
        """Remove a document and its vectors; KeyError when it does not exist."""
        with self._vector_write():
            record = self.catalog.remove(doc_id)
            self.store.delete_document(doc_id)
            self.lexical.remove_documents([doc_id])
        return record

    def reindex(self, embedder: Embedder, progress: Progress | None = None) -> int:
        """Re-embed every passage with ``embedder`` into a fresh collection; returns passages done."""
        report = progress or _no_progress
        with self._vector_write():
            documents = {doc.id: doc for doc in self.catalog.documents()}
            passages = [p for doc_id in documents for p in self.catalog.passages_of(doc_id)]
            vectors = embedder.embed_documents(
                [p.text for p in passages], self.settings.embedding_batch_size,
                lambda done, total: report(f"embedding {done}/{total}", done / max(total, 1)),
            )
            self.store.reset()
            self.store.add(passages, vectors, documents)
            self.catalog.set_meta("embedding_model", embedder.name)
            self.catalog.set_meta("embedding_dim", str(embedder.dimension))
        return len(passages)

    def add_vectors(self, passages: list[Passage], embedder: Embedder) -> None:
        """Embed and store vectors for passages the catalog has but the store lost (repair)."""
        documents = {doc.id: doc for doc in self.catalog.documents()}
        vectors = embedder.embed_documents([p.text for p in passages], self.settings.embedding_batch_size)
        with self._vector_write():
            self.store.add(passages, vectors, documents)

    def delete_vectors(self, ids: list[str], wait: bool = True) -> bool:
        """Remove vectors the catalog proved stale (the sweep); with ``wait=False`` skip it
        (False) while another writer is busy rather than wait for it."""
        if not ids:
            return True
        with self.lock.hold(wait=wait) as held:
            if not held:
                return False
            with self._vector_write():
                self.store.delete_ids(ids)
        return True

    def fresh(self) -> None:
        """Make sure this process's view of the vector store includes every other writer's."""
        self.store.ensure_fresh(self.catalog.vector_generation)


def _finished(item: IngestItem, result: IngestResult, started: float) -> IngestResult:
    result.seconds = time.perf_counter() - started
    item.progress("done", 1.0)
    return result


def _saved(item: IngestItem, record: DocumentRecord, previous: DocumentRecord | None,
           notes: list[str] = ()) -> IngestResult:
    passages = plural(record.chunks, "passage")
    noted = "".join(f"; {note}" for note in notes)  # how the file was read, when it matters (see loaders)
    if previous is not None:
        return IngestResult(item.filename, "new_version",
                            f"{item.filename}: replaced by version {record.version} ({passages}){noted}", record)
    return IngestResult(item.filename, "added",
                        f"{item.filename}: added ({plural(record.pages, 'page')}, {passages}){noted}", record)


def plural(number: int, noun: str) -> str:
    """'1 page', '3 pages'."""
    return f"{number} {noun}{'' if number == 1 else 's'}"

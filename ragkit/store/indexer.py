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

import logging
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ragkit.config import Settings
from ragkit.errors import DatabaseUnreachable, LoaderError, RagkitError, VectorStoreUnavailable
from ragkit.ingest.chunking import chunk_pages, contextual_text, section_paths
from ragkit.ingest.document import LoadedDocument
from ragkit.ingest.loading import load_bytes, load_path
from ragkit.ingest.ocr import OcrOptions
from ragkit.ingest.web import fetch_page
from ragkit.lang.text import index_tokens, plural
from ragkit.models.embeddings import Embedder
from ragkit.models.sentence_vectors import mark_stored, sentence_spans
from ragkit.store import integrity
from ragkit.store.catalog import Catalog
from ragkit.store.lexical import LexicalEntry, LexicalIndex
from ragkit.store.originals import OriginalStore
from ragkit.store.tags import checked_tags, normalize_tags
from ragkit.store.vectors import VectorStore
from ragkit.store.writelock import WriteLock
from ragkit.types import DocumentRecord, Passage

__all__ = ["Indexer", "IngestItem", "IngestResult", "Progress", "WriteLock", "normalize_tags", "plural"]

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
    kb_id: str = ""  # the knowledge base it goes into ("": the default one)
    url: str = ""  # a web page to fetch (then ``source`` is the address), instead of data or path
    added_by: str = ""  # who adds it (an e-mail; "" without a login)

    @classmethod
    def of_url(cls, url: str, tags: list[str] | None = None, progress: Progress | None = None,
               kb_id: str = "") -> "IngestItem":
        """An item for a web page: fetched when it is read (``ragkit.ingest.web``), identified by its address."""
        address = url.strip()
        return cls(url=address, filename=address, source=address, tags=checked_tags(tags or []),
                   progress=progress or _no_progress, kb_id=kb_id)

    @classmethod
    def of(cls, source: str | Path | bytes, filename: str | None = None, tags: list[str] | None = None,
           progress: Progress | None = None, identity: str | None = None, kb_id: str = "") -> "IngestItem":
        """An item from a path or bytes (+ filename); a path's identity is its full path."""
        tags = checked_tags(tags or [])
        progress = progress or _no_progress
        if isinstance(source, bytes):
            name = Path(filename or "upload").name
            return cls(data=source, filename=name, source=identity or name, tags=tags, progress=progress,
                       kb_id=kb_id)
        path = Path(source)
        return cls(path=path, filename=filename or path.name, source=identity or str(path.expanduser().resolve()),
                   tags=tags, progress=progress, kb_id=kb_id)


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
        self._writing = 0  # nesting depth of ``_vector_write`` (in the thread holding the lock)
        self._checking = 0  # nesting depth of ``checking``
        self.originals = OriginalStore(settings.originals_path)

    # ----- ingest ------------------------------------------------------------------

    def ingest(self, item: IngestItem) -> IngestResult:
        """Add one file; never raises for a bad file."""
        return self.ingest_many([item])[0]

    def ingest_many(self, items: list[IngestItem]) -> list[IngestResult]:
        """Add many files, embedding and saving them in groups; results in input order."""
        results: list[IngestResult | None] = [None] * len(items)
        group: list[tuple[int, _Prepared]] = []
        default_kb = self.catalog.default_knowledge_base().id
        for item in items:
            item.kb_id = item.kb_id or default_kb
        warming = False
        for index, item in enumerate(items):
            prepared = self._prepare(item)
            if isinstance(prepared, IngestResult):
                results[index] = prepared
                continue
            if not warming:
                warming = True
                self._warm_up()
            if any(p.item.kb_id == item.kb_id and (p.item.source == item.source
                                                   or p.loaded.content_hash == prepared.loaded.content_hash)
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

    def _warm_up(self) -> None:
        """Load the embedding model in a thread while the other files are read (a file is to
        be embedded): on a first run, loading it and building its ONNX copy took a quarter of
        the wall time of ingesting the 311 files of ``bench --peer``. A failure is left to the
        first real use, which reports it."""

        def load() -> None:
            try:
                self._embedder()
            except Exception:  # noqa: BLE001 - raised again, and reported, where the model is used
                log.debug("loading the embedding model ahead failed", exc_info=True)

        threading.Thread(target=load, name="ragkit-model-load", daemon=True).start()

    def _prepare(self, item: IngestItem) -> _Prepared | IngestResult:
        started = time.perf_counter()
        try:
            item.progress("reading", 0.02)
            limits = {"max_bytes": self.settings.max_upload_bytes,
                      "max_unpacked_bytes": self.settings.max_unpacked_bytes}
            if item.url:
                item.progress("fetching the page", 0.01)
                loaded = fetch_page(item.url, self.settings)
            else:
                loaded = (load_bytes(item.data, item.filename, **limits, ocr=self._ocr_settings()) if item.path is None
                          else load_path(item.path, **limits, ocr=self._ocr_settings()))
            loaded.filename = item.filename or loaded.filename
            duplicate = self.catalog.by_hash(loaded.content_hash, item.kb_id)
            if duplicate is not None and self._intact(duplicate):
                return self._unchanged(item, loaded, duplicate, started)
            item.progress("chunking", 0.08)
            chunks = chunk_pages(loaded.pages, self.settings.chunk_tokens, self.settings.chunk_overlap_tokens)
            passages = [Passage(c.text, c.page, c.position, c.start, c.end, c.tokens, section=section)
                        for c, section in zip(chunks, section_paths(loaded.pages, chunks))]
            if not passages:
                raise LoaderError(f"{item.filename}: no text to index")
            # embedded and indexed with their section path above them (headings of the file)
            contexts = [contextual_text(p.text, p.section) for p in passages]
            terms = [index_tokens(text) for text in contexts]
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
        try:
            return self.store.existing(probe) == set(probe)
        except VectorStoreUnavailable:
            return False

    def _unchanged(self, item: IngestItem, loaded: LoadedDocument, duplicate: DocumentRecord,
                   started: float) -> IngestResult:
        if item.tags and not set(item.tags) <= set(duplicate.tags):
            duplicate = self.catalog.update_metadata(duplicate.id, None, normalize_tags(duplicate.tags + item.tags))
            try:
                self.record_edit(duplicate)
            except Exception as exc:  # noqa: BLE001 - the catalog has the tags; only their backup copy failed
                log.warning("could not record the new tags of %s with its vectors: %s", duplicate.filename, exc)
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
        saved = self._save([p for _, p in group])
        if len(group) > 1 and any(result.status == "refused" for result in saved):
            # The group was saved as one: try each file alone, so the files that fit (a disk
            # filling up) or that are sound are kept.
            saved = [self._save([prepared])[0] for _, prepared in group]
        for (index, prepared), result in zip(group, saved):
            results[index] = _finished(prepared.item, result, prepared.started)

    def _embed(self, group: list[tuple[int, _Prepared]]) -> None:
        texts = [text for _, prepared in group
                 for text in (prepared.contexts or [contextual_text(p.text, p.section) for p in prepared.passages])]
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

        spans = [sentence_spans(p.text, p.section) for _, prepared in group for p in prepared.passages]
        vectors, sentences = self._embedder().embed_passages(texts, spans, self.settings.embedding_batch_size,
                                                             on_batch)
        for (_, prepared), (low, high) in zip(group, bounds):
            prepared.vectors = vectors[low:high]
            prepared.passages = [replace(p, sentence_vectors=found)
                                 for p, found in zip(prepared.passages, sentences[low:high])]

    @contextmanager
    def _vector_write(self, catch_up: bool = True) -> Iterator[None]:
        """Hold the write lock around changes to the vector store, on a client that caught
        up with every other process's writes (unless ``catch_up`` is False: the store is
        being replaced), announcing the change to other processes before (a writer must
        re-open first) and after (a reader that opened meanwhile must re-open to see it).
        The catalog records the write as under way until it finishes (see
        ``Catalog.begin_vector_write``); a write another process left unfinished is
        checked first (``integrity.sweep``)."""
        with self.lock.hold():
            if catch_up:
                self.store.refresh_for_write()
            outermost = self._writing == 0 and not self._checking
            intact = True
            if outermost and catch_up and self.catalog.vector_write_interrupted():
                intact = self._check_interrupted_write()
            self.store.generation = self.catalog.begin_vector_write(outermost)
            self._writing += 1
            finished = False
            try:
                yield
                finished = True
            finally:
                self._writing -= 1
                if not self._writing:
                    self.store.note_saved()
                try:
                    self.store.generation = self.catalog.end_vector_write(finished and outermost and intact)
                except Exception as exc:  # a full disk: the first bump already told the others
                    log.warning("could not record the end of a vector write: %s", exc)

    @contextmanager
    def checking(self) -> Iterator[None]:
        """For the block (a sweep, a repair), writes leave the record of an interrupted
        write alone: the block clears it once it checked the index."""
        with self.lock.hold():
            self._checking += 1
            try:
                yield
            finally:
                self._checking -= 1

    def _check_interrupted_write(self) -> bool:
        """Sweep what a writer that died left behind; True when the index was found whole."""
        try:
            integrity.sweep(self.catalog, self.store, self)
        except Exception as exc:  # noqa: BLE001 - e.g. a full disk: the next write or open checks again
            log.warning("could not check the vector index after an interrupted write: %s", exc)
        return not self.catalog.vector_write_interrupted()

    def _save(self, group: list[_Prepared]) -> list[IngestResult]:
        """Under the write lock: pending rows, vectors, one commit, then old versions out.
        Never raises: a file that cannot be saved is refused with the cause."""
        outcomes: dict[int, IngestResult] = {}
        try:
            with self._vector_write():
                plans = []
                for prepared in group:
                    duplicate = self.catalog.by_hash(prepared.loaded.content_hash, prepared.item.kb_id)
                    if duplicate is not None and self._intact(duplicate):  # another writer was quicker
                        outcomes[id(prepared)] = self._unchanged(prepared.item, prepared.loaded, duplicate,
                                                                 prepared.started)
                        continue
                    plans.append(self._plan(prepared))
                if plans:
                    self._write(plans)
                    for prepared, record, previous in plans:
                        outcomes[id(prepared)] = _saved(prepared.item, record, previous, prepared.loaded.notes)
        except Exception as exc:
            cause = self.failure_cause(exc, sum(len(p.passages) for p in group))
            if isinstance(exc, RagkitError):  # foreseen and told in words (a server away or refusing): no traceback
                log.warning("saving failed: %s", cause)
            else:
                log.exception("saving failed")
            for prepared in group:
                if id(prepared) not in outcomes:
                    outcomes[id(prepared)] = IngestResult(prepared.item.filename, "refused",
                                                          f"{prepared.item.filename}: could not be saved: {cause}")
        return [outcomes[id(prepared)] for prepared in group]

    def failure_cause(self, exc: Exception, passages: int = 0) -> str:
        """Why a write failed, in words: a full disk is named as such (Chroma reports it
        only as a failure to apply its log), with what to do."""
        if isinstance(exc, DatabaseUnreachable):
            return str(exc)
        server = self.store.server_message(exc)
        if server:
            again = "the token is set right" if self.store.refusal_message(exc) else "the server answers"
            return f"{server}. Nothing of this file was kept; add it again once {again}."
        folder = self.settings.data_path
        text = f"{type(exc).__name__}: {exc}"
        try:
            free = shutil.disk_usage(folder).free
        except OSError:
            free = None
        full = "disk is full" in text or "No space left" in text or getattr(exc, "errno", None) == 28
        if full or (free is not None and free < max(8 << 20, passages * 16 << 10)):
            left = f"{free / 1e6:.1f} MB free" if free is not None else "no space left"
            return (f"the disk holding {folder} is full ({left}). Nothing of this file was kept; free some "
                    "space and add it again.")
        return f"{text}. Nothing of this file was kept."

    def _plan(self, prepared: _Prepared) -> tuple[_Prepared, DocumentRecord, DocumentRecord | None]:
        item, loaded = prepared.item, prepared.loaded
        previous = self.catalog.by_source(item.source, item.kb_id)
        if previous is None:
            broken = self.catalog.by_hash(loaded.content_hash, item.kb_id)  # same bytes, vectors lost: re-index it
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
            created_at=previous.created_at if previous else stamp, updated_at=stamp, kb_id=item.kb_id,
            added_by=previous.added_by if previous else item.added_by, changed_by=item.added_by,
        )
        prepared.passages = [replace(p, doc_id=doc_id, version=version) for p in prepared.passages]
        return prepared, record, previous

    def _write(self, plans: list[tuple[_Prepared, DocumentRecord, DocumentRecord | None]]) -> None:
        if self.settings.keep_originals:  # before the version is current: a current version's original is there
            for prepared, record, _ in plans:
                if prepared.loaded.raw:
                    self.originals.put(prepared.loaded.raw, record.content_hash)
        self.catalog.begin_writes([(record.id, record.version) for _, record, _ in plans])
        records = {record.id: record for _, record, _ in plans}
        passages = [p for prepared, _, _ in plans for p in prepared.passages]
        vectors = np.vstack([prepared.vectors for prepared, _, _ in plans])
        try:
            self.store.add(passages, vectors, records, self.kb_names())
            self.catalog.commit_versions([(record, prepared.passages, prepared.terms) for prepared, record, _ in plans])
        except BaseException:
            # The pending rows stay: they prove these vectors stale, including any that Chroma
            # applies from its log later (an add that failed half-way). Sweep them now if the
            # store lets us, else the next open does.
            for _, record, _ in plans:
                self.catalog.end_write(record.id, record.version)
            self._sweep_after_failure()
            raise
        for prepared, record, previous in plans:
            if previous is not None and previous.version != record.version:
                self.store.delete_version(record.id, previous.version)
                self._discard_original(previous.content_hash)
            self.lexical.replace_document(record.id, record.version, [
                LexicalEntry(p.id, p.doc_id, t) for p, t in zip(prepared.passages, prepared.terms)])

    def _sweep_after_failure(self) -> None:
        self.store.reopen_later()  # the failed write may sit unapplied in Chroma's log
        try:
            integrity.sweep(self.catalog, self.store, self)
        except Exception as exc:  # noqa: BLE001 - e.g. the disk is still full: the next open sweeps
            log.warning("could not remove the vectors of the failed write yet: %s", exc)

    # ----- delete, reindex ---------------------------------------------------------

    def delete(self, doc_id: str, by: str = "") -> DocumentRecord:
        """Remove a document and its vectors (``by``: who); KeyError when it does not exist."""
        with self._vector_write():
            record = self.catalog.remove(doc_id, by)
            self.store.delete_document(doc_id)
            self.lexical.remove_documents([doc_id])
            self._discard_original(record.content_hash)
        return record

    def delete_many(self, doc_ids: list[str], by: str = "") -> list[DocumentRecord]:
        """Remove several documents under one hold of the write lock; ids that no longer
        exist (deleted meanwhile) are skipped. Returns the records deleted."""
        deleted = []
        with self.lock.hold():
            for doc_id in doc_ids:
                try:
                    deleted.append(self.delete(doc_id, by))
                except KeyError:
                    continue
        return deleted

    def _discard_original(self, digest: str) -> None:
        """Remove a kept original no document (of any knowledge base) has any more."""
        if digest and not self.catalog.hash_in_use(digest):
            self.originals.discard(digest)

    def _ocr_settings(self):
        """What the loaders need to read text from images (see ``ragkit.ingest.ocr``)."""
        return OcrOptions.from_settings(self.settings)

    def reindex(self, embedder: Embedder, progress: Progress | None = None) -> int:
        """Re-embed every passage with ``embedder`` into a fresh collection; returns passages done."""
        count = self.rebuild_index(embedder, {}, progress)
        with self.lock.hold():
            self.catalog.set_meta("embedding_model", embedder.name)
            self.catalog.set_meta("embedding_dim", str(embedder.dimension))
            mark_stored(self.catalog, embedder.pools_sentences)
            self.catalog.announce_search_change()  # other processes choose their reranker again
        return count

    def rebuild_index(self, embedder: Embedder, reuse: dict[str, np.ndarray],
                      progress: Progress | None = None) -> int:
        """Fill a fresh collection with every current passage: the vectors in ``reuse`` as
        they are, the others embedded with ``embedder`` (without holding the write lock, so
        others go on reading). Returns the passages embedded."""
        report = progress or _no_progress
        pooled: list[Passage] = []  # passages embedded here, with their sentence vectors
        while True:
            revision = self.catalog.revision
            documents = {doc.id: doc for doc in self.catalog.documents()}
            passages = [p for doc_id in documents for p in self.catalog.passages_of(doc_id)]
            todo = [p for p in passages if p.id not in reuse]
            fresh, sentences = embedder.embed_passages(
                [contextual_text(p.text, p.section) for p in todo], [sentence_spans(p.text, p.section) for p in todo],
                self.settings.embedding_batch_size,
                lambda done, total: report(f"embedding {done}/{total}", done / max(total, 1)),
            ) if todo else (np.zeros((0, embedder.dimension), dtype=np.float32), [])
            vectors = dict(zip((p.id for p in todo), fresh))
            pooled += [replace(p, sentence_vectors=found) for p, found in zip(todo, sentences) if found is not None]
            with self._vector_write():
                if self.catalog.revision != revision:  # changed while embedding: embed the changes too
                    reuse = {**reuse, **vectors}
                    continue
                self.store.reset()
                if passages:
                    self.store.add(passages, np.stack([reuse.get(p.id, vectors.get(p.id)) for p in passages]),
                                   documents, self.kb_names())
                current = {p.id for p in passages}
                # a full re-index drops the earlier model's vectors (none may be pooled now)
                self.catalog.store_sentence_vectors([p for p in pooled if p.id in current], replace_all=not reuse)
            return len(todo)

    def recreate_store(self) -> str:
        """Move an unreadable vector store aside and start an empty one; returns where the
        old files went ("" when they could be dropped in place)."""
        with self._vector_write(catch_up=False):
            return self.store.recreate()

    def add_vectors(self, passages: list[Passage], embedder: Embedder) -> None:
        """Embed and store vectors for passages the catalog has but the store lost (repair)."""
        documents = {doc.id: doc for doc in self.catalog.documents()}
        vectors = embedder.embed_documents([contextual_text(p.text, p.section) for p in passages],
                                           self.settings.embedding_batch_size)
        with self._vector_write():
            self.store.add(passages, vectors, documents, self.kb_names())

    def record_edit(self, record: DocumentRecord) -> None:
        """Copy a document's user-set title and tags (and its knowledge base) onto one of its
        vectors, so ``repair`` of a lost catalog brings them back."""
        passages = self.catalog.passages_of(record.id)
        if not passages:
            return
        with self._vector_write():
            self.store.update_document_metadata(passages[0].id, record, self.kb_names().get(record.kb_id, ""))

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

    def embedder(self) -> Embedder:
        """The embedding model (loaded on first use)."""
        return self._embedder()

    def kb_names(self) -> dict[str, str]:
        """Knowledge base id -> name (stored with each vector, for ``repair``)."""
        return {base.id: base.name for base in self.catalog.knowledge_bases()}


def _finished(item: IngestItem, result: IngestResult, started: float) -> IngestResult:
    result.seconds = time.perf_counter() - started
    item.progress("done", 1.0)
    return result


def _saved(item: IngestItem, record: DocumentRecord, previous: DocumentRecord | None,
           notes: list[str] = ()) -> IngestResult:
    passages = plural(record.chunks, "passage")
    noted = "".join(f"; {note}" for note in notes)  # how the file was read, when it matters (see converters)
    if previous is not None:
        return IngestResult(item.filename, "new_version",
                            f"{item.filename}: replaced by version {record.version} ({passages}){noted}", record)
    return IngestResult(item.filename, "added",
                        f"{item.filename}: added ({plural(record.pages, 'page')}, {passages}){noted}", record)



"""Checking the catalog against the vector store, sweeping what is provably stale, and
repairing what can be repaired.

The rule: a vector is deleted only when the catalog, read after the vectors were listed,
explains it: an older version of a document it knows, a document it recorded as deleted,
or the pending write of a writer that is gone. A writer holds the write lock (the data
dir's, or the database's for replicas) from recording its pending write to committing
it, so only a process holding the lock can tell a dead writer's pending write from a live
one: the sweep runs under the lock (``sweep``), and without it pending writes only
explain their vectors. Under the lock a pending write is abandoned when its lease ran
out or its writer on this host no longer runs (``PendingWrite.abandoned``): a replica
whose database connection dropped (so its lock went) but which still writes keeps its
version until it stops renewing the lease. Vectors of
documents the catalog has never heard of mean the catalog is not the one that wrote them
(replaced, emptied, lost): then nothing is deleted and opening stops with a message
saying what to do.

Every open also probes the vector index: sampled passages must each be found by a
search for their own vector (``VectorStore.unreachable``); ``repair`` probes every vector
and rebuilds the index when any cannot be found.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ragkit.errors import StoreInconsistent, VectorStoreUnavailable
from ragkit.ingest.chunking import contextual_text
from ragkit.lang.text import index_tokens
from ragkit.store.catalog import Catalog
from ragkit.store.vectors import StoredVector, VectorStore
from ragkit.types import DEFAULT_KB_ID, DEFAULT_KB_NAME, DocumentRecord, Passage

log = logging.getLogger(__name__)
REACH_SAMPLE = 64  # passages probed at every open (about 10 ms on 100k passages)


@dataclass
class Inspection:
    """What a comparison of catalog and vector store found."""

    vectors: int = 0
    passages: int = 0
    pending: int = 0  # pending writes recorded in the catalog (live or not)
    scanned: bool = False  # False: the counts agreed (or a writer is at work), no vector was listed
    stale: list[str] = field(default_factory=list)  # vector ids the catalog proves stale
    abandoned: list[tuple[str, int]] = field(default_factory=list)  # dead writers' pending rows (under the lock)
    unknown: dict[str, list[StoredVector]] = field(default_factory=dict)  # doc id -> its vectors
    missing: dict[str, list[str]] = field(default_factory=dict)  # doc id -> passage ids without a vector
    probed: int = 0
    unreachable: list[str] = field(default_factory=list)  # stored vectors a search for themselves misses
    store_error: str = ""  # the vector store could not be read at all
    deferred: bool = False  # another process was saving: the vectors were not checked

    @property
    def index_damaged(self) -> bool:
        """True when nearest-neighbour search cannot reach stored vectors."""
        return bool(self.unreachable)


def inspect(catalog: Catalog, store: VectorStore, full: bool = False, lock_held: bool = False) -> Inspection:
    """Compare the two stores and probe the index. Cheap when their counts agree (or a
    writer is at work); otherwise (or with ``full``) every vector's metadata is listed and
    classified. ``full`` probes every vector, not a sample. ``lock_held``: the caller holds
    the write lock, so pending writes not in flight here whose writer is gone are abandoned."""
    found = Inspection(passages=catalog.passage_count())
    try:
        with store.reading(wait=False) as held:
            if not held:
                found.deferred = True  # a writer is saving: the vectors are checked at a later open
                return found
            found.vectors = store.count()
            listed = _compare(found, catalog, store, full, lock_held)
            if found.vectors:
                ids = sorted(listed) if full else catalog.sample_passage_ids(REACH_SAMPLE)
                found.unreachable = store.unreachable(ids)
                found.probed = len(ids)
    except VectorStoreUnavailable as exc:
        found.store_error = str(exc)
    except Exception as exc:  # a damaged store fails on its first use
        log.warning("the vector store cannot be read: %s", exc)
        found.store_error = f"{type(exc).__name__}: {exc}"
    return found


def _compare(found: Inspection, catalog: Catalog, store: VectorStore, full: bool, lock_held: bool) -> set[str]:
    """Classify every stored vector (when needed); returns the ids listed."""
    found.pending = len(catalog.pending_writes())
    if not full and (found.vectors == found.passages or found.pending) and not lock_held:
        return set()
    listed = [stored for stored, _ in store.scan()]
    found.scanned = True
    versions, pending, removed = catalog.snapshot()  # read after listing: see the module docstring
    in_flight = set(catalog.in_flight)
    abandoned = {(p.doc_id, p.version) for p in pending
                 if lock_held and (p.doc_id, p.version) not in in_flight and p.abandoned()}
    pending_versions = {(p.doc_id, p.version) for p in pending}
    found.abandoned = sorted(abandoned)
    present: set[str] = set()
    unknown: list[StoredVector] = []
    for stored in listed:
        present.add(stored.id)
        key = (stored.doc_id, stored.version)
        if key in pending_versions:
            if key in abandoned:
                found.stale.append(stored.id)
        elif stored.doc_id in versions:
            if versions[stored.doc_id] != stored.version:
                found.stale.append(stored.id)
        elif stored.doc_id in removed:
            found.stale.append(stored.id)
        else:
            unknown.append(stored)
    if unknown:  # a sweep elsewhere may have deleted them, then dropped the pending row that explained them
        still = store.existing([stored.id for stored in unknown])
        for stored in unknown:
            if stored.id in still:
                found.unknown.setdefault(stored.doc_id, []).append(stored)
    if found.vectors != found.passages or full:
        for pid, doc_id in _catalog_passages(catalog):
            if pid not in present:
                found.missing.setdefault(doc_id, []).append(pid)
    return present


def _catalog_passages(catalog: Catalog) -> list[tuple[str, str]]:
    return [(pid, doc) for pid, doc, _ in catalog.passage_terms()]


def sweep(catalog: Catalog, store: VectorStore, indexer) -> Inspection:
    """Under the write lock (the caller holds it): delete the vectors the catalog proves
    stale, then forget dead writers' pending rows (none of their vectors is left: the
    store caught up with Chroma's log first). After a vector write that was cut short
    (Chroma saves its index files in place, so a kill or a full disk mid-save leaves them
    half-written), probe every vector and rebuild the index from the vectors it can still
    read when any cannot be found. Returns the inspection it acted on."""
    with indexer.checking():
        interrupted = catalog.vector_write_interrupted()
        store.refresh()
        found = inspect(catalog, store, full=False, lock_held=True)
        if found.store_error:
            return found
        indexer.delete_vectors(found.stale)
        if found.stale:
            log.info("removed %d stale vectors", len(found.stale))
        for doc_id, version in found.abandoned:
            catalog.forget_pending(doc_id, version)
        if interrupted:
            found = _check_after_interrupted_write(catalog, store, indexer, found)
        return found


def _check_after_interrupted_write(catalog: Catalog, store: VectorStore, indexer, found: Inspection) -> Inspection:
    import shutil

    ids = sorted(catalog.passage_ids())
    unreachable = store.unreachable(ids)
    if unreachable:
        needed = sum(f.stat().st_size for f in store.folder.rglob("*") if f.is_file()) if store.folder.is_dir() else 0
        if shutil.disk_usage(store.folder.parent).free < needed:
            log.warning("%d passages cannot be found through the vector index after an interrupted write, and "
                        "there is not enough free space to rebuild it yet", len(unreachable))
            found.unreachable, found.probed = unreachable, len(ids)
            return found
        log.warning("%d passages cannot be found through the vector index after an interrupted write: "
                    "rebuilding the index from the stored vectors", len(unreachable))
        indexer.rebuild_index(indexer.embedder(), sound_vectors(store.vectors(ids)[0]))
        found = inspect(catalog, store, full=False, lock_held=True)
    catalog.vector_write_checked()
    return found


def sound_vectors(vectors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The vectors worth keeping in a rebuilt index: finite, and as long as the others
    (every embedder here gives unit vectors; a half-saved slot gives zeros or a mix,
    whose length differs). The others are embedded again from the passage's text."""
    if not vectors:
        return {}
    norms = {pid: float(np.linalg.norm(vector)) for pid, vector in vectors.items()}
    usual = float(np.median(list(norms.values())))
    return {pid: vector for pid, vector in vectors.items()
            if np.isfinite(vector).all() and usual > 0 and abs(norms[pid] - usual) <= 1e-3 * usual}


def refuse_unknown(found: Inspection, catalog: Catalog) -> None:
    """Raise StoreInconsistent when the vector store holds documents the catalog does not know."""
    if not found.unknown:
        return
    vectors = sum(len(v) for v in found.unknown.values())
    names = sorted({str(v[0].metadata.get("filename", "?")) for v in found.unknown.values()})
    examples = ", ".join(names[:5]) + (" …" if len(names) > 5 else "")
    if not catalog.documents():
        what = (f"the document catalog {catalog.location} lists no documents, but the vector store holds "
                f"{vectors} passages of {len(found.unknown)} documents ({examples}): the catalog file was "
                "probably replaced, emptied or deleted.")
    else:
        what = (f"the vector store holds {vectors} passages of {len(found.unknown)} documents that the catalog "
                f"{catalog.location} does not list ({examples}): the catalog may have been restored from an "
                "older copy or replaced.")
    raise StoreInconsistent(
        what + " Nothing was deleted. Restore registry.sqlite3 from a backup, or run `python -m ragkit repair` "
        "to rebuild the missing catalog entries from the vector store."
    )


def server_note(store: VectorStore, error: str) -> str:
    """The warning shown while the Chroma server does not answer or refuses ragkit's token
    (it goes once the server answers)."""
    if error.startswith(f"{store.where} refused"):
        return (f"{error}. Until then answers use keyword search only, and documents cannot be added, changed "
                "or deleted. Nothing was lost.")
    return (f"{store.where} cannot be reached ({error[:200]}); answers use keyword search only until it answers "
            "again, and documents cannot be added, changed or deleted meanwhile. Nothing was lost; no restart "
            "is needed.")


def warnings(found: Inspection, catalog: Catalog, folder: Path | None = None,
             store: VectorStore | None = None) -> list[str]:
    """Problems that leave the knowledge base usable, each with what to do about it."""
    notes = []
    if found.store_error and store is not None and store.remote:
        notes.append(server_note(store, found.store_error))
    elif found.store_error:
        where = folder or Path(catalog.location).parent / "chroma"
        notes.append(f"the vector store {where} cannot be read ({found.store_error[:200]}); answers use "
                     "keyword search only. Run `python -m ragkit repair` to rebuild it from the catalog.")
    if found.missing:
        titles = {doc.id: doc.title for doc in catalog.documents()}
        lost = sum(len(ids) for ids in found.missing.values())
        names = ", ".join(sorted(titles.get(d, d) for d in found.missing)[:5])
        notes.append(f"the vector store is missing {lost} passages of {len(found.missing)} documents ({names}); "
                     "they are found by keywords only. Run `python -m ragkit repair` to re-embed them.")
    if found.index_damaged:
        notes.append(f"the vector index is damaged: {len(found.unreachable)} of {found.probed} passages checked "
                     "are not found by a search for their own vector (they are found by keywords only). Run "
                     "`python -m ragkit repair` to rebuild the index.")
    return notes


@dataclass
class RepairReport:
    """What ``repair`` did."""

    restored_documents: list[str] = field(default_factory=list)
    swept_vectors: int = 0
    reembedded_passages: int = 0
    reindexed_passages: int = 0  # vectors put into a new index as they were (no model needed)
    unreachable_vectors: int = 0
    rebuilt_index: bool = False
    set_aside: str = ""  # where an unreadable vector store was moved
    must_upload_again: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """Human-readable summary lines."""
        out = []
        if self.set_aside:
            out.append(f"set the unreadable vector store aside as {self.set_aside}")
        if self.restored_documents:
            out.append(f"restored {len(self.restored_documents)} documents to the catalog from the vector store: "
                       + ", ".join(self.restored_documents[:10]) + (" …" if len(self.restored_documents) > 10 else ""))
        if self.swept_vectors:
            out.append(f"removed {self.swept_vectors} stale vectors")
        if self.rebuilt_index:
            why = (f" ({self.unreachable_vectors} passages were not found by a search for their own vector)"
                   if self.unreachable_vectors else "")
            out.append(f"rebuilt the vector index{why}: {_count(self.reindexed_passages, 'vector')} re-indexed, "
                       f"{_count(self.reembedded_passages, 'passage')} re-embedded")
        elif self.reembedded_passages:
            out.append(f"re-embedded {_count(self.reembedded_passages, 'passage')} whose vectors were missing")
        if self.must_upload_again:
            out.append("these documents could not be rebuilt and were removed from the catalog; upload them "
                       "again: " + ", ".join(self.must_upload_again))
        return out or ["nothing to repair: the catalog and the vector store agree"]


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def kb_name_from_vectors(vectors: list[tuple[StoredVector, str]], kb_id: str) -> str:
    """The name of the knowledge base a document's vectors were stored under (for a catalog
    rebuilt by ``repair``); "Default" for the default one, the id when no name was stored."""
    newest = max(stored.version for stored, _ in vectors)  # its first passage carries the latest edits
    ordered = sorted(vectors, key=lambda pair: (pair[0].version != newest, pair[0].metadata.get("position", 0)))
    names = [str(stored.metadata.get("kb_name") or "") for stored, _ in ordered]
    return next((name for name in names if name), DEFAULT_KB_NAME if kb_id == DEFAULT_KB_ID else kb_id)


def documents_from_vectors(vectors: list[tuple[StoredVector, str]]) -> tuple[DocumentRecord, list[Passage]]:
    """Rebuild one document (its newest version) from its vectors' texts and metadata.
    The document's own fields (title, tags) come from the most recently updated passage:
    a user's edit is recorded on one passage (``VectorStore.update_document_metadata``)."""
    newest = max(stored.version for stored, _ in vectors)
    own = sorted(((s, t) for s, t in vectors if s.version == newest),
                 key=lambda pair: pair[0].metadata.get("position", 0))
    meta = max((s.metadata for s, _ in own), key=lambda m: float(m.get("updated_at") or m.get("created_at") or 0))
    passages = [
        Passage(text=text or "", page=int(s.metadata.get("page", 1)), position=int(s.metadata.get("position", 0)),
                start=int(s.metadata.get("start", 0)), end=int(s.metadata.get("end", 0)),
                tokens=int(s.metadata.get("tokens", 0)), doc_id=s.doc_id, version=newest,
                section=str(s.metadata.get("section") or ""))
        for s, text in own
    ]
    filename = str(meta.get("filename", own[0][0].doc_id))
    created = float(meta.get("created_at", 0) or 0)
    record = DocumentRecord(
        id=own[0][0].doc_id, source=str(meta.get("source") or filename), filename=filename,
        title=str(meta.get("title") or filename),
        title_from="user" if meta.get("title_from") == "user" else "file", doc_type=str(meta.get("doc_type", "txt")),
        content_hash=str(meta.get("content_hash", "")), version=newest,
        tags=json.loads(meta.get("tags") or "[]") if isinstance(meta.get("tags"), str) else [],
        size_bytes=int(meta.get("size_bytes", 0) or 0),
        pages=int(meta.get("pages") or max(p.page for p in passages)), chunks=len(passages),
        tokens=sum(p.tokens for p in passages), created_at=created,
        updated_at=float(meta.get("updated_at") or created), kb_id=str(meta.get("kb_id") or DEFAULT_KB_ID),
    )
    return record, passages


def vectors_by_document(store: VectorStore, doc_ids: set[str]) -> dict[str, list[tuple[StoredVector, str]]]:
    """The vectors (with texts) of these documents, grouped by document."""
    grouped: dict[str, list[tuple[StoredVector, str]]] = defaultdict(list)
    for stored, text in store.scan(with_text=True):
        if stored.doc_id in doc_ids:
            grouped[stored.doc_id].append((stored, text or ""))
    return grouped


def backfill(catalog: Catalog, store: VectorStore) -> int:
    """Copy the current versions' passages from the vector store into a catalog made
    before passages lived there (once); returns the passages copied."""
    versions, _, _ = catalog.snapshot()
    passages = []
    for stored, text in store.scan(with_text=True):
        if versions.get(stored.doc_id) == stored.version:
            m = stored.metadata
            passages.append(Passage(text=text or "", page=int(m.get("page", 1)), position=int(m.get("position", 0)),
                                    start=int(m.get("start", 0)), end=int(m.get("end", 0)),
                                    tokens=int(m.get("tokens", 0)), doc_id=stored.doc_id, version=stored.version,
                                    section=str(m.get("section") or "")))
    catalog.fill_passages(passages, [index_tokens(contextual_text(p.text, p.section)) for p in passages])
    catalog.set_meta("passages_backfill", "done")
    return len(passages)


def repair(catalog: Catalog, store: VectorStore, indexer, embedder) -> RepairReport:
    """Rebuild what can be rebuilt, under the write lock: an unreadable vector store from
    the catalog's passages; catalog entries from vectors; an index that cannot find some of
    its vectors from the vectors it can still read (re-embedding only the lost ones);
    missing vectors by re-embedding; sweep stale vectors; list (and remove) documents
    nothing survives of."""
    report = RepairReport()
    with indexer.checking():
        try:
            store.refresh()
        except Exception as exc:  # noqa: BLE001 - an unreadable store is rebuilt below
            log.warning("the vector store cannot be read: %s", exc)
        found = inspect(catalog, store, full=True, lock_held=True)
        if found.store_error or not store.available:
            report.set_aside = indexer.recreate_store()
            report.reembedded_passages = indexer.rebuild_index(embedder, {})
            report.rebuilt_index = True
            catalog.vector_write_checked()
            return report
        if found.unknown:
            for vectors in vectors_by_document(store, set(found.unknown)).values():
                record, passages = documents_from_vectors(vectors)
                catalog.ensure_knowledge_base(record.kb_id, kb_name_from_vectors(vectors, record.kb_id))
                catalog.restore(record, passages, [index_tokens(contextual_text(p.text, p.section)) for p in passages])
                report.restored_documents.append(record.filename)
            found = inspect(catalog, store, full=True, lock_held=True)
        indexer.delete_vectors(found.stale)
        for doc_id, version in found.abandoned:
            catalog.forget_pending(doc_id, version)
        report.swept_vectors = len(found.stale)
        for doc in catalog.documents():
            if not catalog.passages_of(doc.id):
                indexer.delete(doc.id)
                report.must_upload_again.append(doc.filename)
        if found.index_damaged:
            readable = sound_vectors(store.vectors(sorted(catalog.passage_ids()))[0])
            report.unreachable_vectors = len(found.unreachable)
            report.reembedded_passages = indexer.rebuild_index(embedder, readable)
            report.reindexed_passages = catalog.passage_count() - report.reembedded_passages
            report.rebuilt_index = True
        elif found.missing:
            wanted = [pid for ids in found.missing.values() for pid in ids]
            passages = list(catalog.passages(wanted).values())
            indexer.add_vectors(passages, embedder)
            report.reembedded_passages = len(passages)
        catalog.vector_write_checked()  # every vector was probed above
    return report


def set_aside(path: Path) -> Path:
    """Rename an unreadable database file (and its journal files) out of the way; the new
    name is returned. Nothing is deleted: the user may still want to recover it."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.unreadable-{stamp}")
    path.rename(target)
    for suffix in ("-wal", "-shm"):
        extra = path.with_name(path.name + suffix)
        if extra.exists():
            extra.rename(target.with_name(target.name + suffix))
    return target

"""Checking the catalog against the vector store, sweeping what is provably stale, and
repairing what can be repaired.

The rule: a vector is deleted only when the catalog, read after the vectors were listed,
explains it: an older version of a document it knows, a document it recorded as deleted,
or the pending write of a writer that is gone. Vectors of documents the catalog has
never heard of mean the catalog is not the one that wrote them (replaced, emptied, lost):
then nothing is deleted and opening stops with a message saying what to do.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .catalog import DEFAULT_KB_ID, DEFAULT_KB_NAME, Catalog, DocumentRecord
from .errors import StoreInconsistent
from .passages import Passage
from .text import search_tokens
from .vectors import StoredVector, VectorStore

log = logging.getLogger(__name__)
REACH_SAMPLE = 64


@dataclass
class Inspection:
    """What a comparison of catalog and vector store found."""

    vectors: int = 0
    passages: int = 0
    scanned: bool = False  # False: the counts agreed, no vector was listed
    stale: list[str] = field(default_factory=list)  # vector ids the catalog proves stale
    abandoned: list[tuple[str, int]] = field(default_factory=list)  # dead writers' pending rows
    unknown: dict[str, list[StoredVector]] = field(default_factory=dict)  # doc id -> its vectors
    missing: dict[str, list[str]] = field(default_factory=dict)  # doc id -> passage ids without a vector
    reachable: int = 0
    reach_sample: int = 0
    store_error: str = ""  # the vector store could not be read at all

    @property
    def index_damaged(self) -> bool:
        """True when nearest-neighbour search cannot reach stored vectors."""
        return self.reachable < self.reach_sample


def inspect(catalog: Catalog, store: VectorStore, full: bool = False) -> Inspection:
    """Compare the two stores. Cheap when their counts agree and no write is pending;
    otherwise (or with ``full``) every vector's metadata is listed and classified."""
    found = Inspection(passages=catalog.passage_count())
    try:
        found.vectors = store.count()
        found.reach_sample = min(found.vectors, REACH_SAMPLE)
        found.reachable = store.reachable(REACH_SAMPLE) if found.vectors else 0
        return _compare(found, catalog, store, full)
    except Exception as exc:  # a damaged index fails on its first use
        log.warning("the vector store cannot be read: %s", exc)
        found.store_error = f"{type(exc).__name__}: {exc}"
        return found


def _compare(found: Inspection, catalog: Catalog, store: VectorStore, full: bool) -> Inspection:
    pending = catalog.pending_writes()
    live_writers = [p for p in pending if not p.abandoned()]
    counts_agree = found.vectors == found.passages
    if not full and not [p for p in pending if p.abandoned()] and (counts_agree or live_writers):
        return found
    listed = [stored for stored, _ in store.scan()]
    found.scanned = True
    versions, pending, removed = catalog.snapshot()  # read after listing: see the module docstring
    pending_versions = {(p.doc_id, p.version): p for p in pending}
    found.abandoned = [(p.doc_id, p.version) for p in pending if p.abandoned()]
    present: set[str] = set()
    for stored in listed:
        present.add(stored.id)
        writer = pending_versions.get((stored.doc_id, stored.version))
        if writer is not None:
            if writer.abandoned():
                found.stale.append(stored.id)
        elif stored.doc_id in versions:
            if versions[stored.doc_id] != stored.version:
                found.stale.append(stored.id)
        elif stored.doc_id in removed:
            found.stale.append(stored.id)
        else:
            found.unknown.setdefault(stored.doc_id, []).append(stored)
    if found.vectors != found.passages or full:
        for pid, doc_id in _catalog_passages(catalog):
            if pid not in present:
                found.missing.setdefault(doc_id, []).append(pid)
    return found


def _catalog_passages(catalog: Catalog) -> list[tuple[str, str]]:
    return [(pid, doc) for pid, doc, _ in catalog.passage_terms()]


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


def warnings(found: Inspection, catalog: Catalog) -> list[str]:
    """Problems that leave the knowledge base usable, each with what to do about it."""
    notes = []
    if found.store_error:
        notes.append(f"the vector index in {catalog.location.rsplit('/', 1)[0]}/chroma cannot be read "
                     f"({found.store_error[:200]}); answers use keyword search only. Run "
                     "`python -m ragkit repair` to rebuild it from the catalog.")
    if found.missing:
        titles = {doc.id: doc.title for doc in catalog.documents()}
        lost = sum(len(ids) for ids in found.missing.values())
        names = ", ".join(sorted(titles.get(d, d) for d in found.missing)[:5])
        notes.append(f"the vector store is missing {lost} passages of {len(found.missing)} documents ({names}); "
                     "they are found by keywords only. Run `python -m ragkit repair` to re-embed them.")
    if found.vectors and found.index_damaged:
        notes.append(f"the vector index is damaged: a search reaches {found.reachable} of "
                     f"{found.reach_sample} sampled passages. Run `python -m ragkit repair` to rebuild it.")
    return notes


@dataclass
class RepairReport:
    """What ``repair`` did."""

    restored_documents: list[str] = field(default_factory=list)
    swept_vectors: int = 0
    reembedded_passages: int = 0
    rebuilt_index: bool = False
    must_upload_again: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """Human-readable summary lines."""
        out = []
        if self.restored_documents:
            out.append(f"restored {len(self.restored_documents)} documents to the catalog from the vector store: "
                       + ", ".join(self.restored_documents[:10]) + (" …" if len(self.restored_documents) > 10 else ""))
        if self.swept_vectors:
            out.append(f"removed {self.swept_vectors} stale vectors")
        if self.rebuilt_index:
            out.append(f"rebuilt the vector index ({self.reembedded_passages} passages re-embedded)")
        elif self.reembedded_passages:
            out.append(f"re-embedded {self.reembedded_passages} passages whose vectors were missing")
        if self.must_upload_again:
            out.append("these documents could not be rebuilt and were removed from the catalog; upload them "
                       "again: " + ", ".join(self.must_upload_again))
        return out or ["nothing to repair: the catalog and the vector store agree"]


def documents_from_vectors(vectors: list[tuple[StoredVector, str]]) -> tuple[DocumentRecord, list[Passage]]:
    """Rebuild one document (its newest version) from its vectors' texts and metadata."""
    newest = max(stored.version for stored, _ in vectors)
    own = sorted(((s, t) for s, t in vectors if s.version == newest),
                 key=lambda pair: pair[0].metadata.get("position", 0))
    meta = own[0][0].metadata
    passages = [
        Passage(text=text or "", page=int(s.metadata.get("page", 1)), position=int(s.metadata.get("position", 0)),
                start=int(s.metadata.get("start", 0)), end=int(s.metadata.get("end", 0)),
                tokens=int(s.metadata.get("tokens", 0)), doc_id=s.doc_id, version=newest)
        for s, text in own
    ]
    filename = str(meta.get("filename", own[0][0].doc_id))
    record = DocumentRecord(
        id=own[0][0].doc_id, source=str(meta.get("source") or filename), filename=filename,
        title=str(meta.get("title") or filename), title_from="file", doc_type=str(meta.get("doc_type", "txt")),
        content_hash=str(meta.get("content_hash", "")), version=newest,
        tags=json.loads(meta.get("tags") or "[]") if isinstance(meta.get("tags"), str) else [],
        size_bytes=int(meta.get("size_bytes", 0) or 0),
        pages=int(meta.get("pages") or max(p.page for p in passages)), chunks=len(passages),
        tokens=sum(p.tokens for p in passages), created_at=float(meta.get("created_at", 0) or 0),
        updated_at=float(meta.get("created_at", 0) or 0), kb_id=str(meta.get("kb_id") or DEFAULT_KB_ID),
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
                                    tokens=int(m.get("tokens", 0)), doc_id=stored.doc_id, version=stored.version))
    catalog.fill_passages(passages, [search_tokens(p.text) for p in passages])
    catalog.set_meta("passages_backfill", "done")
    return len(passages)


def repair(catalog: Catalog, store: VectorStore, indexer, embedder) -> RepairReport:
    """Rebuild what can be rebuilt: catalog entries from vectors, vectors from the
    catalog's passages (the whole index when it is damaged); sweep stale vectors; list
    (and remove) documents nothing survives of."""
    report = RepairReport()
    found = inspect(catalog, store, full=True)
    if found.store_error:
        store.recreate()
        report.reembedded_passages = indexer.reindex(embedder)
        report.rebuilt_index = True
        return report
    if found.unknown:
        for doc_id, vectors in vectors_by_document(store, set(found.unknown)).items():
            record, passages = documents_from_vectors(vectors)
            catalog.ensure_knowledge_base(record.kb_id, str(vectors[0][0].metadata.get("kb_name") or "")
                                          or (DEFAULT_KB_NAME if record.kb_id == DEFAULT_KB_ID else record.kb_id))
            catalog.restore(record, passages, [search_tokens(p.text) for p in passages])
            report.restored_documents.append(record.filename)
        found = inspect(catalog, store, full=True)
    indexer.delete_vectors(found.stale)
    for doc_id, version in found.abandoned:
        catalog.forget_pending(doc_id, version)
    report.swept_vectors = len(found.stale)
    for doc in catalog.documents():
        if not catalog.passages_of(doc.id):
            indexer.delete(doc.id)
            report.must_upload_again.append(doc.filename)
    if found.index_damaged:
        report.reembedded_passages = indexer.reindex(embedder)
        report.rebuilt_index = True
    elif found.missing:
        wanted = [pid for ids in found.missing.values() for pid in ids]
        passages = list(catalog.passages(wanted).values())
        indexer.add_vectors(passages, embedder)
        report.reembedded_passages = len(passages)
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

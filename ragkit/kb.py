"""KnowledgeBase: the library's front door for documents and search.

    kb = KnowledgeBase(load_settings())
    kb.ingest("report.pdf", tags=["finance"])
    hits = kb.search("what was the Q3 revenue?", k=5)

Ingest is all-or-nothing per document: chunks of a new version are written first, the
registry row is switched to the new version in one transaction, then the old chunks
are removed. Stale chunks left by an interrupted ingest are swept on the next open.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .chunking import chunk_pages
from .config import Settings
from .embeddings import Embedder, make_embedder
from .lexical import LexicalIndex
from .loaders import LoadedDocument, LoaderError, load_bytes, load_path
from .retrieval import SearchFilters, SearchHit, dense_weight_for, fuse_scores, relevant_hits
from .store import ChunkStore, DocumentRecord, Registry, StoredChunk, chunk_id, new_document_id, now

log = logging.getLogger(__name__)

Progress = Callable[[str, float], None]  # (stage message, fraction 0..1)


class KnowledgeBaseError(RuntimeError):
    """A problem with the knowledge base as a whole, explained for the user."""


class EmbeddingModelMismatch(KnowledgeBaseError):
    """The store was indexed with another embedding model than the configured one."""


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


class KnowledgeBase:
    """Documents in, ranked passages out; persistent under ``settings.data_dir``."""

    def __init__(self, settings: Settings, embedder: Embedder | None = None):
        self.settings = settings
        self._lock = threading.RLock()
        self._last_query_vector: tuple[str, object] | None = None  # answer_hits searches twice
        self.registry = Registry(settings.data_path / "registry.sqlite3")
        self._embedder = embedder
        self._check_embedding_model()
        self.chunks = ChunkStore(settings)
        self.lexical = LexicalIndex(settings.data_path / "lexical_tokens.pkl")
        self._chunk_cache: dict[str, StoredChunk] = {}
        self._indexed_revision = -1
        self._batch_depth = 0
        self.refresh()

    @property
    def embedder(self) -> Embedder:
        """The embedding model, loaded on first use (listing or deleting never needs it)."""
        with self._lock:
            if self._embedder is None:
                self._embedder = make_embedder(self.settings)
            return self._embedder

    @property
    def embedding_model_name(self) -> str:
        """The configured model's name, without loading it."""
        return self._embedder.name if self._embedder is not None else self.settings.embedding_model

    # ----- consistency -------------------------------------------------------------

    def _check_embedding_model(self) -> None:
        stored = self.registry.get_meta("embedding_model")
        configured = self.embedding_model_name
        if stored is None:
            self.registry.set_meta("embedding_model", configured)
        elif stored != configured:
            raise EmbeddingModelMismatch(
                f"this knowledge base was indexed with embedding model {stored!r} but "
                f"{configured!r} is configured; mixing them would give wrong results. "
                f"Set RAGKIT_EMBEDDING_MODEL={stored} or run `python -m ragkit reindex` to "
                "re-embed every document with the new model."
            )

    def refresh(self) -> None:
        """Sweep stale chunks and rebuild the lexical index from what Chroma holds."""
        with self._lock:
            current = {doc.id: doc.version for doc in self.registry.all()}
            keep: dict[str, StoredChunk] = {}
            stale: list[str] = []
            for chunk, _ in self.chunks.scan():
                meta = chunk.metadata
                if current.get(meta.get("doc_id")) == meta.get("version"):
                    keep[chunk.id] = chunk
                else:
                    stale.append(chunk.id)
            if stale:
                log.info("removing %d stale chunks", len(stale))
                self.chunks.delete_ids(stale)
            ordered = sorted(keep.values(), key=lambda c: (c.metadata["doc_id"], c.metadata["position"]))
            self._chunk_cache = {chunk.id: chunk for chunk in ordered}
            self._rebuild_lexical()
            self._indexed_revision = self.registry.revision

    def _replace_cached(self, doc_id: str, new_chunks: list[StoredChunk]) -> None:
        """Swap one document's chunks in the in-memory view and re-derive the lexical index."""
        kept = {cid: c for cid, c in self._chunk_cache.items() if c.metadata["doc_id"] != doc_id}
        kept.update((c.id, c) for c in new_chunks)
        self._chunk_cache = kept
        self._indexed_revision = self.registry.revision
        if self._batch_depth == 0:
            self._rebuild_lexical()

    def _rebuild_lexical(self) -> None:
        self.lexical.rebuild([(c.id, c.metadata["doc_id"], c.text) for c in self._chunk_cache.values()])

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Defer the lexical index rebuild until a group of ingests is finished."""
        with self._lock:
            self._batch_depth += 1
            try:
                yield
            finally:
                self._batch_depth -= 1
                if self._batch_depth == 0:
                    self._rebuild_lexical()

    def _refresh_if_changed(self) -> None:
        # Another process sharing the data dir may have changed it.
        if self.registry.revision != self._indexed_revision:
            self.refresh()

    # ----- documents ---------------------------------------------------------------

    def documents(self) -> list[DocumentRecord]:
        """Every document, newest first."""
        return self.registry.all()

    def document(self, doc_id: str) -> DocumentRecord | None:
        """One document by id."""
        return self.registry.get(doc_id)

    def document_chunks(self, doc_id: str) -> list[StoredChunk]:
        """A document's chunks in reading order."""
        self._refresh_if_changed()
        with self._lock:
            found = [c for c in self._chunk_cache.values() if c.metadata["doc_id"] == doc_id]
        return sorted(found, key=lambda c: c.metadata["position"])

    def chunk_count(self) -> int:
        """Number of searchable chunks."""
        self._refresh_if_changed()
        return len(self._chunk_cache)

    def all_chunks(self) -> list[StoredChunk]:
        """Every searchable chunk (for stats and tests)."""
        self._refresh_if_changed()
        with self._lock:
            return list(self._chunk_cache.values())

    def tags(self) -> list[str]:
        """All tags in use, sorted."""
        return sorted({tag for doc in self.registry.all() for tag in doc.tags})

    def delete(self, doc_id: str) -> DocumentRecord:
        """Remove a document and its chunks; raise KeyError when it does not exist."""
        with self._lock:
            record = self.registry.get(doc_id)
            if record is None:
                raise KeyError(f"no document with id {doc_id!r}")
            self.registry.delete(doc_id)
            self.chunks.delete_where({"doc_id": doc_id})
            self._replace_cached(doc_id, [])
        return record

    def update_metadata(self, doc_id: str, *, title: str | None = None, tags: list[str] | None = None) -> DocumentRecord:
        """Change a document's title and/or tags."""
        with self._lock:
            record = self.registry.get(doc_id)
            if record is None:
                raise KeyError(f"no document with id {doc_id!r}")
            if title is not None and title.strip():
                record.title = title.strip()
            if tags is not None:
                record.tags = normalize_tags(tags)
            record.updated_at = now()
            self.registry.upsert(record)
            self._indexed_revision = self.registry.revision  # chunks unchanged
        return record

    # ----- ingest ------------------------------------------------------------------

    def ingest(
        self,
        source: str | Path | bytes,
        filename: str | None = None,
        tags: list[str] | None = None,
        progress: Progress | None = None,
    ) -> IngestResult:
        """Add one file (path or bytes + filename); never raises for a bad file."""
        started = time.perf_counter()
        name = filename or (Path(source).name if not isinstance(source, bytes) else "upload")
        report = progress or (lambda stage, fraction: None)
        try:
            report("reading", 0.02)
            if isinstance(source, bytes):
                loaded = load_bytes(source, name, max_bytes=self.settings.max_upload_bytes)
            else:
                loaded = load_path(source, max_bytes=self.settings.max_upload_bytes)
            result = self._ingest_loaded(loaded, normalize_tags(tags or []), report)
        except LoaderError as exc:
            result = IngestResult(name, "refused", str(exc))
        except Exception as exc:  # embedding/store failure: the document is rolled back
            log.exception("ingest of %s failed", name)
            result = IngestResult(name, "refused", f"{name}: could not be indexed ({type(exc).__name__}: {exc})")
        result.seconds = time.perf_counter() - started
        report("done", 1.0)
        return result

    def _ingest_loaded(self, loaded: LoadedDocument, tags: list[str], report: Progress) -> IngestResult:
        with self._lock:
            duplicate = self.registry.by_hash(loaded.content_hash)
            if duplicate is not None:
                if tags and not set(tags) <= set(duplicate.tags):
                    duplicate = self.update_metadata(duplicate.id, tags=duplicate.tags + tags)
                same = "" if duplicate.filename == loaded.filename else f" as {duplicate.filename}"
                return IngestResult(loaded.filename, "unchanged", f"{loaded.filename}: already in the knowledge base{same}", duplicate)
            previous = self.registry.by_filename(loaded.filename)
            report("chunking", 0.08)
            pieces = chunk_pages(loaded.pages, self.settings.chunk_tokens, self.settings.chunk_overlap_tokens)
            if not pieces:
                raise LoaderError(f"{loaded.filename}: no text to index")
            doc_id = previous.id if previous else new_document_id()
            version = previous.version + 1 if previous else 1
            record = DocumentRecord(
                id=doc_id,
                filename=loaded.filename,
                title=previous.title if previous and previous.title != _stem(previous.filename) else loaded.title,
                doc_type=loaded.doc_type,
                content_hash=loaded.content_hash,
                version=version,
                tags=normalize_tags((previous.tags if previous else []) + tags),
                size_bytes=loaded.size_bytes,
                pages=loaded.page_count,
                chunks=len(pieces),
                tokens=sum(piece.tokens for piece in pieces),
                created_at=previous.created_at if previous else now(),
                updated_at=now(),
            )
            stored = [
                StoredChunk(
                    chunk_id(doc_id, version, piece.position),
                    piece.text,
                    {
                        "doc_id": doc_id,
                        "version": version,
                        "page": piece.page,
                        "position": piece.position,
                        "start": piece.start,
                        "end": piece.end,
                        "tokens": piece.tokens,
                        "title": record.title,
                        "filename": record.filename,
                        "doc_type": record.doc_type,
                    },
                )
                for piece in pieces
            ]

            def on_batch(done: int, total: int) -> None:
                report(f"embedding {done}/{total} chunks", 0.1 + 0.8 * done / total)

            vectors = self.embedder.embed_documents(
                [c.text for c in stored], self.settings.embedding_batch_size, on_batch
            )
            report("saving", 0.92)
            try:
                self.chunks.add(stored, vectors)
                self.registry.upsert(record)
            except BaseException:
                self.chunks.delete_where({"$and": [{"doc_id": doc_id}, {"version": version}]})
                raise
            if previous is not None:
                self.chunks.delete_where({"$and": [{"doc_id": doc_id}, {"version": previous.version}]})
            report("indexing", 0.96)
            self._replace_cached(doc_id, stored)
        if previous is not None:
            return IngestResult(loaded.filename, "new_version", f"{loaded.filename}: replaced by version {version} ({plural(len(pieces), 'passage')})", record)
        return IngestResult(loaded.filename, "added", f"{loaded.filename}: added ({plural(record.pages, 'page')}, {plural(len(pieces), 'passage')})", record)

    def reindex(self, progress: Progress | None = None) -> int:
        """Re-embed every chunk with the configured model (after changing it); returns chunks done."""
        with self._lock:
            chunks = self.all_chunks()
            report = progress or (lambda stage, fraction: None)
            vectors = self.embedder.embed_documents(
                [c.text for c in chunks],
                self.settings.embedding_batch_size,
                lambda done, total: report(f"embedding {done}/{total}", done / max(total, 1)),
            )
            self.chunks.client.delete_collection(self.settings.collection)
            self.chunks = ChunkStore(self.settings)
            self.chunks.add(chunks, vectors)
            self.registry.set_meta("embedding_model", self.embedder.name)
            self.registry.set_meta("embedding_dim", str(self.embedder.dimension))
            self.refresh()
            return len(chunks)

    # ----- search ------------------------------------------------------------------

    def allowed_documents(
        self, filters: SearchFilters | None, documents: list[DocumentRecord] | None = None
    ) -> set[str] | None:
        """Document ids a filter admits (None = no restriction)."""
        if filters is None or filters.is_empty():
            return None
        allowed = set()
        for doc in documents if documents is not None else self.registry.all():
            if filters.doc_ids and doc.id not in filters.doc_ids:
                continue
            if filters.tags and not set(filters.tags) & set(doc.tags):
                continue
            if filters.doc_types and doc.doc_type not in filters.doc_types:
                continue
            allowed.add(doc.id)
        return allowed

    def search(self, query: str, k: int | None = None, filters: SearchFilters | None = None) -> list[SearchHit]:
        """Hybrid search: the ``k`` best chunks for ``query`` (empty for an unsearchable query)."""
        k = k or self.settings.top_k
        self._refresh_if_changed()
        if not query or not query.strip():
            return []
        documents = self.registry.all()  # one read per search, for filters and current titles
        allowed = self.allowed_documents(filters, documents)
        if allowed is not None and not allowed:
            return []
        depth = max(self.settings.candidate_k, k)
        lexical = self.lexical.search(query, depth, allowed)
        dense = self._dense(query, depth, allowed) if any(ch.isalnum() for ch in query) else []
        dense_scores = {cid: score for cid, score in dense}
        lexical_scores = dict(lexical)
        dense_rank = {cid: rank for rank, (cid, _) in enumerate(dense, start=1)}
        lexical_rank = {cid: rank for rank, (cid, _) in enumerate(lexical, start=1)}
        weight = dense_weight_for(query, self.settings.dense_weight_latin, self.settings.dense_weight_cjk)
        fused = fuse_scores(dense, lexical, weight)
        titles = {doc.id: doc.title for doc in documents}
        hits = []
        for cid, score in fused[:k]:
            chunk = self._chunk_cache.get(cid)
            if chunk is None:
                continue
            hit = _hit(chunk, score, dense_scores.get(cid), lexical_scores.get(cid), dense_rank.get(cid), lexical_rank.get(cid))
            hit.title = titles.get(hit.doc_id, hit.title)
            hits.append(hit)
        return hits

    def answer_hits(self, query: str, filters: SearchFilters | None = None) -> list[SearchHit]:
        """The passages an answer is drawn from: the relevant top-k hits, then the best
        ``same_document_k`` further passages of the top document.

        A question is usually about one document, but the chunk holding its answer may
        lack the subject's name (it was said in an earlier chunk) and lose to other
        documents' chunks; searching within the top document brings it back.
        """
        hits = relevant_hits(self.search(query, self.settings.top_k, filters), self.settings.min_relative_score)
        if not hits or self.settings.same_document_k == 0:
            return hits
        within = SearchFilters(doc_ids=[hits[0].doc_id])
        seen = {hit.chunk_id for hit in hits}
        depth = self.settings.same_document_k + len(hits)
        extra = [hit for hit in self.search(query, depth, within) if hit.chunk_id not in seen]
        for hit in extra:  # scored within one document: keep them below the global hits
            hit.score = min(hit.score, hits[-1].score)
            hit.extra["same_document"] = True
        return hits + extra[: self.settings.same_document_k]

    def idf(self, text: str) -> dict[str, float]:
        """Inverse document frequency of the search tokens of ``text`` over the whole store."""
        from .text import search_tokens

        return self.lexical.idf(search_tokens(text))

    def _dense(self, query: str, depth: int, allowed: set[str] | None) -> list[tuple[str, float]]:
        where = {"doc_id": {"$in": sorted(allowed)}} if allowed is not None else None
        vector = self._query_vector(query)
        return [(chunk.id, score) for chunk, score in self.chunks.query(vector, depth, where) if chunk.id in self._chunk_cache]

    def _query_vector(self, query: str):
        """The query's embedding, reused when the same query is searched again right away."""
        last = self._last_query_vector
        if last is not None and last[0] == query:
            return last[1]
        vector = self.embedder.embed_query(query)
        self._last_query_vector = (query, vector)
        return vector

    def close(self) -> None:
        """Release the registry connection."""
        self.registry.close()


def _hit(chunk: StoredChunk, score, dense_score, lexical_score, dense_rank, lexical_rank) -> SearchHit:
    meta = chunk.metadata
    return SearchHit(
        chunk_id=chunk.id,
        doc_id=meta["doc_id"],
        text=chunk.text,
        title=meta.get("title", ""),
        filename=meta.get("filename", ""),
        doc_type=meta.get("doc_type", ""),
        page=int(meta.get("page", 1)),
        position=int(meta.get("position", 0)),
        start=int(meta.get("start", 0)),
        end=int(meta.get("end", 0)),
        score=float(score),
        dense_score=dense_score,
        lexical_score=lexical_score,
        dense_rank=dense_rank,
        lexical_rank=lexical_rank,
    )


def normalize_tags(tags: list[str]) -> list[str]:
    """Trimmed, de-duplicated tags in first-seen order (commas split)."""
    seen: list[str] = []
    for raw in tags:
        for tag in str(raw).split(","):
            tag = tag.strip()
            if tag and tag not in seen:
                seen.append(tag)
    return seen


def plural(number: int, noun: str) -> str:
    """'1 page', '3 pages'."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _stem(filename: str) -> str:
    return Path(filename).stem

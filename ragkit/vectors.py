"""The vector store: passage vectors in a Chroma collection (on disk, or a Chroma server).

Each vector carries its passage's text and enough metadata (document, version, file,
title, type, hash, source, tags, knowledge base) to rebuild the catalog if it is lost
(``repair``).

Embedded Chroma keeps the vector index in each process's memory: a process does not see
vectors another process added, and a process that writes on top of such a stale view
corrupts the index on disk. So every process re-opens its Chroma client when the
catalog's vector generation says another process wrote, before it reads or writes
(``ensure_fresh``), and writers take the data dir's write lock (see ``indexer``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .catalog import DocumentRecord
from .config import Settings
from .passages import Passage

log = logging.getLogger(__name__)
PAGE_SIZE = 2000  # rows per Chroma get() when scanning the whole collection
WRITE_BATCH = 1000


@dataclass(frozen=True)
class StoredVector:
    """What the vector store knows of one passage (without its vector)."""

    id: str
    doc_id: str
    version: int
    metadata: dict


class VectorStore:
    """Chroma collection access: add, delete, scan, nearest neighbours, reset."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._lock = threading.RLock()
        self.generation = -1  # the catalog's vector generation this client has seen
        self._client = None
        self._collection = None
        self._open()

    def _open(self) -> None:
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        if self.settings.chroma_url:
            from urllib.parse import urlparse

            url = urlparse(self.settings.chroma_url)
            self._client = chromadb.HttpClient(
                host=url.hostname or "localhost",
                port=url.port or (443 if url.scheme == "https" else 8000),
                ssl=url.scheme == "https",
                settings=chroma_settings,
            )
        else:
            from chromadb.api.shared_system_client import SharedSystemClient

            path = str(self.settings.data_path / "chroma")
            # Chroma shares one client per path within a process; a fresh one re-reads the disk.
            SharedSystemClient._identifier_to_system.pop(path, None)
            self._client = chromadb.PersistentClient(path=path, settings=chroma_settings)
        self._collection = self._client.get_or_create_collection(
            name=self.settings.collection,
            embedding_function=None,  # never Chroma's default model: it downloads weights
            configuration={"hnsw": {"space": "cosine"}},
        )

    @property
    def remote(self) -> bool:
        """True for a Chroma server (one index shared by every process)."""
        return bool(self.settings.chroma_url)

    def ensure_fresh(self, generation: int) -> None:
        """Re-open the embedded collection when another process wrote since we opened it."""
        with self._lock:
            if generation != self.generation and self.generation != -1 and not self.remote:
                log.info("vector store changed in another process: re-opening it")
                self._open()
            self.generation = generation

    def count(self) -> int:
        """Number of stored vectors."""
        return self._collection.count()

    def add(self, passages: list[Passage], vectors: np.ndarray, documents: dict[str, DocumentRecord],
            kb_names: dict[str, str] | None = None) -> None:
        """Write passages with their vectors and recovery metadata (``kb_names``: knowledge
        base id -> name, so that ``repair`` can name a knowledge base it restores), in batches."""
        with self._lock:
            for start in range(0, len(passages), WRITE_BATCH):
                part = passages[start : start + WRITE_BATCH]
                self._collection.add(
                    ids=[p.id for p in part],
                    documents=[p.text for p in part],
                    metadatas=[_metadata(p, documents[p.doc_id], kb_names or {}) for p in part],
                    embeddings=vectors[start : start + WRITE_BATCH],
                )

    def delete_ids(self, ids: list[str]) -> None:
        """Delete vectors by passage id."""
        with self._lock:
            for start in range(0, len(ids), PAGE_SIZE):
                self._collection.delete(ids=ids[start : start + PAGE_SIZE])

    def delete_version(self, doc_id: str, version: int) -> None:
        """Delete every vector of one document version."""
        with self._lock:
            self._collection.delete(where={"$and": [{"doc_id": doc_id}, {"version": version}]})

    def delete_document(self, doc_id: str) -> None:
        """Delete every vector of a document, whatever its version."""
        with self._lock:
            self._collection.delete(where={"doc_id": doc_id})

    def existing(self, ids: list[str]) -> set[str]:
        """Which of these passage ids have a vector."""
        found: set[str] = set()
        for start in range(0, len(ids), PAGE_SIZE):
            found.update(self._collection.get(ids=ids[start : start + PAGE_SIZE], include=[])["ids"])
        return found

    def scan(self, with_text: bool = False) -> Iterator[tuple[StoredVector, str | None]]:
        """Every stored vector's id and metadata (and text), page by page."""
        include = ["metadatas"] + (["documents"] if with_text else [])
        offset = 0
        while True:
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
        total = self.count()
        if n_results <= 0 or total == 0:
            return []
        where = {"doc_id": {"$in": sorted(doc_ids)}} if doc_ids is not None else None
        result = self._collection.query(
            query_embeddings=[vector], n_results=min(n_results, total), where=where, include=["distances"]
        )
        return [(pid, 1.0 - float(d)) for pid, d in zip(result["ids"][0], result["distances"][0])]

    def reachable(self, sample: int = 64) -> int:
        """How many vectors a nearest-neighbour query can reach, out of ``min(count, sample)``:
        fewer means the index files are damaged (rows without a searchable vector)."""
        total = self.count()
        if not total:
            return 0
        want = min(total, sample)
        dimension = self._dimension()
        try:
            result = self._collection.query(query_embeddings=[np.ones(dimension, dtype=np.float32)],
                                            n_results=want, include=[])
        except Exception as exc:  # a damaged index may raise instead of returning less
            log.warning("vector index query failed: %s", exc)
            return 0
        return len(result["ids"][0])

    def _dimension(self) -> int:
        page = self._collection.get(limit=1, include=["embeddings"])
        embeddings = page.get("embeddings")
        return len(embeddings[0]) if embeddings is not None and len(embeddings) else 384

    def recreate(self) -> None:
        """Start over with an empty store when the old one cannot even be opened (repair
        only: the catalog holds every passage's text, so the vectors can be rebuilt)."""
        import shutil

        with self._lock:
            if self.remote:
                self.reset()
                return
            try:
                self.reset()
                return
            except Exception as exc:
                log.warning("cannot drop the damaged collection (%s): moving the store aside", exc)
            folder = self.settings.data_path / "chroma"
            aside = folder.with_name(f"chroma.damaged-{int(__import__('time').time())}")
            shutil.move(str(folder), str(aside))
            self._open()

    def reset(self) -> None:
        """Drop and re-create the collection (reindex and repair re-fill it)."""
        with self._lock:
            self._client.delete_collection(self.settings.collection)
            self._collection = self._client.get_or_create_collection(
                name=self.settings.collection, embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
            )


def _metadata(passage: Passage, document: DocumentRecord, kb_names: dict[str, str]) -> dict:
    return {
        "doc_id": passage.doc_id, "version": passage.version, "page": passage.page,
        "position": passage.position, "start": passage.start, "end": passage.end, "tokens": passage.tokens,
        "filename": document.filename, "title": document.title, "doc_type": document.doc_type,
        "content_hash": document.content_hash, "source": document.source,
        "tags": json.dumps(document.tags, ensure_ascii=False), "size_bytes": document.size_bytes,
        "pages": document.pages, "created_at": document.created_at,
        "kb_id": document.kb_id, "kb_name": kb_names.get(document.kb_id, ""),
    }

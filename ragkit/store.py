"""Persistent storage: the Chroma collection of chunks and the SQLite document registry.

The registry (``registry.sqlite3`` in the data dir) is the list of documents and their
current versions; Chroma holds the chunk texts, metadata and vectors. A chunk whose
(document, version) is not the registry's current one is stale and is removed on open,
which is what makes an interrupted ingest leave nothing behind.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .config import Settings
from .sqlite import connect

CHUNK_PAGE_SIZE = 2000  # rows per Chroma get() when scanning the whole collection


@dataclass
class DocumentRecord:
    """One document of the knowledge base, as listed to users."""

    id: str
    filename: str
    title: str
    doc_type: str
    content_hash: str
    version: int
    tags: list[str]
    size_bytes: int
    pages: int
    chunks: int
    tokens: int
    created_at: float
    updated_at: float

    def to_dict(self) -> dict:
        """Plain dict (for JSON and tables)."""
        return asdict(self)


@dataclass
class StoredChunk:
    """A chunk as stored: text plus metadata (doc_id, version, page, position, offsets...)."""

    id: str
    text: str
    metadata: dict = field(default_factory=dict)


_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS documents (
        id TEXT PRIMARY KEY, filename TEXT NOT NULL, title TEXT NOT NULL,
        doc_type TEXT NOT NULL, content_hash TEXT NOT NULL, version INTEGER NOT NULL,
        tags TEXT NOT NULL DEFAULT '[]', size_bytes INTEGER NOT NULL, pages INTEGER NOT NULL,
        chunks INTEGER NOT NULL, tokens INTEGER NOT NULL,
        created_at REAL NOT NULL, updated_at REAL NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS documents_hash ON documents(content_hash)",
    "CREATE INDEX IF NOT EXISTS documents_filename ON documents(filename)",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
]


def new_document_id() -> str:
    """A short random document id."""
    return uuid.uuid4().hex[:12]


def chunk_id(doc_id: str, version: int, position: int) -> str:
    """Deterministic chunk id: document, version and position."""
    return f"{doc_id}-v{version}-{position}"


class Registry:
    """SQLite registry of documents plus a little key/value metadata (model, revision)."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.RLock()
        self._conn = connect(path)
        for statement in _SCHEMA:
            self._conn.execute(statement)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write; bumps the revision so derived indexes know to refresh."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute(
                    "INSERT INTO meta(key, value) VALUES('revision', '1') ON CONFLICT(key) "
                    "DO UPDATE SET value = CAST(value AS INTEGER) + 1"
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def get_meta(self, key: str) -> str | None:
        """A metadata value, or None."""
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row["value"] if row else None

    def set_meta(self, key: str, value: str) -> None:
        """Store a metadata value (no revision bump)."""
        with self._lock:
            self._conn.execute(
                "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = ?",
                (key, value, value),
            )

    @property
    def revision(self) -> int:
        """Counter bumped by every change to the set of documents."""
        return int(self.get_meta("revision") or 0)

    def _rows(self, sql: str, params: tuple = ()) -> list[DocumentRecord]:
        with self._lock:
            rows = self._conn.execute(sql, params).fetchall()
        return [_record(row) for row in rows]

    def all(self) -> list[DocumentRecord]:
        """Every document, newest first."""
        return self._rows("SELECT * FROM documents ORDER BY updated_at DESC, id")

    def get(self, doc_id: str) -> DocumentRecord | None:
        """The document with this id, if any."""
        rows = self._rows("SELECT * FROM documents WHERE id = ?", (doc_id,))
        return rows[0] if rows else None

    def by_hash(self, digest: str) -> DocumentRecord | None:
        """A document with exactly these bytes, if any."""
        rows = self._rows("SELECT * FROM documents WHERE content_hash = ? LIMIT 1", (digest,))
        return rows[0] if rows else None

    def by_filename(self, filename: str) -> DocumentRecord | None:
        """The document stored under this file name, if any."""
        rows = self._rows("SELECT * FROM documents WHERE filename = ? LIMIT 1", (filename,))
        return rows[0] if rows else None

    def upsert(self, record: DocumentRecord) -> None:
        """Insert or replace one document row in its own transaction."""
        values = record.to_dict()
        values["tags"] = json.dumps(record.tags, ensure_ascii=False)
        columns = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        with self.transaction() as conn:
            conn.execute(f"INSERT OR REPLACE INTO documents ({columns}) VALUES ({marks})", tuple(values.values()))

    def delete(self, doc_id: str) -> bool:
        """Remove a document row; True when it existed."""
        with self.transaction() as conn:
            cursor = conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
        return cursor.rowcount > 0

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()


def _record(row: sqlite3.Row) -> DocumentRecord:
    values = dict(row)
    values["tags"] = json.loads(values["tags"] or "[]")
    return DocumentRecord(**values)


class ChunkStore:
    """The Chroma collection: chunk texts, metadata and our own embeddings (cosine space)."""

    def __init__(self, settings: Settings):
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        if settings.chroma_url:
            from urllib.parse import urlparse

            url = urlparse(settings.chroma_url)
            self.client = chromadb.HttpClient(
                host=url.hostname or "localhost",
                port=url.port or (443 if url.scheme == "https" else 8000),
                ssl=url.scheme == "https",
                settings=chroma_settings,
            )
        else:
            path = settings.data_path / "chroma"
            self.client = chromadb.PersistentClient(path=str(path), settings=chroma_settings)
        self.collection = self.client.get_or_create_collection(
            name=settings.collection,
            embedding_function=None,  # never Chroma's default model: it downloads weights
            configuration={"hnsw": {"space": "cosine"}},
        )

    def count(self) -> int:
        """Number of stored chunks."""
        return self.collection.count()

    def add(self, chunks: list[StoredChunk], vectors: np.ndarray, batch_size: int = 500) -> None:
        """Write chunks with their vectors in batches."""
        for start in range(0, len(chunks), batch_size):
            part = chunks[start : start + batch_size]
            self.collection.add(
                ids=[chunk.id for chunk in part],
                documents=[chunk.text for chunk in part],
                metadatas=[chunk.metadata for chunk in part],
                embeddings=vectors[start : start + batch_size],
            )

    def delete_where(self, where: dict) -> None:
        """Delete every chunk matching a Chroma ``where`` filter."""
        self.collection.delete(where=where)

    def delete_ids(self, ids: list[str]) -> None:
        """Delete chunks by id."""
        for start in range(0, len(ids), CHUNK_PAGE_SIZE):
            self.collection.delete(ids=ids[start : start + CHUNK_PAGE_SIZE])

    def scan(self, where: dict | None = None, with_vectors: bool = False) -> Iterator[tuple[StoredChunk, list | None]]:
        """Every chunk (optionally matching ``where``), page by page."""
        include = ["documents", "metadatas"] + (["embeddings"] if with_vectors else [])
        offset = 0
        while True:
            page = self.collection.get(where=where, include=include, limit=CHUNK_PAGE_SIZE, offset=offset)
            ids = page["ids"]
            if not ids:
                return
            vectors = page.get("embeddings") if with_vectors else None
            for index, cid in enumerate(ids):
                vector = vectors[index] if vectors is not None else None
                yield StoredChunk(cid, page["documents"][index], page["metadatas"][index]), vector
            offset += len(ids)

    def query(self, vector: np.ndarray, n_results: int, where: dict | None = None) -> list[tuple[StoredChunk, float]]:
        """Nearest chunks by cosine similarity (1 - distance), best first."""
        if n_results <= 0 or self.count() == 0:
            return []
        result = self.collection.query(
            query_embeddings=[vector],
            n_results=min(n_results, self.count()),
            where=where,
            include=["documents", "metadatas", "distances"],
        )
        hits = []
        for cid, text, meta, distance in zip(
            result["ids"][0], result["documents"][0], result["metadatas"][0], result["distances"][0]
        ):
            hits.append((StoredChunk(cid, text, meta), 1.0 - float(distance)))
        return hits


def now() -> float:
    """Current UNIX time (one place, so tests can reason about ordering)."""
    return time.time()

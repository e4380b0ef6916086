"""A separate process working on a data dir, for the crash and concurrency tests.

    python tests/store_worker.py DATA_DIR [--pause-at POINT] ingest FILE...
    python tests/store_worker.py DATA_DIR [--pause-at POINT] delete DOC_ID...
    python tests/store_worker.py DATA_DIR open          # opens (so checks and sweeps), prints "documents N"

With ``--pause-at`` the process stops at that point of its work, prints "paused POINT"
and waits for a line on stdin before going on, so a test can kill it (-9) or act
beside it at exactly that point:

- ``embed``: after the first batch of vectors was computed, before anything is saved;
- ``begin``: after the pending write was recorded, before any vector reached the store;
- ``add``: after the first part of the vectors reached the vector store (pending write);
- ``delete_version``: after a new version was committed, before the old vectors go;
- ``delete_document``: after a delete was committed, before the vectors go.

It uses the hashing embedder, like the tests that start it, so the data dir's model matches.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's ragkit, not an installed one

from ragkit.config import Settings  # noqa: E402
from ragkit.models.embeddings import HashingEmbedder  # noqa: E402
from ragkit.store.kb import IngestItem, KnowledgeBase  # noqa: E402
from ragkit.store.vectors import VectorStore  # noqa: E402


def pause(point: str) -> None:
    print(f"paused {point}", flush=True)
    sys.stdin.readline()


def install_pause(point: str | None, embedder: HashingEmbedder) -> None:
    """Patch the one step named by ``point`` to stop there (test instrumentation only)."""
    if point == "embed":
        real = embedder._embed
        state = {"done": False}

        def embed(texts):
            vectors = real(texts)
            if not state["done"]:
                state["done"] = True
                pause(point)
            return vectors

        embedder._embed = embed
    elif point == "begin":
        from ragkit.store.catalog import Catalog

        real_begin = Catalog.begin_writes

        def begin_writes(self, versions):
            real_begin(self, versions)
            pause(point)

        Catalog.begin_writes = begin_writes
    elif point == "add":
        real_add = VectorStore.add

        def add(self, passages, vectors, documents, kb_names=None):
            half = max(1, len(passages) // 2)
            real_add(self, passages[:half], vectors[:half], documents, kb_names)
            pause(point)
            real_add(self, passages[half:], vectors[half:], documents, kb_names)

        VectorStore.add = add
    elif point in ("delete_version", "delete_document"):
        real_delete = getattr(VectorStore, point)

        def delete(self, *args):
            pause(point)
            return real_delete(self, *args)

        setattr(VectorStore, point, delete)


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("data_dir")
    parser.add_argument("--pause-at")
    parser.add_argument("command", choices=["ingest", "delete", "open"])
    parser.add_argument("args", nargs="*")
    options = parser.parse_args()
    embedder = HashingEmbedder()
    install_pause(options.pause_at, embedder)
    kb = KnowledgeBase(Settings(data_dir=Path(options.data_dir), _env_file=None), embedder=embedder)
    if options.command == "ingest":
        results = kb.ingest_many([IngestItem.of(Path(p)) for p in options.args])
        for result in results:
            print(f"result {result.status} {result.message}", flush=True)  # the message starts with the name
    elif options.command == "delete":
        for doc_id in options.args:
            kb.delete(doc_id)
            print(f"deleted {doc_id}", flush=True)
    print(f"documents {len(kb.documents())}", flush=True)
    kb.close()


if __name__ == "__main__":
    main()

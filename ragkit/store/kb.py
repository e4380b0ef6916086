"""KnowledgeBase: the library's front door for documents and search.

    kb = KnowledgeBase(load_settings())
    kb.ingest("report.pdf", tags=["finance"])
    hits = kb.search("what was the Q3 revenue?", k=5)

It is also what the chat graph searches through (``graph.retriever.PassageRetriever``:
``search``, ``search_document``, ``idf``, ``indexed_passages``, ``embed_sentences``,
``document_titles``).

A thin facade over four parts, each in its own module: the catalog (documents,
versions, tags and passages: ``catalog``), the vector store (``vectors``), the indexer
(the only writer: ``indexer``) and the retriever (hybrid search: ``retrieval``).

The store holds one or more *knowledge bases* (named sets of documents: "Default" at
first). Each document belongs to one; a search given knowledge bases
(``SearchFilters.knowledge_bases``) never returns a passage from another.
Opening checks the catalog against the vector store (``integrity``) and refuses to go
on, deleting nothing, when they disagree in a way it cannot explain.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragkit.config import Settings
from ragkit.errors import (
    EmbeddingError,
    EmbeddingModelMismatch,
    InputError,
    KnowledgeBaseError,
    ReadOnlyDataDir,
    StoreInconsistent,
)
from ragkit.lang.text import TOKENIZER_VERSION, index_tokens, plural, search_tokens
from ragkit.models.embeddings import Embedder, configured_model_name, make_embedder, settings_for_store
from ragkit.models.onnx import base_model_name
from ragkit.models.sentence_vectors import mark_stored, reindex_advice, vectors_current
from ragkit.retrieval.hybrid import Retriever, allowed_documents
from ragkit.store import integrity
from ragkit.store.catalog import Catalog
from ragkit.store.indexer import Indexer, IngestItem, IngestResult, Progress, normalize_tags
from ragkit.store.lexical import LexicalEntry, LexicalIndex
from ragkit.store.originals import OriginalStore
from ragkit.store.people import check_editor
from ragkit.store.tags import checked_tags
from ragkit.store.vectors import VectorStore
from ragkit.store.writelock import write_lock_for
from ragkit.types import DocumentRecord, Hit, KnowledgeBaseInfo, Passage, SearchFilters

log = logging.getLogger(__name__)
SNAPSHOT_AFTER_CHANGES = 1000  # passages re-read at open before the lexical snapshot is rewritten

__all__ = ["KnowledgeBase", "KnowledgeBaseError", "EmbeddingModelMismatch", "StoreInconsistent", "IngestItem",
           "IngestResult", "Progress", "normalize_tags", "plural", "DocumentRecord", "Hit", "Passage",
           "KnowledgeBaseInfo"]


class KnowledgeBase:
    """Documents in, ranked passages out; persistent under ``settings.data_dir``."""

    def __init__(self, settings: Settings, embedder: Embedder | None = None, check_model: bool = True,
                 refuse_unknown: bool = True):
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self.catalog = Catalog(settings.catalog_location, lease_s=settings.write_lease_s)
        self.lexical = LexicalIndex()
        lock = write_lock_for(settings)
        generation = lambda: self.catalog.vector_generation  # noqa: E731
        # An embedded store is opened (or created) at its first read, under the write lock.
        self.store = VectorStore(settings, lock, generation, read_only=self.read_only)
        self.settings = settings_for_store(settings, self._recorded_model(settings))  # before any embedder is made
        if check_model:
            try:
                self._check_embedding_model()
            except EmbeddingModelMismatch:
                self.store.close()
                raise
        self.indexer = Indexer(self.settings, self.catalog, self.store, self.lexical, lambda: self.embedder, lock)
        self.retriever = Retriever(self.settings, self.catalog, self.store, self.lexical, lambda: self.embedder)
        self.health: list[str] = []
        self._seen_revision = -1
        self._reranker_generation = -1  # the vector generation the reranker was last chosen under
        self._titles: tuple[int, dict[str, str]] = (-1, {})
        self._open(refuse_unknown)

    @classmethod
    def for_repair(cls, settings: Settings, embedder: Embedder | None = None) -> "KnowledgeBase":
        """Open without refusing a catalog that disagrees with the vector store (to repair it)."""
        return cls(settings, embedder, check_model=False, refuse_unknown=False)

    @staticmethod
    def set_catalog_aside(settings: Settings) -> Path:
        """Move an unreadable catalog file out of the way (kept beside it) so that ``repair``
        can rebuild the catalog from the vectors; returns where it went."""
        return integrity.set_aside(settings.data_path / "registry.sqlite3")

    # ----- opening -----------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        """The embedding model, loaded on first use (listing or deleting never needs it)."""
        with self._embedder_lock:
            if self._embedder is None:
                self._embedder = make_embedder(self.settings)
            return self._embedder

    @property
    def embedding_model_name(self) -> str:
        """The configured model's name, without loading it."""
        return self._embedder.name if self._embedder is not None else configured_model_name(self.settings)

    @property
    def read_only(self) -> str:
        """Why the knowledge base cannot be changed ("" when it can). It can still be
        listed and searched; every change raises ReadOnlyDataDir."""
        return self.catalog.read_only

    def _writable(self, what: str, person: str | None = None) -> None:
        check_editor(self.settings, person, what)
        if self.read_only:
            raise ReadOnlyDataDir(f"cannot {what}: {self.read_only}. Listing, searching and asking still work; "
                                  "give write access to the folder, or choose another data dir.")

    def _recorded_model(self, settings: Settings) -> str | None:
        """The model name the store's vectors were made with; None for a new store. A store
        holding passages or vectors but no name (indexed before names were recorded, or whose
        catalog was lost) is taken for the plain model's: the only backend of that time."""
        stored = self.catalog.get_meta("embedding_model")
        if stored is None and (self.catalog.passage_count() or self._store_has_vectors()):
            return settings.embedding_model
        return stored

    def _store_has_vectors(self) -> bool:
        try:
            return self.store.available and self.store.count() > 0
        except Exception:  # noqa: BLE001 - an unreadable store is reported by the integrity check
            return False

    def _check_embedding_model(self) -> None:
        stored = self.catalog.get_meta("embedding_model")
        configured = self.embedding_model_name
        if stored is None:
            if not self.read_only:
                self.catalog.set_meta("embedding_model", configured)
                if not configured.startswith("openai:") and not self.catalog.passage_count():
                    # a new knowledge base: its passages get sentence vectors at ingest
                    mark_stored(self.catalog, pooled=True)
        elif stored != configured:
            raise EmbeddingModelMismatch(
                f"this knowledge base was indexed with embedding model {stored!r} but "
                f"{configured!r} is configured; mixing them would give wrong results. "
                f"{self._setting_that_keeps(stored)}run `python -m ragkit reindex` to "
                "re-embed every document with the new model."
            )

    def _setting_that_keeps(self, stored: str) -> str:
        """The setting under which this store's recorded model would be configured again."""
        auto = self.settings.model_copy(update={"embedding_backend": "auto"})
        if configured_model_name(settings_for_store(auto, stored)) == stored:
            return "Set RAGKIT_EMBEDDING_BACKEND=auto or "
        model = base_model_name(stored)
        return f"Set RAGKIT_EMBEDDING_MODEL={model} or " if model != self.settings.embedding_model else ""

    def _open(self, refuse_unknown: bool) -> None:
        if self.read_only:
            self._open_read_only()
            return
        if self.catalog.get_meta("passages_backfill") == "needed":
            copied = integrity.backfill(self.catalog, self.store)
            log.info("copied %d passages of an older catalog into it", copied)
        if self.catalog.get_meta("tokenizer_version") != str(TOKENIZER_VERSION):
            self.catalog.retokenize(index_tokens)
            self.catalog.set_meta("tokenizer_version", str(TOKENIZER_VERSION))
            self._snapshot_path().unlink(missing_ok=True)
        found = integrity.inspect(self.catalog, self.store)
        if refuse_unknown:
            integrity.refuse_unknown(found, self.catalog)
        needs_sweep = found.stale or found.pending or self.catalog.vector_write_interrupted()
        if needs_sweep and not (found.store_error or found.deferred):
            found = self._sweep(found)
            if refuse_unknown:
                integrity.refuse_unknown(found, self.catalog)
        self.health = integrity.warnings(found, self.catalog, self.store.folder, self.store)
        for note in self.health:
            log.warning(note)
        self._load_lexical()

    def _open_read_only(self) -> None:
        """Check and load, changing nothing: nothing is swept or rewritten."""
        found = integrity.inspect(self.catalog, self.store)
        self.health = [f"read-only: {self.read_only}; the knowledge base can be listed and searched, "
                       "not changed"] + integrity.warnings(found, self.catalog, self.store.folder, self.store)
        self._load_lexical()

    def _sweep(self, found: integrity.Inspection) -> integrity.Inspection:
        """Remove what dead writers left (stale vectors, pending rows) when no writer is at
        work; while one is (the lock is busy), leave everything to it and to later opens."""
        with self.indexer.lock.hold(wait=False) as held:
            if not held:
                return found
            try:
                return integrity.sweep(self.catalog, self.store, self.indexer)
            except Exception as exc:  # noqa: BLE001 - e.g. a full disk: opening goes on, a later open sweeps
                log.warning("could not remove what an interrupted write left behind yet: %s", exc)
                return found

    def _snapshot_path(self) -> Path:
        return self.settings.data_path / "lexical.npz"

    def _load_lexical(self) -> None:
        """The BM25 index from its snapshot, brought up to date with the catalog; rebuilt
        from the catalog when the snapshot is missing, damaged or disagrees with it (it is
        only a cache: never a reason to stop)."""
        loaded = self.lexical.load(self._snapshot_path())
        changed = self._sync(force=True)
        if loaded and len(self.lexical) != self.catalog.passage_count():
            log.info("the lexical snapshot disagrees with the catalog; rebuilding it")
            self.lexical.clear()
            self._seen_revision = -1
            changed = self._sync(force=True)
            loaded = False
        if not loaded or changed > SNAPSHOT_AFTER_CHANGES:
            self._save_lexical()

    def _save_lexical(self) -> None:
        if self.read_only:
            return
        try:
            self.lexical.save(self._snapshot_path())
        except OSError as exc:  # only costs a slower next open
            log.warning("could not save the lexical index snapshot: %s", exc)

    def _sync(self, force: bool = False) -> int:
        """Catch up with changes made by other processes: re-open the vector store after
        their vector writes (and choose the reranker again: a ``reindex`` may have stored
        sentence vectors), re-read the lexical entries of documents they changed.
        Returns the passages re-read."""
        revision, generation = self.catalog.counters()
        if generation != self.store.generation:
            try:
                self.store.refresh(wait=False)  # while another process saves, keep the current view
            except KnowledgeBaseError as exc:
                log.warning("the vector store cannot be read: %s", exc)
        if generation != self._reranker_generation:  # once per change: a remote store's generation never catches up
            self.retriever.choose_reranker()
            self._reranker_generation = generation
        if revision == self._seen_revision and not force:
            return 0
        with self._sync_lock:
            current = {doc.id: doc.version for doc in self.catalog.documents()}
            indexed = self.lexical.document_versions()
            self.lexical.remove_documents([doc for doc in indexed if doc not in current])
            changed = [doc for doc, version in current.items() if indexed.get(doc) != version]
            rows = self.catalog.passage_terms(changed if len(changed) < 100 else None) if changed else []
            wanted = set(changed)
            reread = 0
            for doc_id, passages in _group([row for row in rows if row[1] in wanted]).items():
                self.lexical.replace_document(doc_id, current[doc_id],
                                              [LexicalEntry(pid, doc_id, terms) for pid, terms in passages])
                reread += len(passages)
            for doc_id in changed:
                if doc_id not in self.lexical.document_versions():
                    self.lexical.replace_document(doc_id, current[doc_id], [])
            self._seen_revision = revision
            return reread

    # ----- documents ---------------------------------------------------------------

    def documents(self, knowledge_bases: list[str] | None = None) -> list[DocumentRecord]:
        """Every document (of these knowledge base ids, when given), most recently updated first."""
        documents = self.catalog.documents()
        if knowledge_bases:
            documents = [doc for doc in documents if doc.kb_id in knowledge_bases]
        return documents

    def removals(self, limit: int = 20) -> list:
        """The most recent deletions (title, who, when), newest first."""
        return self.catalog.removals(limit)

    def document(self, doc_id: str) -> DocumentRecord | None:
        """One document by id."""
        return self.catalog.document(doc_id)

    def passages(self, doc_id: str) -> list[Passage]:
        """A document's passages in reading order."""
        return self.catalog.passages_of(doc_id)

    def passage_count(self) -> int:
        """Number of searchable passages."""
        return self.catalog.passage_count()

    def tags(self, knowledge_bases: list[str] | None = None) -> list[str]:
        """All tags in use (in these knowledge bases, when given), sorted."""
        return sorted({tag for doc in self.documents(knowledge_bases) for tag in doc.tags})

    def original(self, doc_id: str) -> bytes | None:
        """The bytes of the document's file as it was added (None when it was not kept:
        added before originals were kept, or RAGKIT_KEEP_ORIGINALS=false); KeyError for an
        unknown document."""
        doc = self.catalog.document(doc_id)
        if doc is None:
            raise KeyError(f"no document with id {doc_id!r}")
        return OriginalStore(self.settings.originals_path).read(doc.content_hash)

    # ----- knowledge bases ---------------------------------------------------------

    def knowledge_bases(self) -> list[KnowledgeBaseInfo]:
        """Every knowledge base with its number of documents, oldest first."""
        return self.catalog.knowledge_bases()

    def knowledge_base(self, name_or_id: str) -> KnowledgeBaseInfo:
        """A knowledge base by id or name (any case); InputError naming the existing ones."""
        return self.catalog.knowledge_base(name_or_id)

    def default_knowledge_base(self) -> KnowledgeBaseInfo:
        """Where documents go when none is named."""
        return self.catalog.default_knowledge_base()

    def create_knowledge_base(self, name: str, person: str | None = None) -> KnowledgeBaseInfo:
        """A new, empty knowledge base; InputError for an empty, too long or taken name."""
        self._writable("create knowledge bases", person)
        return self.catalog.create_knowledge_base(name)

    def rename_knowledge_base(self, name_or_id: str, new_name: str, person: str | None = None) -> KnowledgeBaseInfo:
        """Rename a knowledge base; InputError for an unknown one or a bad or taken name. The
        new name is also recorded with its documents' vectors (for ``repair``)."""
        self._writable("rename knowledge bases", person)
        renamed = self.catalog.rename_knowledge_base(self.knowledge_base(name_or_id).id, new_name)
        self._record_edits(self.documents([renamed.id]))
        return renamed

    def delete_knowledge_base(self, name_or_id: str, person: str | None = None) -> list[DocumentRecord]:
        """Delete a knowledge base and every document in it (returned); the last one left
        cannot be deleted (InputError): documents need somewhere to go."""
        self._writable("delete knowledge bases", person)
        base = self.knowledge_base(name_or_id)
        if len(self.knowledge_bases()) == 1:
            raise InputError(f"{base.name!r} is the only knowledge base: create another before deleting it")
        deleted = self.indexer.delete_many([doc.id for doc in self.documents([base.id])], person or "")
        self.catalog.remove_knowledge_base(base.id)
        return deleted

    def update_metadata(self, doc_id: str, *, title: str | None = None,
                        tags: list[str] | None = None, person: str | None = None) -> DocumentRecord:
        """Change a document's title and/or tags; KeyError when it does not exist, InputError
        for more tags than a document can have (see ``ragkit.store.tags``). The change is also
        recorded with the document's vectors, so ``repair`` of a lost catalog brings it back."""
        self._writable("change documents", person)
        record = self.catalog.update_metadata(doc_id, title, checked_tags(tags) if tags is not None else None,
                                              person or "")
        self._record_edits([record])
        return record

    def _record_edits(self, records: list[DocumentRecord]) -> None:
        """Copy edited documents' titles, tags and knowledge base onto their vectors."""
        for record in records:
            try:
                self.indexer.record_edit(record)
            except Exception as exc:  # noqa: BLE001 - the catalog has the edit; only its backup copy failed
                log.warning("could not record the edit of %s with its vectors: %s", record.id, exc)

    def delete(self, doc_id: str, person: str | None = None) -> DocumentRecord:
        """Remove a document and its passages (``person``: who asks, see ``ragkit.store.people``);
        KeyError when it does not exist."""
        self._writable("delete documents", person)
        return self.indexer.delete(doc_id, person or "")

    def delete_many(self, doc_ids: list[str], person: str | None = None) -> list[DocumentRecord]:
        """Remove several documents at once; ids already gone are skipped. The records deleted."""
        self._writable("delete documents", person)
        return self.indexer.delete_many(doc_ids, person or "")

    def add_tags(self, doc_ids: list[str], tags: list[str], person: str | None = None) -> list[DocumentRecord]:
        """Add these tags to each document (keeping its own); ids already gone are skipped.
        InputError when a document would get more tags than allowed (nothing is changed then)."""
        self._writable("change documents", person)
        added = checked_tags(tags)
        documents = [doc for doc in (self.catalog.document(doc_id) for doc_id in doc_ids) if doc is not None]
        planned = [(doc, checked_tags(doc.tags + added)) for doc in documents]  # all checked before any is changed
        changed = [self.catalog.update_metadata(doc.id, None, tags, person or "") for doc, tags in planned]
        self._record_edits(changed)
        return changed

    # ----- ingest ------------------------------------------------------------------

    def ingest(self, source: str | Path | bytes, filename: str | None = None, tags: list[str] | None = None,
               progress: Progress | None = None, identity: str | None = None,
               knowledge_base: str | None = None, person: str | None = None) -> IngestResult:
        """Add one file (a path, or bytes + filename); never raises for a bad file.

        ``identity`` says which stored document a file is a new version of; by default
        a path's full path, or the file name for bytes. ``knowledge_base`` (a name or id;
        InputError when there is none such) is where it goes, by default "Default".
        ReadOnlyDataDir when the data dir cannot be written."""
        self._writable("add files", person)
        kb_id = self.knowledge_base(knowledge_base).id if knowledge_base else ""
        item = IngestItem.of(source, filename, tags, progress, identity, kb_id)
        item.added_by = person or ""
        return self.indexer.ingest(item)

    def ingest_url(self, url: str, tags: list[str] | None = None, progress: Progress | None = None,
                   knowledge_base: str | None = None, person: str | None = None) -> IngestResult:
        """Fetch a web page and add its main text (see ``ragkit.ingest.web``); never raises for a bad
        address or page: the result says why it was refused. ReadOnlyDataDir when the data
        dir cannot be written."""
        self._writable("add web pages", person)
        kb_id = self.knowledge_base(knowledge_base).id if knowledge_base else ""
        item = IngestItem.of_url(url, tags, progress, kb_id)
        item.added_by = person or ""
        return self.indexer.ingest(item)

    def ingest_many(self, items: list[IngestItem]) -> list[IngestResult]:
        """Add many files, embedding them together (each file still all-or-nothing); each
        item's ``added_by`` must be allowed to (see ``ragkit.store.people``)."""
        for person in {item.added_by for item in items if item.added_by}:
            check_editor(self.settings, person, "add files")
        self._writable("add files")
        return self.indexer.ingest_many(items)

    def reindex(self, progress: Progress | None = None) -> int:
        """Re-embed every passage with the configured model (after changing it)."""
        self._writable("re-index")
        count = self.indexer.reindex(self.embedder, progress)
        self.retriever.choose_reranker()  # its sentence vectors are stored now
        return count

    def reindex_advice(self) -> str | None:
        """Why ``reindex`` would sharpen this knowledge base's search, or None (see
        ``sentence_vectors.reindex_advice``). Loads the model only for a store that lacks
        current sentence vectors, never an endpoint's (``openai:``: it pools none, and loading
        it asks the endpoint); a model that cannot be loaded gives no advice, not an error."""
        def pools_sentences() -> bool:
            if self.embedding_model_name.startswith("openai:"):
                return False
            try:
                return self.embedder.pools_sentences
            except EmbeddingError as exc:
                log.warning("no reindex advice: the embedding model cannot be loaded (%s)", exc)
                return False

        return reindex_advice(self.catalog, pools_sentences, self.settings.reranker)

    def repair(self) -> integrity.RepairReport:
        """Rebuild what can be rebuilt after data was lost or damaged (see ``integrity.repair``)."""
        self._writable("repair")
        report = integrity.repair(self.catalog, self.store, self.indexer, self.embedder)
        self._sync(force=True)
        self.health = integrity.warnings(integrity.inspect(self.catalog, self.store), self.catalog, self.store.folder,
                                         self.store)
        return report

    # ----- search ------------------------------------------------------------------

    def search(self, query: str, k: int | None = None, filters: SearchFilters | None = None) -> list[Hit]:
        """Hybrid search: the ``k`` best passages for ``query`` (empty for an unsearchable query)."""
        self._sync()
        hits = self.retriever.search(query, self.settings.top_k if k is None else k, filters, self.catalog.documents())
        if self.store.remote:
            self._note_server(self.retriever.dense_error)
        return hits

    def _note_server(self, error: str) -> None:
        """Show (or, once it answers again, take back) the warning that the Chroma server
        does not answer."""
        self.health = [note for note in self.health if not note.startswith(self.store.where)]
        if error:
            self.health.insert(0, integrity.server_note(self.store, error))

    def search_document(self, query: str, doc_id: str, k: int) -> list[Hit]:
        """The ``k`` best passages for ``query`` within one document."""
        return self.search(query, k, SearchFilters(doc_ids=[doc_id]))

    def search_documents(self, query: str, wanted: dict[str, int]) -> dict[str, list[Hit]]:
        """For each document of ``wanted`` (id -> how many), its best passages for ``query``
        as ``search_document`` ranks them, from one search over all of them; the store is
        read as the last search left it (an answer's searches see one state of it)."""
        return self.retriever.search_by_document(query, wanted, self.catalog.documents())

    def document_passages(self, doc_id: str) -> list[Passage]:
        """A document's passages in reading order (see ``passages``)."""
        return self.passages(doc_id)

    def idf(self, text: str) -> dict[str, float]:
        """Inverse document frequency of the search tokens of ``text`` over all passages."""
        return self.lexical.idf(search_tokens(text))

    def document_titles(self, filters: SearchFilters | None = None) -> dict[str, str]:
        """Every document's title → its id, of the documents ``filters`` admit (the titles are
        read again only after the catalog changed)."""
        revision = self.catalog.counters()[0]
        if self._titles[0] != revision:
            self._titles = (revision, {doc.title: doc.id for doc in self.catalog.documents() if doc.title})
        allowed = allowed_documents(filters, self.catalog.documents())
        if allowed is None:
            return self._titles[1]
        return {title: doc_id for title, doc_id in self._titles[1].items() if doc_id in allowed}

    def indexed_passages(self) -> int:
        """How many passages the word index holds: what ``idf`` is computed over (no query)."""
        return len(self.lexical)

    def embed_sentences(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of short texts (a question, candidate sentences), each computed once and
        remembered: grading the evidence and quoting from it compare the same sentences."""
        return self.embedder.embed_remembered(texts)

    def sentence_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of each passage's sentences by passage id (pooled at ingest); none
        when the store keeps none made under today's sentence splitter."""
        return self.catalog.sentence_vectors(list(ids)) if vectors_current(self.catalog) else {}

    def close(self) -> None:
        """Save the lexical snapshot and release the catalog."""
        self._save_lexical()
        self.store.close()
        self.catalog.close()


def _group(rows: list[tuple[str, str, list[str]]]) -> dict[str, list[tuple[str, list[str]]]]:
    grouped: dict[str, list[tuple[str, list[str]]]] = {}
    for pid, doc_id, terms in rows:
        grouped.setdefault(doc_id, []).append((pid, terms))
    return grouped

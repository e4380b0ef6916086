"""ragkit: a persistent, bilingual (Chinese/English) knowledge base with conversational RAG.

The public API is this module's ``__all__``; everything else is internal and may move.

    from ragkit import ChatEngine, KnowledgeBase, load_settings

    settings = load_settings()
    kb = KnowledgeBase(settings)
    kb.ingest("handbook.pdf")
    engine = ChatEngine(settings, kb)
    turn = engine.ask("demo", "Who maintains the handbook?")
    print(turn.answer, [source.title for source in turn.sources])

Works offline by default (packaged embedding model, extractive answers); an
OpenAI-compatible endpoint (``OPENAI_API_KEY``) upgrades answers to generated ones.
Layers, lowest first: ``errors``/``types``/``events`` → ``lang`` → ``config`` → ``models`` →
``ingest``, ``retrieval``, ``answering`` → ``store`` → ``graph`` → ``app`` → ``cli``; the
direction is checked by the test suite (``tests/test_layers.py``).
"""

from ragkit.lazy import exports

__version__ = "0.1.0"

_ERRORS = """RagkitError SettingsError InputError QuestionError SessionError ModelNotFound LoaderError UsageError
KnowledgeBaseError CatalogError StoreInconsistent EmbeddingModelMismatch DatabaseUnreadable DatabaseUnreachable
ReadOnlyDataDir StorageFull EmbeddingError NotAllowed ModelError WebSearchFailed AnswerFailed StartupError""".split()
_TYPES = """Passage Hit Source SearchFilters Exchange Turn TraceStep DocumentRecord KnowledgeBaseInfo""".split()

_EXPORTS = {
    **{name: "ragkit.errors" for name in _ERRORS},
    **{name: "ragkit.types" for name in _TYPES},
    "ChatEvent": "ragkit.events",
    "Settings": "ragkit.config",
    "load_settings": "ragkit.config",
    "Language": "ragkit.lang",
    "language_of": "ragkit.lang",
    "KnowledgeBase": "ragkit.store.kb",
    "IngestItem": "ragkit.store.indexer",
    "IngestResult": "ragkit.store.indexer",
    "ModelChoice": "ragkit.models.chat",
    "ModelStatus": "ragkit.models.chat",
    "chat_models": "ragkit.models.chat",
    "model_status": "ragkit.models.chat",
    "ChatEngine": "ragkit.app.engine",
    "check_question": "ragkit.app.engine",
    "HistoryManager": "ragkit.app.history",
    "SessionInfo": "ragkit.app.history",
    "new_session_id": "ragkit.app.history",
    "validate_session_id": "ragkit.app.history",
    "RagService": "ragkit.app.service",
}
__all__ = ["__version__", *_EXPORTS]
__getattr__, __dir__ = exports(__name__, _EXPORTS)

"""Errors of the knowledge base as a whole, each explained for the user."""


class KnowledgeBaseError(RuntimeError):
    """A problem with the knowledge base as a whole; the message says what to do."""


class CatalogError(KnowledgeBaseError):
    """The document catalog cannot be used (unreadable, damaged)."""


class StoreInconsistent(KnowledgeBaseError):
    """The catalog and the vector store disagree in a way that must not be swept away."""


class EmbeddingModelMismatch(KnowledgeBaseError):
    """The store was indexed with another embedding model than the configured one."""

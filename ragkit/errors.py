"""ragkit's exception tree, drawn and defined here and nowhere else: every error the library
raises on purpose derives from :class:`RagkitError`, and its message is written for the user
(what went wrong, what to do).

Callers (the pages, the CLI, the HTTP API) catch ``RagkitError`` and show its message; anything
else is a bug and keeps its traceback in the log.

    RagkitError
    ├── SettingsError            an invalid setting (names the variable)
    ├── InputError               something the user gave that cannot be used
    │   ├── QuestionError        an empty, punctuation-only or too long question
    │   ├── SessionError         a bad or unknown conversation id
    │   ├── ModelNotFound        a model id that is not configured (names the known ones)
    │   ├── LoaderError          a file that cannot be turned into text
    │   └── UsageError           a command line that cannot be carried out as given
    ├── KnowledgeBaseError       the knowledge base as a whole
    │   ├── CatalogError, StoreInconsistent, EmbeddingModelMismatch
    │   ├── DatabaseUnreadable   a database file that exists but cannot be read
    │   ├── DatabaseUnreachable  the database or Chroma server did not answer
    │   ├── ReadOnlyDataDir      a change asked of a data dir that cannot be written
    │   ├── StorageFull          a change that did not fit on the disk
    │   ├── EmbeddingError       the embedding model cannot be loaded or called
    │   ├── VectorStoreUnavailable  the vector store cannot be opened or read
    │   │   ├── VectorStoreRefused  the Chroma server refused the token
    │   │   └── VectorStoreBusy     another process has been saving too long
    │   └── RerankerError        the configured reranker cannot be used
    ├── NotAllowed               a person not among RAGKIT_EDITORS asked to change documents
    ├── ModelError               a configured language model failed (the answer falls back)
    │   ├── ModelTimeout         no reply in time
    │   ├── StreamBroken         the stream stopped before it was complete
    │   ├── ContextTooSmall      the prompt cannot fit the model's window
    │   ├── ContextOverflow      the server refused the prompt as too long
    │   └── UnusableAnswer       a reply that is not an answer
    ├── WebSearchFailed          the web search provider failed (the turn says "not found")
    ├── AnswerFailed             a turn failed unexpectedly (nothing was recorded)
    ├── TurnCancelled            the asker went away mid-turn (an API client hung up): nothing recorded
    ├── ApiError                 an HTTP API request refused (carries its status and OpenAI error type)
    └── StartupError             the app's parts could not be opened
"""

class RagkitError(Exception):
    """Base of every error ragkit raises on purpose; the message is for the user."""


class SettingsError(RagkitError, ValueError):
    """Raised when the configuration is invalid; the message names each bad setting."""


class InputError(RagkitError, ValueError):
    """Something the user gave (a question, a file, an id) that cannot be used as it is."""


class QuestionError(InputError):
    """A question that cannot be asked (empty, punctuation only, too long)."""


class SessionError(InputError):
    """A bad session id or a session that does not exist."""


class ModelNotFound(InputError):
    """A model choice id that is not configured; the message lists the ones that are."""


class LoaderError(InputError):
    """A file that cannot be turned into text; the message says why, for the user."""


class UsageError(InputError):
    """A command line that cannot be carried out as given (a missing argument, a bad
    combination); the CLI prints it as one line and exits 1."""


class KnowledgeBaseError(RagkitError, RuntimeError):
    """A problem with the knowledge base as a whole; the message says what to do."""


class CatalogError(KnowledgeBaseError):
    """The document catalog cannot be used (unreadable, damaged)."""


class StoreInconsistent(KnowledgeBaseError):
    """The catalog and the vector store disagree in a way that must not be swept away."""


class EmbeddingModelMismatch(KnowledgeBaseError):
    """The store was indexed with another embedding model than the configured one."""


class DatabaseUnreadable(KnowledgeBaseError):
    """A database file that exists but cannot be read (damaged, not SQLite)."""


class DatabaseUnreachable(KnowledgeBaseError):
    """The database server (``RAGKIT_DATABASE_URL``) or the Chroma server
    (``RAGKIT_CHROMA_URL``) did not answer; the message names which and where. Nothing was
    changed, and the next call tries again (no restart needed)."""


class ReadOnlyDataDir(KnowledgeBaseError):
    """A change asked of a data directory that cannot be written (reading still works);
    the message names the directory and the cause."""


class StorageFull(KnowledgeBaseError):
    """A change that did not fit on the disk (nothing of it was kept); the message names
    the file and the space left."""


class EmbeddingError(KnowledgeBaseError):
    """The configured embedding model cannot be loaded or called."""


class VectorStoreUnavailable(KnowledgeBaseError):
    """The vector store cannot be opened or read (damaged files, a full disk)."""


class VectorStoreRefused(VectorStoreUnavailable):
    """The Chroma server refused ragkit's token (RAGKIT_CHROMA_TOKEN missing or wrong); the
    message says which and what to do."""


class VectorStoreBusy(VectorStoreUnavailable):
    """Another process has been saving for so long that this one cannot catch up yet."""


class RerankerError(KnowledgeBaseError):
    """The configured reranker cannot be used (a missing or unreadable model directory)."""


class NotAllowed(RagkitError, PermissionError):
    """A logged-in person who may ask but not add, change or delete documents (``RAGKIT_EDITORS``)."""


class ModelError(RagkitError, RuntimeError):
    """A configured language model failed or replied with something unusable."""


class ModelTimeout(ModelError, TimeoutError):
    """The model sent nothing for too long."""

    def __init__(self, waited_s: float):
        super().__init__(f"no reply in {waited_s:.0f} s")
        self.waited_s = waited_s


class StreamBroken(ModelError):
    """The answer stream stopped before the server said it was complete."""


class ContextTooSmall(ModelError):
    """The prompt cannot fit the model's context window."""


class ContextOverflow(ModelError):
    """The server refused the prompt as longer than its context window."""


class UnusableAnswer(ModelError):
    """The model's reply is not an answer (empty, echoed instructions, no structured output,
    no sentence supported, not what was asked); ``withheld``: its sentences not shown."""

    def __init__(self, message: str, withheld: list | None = None):
        super().__init__(message)
        self.withheld = withheld or []


class WebSearchFailed(RagkitError, RuntimeError):
    """The configured web search provider could not be used (unreachable, too slow, not
    its JSON API); the message says which and why."""


class AnswerFailed(RagkitError, RuntimeError):
    """A turn failed for a reason ragkit did not foresee; nothing of it was recorded."""


class TurnCancelled(RagkitError):
    """The asker went away before the turn finished (an HTTP client hung up mid-stream): the
    turn stopped where it was and nothing of it was recorded. Not a model failure: no
    other model and no offline answer is tried for nobody."""


class ApiError(RagkitError):
    """An HTTP API request that is refused, as OpenAI's API words it: ``status`` (400, 401,
    403, 404, 413, 429, 503...), ``kind`` (OpenAI's error ``type``: invalid_request_error,
    authentication_error...), an optional ``code`` and ``param``, and ``headers`` to send
    (``Retry-After``). The message never repeats a secret."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error", code: str | None = None,
                 param: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.kind, self.code, self.param = status, kind, code, param
        self.headers = dict(headers or {})

    def to_dict(self) -> dict:
        """OpenAI's error object: ``{"error": {"message", "type", "param", "code"}}``."""
        return {"error": {"message": str(self), "type": self.kind, "param": self.param, "code": self.code}}


class StartupError(RagkitError, RuntimeError):
    """The knowledge base, the sessions or the model could not be opened at start."""

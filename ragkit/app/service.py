"""RagService: everything the app needs, built once per process (no Streamlit here)."""

from __future__ import annotations

import logging
from pathlib import Path

from ragkit.app.engine import ChatEngine
from ragkit.app.history import HistoryManager
from ragkit.app.jobs import IngestJob, IngestQueue
from ragkit.config import Settings
from ragkit.errors import RagkitError, StartupError
from ragkit.ingest.registry import is_supported
from ragkit.store.kb import KnowledgeBase

log = logging.getLogger(__name__)


class RagService:
    """The knowledge base, the session history and the chat engine over them."""

    def __init__(self, settings: Settings, warm_up: bool = True):
        self.settings = settings
        try:
            self.kb = KnowledgeBase(settings)
            if warm_up:
                self.kb.embedder.embed_query("warm up")  # load the model now, not at the first question
            self.history = HistoryManager(settings.sessions_location)
        except RagkitError:
            raise
        except Exception as exc:  # a bug or an unforeseen failure of a part: said in words, traceback in the log
            log.exception("ragkit failed to start")
            raise StartupError(f"{type(exc).__name__}: {exc}") from exc
        self.engine = ChatEngine(settings, self.kb, self.history)
        self.uploads = IngestQueue(self.kb.ingest_many)  # indexing that survives leaving the page

    def sample_files(self) -> list[Path]:
        """The demo documents shipped in data/samples/."""
        folder = self.settings.samples_dir
        if not folder.is_dir():
            return []
        return sorted(p for p in folder.iterdir() if is_supported(p.name))

    def queue_samples(self, kb_id: str = "") -> list[IngestJob]:
        """Send the sample documents (tagged 'sample') to the upload queue, as one batch, into
        this knowledge base ("": the default one)."""
        return self.uploads.submit_many([(path.name, path, ["sample"]) for path in self.sample_files()], kb_id)

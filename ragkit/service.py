"""RagService: everything the app needs, built once per process (no Streamlit here)."""

from __future__ import annotations

from pathlib import Path

from .chat import ChatEngine
from .config import Settings
from .history import HistoryManager
from .jobs import IngestQueue
from .kb import IngestItem, IngestResult, KnowledgeBase, Progress
from .loaders import SUPPORTED_TYPES


class RagService:
    """The knowledge base, the session history and the chat engine over them."""

    def __init__(self, settings: Settings, warm_up: bool = True):
        self.settings = settings
        self.kb = KnowledgeBase(settings)
        if warm_up:
            self.kb.embedder.embed_query("warm up")  # load the model now, not at the first question
        self.history = HistoryManager(settings.data_path / "sessions.sqlite3")
        self.engine = ChatEngine(settings, self.kb, self.history)
        self.uploads = IngestQueue(self.ingest_upload)  # indexing that survives leaving the page

    def sample_files(self) -> list[Path]:
        """The demo documents shipped in data/samples/."""
        folder = self.settings.samples_dir
        if not folder.is_dir():
            return []
        return sorted(p for p in folder.iterdir() if p.suffix.lower() in SUPPORTED_TYPES)

    def load_samples(self, progress: Progress | None = None) -> list[IngestResult]:
        """Ingest the sample documents (tagged 'sample')."""
        files = self.sample_files()
        items = []
        for number, path in enumerate(files):
            def report(stage: str, fraction: float, number=number, path=path) -> None:
                if progress:
                    progress(f"{path.name}: {stage}", (number + fraction) / max(len(files), 1))
            items.append(IngestItem.of(path, tags=["sample"], progress=report))
        return self.kb.ingest_many(items)

    def ingest_upload(self, filename: str, data: bytes, tags: list[str] | None = None,
                      progress: Progress | None = None) -> IngestResult:
        """Add one uploaded file."""
        return self.kb.ingest(data, filename=filename, tags=tags or [], progress=progress)

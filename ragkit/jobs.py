"""Background indexing of uploaded files, one at a time, on a worker thread.

Streamlit stops a script run when the user leaves the page; indexing inside that run
would then be rolled back and the upload silently lost. Uploads are therefore handed
to this queue, which keeps working whatever the page does, and the page only shows
the progress and results of its own jobs.
"""

from __future__ import annotations

import logging
import queue
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from .kb import IngestResult, Progress

log = logging.getLogger(__name__)
Ingest = Callable[[str, bytes, list[str], Progress], IngestResult]


@dataclass
class IngestJob:
    """One uploaded file: where its indexing stands and, once done, its result."""

    filename: str
    data: bytes = field(repr=False)
    tags: list[str]
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    stage: str = "waiting"
    fraction: float = 0.0
    result: IngestResult | None = None
    finished: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def done(self) -> bool:
        """True once the file was added, found unchanged or refused."""
        return self.finished.is_set()


class IngestQueue:
    """Runs ``ingest(filename, data, tags, progress)`` for submitted files in order."""

    def __init__(self, ingest: Ingest):
        self._ingest = ingest
        self._pending: queue.Queue[IngestJob] = queue.Queue()
        self._jobs: dict[str, IngestJob] = {}
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None  # started by the first submit

    def submit(self, filename: str, data: bytes, tags: list[str] | None = None) -> IngestJob:
        """Queue one file; returns its job at once."""
        job = IngestJob(filename, data, list(tags or []))
        with self._lock:
            self._jobs[job.id] = job
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="ragkit-ingest", daemon=True)
                self._worker.start()
        self._pending.put(job)
        return job

    def jobs(self, ids: list[str]) -> list[IngestJob]:
        """The jobs with these ids, in the given order (unknown ids are skipped)."""
        with self._lock:
            return [self._jobs[job_id] for job_id in ids if job_id in self._jobs]

    def forget(self, ids: list[str]) -> None:
        """Drop finished jobs whose results have been shown (frees their bytes)."""
        with self._lock:
            for job_id in ids:
                job = self._jobs.get(job_id)
                if job is not None and job.done:
                    del self._jobs[job_id]

    def wait(self, ids: list[str], timeout_s: float | None = None) -> bool:
        """Block until these jobs are done; False on timeout."""
        return all(job.finished.wait(timeout_s) for job in self.jobs(ids))

    def _work(self) -> None:
        while True:
            job = self._pending.get()
            self._run(job)

    def _run(self, job: IngestJob) -> None:
        def report(stage: str, fraction: float) -> None:
            job.stage, job.fraction = stage, min(max(fraction, 0.0), 1.0)

        try:
            job.result = self._ingest(job.filename, job.data, job.tags, report)
        except Exception as exc:  # the store rolled the file back; say so instead of losing it
            log.exception("indexing %s failed", job.filename)
            job.result = IngestResult(job.filename, "refused", f"{job.filename}: could not be indexed ({exc})")
        finally:
            job.data = b""
            job.fraction = 1.0
            job.finished.set()

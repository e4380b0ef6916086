"""Background indexing of uploaded files on a worker thread, batch by batch.

Streamlit stops a script run when the user leaves the page; indexing inside that run
would then be rolled back and the upload silently lost. Uploads (and the sample
documents) are therefore handed to this queue, which keeps working whatever the page
does, and the page only shows the progress and results of its own jobs.

The files waiting when the worker becomes free are taken together, as one batch, to
``KnowledgeBase.ingest_many``: they are embedded together, while each keeps its own
progress and its own result.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ragkit.store.kb import IngestItem, IngestResult

log = logging.getLogger(__name__)
IngestMany = Callable[[list[IngestItem]], list[IngestResult]]
MAX_BATCH_FILES = 64


@dataclass
class IngestJob:
    """One queued file: where its indexing stands and, once done, its result."""

    filename: str
    data: bytes | Path = field(repr=False)  # the uploaded bytes, or a file on disk (the samples)
    tags: list[str]
    kb_id: str = ""  # the knowledge base it goes into ("": the default one)
    url: str = ""  # a web page to fetch instead (then ``filename`` is the address)
    added_by: str = ""  # who queued it (an e-mail, with a login that knows people)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    stage: str = "waiting"
    fraction: float = 0.0
    result: IngestResult | None = None
    finished: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def done(self) -> bool:
        """True once the file was added, found unchanged or refused."""
        return self.finished.is_set()

    def report(self, stage: str, fraction: float) -> None:
        """Progress callback for the indexer."""
        self.stage, self.fraction = stage, min(max(fraction, 0.0), 1.0)

    def item(self) -> IngestItem:
        """The indexer's view of this file."""
        if self.url:
            item = IngestItem.of_url(self.url, self.tags, self.report, self.kb_id)
        else:
            item = IngestItem.of(self.data, self.filename, tags=self.tags, progress=self.report, kb_id=self.kb_id)
        item.added_by = self.added_by
        return item


class IngestQueue:
    """Runs ``ingest_many(items)`` on a worker thread for the files submitted, in order."""

    def __init__(self, ingest_many: IngestMany, max_batch: int = MAX_BATCH_FILES):
        self._ingest_many = ingest_many
        self._max_batch = max_batch
        self._waiting: list[IngestJob] = []
        self._jobs: dict[str, IngestJob] = {}
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)
        self._worker: threading.Thread | None = None  # started by the first submit

    def submit(self, filename: str, data: bytes | Path, tags: list[str] | None = None) -> IngestJob:
        """Queue one file (bytes, or a path); returns its job at once."""
        return self.submit_many([(filename, data, tags or [])])[0]

    def submit_many(self, files: Iterable[tuple[str, bytes | Path, list[str]]], kb_id: str = "",
                    person: str | None = None) -> list[IngestJob]:
        """Queue several files at once (so they are indexed as one batch) into one knowledge
        base ("": the default), added by ``person`` (see ``ragkit.store.people``); their jobs, in order."""
        return self._submit([IngestJob(filename, data, list(tags or []), kb_id, added_by=person or "")
                             for filename, data, tags in files])

    def submit_url(self, url: str, tags: list[str] | None = None, kb_id: str = "",
                   person: str | None = None) -> IngestJob:
        """Queue a web page to fetch and add; its job at once."""
        return self._submit([IngestJob(url.strip(), b"", list(tags or []), kb_id, url=url.strip(),
                                       added_by=person or "")])[0]

    def _submit(self, jobs: list[IngestJob]) -> list[IngestJob]:
        with self._wakeup:
            for job in jobs:
                self._jobs[job.id] = job
            self._waiting.extend(jobs)
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="ragkit-ingest", daemon=True)
                self._worker.start()
            self._wakeup.notify()
        return jobs

    def jobs(self, ids: list[str]) -> list[IngestJob]:
        """The jobs with these ids, in the given order (unknown ids are skipped)."""
        with self._lock:
            return [self._jobs[job_id] for job_id in ids if job_id in self._jobs]

    def forget(self, ids: list[str]) -> None:
        """Drop finished jobs whose results have been shown."""
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
            with self._wakeup:
                while not self._waiting:
                    self._wakeup.wait()
                batch = self._waiting[: self._max_batch]
                del self._waiting[: len(batch)]
            self._run(batch)

    def _run(self, batch: list[IngestJob]) -> None:
        try:
            results = self._ingest_many([job.item() for job in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"{len(results)} results for {len(batch)} files")
        except Exception as exc:
            if len(batch) > 1:  # an unexpected failure of the batch: each file on its own, so one cannot sink the rest
                log.exception("indexing a batch of %d files failed; indexing them one by one", len(batch))
                for job in batch:
                    self._run([job])
                return
            log.exception("indexing %s failed", batch[0].filename)
            results = [IngestResult(batch[0].filename, "refused", f"{batch[0].filename}: could not be indexed ({exc})")]
        for job, result in zip(batch, results):
            job.result = result
            job.data = b""
            job.fraction = 1.0
            job.finished.set()

"""Uploads are indexed on a background worker: files waiting together go to ingest_many as
one batch (embedded together), each keeps its own progress and result, and every file
ends with a result."""

import threading

from conftest import FIXTURES
from ragkit.app.jobs import IngestQueue
from ragkit.store.kb import IngestResult


def test_queued_files_are_indexed_together_with_their_own_progress_and_results(kb):
    batches, stages = [], []

    def ingest_many(items):
        batches.append([item.filename for item in items])
        for item in items:
            original = item.progress
            item.progress = lambda stage, fraction, name=item.filename, report=original: (
                stages.append((name, stage, fraction)), report(stage, fraction))
        return kb.ingest_many(items)

    uploads = IngestQueue(ingest_many)
    pdf, empty, guide = uploads.submit_many([
        ("report_en.pdf", (FIXTURES / "report_en.pdf").read_bytes(), ["finance"]),
        ("empty.txt", b"", []),
        ("handbook.docx", FIXTURES / "handbook.docx", []),  # a file on disk, as the samples are queued
    ])
    assert uploads.wait([pdf.id, empty.id, guide.id], timeout_s=120)
    assert batches == [["report_en.pdf", "empty.txt", "handbook.docx"]], "one batch, one embedding pass"
    assert pdf.result.status == "added" and kb.document(pdf.result.document.id).tags == ["finance"]
    assert empty.result.status == "refused" and "empty" in empty.result.message.lower()
    assert guide.result.status == "added" and guide.result.document.filename == "handbook.docx"
    assert pdf.fraction == 1.0 and pdf.data == b""
    embedded = {name for name, stage, _ in stages if stage.startswith("embedding")}
    assert embedded == {"report_en.pdf", "handbook.docx"}, "each file reports its own embedding progress"
    assert kb.search("Who founded Aurora Analytics?")[0].filename == "report_en.pdf"


def test_files_arriving_while_the_worker_is_busy_wait_and_then_go_together():
    release, started, batches = threading.Event(), threading.Event(), []

    def ingest_many(items):
        batches.append([item.filename for item in items])
        started.set()
        release.wait(10)
        for item in items:
            item.progress("embedding", 0.5)
        return [IngestResult(item.filename, "added", f"{item.filename}: added") for item in items]

    uploads = IngestQueue(ingest_many)
    first = uploads.submit("first.txt", b"1")
    assert started.wait(10)
    later = [uploads.submit(f"later{n}.txt", b"x") for n in range(3)]
    assert all(job.stage == "waiting" and not job.done for job in later)
    release.set()
    assert uploads.wait([first.id] + [job.id for job in later], timeout_s=10)
    assert batches == [["first.txt"], ["later0.txt", "later1.txt", "later2.txt"]]
    assert [job.result.message for job in later] == [f"later{n}.txt: added" for n in range(3)]


def test_an_unexpected_failure_becomes_a_refusal_with_the_reason_and_the_queue_goes_on():
    def ingest_many(items):
        if any(item.filename == "boom.txt" for item in items):
            raise OSError("disk full")
        return [IngestResult(item.filename, "added", f"{item.filename}: added") for item in items]

    uploads = IngestQueue(ingest_many)
    failing, following = uploads.submit_many([("boom.txt", b"x", []), ("next.txt", b"y", [])])
    assert uploads.wait([failing.id, following.id], timeout_s=10)
    assert failing.result.status == "refused" and "disk full" in failing.result.message
    assert following.result.status == "added", "a failed batch is retried file by file"
    uploads.forget([failing.id, following.id])
    assert uploads.jobs([failing.id, following.id]) == []

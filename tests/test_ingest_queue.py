"""Uploads are indexed on a background worker, in order, and every file ends with a result."""

from conftest import FIXTURES
from ragkit.jobs import IngestQueue
from ragkit.kb import IngestResult


def test_queued_files_are_indexed_in_the_background_with_progress_and_results(kb):
    stages = []

    def ingest(filename, data, tags, progress):
        def report(stage, fraction):
            stages.append((filename, stage, fraction))
            progress(stage, fraction)

        return kb.ingest(data, filename=filename, tags=tags, progress=report)

    uploads = IngestQueue(ingest)
    pdf = uploads.submit("report_en.pdf", (FIXTURES / "report_en.pdf").read_bytes(), ["finance"])
    empty = uploads.submit("empty.txt", b"")
    assert uploads.wait([pdf.id, empty.id], timeout_s=120)
    assert pdf.result.status == "added" and kb.document(pdf.result.document.id).tags == ["finance"]
    assert empty.result.status == "refused" and "empty" in empty.result.message.lower()
    assert pdf.fraction == 1.0 and pdf.data == b""
    assert {name for name, _, _ in stages} >= {"report_en.pdf"}
    assert kb.search("Who founded Aurora Analytics?")[0].filename == "report_en.pdf"


def test_an_unexpected_failure_becomes_a_refusal_with_the_reason_and_the_queue_goes_on():
    def ingest(filename, data, tags, progress):
        if filename == "boom.txt":
            raise OSError("disk full")
        return IngestResult(filename, "added", f"{filename}: added")

    uploads = IngestQueue(ingest)
    failing, following = uploads.submit("boom.txt", b"x"), uploads.submit("next.txt", b"y")
    assert uploads.wait([failing.id, following.id], timeout_s=10)
    assert failing.result.status == "refused" and "disk full" in failing.result.message
    assert following.result.status == "added"
    uploads.forget([failing.id, following.id])
    assert uploads.jobs([failing.id, following.id]) == []

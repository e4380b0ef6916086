"""The benchmark runs end to end and reports every figure (its values are not asserted)."""

from ragkit.bench import run_bench, synthetic_document
from ragkit.config import Settings


def test_bench_reports_all_figures_on_a_small_workload(tmp_path):
    figures = run_bench(Settings(data_dir=tmp_path), documents=4, queries=6)
    assert figures["documents"] == 4 and figures["chunks"] >= 4
    for key in ("startup_s", "ingest_docs_per_s", "ingest_chunks_per_s", "reopen_s", "search_p50_ms",
                "search_p95_ms", "peak_rss_mb"):
        assert figures[key] > 0, key


def test_synthetic_documents_are_bilingual_and_deterministic():
    text = synthetic_document(3)
    assert text == synthetic_document(3) != synthetic_document(4)
    assert "。" in text and "." in text

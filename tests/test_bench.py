"""The benchmark runs end to end and reports every figure (its values are not asserted)."""

import pytest

from ragkit.config import Settings
from ragkit_dev.bench import run_bench, synthetic_document


# The quick workload measures every figure once (OCR, URL ingest, a 3k-passage base, both
# encoders): minutes on a busy 2-core machine. The limit only guards against a hang.
@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_quick_bench_reports_every_figure(tmp_path):
    figures = run_bench(Settings(data_dir=tmp_path, _env_file=None), quick=True)
    assert figures["workload"] == "quick"
    for key in ("encode_chunks_per_s_large", "encode_chunks_per_s_small", "ingest_vs_encode_large",
                "ingest_vs_encode_small", "extractive_answer_ms",
                "first_token_ms", "load_answer_p95_ms", "search_p95_ms_1k", "search_filtered_p95_ms_3k",
                "add_one_doc_s_3k", "reopen_s_3k", "peak_rss_mb_3k", "onnx_int8_speedup_passages",
                "onnx_int8_speedup_questions", "onnx_int8_over_pytorch_passages", "ocr_page_s", "ocr_page_chars",
                "url_fetch_extract_ms", "url_ingest_s", "url_ingest_passages"):
        assert figures[key] > 0, key
    assert figures["load_answers"] == figures["load_sessions"] * 2 and figures["load_lost"] == 0
    assert figures["add_one_doc_found_3k"] is True
    assert figures["ocr_imported_without_scans"] is False


def test_synthetic_documents_are_bilingual_and_deterministic():
    text = synthetic_document(3)
    assert text == synthetic_document(3) != synthetic_document(4)
    assert "。" in text and "." in text

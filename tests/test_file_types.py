"""More file types through the real parsers: XLSX sheets as labelled rows, PPTX slides with
their notes, images and scanned PDF pages through OCR (models inside the package: no
download), web pages by URL from a local server (and the addresses that are refused)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from conftest import REPO
from doc_makers import ARTICLE, make_png, make_pptx, make_scanned_pdf, make_xlsx, serve_folder
from ragkit.errors import LoaderError
from ragkit.ingest import load_bytes, load_path


def test_xlsx_sheets_are_pages_of_labelled_rows(tmp_path):
    loaded = load_path(make_xlsx(tmp_path / "register.xlsx"))
    assert loaded.doc_type == "xlsx" and loaded.title == "Harbour register" and loaded.page_count == 2
    assert loaded.pages[0].startswith("## Cranes")
    assert "crane: Crane 7; tonnes: 40; inspected: 2026-03-04" in loaded.pages[0]
    assert "crane: Crane 9; tonnes: 12.5" in loaded.pages[0]
    assert "name: Ines Okafor; role: harbour master" in loaded.pages[1]


def test_pptx_has_a_page_per_slide_with_its_notes(tmp_path):
    loaded = load_path(make_pptx(tmp_path / "plan.pptx"))
    assert loaded.doc_type == "pptx" and loaded.page_count == 2 and loaded.title == "Quarterly plan"
    assert loaded.pages[0].splitlines()[0] == "# Quarterly plan"
    assert "Open the Osaka office in spring" in loaded.pages[0]
    assert "Travel budget: 12,000 euros" in loaded.pages[1]
    assert "Notes: Mention that the lighthouse tour is paid by the client." in loaded.pages[1]


def test_broken_office_files_are_refused_with_the_program_to_fix_them():
    with pytest.raises(LoaderError, match=r"^book\.xlsx: not a readable XLSX file .* Excel"):
        load_bytes(b"PK\x03\x04 not really a zip", "book.xlsx")
    with pytest.raises(LoaderError, match=r"^deck\.pptx: not a readable PPTX file .* PowerPoint"):
        load_bytes(b"plain text", "deck.pptx")


def test_unsupported_type_is_refused_with_the_supported_ones():
    with pytest.raises(LoaderError, match=r"^setup\.exe: unsupported file type \.exe; supported: .*\.pptx.*\.xlsx"):
        load_bytes(b"MZ\x90\x00", "setup.exe")


@pytest.mark.slow
def test_a_scanned_pdf_and_an_image_are_read_by_ocr_without_any_network(tmp_path, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("OCR tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    scan = make_scanned_pdf(tmp_path / "scan.pdf", ["The harbour crane lifts forty tonnes", "at high tide."])
    loaded = load_path(scan)
    assert "harbour crane lifts forty tonnes" in loaded.pages[0].lower()
    assert any("read by OCR (p. 1)" in note for note in loaded.notes)
    image = load_path(make_png(tmp_path / "note.png", ["Meeting moved to Thursday"]))
    assert image.doc_type == "image" and "meeting moved to thursday" in image.pages[0].lower()


def test_with_ocr_off_a_scanned_pdf_says_how_to_turn_it_on(tmp_path):
    from ragkit.ingest.ocr import OcrOptions

    scan = make_scanned_pdf(tmp_path / "scan.pdf", ["Nothing to read without OCR"])
    with pytest.raises(LoaderError, match="RAGKIT_OCR=true"):
        load_path(scan, ocr=OcrOptions(enabled=False))
    with pytest.raises(LoaderError, match="turned off"):
        load_bytes(b"\x89PNG\r\n\x1a\n", "photo.png", ocr=OcrOptions(enabled=False))


def test_a_corrupt_image_is_refused_in_words():
    with pytest.raises(LoaderError, match=r"^photo\.png: not a readable image"):
        load_bytes(b"\x89PNG\r\n\x1a\nbroken", "photo.png")


def test_a_user_without_scans_never_imports_the_ocr_engine():
    code = ("import sys; from ragkit.app.service import RagService; from ragkit.ingest import load_bytes; "
            "load_bytes(b'plain words here', 'a.txt'); "
            "print(sorted(m for m in ('rapidocr_onnxruntime', 'cv2', 'trafilatura') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.fixture
def intranet_kb(settings, embedder):
    """A knowledge base allowed to read pages on this machine (the test's server)."""
    from ragkit.store.kb import KnowledgeBase

    knowledge_base = KnowledgeBase(settings.model_copy(update={"url_allow_private": True}), embedder=embedder)
    yield knowledge_base
    knowledge_base.close()


def test_web_page_is_fetched_from_a_local_server_main_text_only(intranet_kb, tmp_path):
    kb = intranet_kb
    (tmp_path / "lighthouse.html").write_text(ARTICLE, encoding="utf-8")
    with serve_folder(tmp_path) as base:
        result = kb.ingest_url(f"{base}/lighthouse.html", tags=["web"])
    assert result.status == "added", result.message
    doc = result.document
    assert doc.doc_type == "web" and doc.title == "Skerry Point Lighthouse"
    assert doc.filename == f"{base}/lighthouse.html"
    text = " ".join(p.text for p in kb.passages(doc.id))
    assert "Agnes Mowat" in text and "Cookie settings" not in text and "About us" not in text
    assert kb.search("who built the Skerry Point lighthouse", k=1)[0].doc_id == doc.id
    assert kb.original(doc.id) == ARTICLE.encode()


@pytest.mark.parametrize("address, reason", [
    ("ftp://example.com/file.txt", "only http:// and https://"),
    ("file:///etc/passwd", "only http:// and https://"),
    ("http://127.0.0.1:9/page", "loopback address"),
    ("http://localhost:9/page", "loopback address"),
    ("http://[::1]:9/page", "loopback address"),
    ("http://10.20.30.40/page", "private address"),
    ("http://169.254.169.254/latest/meta-data", "link-local address"),
])
def test_addresses_outside_the_public_web_are_refused_before_connecting(kb, address, reason):
    result = kb.ingest_url(address)
    assert result.status == "refused" and reason in result.message
    assert not kb.documents()


def test_size_and_time_limits_of_a_fetch(tmp_path):
    import time

    from ragkit.ingest.web import fetch

    (tmp_path / "big.html").write_text("<p>" + "word " * 400_000 + "</p>", encoding="utf-8")
    with serve_folder(tmp_path) as base:
        with pytest.raises(LoaderError, match="larger than 1 MB"):
            fetch(f"{base}/big.html", 20, 1024 * 1024, allow_private=True)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # accepts the connection, never answers
    started = time.monotonic()
    try:
        with pytest.raises(LoaderError, match=r"no complete answer within 1 s"):
            fetch(f"http://127.0.0.1:{silent.getsockname()[1]}/", 1, 1024, allow_private=True)
    finally:
        silent.close()
    assert time.monotonic() - started < 10

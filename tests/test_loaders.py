"""Loaders turn real files into pages of text, and refuse bad ones with a clear reason."""

import pytest

from conftest import FIXTURES
from ragkit.errors import LoaderError
from ragkit.ingest import load_bytes, load_path
from ragkit.ingest.decoding import decode_text


def test_pdf_keeps_one_text_per_page_and_its_title():
    doc = load_path(FIXTURES / "report_en.pdf")
    assert doc.doc_type == "pdf"
    assert doc.page_count == 3
    assert "third quarter was 4.2 million euros" in " ".join(doc.pages[1].split())
    assert "Osaka" in doc.pages[2] and "Osaka" not in doc.pages[0]
    assert doc.title == "Aurora Analytics report"
    assert len(doc.content_hash) == 64


def test_chinese_pdf_text_is_extracted():
    doc = load_path(FIXTURES / "tea_garden_zh.pdf")
    assert doc.page_count == 2
    assert "武夷山" in doc.pages[0]
    assert "门票价格为六十元" in doc.pages[1]


def test_docx_keeps_headings_tables_and_chinese_in_order():
    doc = load_path(FIXTURES / "handbook.docx")
    text = doc.pages[0]
    assert doc.title == "Orbital Kitchen handbook"
    assert "# Orbital Kitchen handbook" in text
    assert "## Opening hours" in text
    assert "Nebula noodles | 14 credits" in text
    assert text.index("Opening hours") < text.index("Nebula noodles") < text.index("火锅每周五供应")


@pytest.mark.parametrize(
    "encoding, prefix",
    [("utf-8", b""), ("utf-8", b"\xef\xbb\xbf"), ("gbk", b""), ("gb18030", b""), ("utf-16-le", b"\xff\xfe"),
     ("utf-16-le", b"")],
)
def test_text_encodings_are_detected(encoding, prefix):
    original = "知识库测试：青松茶园位于福建省武夷山市，每天上午八点开放。Tea garden opens at 8."
    data = prefix + original.encode(encoding)
    assert decode_text(data).strip("\ufeff") == original


@pytest.mark.parametrize("encoding, bom", [("utf-32-le", b"\xff\xfe\x00\x00"), ("utf-32-be", b"\x00\x00\xfe\xff")])
def test_utf32_with_bom_is_not_mistaken_for_utf16(encoding, bom):
    original = "茶园八点开放。Tea garden opens at 8."
    assert decode_text(bom + original.encode(encoding)) == original


def test_markdown_title_is_first_heading():
    doc = load_bytes("# 用户指南\n\nSome text.".encode(), "guide.md")
    assert doc.doc_type == "markdown" and doc.title == "用户指南"


def test_html_drops_scripts_and_keeps_text():
    html = b"<html><head><title>Page</title><script>alert(1)</script></head><body><p>Hello world</p></body></html>"
    doc = load_bytes(html, "page.html")
    assert doc.title == "Page" and "Hello world" in doc.pages[0] and "alert" not in doc.pages[0]


def test_csv_rows_become_labelled_lines():
    doc = load_bytes(b"name,city\nAda,London\nLin,Beijing\n", "people.csv")
    assert "name: Ada; city: London" in doc.pages[0]


@pytest.mark.parametrize(
    "data, filename, reason",
    [
        (b"", "empty.txt", "the file is empty"),
        (b"hello", "virus.exe", "unsupported file type .exe"),
        (b"hello", "README", r"unsupported file type \(no extension\)"),
        (b"   \n\n  ", "blank.md", "no text could be extracted"),
        (b"\x00\x01\x02\x03binary\x00junk" * 10, "fake.txt", "binary file"),
        (b"%PDF-1.4 garbage", "broken.pdf", "not a readable PDF"),
        (b"PK\x03\x04 not really a zip", "broken.docx", "not a readable DOCX"),
    ],
)
def test_bad_files_are_refused_with_a_specific_reason(data, filename, reason):
    with pytest.raises(LoaderError, match=reason):
        load_bytes(data, filename)


def test_corrupt_and_encrypted_pdfs_are_refused():
    with pytest.raises(LoaderError, match="not a readable PDF"):
        load_path(FIXTURES / "corrupt.pdf")
    with pytest.raises(LoaderError, match="password-protected"):
        load_path(FIXTURES / "encrypted.pdf")


def test_oversized_upload_is_refused_with_the_limit():
    with pytest.raises(LoaderError, match=r"over the 1 MB limit"):
        load_bytes(b"a" * (2 * 1024 * 1024), "big.txt", max_bytes=1024 * 1024)


def test_random_bytes_never_crash_the_text_decoder():
    import random

    rng = random.Random(3)
    for _ in range(50):
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
        assert isinstance(decode_text(blob), str)


def test_pdf_lines_wrapped_mid_sentence_are_joined():
    from ragkit.ingest.converters.pdf import unwrap_soft_breaks

    assert unwrap_soft_breaks("approved a dividend of\n12 cents per share.\nOutlook") == (
        "approved a dividend of 12 cents per share.\nOutlook")
    assert unwrap_soft_breaks("茶园每天上午\n八点开放。\nNext") == "茶园每天上午八点开放。\nNext"
    assert unwrap_soft_breaks("Financial results.\nRevenue grew") == "Financial results.\nRevenue grew"
    doc = load_path(FIXTURES / "report_en.pdf")
    assert "dividend of 12 cents per share" in doc.pages[1]

"""Hostile files are refused, or loaded, in bounded memory and linear work, with a message
that names the file and says what to do (issue "Nothing lost, nothing leaked").

Every hostile file is generated here, most of them streamed so that the test itself stays
small: a DOCX holding 200 MB of XML is a 600 KB zip written 1 MB at a time. Memory is
measured in a fresh interpreter (peak RSS, ``ru_maxrss``, after imports and before the
load), so the numbers are the loader's own.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import stat
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import docx
import pytest
from pypdf import PdfWriter

from conftest import FIXTURES, REPO
from ragkit.errors import LoaderError
from ragkit.ingest import load_bytes, load_path
from ragkit.ingest.converters.pdf import unwrap_soft_breaks
from ragkit.ingest.decoding import decode_text
from ragkit.ingest.document import first_line_title, normalize_text
from work_counting import count_operations, cpu_seconds

resource = pytest.importorskip("resource")  # peak-RSS measurements need a Unix

MB = 1024 * 1024
GROWTH_LIMIT = 6  # 4x the input may cost at most 6x the work (quadratic would be 16x)
CPU_GROWTH_LIMIT = 9  # the same for CPU time, with room for a busy machine


# --- generators --------------------------------------------------------------------------


def write_zip_entry(archive: zipfile.ZipFile, name: str, chunk: bytes, repeat: int) -> None:
    """Write ``chunk * repeat`` as one deflated entry, one chunk at a time."""
    with archive.open(zipfile.ZipInfo(name), "w") as entry:
        for _ in range(repeat):
            entry.write(chunk)


def make_docx_with_body(path: Path, paragraph: bytes, repeat: int) -> Path:
    """The handbook fixture with its document.xml replaced by ``repeat`` copies of a
    paragraph: a well-formed DOCX that python-docx would parse in full."""
    with zipfile.ZipFile(FIXTURES / "handbook.docx") as source, zipfile.ZipFile(
        path, "w", zipfile.ZIP_DEFLATED, compresslevel=9
    ) as target:
        for info in source.infolist():
            if info.filename != "word/document.xml":
                target.writestr(info, source.read(info))
        with target.open("word/document.xml", "w") as entry:
            entry.write(
                b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document xmlns:w='
                b'"http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
            )
            chunk = paragraph * max(1, MB // len(paragraph))
            for _ in range(max(1, repeat * len(paragraph) // len(chunk))):
                entry.write(chunk)
            entry.write(b"</w:body></w:document>")
    return path


BOMB_PARAGRAPH = b"<w:p><w:r><w:t>lol lol lol lol</w:t></w:r></w:p>"


def declare_size(path: Path, name: str, declared: int) -> None:
    """Make the zip's headers (local and central) claim ``name`` unpacks to ``declared`` bytes."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        local = archive.getinfo(name).header_offset
    data[local + 22 : local + 26] = declared.to_bytes(4, "little")
    encoded = name.encode()
    position = data.find(b"PK\x01\x02")
    while position >= 0:
        if data[position + 46 : position + 46 + len(encoded)] == encoded:
            data[position + 24 : position + 28] = declared.to_bytes(4, "little")
        position = data.find(b"PK\x01\x02", position + 4)
    path.write_bytes(bytes(data))


def flate_pages_pdf(pages: int, inflated_per_page: int, content: bytes = b" " * 1024) -> bytes:
    """A hand-built PDF whose pages each have their own FlateDecode content stream that
    inflates to ``inflated_per_page`` bytes (compressed a chunk at a time)."""
    compressor = zlib.compressobj(9)
    stream = b"".join(compressor.compress(content) for _ in range(inflated_per_page // len(content)))
    stream += compressor.flush()
    objects = {1: b"<< /Type /Catalog /Pages 2 0 R >>"}
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(pages))
    objects[2] = f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode()
    for i in range(pages):
        page = f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R >>"
        objects[3 + 2 * i] = page.encode()
        objects[4 + 2 * i] = b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(stream), stream)
    return _pdf_file(objects)


def _pdf_file(objects: dict[int, bytes]) -> bytes:
    """Serialize numbered objects with a correct cross-reference table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = out.tell()
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, objects[number]))
    xref, size = out.tell(), max(objects) + 1
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % size)
    for number in range(1, size):
        out.write(b"%010d 00000 n \n" % offsets[number])
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref))
    return out.getvalue()


def encrypted_pdf(user_password: str) -> bytes:
    """The English report fixture, AES-256 encrypted with an owner password."""
    writer = PdfWriter(clone_from=FIXTURES / "report_en.pdf")
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="AES-256")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


# --- measurement -------------------------------------------------------------------------

MEASURE = """
import json, resource, sys, zipfile
from pathlib import Path
{setup}
import charset_normalizer, docx, lxml.etree, pypdf  # imported before the baseline
from ragkit.errors import LoaderError
from ragkit.ingest import load_bytes, load_path
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
{measured}
    outcome = "loaded"
except Exception as exc:
    outcome = f"{{type(exc).__name__}}: {{exc}}"
grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({{"outcome": outcome, "grown_mb": grown_kb / 1024}}))
"""


def measure_in_subprocess(measured: str, setup: str = "") -> tuple[str, float]:
    """Run ``measured`` in a fresh interpreter: its outcome ("loaded" or the exception)
    and how many MB its peak RSS grew while it ran."""
    indented = "\n".join("    " + line for line in measured.strip().splitlines())
    script = MEASURE.format(setup=setup, measured=indented)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["outcome"], result["grown_mb"]






# --- 1. decompression bombs --------------------------------------------------------------


def test_docx_bomb_is_refused_from_its_declared_size_in_bounded_memory(tmp_path):
    bomb = make_docx_with_body(tmp_path / "bomb.docx", BOMB_PARAGRAPH, 200 * MB // len(BOMB_PARAGRAPH))
    assert bomb.stat().st_size < 2 * MB  # 200 MB of XML in a small file

    outcome, grown_mb = measure_in_subprocess(f"load_path({str(bomb)!r})")

    assert outcome.startswith("LoaderError: bomb.docx: the DOCX would unpack to 20")
    assert "over the 100 MB limit (RAGKIT_MAX_UNPACKED_MB)" in outcome
    assert "raise RAGKIT_MAX_UNPACKED_MB" in outcome
    assert grown_mb < 100, grown_mb


def test_docx_part_with_an_absurd_compression_ratio_is_refused(tmp_path):
    bomb = make_docx_with_body(tmp_path / "dense.docx", BOMB_PARAGRAPH, 20 * MB // len(BOMB_PARAGRAPH))
    with pytest.raises(LoaderError, match=r"^dense\.docx: part word/document\.xml would unpack \d+ times larger"):
        load_bytes(bomb.read_bytes(), "dense.docx")


def test_a_part_lying_about_its_size_is_unpacked_no_further_than_declared(tmp_path):
    """A deflated part declaring 4 KB that inflates to 200 MB. ZipFile.read() (python-docx's
    way) would inflate it all before cutting it to 4 KB; zipfile's chunked reads, which the
    loader copies parts with, stop at 4 KB and fail the CRC, in bounded memory."""
    liar = make_docx_with_body(tmp_path / "liar.docx", BOMB_PARAGRAPH, 200 * MB // len(BOMB_PARAGRAPH))
    declare_size(liar, "word/document.xml", 4096)

    chunked_read = f"""
with zipfile.ZipFile({str(liar)!r}).open('word/document.xml') as part:
    while part.read(65536):
        pass
"""
    outcome, grown_mb = measure_in_subprocess(chunked_read)
    assert outcome == "BadZipFile: Bad CRC-32 for file 'word/document.xml'"
    assert grown_mb < 30, grown_mb

    outcome, grown_mb = measure_in_subprocess(f"load_path({str(liar)!r})")
    assert outcome.startswith("LoaderError: liar.docx: not a readable DOCX file")
    assert grown_mb < 30, grown_mb


def test_docx_parts_packed_with_bzip2_are_refused_as_zipfile_inflates_them_whole():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("word/document.xml", b"<w:document/>" * 100, compress_type=zipfile.ZIP_BZIP2)
    with pytest.raises(LoaderError, match=r"^odd\.docx: part word/document\.xml is packed with bzip2"):
        load_bytes(buffer.getvalue(), "odd.docx")


def test_docx_with_more_parts_than_any_word_document_is_refused():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for number in range(10_001):
            archive.writestr(f"p/{number}", b"")
    with pytest.raises(LoaderError, match=r"^many\.docx: the DOCX has more than 10000 parts"):
        load_bytes(buffer.getvalue(), "many.docx")


def test_unpacked_limit_is_a_parameter_and_defaults_to_100_mb():
    data = (FIXTURES / "handbook.docx").read_bytes()  # about 0.8 MB unpacked
    with pytest.raises(LoaderError, match=r"over the 0\.5 MB limit \(RAGKIT_MAX_UNPACKED_MB\)"):
        load_bytes(data, "handbook.docx", max_unpacked_bytes=MB // 2)
    assert load_bytes(data, "handbook.docx").title == "Orbital Kitchen handbook"
    assert load_path(FIXTURES / "handbook.docx", max_unpacked_bytes=2 * MB).page_count == 1


def test_settings_carry_the_unpacked_limit():
    from ragkit.config import Settings

    assert Settings(_env_file=None).max_unpacked_bytes == 100 * MB
    assert Settings(_env_file=None, max_unpacked_mb=2.5).max_unpacked_bytes == int(2.5 * MB)


def test_pdf_stream_past_pypdfs_per_stream_limit_is_refused_with_a_clear_message():
    bomb = flate_pages_pdf(pages=1, inflated_per_page=120 * MB)
    assert len(bomb) < 200_000
    with pytest.raises(LoaderError, match=r"^bomb\.pdf: the PDF exceeds a safety limit .* decompression bomb"):
        load_bytes(bomb, "bomb.pdf")


def test_pdf_pages_that_each_stay_under_pypdfs_limit_are_refused_in_bounded_memory(tmp_path):
    """pypdf caps one stream at 75 MB, not a document: 40 pages of 8 MB each would all be
    kept decoded. The loader counts what the document inflates to."""
    path = tmp_path / "pages.pdf"
    path.write_bytes(flate_pages_pdf(pages=40, inflated_per_page=8 * MB))

    outcome, grown_mb = measure_in_subprocess(f"load_path({str(path)!r}, max_unpacked_bytes=24 * 1024 * 1024)")

    assert outcome.startswith("LoaderError: pages.pdf: the PDF's pages inflate to more than 24 MB")
    assert "RAGKIT_MAX_UNPACKED_MB" in outcome
    assert grown_mb < 100, grown_mb


def test_pdf_under_the_unpacked_limit_still_loads():
    text = b"BT /F1 12 Tf 72 720 Td (Tea garden opens at eight.) Tj ET\n"
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        4: b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream"
        % (len(zlib.compress(text)), zlib.compress(text)),
        5: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    }
    doc = load_bytes(_pdf_file(objects), "tea.pdf", max_unpacked_bytes=1024)
    assert doc.pages == ["Tea garden opens at eight."]


# --- 2. size and file kind before reading ------------------------------------------------


def test_oversized_file_is_refused_before_it_is_read(tmp_path):
    sparse = tmp_path / "huge.txt"
    with sparse.open("wb") as handle:
        handle.truncate(3 * 1024 * MB)  # 3 GB, sparse: no disk used

    outcome, grown_mb = measure_in_subprocess(f"load_path({str(sparse)!r}, max_bytes=50 * 1024 * 1024)")

    assert outcome == (
        "LoaderError: huge.txt: the file is 3072.0 MB, over the 50 MB limit (RAGKIT_MAX_UPLOAD_MB): "
        "split it into smaller files or raise RAGKIT_MAX_UPLOAD_MB"
    )
    assert grown_mb < 20, grown_mb


def test_unsupported_type_on_disk_is_refused_before_it_is_read(tmp_path):
    sparse = tmp_path / "disk.img"
    with sparse.open("wb") as handle:
        handle.truncate(3 * 1024 * MB)
    outcome, grown_mb = measure_in_subprocess(f"load_path({str(sparse)!r})")
    assert outcome.startswith("LoaderError: disk.img: unsupported file type .img")
    assert grown_mb < 20, grown_mb


def test_directories_are_refused_as_not_regular_files(tmp_path):
    folder = tmp_path / "notes.txt"
    folder.mkdir()
    with pytest.raises(LoaderError, match=r"notes\.txt: this is a directory, not a regular file"):
        load_path(folder)
    with pytest.raises(LoaderError, match="this is a directory"):
        load_path(tmp_path)  # no extension: still told it is a directory


@pytest.mark.timeout(30)  # reading a FIFO nobody writes to would block for ever
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifos_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    with pytest.raises(LoaderError, match=r"pipe\.txt: this is a named pipe \(FIFO\), not a regular file"):
        load_path(fifo)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_devices_are_refused():
    assert stat.S_ISCHR(os.stat("/dev/zero").st_mode)
    with pytest.raises(LoaderError, match=r"/dev/zero: this is a device, not a regular file"):
        load_path("/dev/zero")


def test_missing_file_names_the_path_and_what_to_check(tmp_path):
    with pytest.raises(LoaderError, match=r"gone\.txt: cannot read the file \(No such file or directory\): check"):
        load_path(tmp_path / "gone.txt")


def test_file_within_the_limit_still_loads_from_disk(tmp_path):
    path = tmp_path / "small.md"
    path.write_text("# 用户指南\n\nSome text.", encoding="utf-8")
    doc = load_path(path, max_bytes=len("# 用户指南\n\nSome text.".encode()))
    assert doc.title == "用户指南" and doc.pages == ["# 用户指南\n\nSome text."]


# --- 3. encrypted PDFs -------------------------------------------------------------------


def test_aes_pdf_with_only_an_owner_password_opens():
    doc = load_bytes(encrypted_pdf(user_password=""), "owner_only.pdf")
    assert doc.page_count == 3 and doc.title == "Aurora Analytics report"
    assert "third quarter was 4.2 million euros" in " ".join(doc.pages[1].split())


def test_aes_pdf_that_needs_a_user_password_is_refused_as_password_protected():
    with pytest.raises(LoaderError, match=r"^locked\.pdf: the PDF is password-protected: remove the password"):
        load_bytes(encrypted_pdf(user_password="secret"), "locked.pdf")


def test_aes_pdf_without_the_cryptography_package_says_what_to_install(tmp_path):
    path = tmp_path / "owner_only.pdf"
    path.write_bytes(encrypted_pdf(user_password=""))
    hide_crypto = "sys.modules['cryptography'] = sys.modules['Crypto'] = None  # as if not installed"
    outcome, _ = measure_in_subprocess(f"load_path({str(path)!r})", setup=hide_crypto)
    assert outcome.startswith("LoaderError: owner_only.pdf: the PDF is AES-encrypted and the 'cryptography'")
    assert "pip install -r requirements.txt" in outcome


# --- 4. binary data in text types --------------------------------------------------------


def random_bytes_without_nul(size: int, seed: int) -> bytes:
    """Random bytes with the NULs removed (the old check only looked for NULs)."""
    return bytes(byte for byte in random.Random(seed).randbytes(size) if byte)


def jpeg_bytes() -> bytes:
    """A real JPEG of random noise (Pillow comes with fpdf2)."""
    image_module = pytest.importorskip("PIL.Image")
    rng = random.Random(7)
    image = image_module.frombytes("RGB", (64, 64), rng.randbytes(64 * 64 * 3))
    buffer = io.BytesIO()
    image.save(buffer, "JPEG")
    return buffer.getvalue()


@pytest.mark.parametrize("filename", ["photo.txt", "notes.md", "table.csv", "page.html"])
@pytest.mark.parametrize(
    "make",
    [
        lambda: random_bytes_without_nul(300, 1),
        lambda: random_bytes_without_nul(64 * 1024, 2),
        jpeg_bytes,
        lambda: jpeg_bytes().replace(b"\x00", b""),
    ],
    ids=["random-300", "random-64k", "jpeg", "jpeg-without-nul"],
)
def test_binary_data_in_a_text_type_is_refused(make, filename):
    with pytest.raises(LoaderError, match=rf"^{filename}: looks like a binary file, not text"):
        load_bytes(make(), filename)


TEXTS_THAT_ARE_TEXT = {
    "gbk": ("青松茶园位于福建省武夷山市，每天上午八点开放。", "gbk", b""),
    "gb18030 with a 4-byte character": ("茶园门票六十元，学生半价。𠀀", "gb18030", b""),
    "utf-8 Chinese": ("知识库测试：青松茶园位于福建省武夷山市。", "utf-8", b""),
    "utf-16-le with BOM": ("Tea garden opens at eight. 茶园八点开放。", "utf-16-le", b"\xff\xfe"),
    "utf-16-be without BOM": ("Tea garden opens at eight. 茶园八点开放。", "utf-16-be", b""),
    "a few odd characters": (
        "Report\f page two \x1b[32mOK\x1b[0m, bell \x07, private \ue000, one \ufffd replacement, "
        "and enough ordinary words around them to be a normal paragraph of text.",
        "utf-8",
        b"",
    ),
}


@pytest.mark.parametrize("text, encoding, bom", TEXTS_THAT_ARE_TEXT.values(), ids=TEXTS_THAT_ARE_TEXT.keys())
def test_real_text_with_cjk_or_a_few_odd_characters_still_loads(text, encoding, bom):
    assert load_bytes(bom + text.encode(encoding), "notes.txt").pages == [text]


# --- 5. every promised encoding ----------------------------------------------------------

CHINESE = "青松茶园位于福建省武夷山市，始建于一九八五年。茶园每天上午八点开放，门票价格为六十元。"
ENGLISH = "Aurora Analytics was founded in 2011 in Lisbon. Revenue grew 18 percent; the office opens at 8."
CONTENTS = {
    "chinese-short": "茶园八点开放。",
    "chinese-sentence": CHINESE,
    "chinese-3kb": "\n".join([CHINESE] * 24),
    "english-short": "Opens at 8.",
    "english-sentence": ENGLISH,
    "english-3kb": "\n".join([ENGLISH] * 32),
    "mixed-3kb": "\n".join([CHINESE, ENGLISH] * 14),
}
ENCODINGS = {
    "utf-8": ("utf-8", b""),
    "utf-8 BOM": ("utf-8", b"\xef\xbb\xbf"),
    "gb18030": ("gb18030", b""),
    "gbk": ("gbk", b""),
    "utf-16-le BOM": ("utf-16-le", b"\xff\xfe"),
    "utf-16-be BOM": ("utf-16-be", b"\xfe\xff"),
    "utf-16-le": ("utf-16-le", b""),
    "utf-16-be": ("utf-16-be", b""),
}


@pytest.mark.parametrize("content", CONTENTS.values(), ids=CONTENTS.keys())
@pytest.mark.parametrize("encoding, bom", ENCODINGS.values(), ids=ENCODINGS.keys())
def test_every_promised_encoding_decodes_to_the_original(encoding, bom, content):
    data = bom + content.encode(encoding)
    assert decode_text(data) == content
    assert load_bytes(data, "doc.txt").pages == [content]


# --- 6. messages -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, filename, message",
    [
        (b"", "empty.txt", "empty.txt: the file is empty (0 bytes): check that it was saved completely"),
        (b"hello", "virus.exe", "virus.exe: unsupported file type .exe; supported: .bmp, .csv, .docx, .htm, .html, "
         ".jpeg, .jpg, .markdown, .md, .pdf, .png, .pptx, .text, .tif, .tiff, .txt, .webp, .xlsx. "
         "Convert it to one of these (e.g. save as PDF) and add it again"),
        (b"   \n\n  ", "blank.md", "blank.md: no text could be extracted: the file holds no visible text"),
        (b"%PDF-1.4 garbage", "broken.pdf",
         "broken.pdf: not a readable PDF (corrupt or truncated): re-export it from the source application"),
        (b"PK\x03\x04 not really a zip", "broken.docx",
         "broken.docx: not a readable DOCX file (corrupt, or not Word 2007+): "
         "open it in Word and save it again as .docx"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600), "old.docx",
         "old.docx: this is an old Word 97-2003 document or a password-protected one: open it in Word "
         "and save it as .docx (Word 2007+) without a password"),
        (b'name,notes\nAda,"' + b"x" * 200_000, "long.csv",
         "long.csv: not a readable CSV (line 2: field larger than field limit (131072)): check for an "
         "unclosed quote, or save the file as .txt to index it as plain text"),
    ],
    ids=["empty", "unsupported", "blank", "broken-pdf", "broken-docx", "old-doc", "csv-quote"],
)
def test_each_refusal_names_the_file_and_says_what_to_do(data, filename, message):
    with pytest.raises(LoaderError) as refused:
        load_bytes(data, filename)
    assert str(refused.value) == message


def test_a_pdf_page_without_text_is_refused_after_ocr_found_none_either():
    empty_page = flate_pages_pdf(pages=1, inflated_per_page=1024)
    expected = r"^scan\.pdf: no text could be extracted \(OCR read no text on its pages either\)"
    with pytest.raises(LoaderError, match=expected):
        load_bytes(empty_page, "scan.pdf")


def test_corrupt_pdf_message_does_not_leak_pypdf_internals():
    with pytest.raises(LoaderError) as refused:
        load_path(FIXTURES / "corrupt.pdf")
    assert str(refused.value) == (
        "corrupt.pdf: not a readable PDF (corrupt or truncated): re-export it from the source application"
    )


# --- 7. linear work on adversarial text --------------------------------------------------

ADVERSARIAL = {
    "blanks without a newline": ("notes.txt", lambda n: b" " * n + b"x"),
    "tabs and form feeds without a newline": ("notes.txt", lambda n: b"a" + b"\t\f\v " * (n // 4) + b"x"),
    "newlines": ("notes.md", lambda n: b"a" + b"\n" * n + b"b"),
    "open brackets": ("notes.txt", lambda n: b"(" * n),
    "blank lines": ("notes.md", lambda n: b"\n \n" * (n // 3) + b"# Title"),
    "csv of commas": ("table.csv", lambda n: b"a,b\n" + b"," * n + b"x"),
    "csv of short rows": ("table.csv", lambda n: b"a,b\n" + b"1,2\n" * (n // 4)),
    "html of unclosed tags": ("page.html", lambda n: b"<a " * (n // 3) + b"x"),
    "html of open brackets": ("page.html", lambda n: b"<" * n + b"x"),
    "html comment never closed": ("page.html", lambda n: b"x<!--" + b"-" * n),
}


def load_ignoring_refusal(filename: str, data: bytes) -> None:
    """Load, treating a refusal as a finished load (the work is what is measured)."""
    try:
        load_bytes(data, filename)
    except LoaderError:
        pass


@pytest.mark.timeout(120)
@pytest.mark.parametrize("filename, make", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_python_work_on_adversarial_text_grows_linearly(filename, make):
    n = 30_000
    small = count_operations(load_ignoring_refusal, filename, make(n))
    large = count_operations(load_ignoring_refusal, filename, make(4 * n))
    assert large < GROWTH_LIMIT * max(small, 100), (small, large)


# Regexes and parsers in C are invisible to line events and have no counter to hook. As a
# last resort these compare CPU time (process_time, best of three runs) with a generous
# bound: linear work grows ~4x on 4x the input, a backtracking regex ~16x.
@pytest.mark.timeout(120)
@pytest.mark.parametrize("filename, make", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_c_level_work_on_adversarial_text_grows_linearly(filename, make):
    n = 50_000
    small, large = make(n), make(4 * n)
    load_ignoring_refusal(filename, small)  # warm up imports and caches
    small_time = cpu_seconds(lambda data: load_ignoring_refusal(filename, data), small)
    large_time = cpu_seconds(lambda data: load_ignoring_refusal(filename, data), large)
    assert large_time < CPU_GROWTH_LIMIT * max(small_time, 0.002), (small_time, large_time)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "fn, make",
    [
        (unwrap_soft_breaks, lambda n: "a\n" * (n // 2)),
        (unwrap_soft_breaks, lambda n: "(" * n),
        (unwrap_soft_breaks, lambda n: "茶\n" * (n // 2)),
        (lambda text: first_line_title(text, "stem"), lambda n: "\n" * n + "#" * n + " x"),
        (normalize_text, lambda n: " " * n + "x"),
        (normalize_text, lambda n: "\r" * n + "x"),
    ],
    ids=["soft breaks", "soft breaks on brackets", "soft breaks on CJK", "first line title", "normalize blanks",
         "normalize CRs"],
)
def test_text_helpers_grow_linearly_in_cpu_time(fn, make):
    n = 100_000
    small, large = make(n), make(4 * n)
    assert cpu_seconds(fn, large) < CPU_GROWTH_LIMIT * max(cpu_seconds(fn, small), 0.002)


def test_normalize_strips_line_ends_as_the_old_regex_did():
    def old(text: str) -> str:
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
        text = re.sub(r"[ \t\f\v]+\n", "\n", text)
        return re.sub(r"\n{3,}", "\n\n", text).strip()

    rng = random.Random(11)
    alphabet = [" ", "\t", "\f", "\v", "\n", "\r", "\r\n", "\x00", "a", "茶", "\u3000", "\xa0"]
    samples = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(60))) for _ in range(3000)]
    samples += [(FIXTURES / "make_fixtures.py").read_text(), " a \n\n\n b \t\n", "x \f\n \n \n\ny"]
    for text in samples:
        assert normalize_text(text) == old(text), repr(text)


# --- 8. DOCX titles ----------------------------------------------------------------------


def docx_bytes(core_title: str = "", title: str | None = None, heading: str | None = None,
               body: str = "Body text.") -> bytes:
    """A DOCX written by python-docx: optional core title, "Title" paragraph, Heading 1."""
    document = docx.Document()
    document.core_properties.title = core_title
    document.add_paragraph("Preface without a style.")
    if heading:
        document.add_heading(heading, level=1)
    if title:
        document.add_heading(title, level=0)  # level 0 is the "Title" style
    document.add_heading("Second heading", level=1)
    document.add_paragraph(body)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({"core_title": "Core title", "title": "Styled title", "heading": "First heading"}, "Core title"),
        ({"title": "Styled title", "heading": "First heading"}, "Styled title"),
        ({"heading": "First heading"}, "First heading"),
        ({"core_title": "  茶园   手册 "}, "茶园 手册"),
    ],
    ids=["core properties first", "then the Title paragraph", "then the first Heading 1", "whitespace tidied"],
)
def test_docx_title_prefers_core_properties_then_title_then_heading(kwargs, expected):
    assert load_bytes(docx_bytes(**kwargs), "file_name.docx").title == expected


def test_docx_without_any_title_falls_back_to_the_file_stem():
    document = docx.Document()
    document.add_paragraph("Just a paragraph.")
    buffer = io.BytesIO()
    document.save(buffer)
    assert load_bytes(buffer.getvalue(), "meeting_notes.docx").title == "meeting_notes"


def test_docx_without_core_properties_is_not_titled_word_document():
    """python-docx invents a "Word Document" title when docProps/core.xml is missing."""
    source = zipfile.ZipFile(io.BytesIO(docx_bytes()))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "docProps/core.xml":
                continue
            if info.filename == "_rels/.rels":
                data = re.sub(rb"<Relationship [^>]*core-properties[^>]*/>", b"", data)
            target.writestr(info, data)
    assert load_bytes(buffer.getvalue(), "no_core.docx").title == "Second heading"

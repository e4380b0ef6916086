"""File bytes -> pages of text with metadata.

Each loader returns a :class:`LoadedDocument`: the pages of plain text (one for formats
without pages) plus title, type, size, page count and a content hash. Anything that
cannot be read raises :class:`LoaderError` with a message meant for the user.
"""

from __future__ import annotations

import csv
import hashlib
import io
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import charset_normalizer

logging.getLogger("pypdf").setLevel(logging.ERROR)  # broken files are reported by us, once

SUPPORTED_TYPES = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".txt": "txt",
    ".text": "txt",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".csv": "csv",
}


class LoaderError(ValueError):
    """A file that cannot be turned into text; the message says why, for the user."""


@dataclass
class LoadedDocument:
    """The text of one file, page by page, with its descriptive metadata."""

    filename: str
    doc_type: str
    title: str
    pages: list[str]
    size_bytes: int
    content_hash: str
    extra: dict = field(default_factory=dict)

    @property
    def page_count(self) -> int:
        """Number of pages (1 for formats without pages)."""
        return len(self.pages)

    @property
    def char_count(self) -> int:
        """Characters of text over all pages."""
        return sum(len(page) for page in self.pages)


def content_hash(data: bytes) -> str:
    """SHA-256 of the raw bytes; identical uploads have identical hashes."""
    return hashlib.sha256(data).hexdigest()


def detect_type(filename: str) -> str:
    """Map a file name to a supported type or raise LoaderError naming the supported ones."""
    suffix = Path(filename).suffix.lower()
    if suffix not in SUPPORTED_TYPES:
        supported = ", ".join(sorted(SUPPORTED_TYPES))
        shown = suffix or "(no extension)"
        raise LoaderError(f"{filename}: unsupported file type {shown}; supported: {supported}")
    return SUPPORTED_TYPES[suffix]


def decode_text(data: bytes) -> str:
    """Decode text bytes: BOMs first, then UTF-8, then detection (GBK/GB18030, UTF-16...)."""
    for bom, encoding in (
        (b"\xef\xbb\xbf", "utf-8-sig"),
        (b"\xff\xfe", "utf-16"),
        (b"\xfe\xff", "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(encoding, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if _looks_utf16_without_bom(data):
        sample = data[:2000]
        little_endian = sample[1::2].count(0) >= sample[0::2].count(0)
        return data.decode("utf-16-le" if little_endian else "utf-16-be", errors="replace")
    best = charset_normalizer.from_bytes(data).best()
    if best is not None and best.encoding:
        encoding = "gb18030" if best.encoding.lower() in {"gbk", "gb2312", "hz"} else best.encoding
        return data.decode(encoding, errors="replace")
    try:
        return data.decode("gb18030")
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace")


def _looks_utf16_without_bom(data: bytes) -> bool:
    sample = data[:2000]
    if len(sample) < 4:
        return False
    zeros_even = sample[0::2].count(0)
    zeros_odd = sample[1::2].count(0)
    half = len(sample) / 2
    return max(zeros_even, zeros_odd) > 0.3 * half


def _normalize(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = re.sub(r"[ \t\f\v]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


_SOFT_BREAK = re.compile(r"([^\s.!?。！？；:：])\n([a-z0-9(（\u3400-\u9fff])")
_CJK = re.compile(r"[\u3400-\u9fff]")


def unwrap_soft_breaks(text: str) -> str:
    """Join PDF lines that were wrapped mid-sentence (a break after no sentence end, before
    a lower-case letter, digit or CJK character); CJK lines join without a space."""

    def join(match: re.Match) -> str:
        before, after = match.group(1), match.group(2)
        return before + ("" if _CJK.match(before) and _CJK.match(after) else " ") + after

    return _SOFT_BREAK.sub(join, text)


def _first_line_title(text: str, fallback: str) -> str:
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:120]
    return fallback


def load_pdf(data: bytes, filename: str) -> tuple[list[str], str | None]:
    """Text of each PDF page and the document's own title, if any."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                if not reader.decrypt(""):
                    raise LoaderError(f"{filename}: the PDF is password-protected")
            except LoaderError:
                raise
            except Exception:
                raise LoaderError(f"{filename}: the PDF is encrypted and cannot be opened") from None
        pages = [unwrap_soft_breaks(_normalize(page.extract_text() or "")) for page in reader.pages]
        title = None
        try:
            title = (reader.metadata.title or "").strip() if reader.metadata else None
        except Exception:
            title = None
    except LoaderError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise LoaderError(f"{filename}: not a readable PDF (corrupt or truncated: {exc})") from None
    except Exception as exc:  # pypdf raises many internal errors on broken files
        raise LoaderError(f"{filename}: not a readable PDF ({type(exc).__name__})") from None
    if not pages:
        raise LoaderError(f"{filename}: the PDF has no pages")
    return pages, title or None


def load_docx(data: bytes, filename: str) -> tuple[list[str], str | None]:
    """Paragraphs (headings as Markdown headings) and tables of a DOCX, in body order."""
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(io.BytesIO(data))
    except Exception:
        raise LoaderError(f"{filename}: not a readable DOCX file (corrupt or not Word 2007+)") from None
    blocks: list[str] = []
    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            text = item.text.strip()
            if not text:
                continue
            style = (item.style.name if item.style is not None else "") or ""
            level = re.match(r"Heading (\d)", style)
            if level:
                text = "#" * int(level.group(1)) + " " + text
            elif style == "Title":
                text = "# " + text
            blocks.append(text)
        elif isinstance(item, Table):
            blocks.append(_docx_table_text(item))
    title = (document.core_properties.title or "").strip() or None
    return ["\n\n".join(block for block in blocks if block)], title


def _docx_table_text(table) -> str:
    rows = []
    for row in table.rows:
        cells = [cell.text.strip().replace("\n", " ") for cell in row.cells]
        rows.append(" | ".join(cells))
    return "\n".join(rows)


def load_html(data: bytes) -> tuple[list[str], str | None]:
    """Visible text of an HTML page and its <title>."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(decode_text(data), "html.parser")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    title = soup.title.get_text(strip=True) if soup.title else None
    return [soup.get_text("\n")], title


def load_csv(data: bytes) -> list[str]:
    """CSV rows as 'header: value' lines, one row per paragraph."""
    text = decode_text(data)
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return [""]
    header, body = rows[0], rows[1:]
    if not body:
        return [" | ".join(header)]
    lines = []
    for row in body:
        pairs = [f"{name}: {value}" for name, value in zip(header, row) if value.strip()]
        lines.append("; ".join(pairs))
    return ["\n\n".join(lines)]


def load_bytes(data: bytes, filename: str, max_bytes: int | None = None) -> LoadedDocument:
    """Turn one uploaded file into a LoadedDocument, or raise LoaderError saying why not."""
    doc_type = detect_type(filename)
    if not data:
        raise LoaderError(f"{filename}: the file is empty")
    if max_bytes is not None and len(data) > max_bytes:
        raise LoaderError(
            f"{filename}: the file is {len(data) / 1048576:.1f} MB, over the "
            f"{max_bytes / 1048576:.0f} MB limit (RAGKIT_MAX_UPLOAD_MB)"
        )
    own_title = None
    if doc_type == "pdf":
        pages, own_title = load_pdf(data, filename)
    elif doc_type == "docx":
        pages, own_title = load_docx(data, filename)
    elif doc_type == "html":
        pages, own_title = load_html(data)
    elif doc_type == "csv":
        pages = load_csv(data)
    else:
        if b"\x00" in data[:4096] and not _looks_utf16_without_bom(data) and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise LoaderError(f"{filename}: looks like a binary file, not text")
        pages = [decode_text(data)]
    pages = [_normalize(page) for page in pages]
    if not any(page.strip() for page in pages):
        hint = " (a scanned PDF needs OCR first)" if doc_type == "pdf" else ""
        raise LoaderError(f"{filename}: no text could be extracted{hint}")
    stem = Path(filename).stem
    title = own_title or (_first_line_title(pages[0], stem) if doc_type == "markdown" else stem)
    return LoadedDocument(
        filename=Path(filename).name,
        doc_type=doc_type,
        title=title,
        pages=pages,
        size_bytes=len(data),
        content_hash=content_hash(data),
    )


def load_path(path: str | Path, max_bytes: int | None = None) -> LoadedDocument:
    """Read a file from disk and load it."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LoaderError(f"{path}: cannot read the file ({exc.strerror})") from None
    return load_bytes(data, path.name, max_bytes=max_bytes)

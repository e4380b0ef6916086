"""File bytes -> pages of text with metadata.

Each loader returns a :class:`LoadedDocument`: the pages of plain text (one for formats
without pages) plus title, type, size, page count and a content hash. Anything that
cannot be read raises :class:`LoaderError` with a message meant for the user: it names the
file, says what is wrong and what to do about it.

Hostile files are refused in bounded memory and time: sizes are checked before reading,
ZIP (DOCX) archives by their declared sizes before anything is unpacked, PDFs by the bytes
their streams inflate to, and every text path is linear in the size of its input.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import logging
import os
import re
import shutil
import stat
import threading
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import charset_normalizer

from ragkit.errors import LoaderError
from ragkit.ingest.ocr import OcrOptions, load_image, read_pdf_pages

logging.getLogger("pypdf").setLevel(logging.ERROR)  # broken files are reported by us, once
logger = logging.getLogger(__name__)

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
    ".xlsx": "xlsx",
    ".pptx": "pptx",
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".webp": "image",
    ".bmp": "image",
    ".tif": "image",
    ".tiff": "image",
}

MB = 1024 * 1024
DEFAULT_MAX_UNPACKED_BYTES = 100 * MB
"""Unpacked-size limit when the caller passes none (the default of RAGKIT_MAX_UNPACKED_MB)."""

MAX_ZIP_RATIO = 100
"""Largest believable compression ratio of one large DOCX part (Word's XML packs 3-30x)."""
_RATIO_CHECK_FROM = MB  # smaller parts cannot do harm whatever their ratio
MAX_ZIP_ENTRIES = 10_000
"""Most parts a DOCX may have (each costs memory as soon as the zip directory is read)."""

BINARY_SHARE = 0.10
"""Share of unprintable characters above which decoded "text" is taken for binary data."""
_SAMPLE_WINDOWS, _SAMPLE_WINDOW = 16, 4096
_TEXT_CONTROLS = frozenset("\t\n\r\f")
_UNPRINTABLE_CATEGORIES = frozenset({"Cc", "Cs", "Co", "Cn"})  # controls, surrogates, private, unassigned

_ZIP_METHOD_NAMES = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "lzma"}
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # Word 97-2003 .doc, and encrypted Office files
_GB_ENCODINGS = {"gb18030", "gbk", "gb2312", "hz"}


@dataclass(frozen=True)
class _Office:
    """How messages name a ZIP-based Office format and the program that writes it."""

    kind: str  # "DOCX"
    program: str  # "Word"
    document: str  # "Word document"


DOCX_FORMAT = _Office("DOCX", "Word", "Word document")
XLSX_FORMAT = _Office("XLSX", "Excel", "Excel workbook")
PPTX_FORMAT = _Office("PPTX", "PowerPoint", "PowerPoint presentation")


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
    notes: list[str] = field(default_factory=list)
    """What the user should know about how the file was read (bytes replaced, say)."""
    raw: bytes = field(default=b"", repr=False)
    """The file's bytes (kept as the document's original: see ``ragkit.store.originals``)."""

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
        raise LoaderError(
            f"{filename}: unsupported file type {shown}; supported: {supported}. "
            "Convert it to one of these (e.g. save as PDF) and add it again"
        )
    return SUPPORTED_TYPES[suffix]


def _megabytes(size: int) -> str:
    return f"{round(size / MB, 1):g} MB"


def _check_size(size: int, filename: str, max_bytes: int | None) -> None:
    if max_bytes is not None and size > max_bytes:
        raise LoaderError(
            f"{filename}: the file is {size / MB:.1f} MB, over the {_megabytes(max_bytes)} limit "
            "(RAGKIT_MAX_UPLOAD_MB): split it into smaller files or raise RAGKIT_MAX_UPLOAD_MB"
        )


# --- text ------------------------------------------------------------------------------


def decode_text(data: bytes) -> str:
    """Decode text bytes: BOMs first, then UTF-16 without BOM (NUL bytes), UTF-8, then
    mostly-UTF-8 text with some lines in another encoding (:func:`_decode_mostly_utf8`),
    then detection (GB18030/GBK preferred among equally good guesses, then the others)."""
    return _decode(data)[0]


def _decode(data: bytes) -> tuple[str, list[str]]:
    """The text, and notes for the user when part of it was decoded otherwise or lost."""
    for bom, encoding in (
        (b"\xff\xfe\x00\x00", "utf-32"),
        (b"\x00\x00\xfe\xff", "utf-32"),
        (b"\xef\xbb\xbf", "utf-8-sig"),
        (b"\xff\xfe", "utf-16"),
        (b"\xfe\xff", "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(encoding, errors="replace"), []
    # UTF-8 text never holds NUL bytes, but ASCII in UTF-16 is half NULs and valid UTF-8.
    if _looks_utf16_without_bom(data):
        return data.decode(_utf16_byte_order(data), errors="replace"), []
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError:
        pass
    mixed = _decode_mostly_utf8(data)
    if mixed is not None:
        return mixed
    encoding = _detect_encoding(data)
    if encoding:
        return data.decode(encoding, errors="replace"), []
    try:
        return data.decode("gb18030"), []
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), []


class _MixedDecoding(threading.local):
    """State of the decode error handler below, per thread."""

    legacy: str | None = None
    sample: bytearray | None = None
    legacy_lines = 0
    replaced = 0


_MIXED = _MixedDecoding()
_LEGACY_SAMPLE_BYTES = 64 * 1024
_ASCII = bytes(range(128))


def _line_end(data: bytes, start: int) -> int:
    end = data.find(b"\n", start)
    return len(data) if end < 0 else end


def _mixed_utf8_errors(error: UnicodeDecodeError) -> tuple[str, int]:
    """Codec error handler: a line UTF-8 cannot decode is sampled (first pass), then
    decoded in the legacy encoding if it can be, else its bad bytes become U+FFFD."""
    data, start = error.object, error.start
    end = _line_end(data, start)
    if _MIXED.sample is not None:
        if len(_MIXED.sample) < _LEGACY_SAMPLE_BYTES:  # whole lines: detection needs the words
            _MIXED.sample += data[data.rfind(b"\n", 0, start) + 1 : end] + b"\n"
        rest = bytes(data[start:end])
        _MIXED.replaced += len(rest.translate(None, _ASCII))  # its non-ASCII bytes
        return "", end
    if _MIXED.legacy is not None:
        try:
            decoded = bytes(data[start:end]).decode(_MIXED.legacy)
        except UnicodeDecodeError:
            pass
        else:
            _MIXED.legacy_lines += 1
            return decoded, end
    _MIXED.replaced += error.end - start
    return "\ufffd", error.end


codecs.register_error("ragkit-mixed-utf8", _mixed_utf8_errors)


def _decode_mostly_utf8(data: bytes) -> tuple[str, list[str]] | None:
    """Text that is UTF-8 except for some lines (a file pasted together from several
    sources): those lines are decoded in the encoding detected from them, and what no
    encoding reads is replaced by U+FFFD, with notes saying so. None when most non-ASCII
    bytes are not UTF-8 (a file in another encoding, or binary data)."""
    non_ascii = len(data.translate(None, _ASCII))
    _MIXED.sample, _MIXED.legacy, _MIXED.replaced, _MIXED.legacy_lines = bytearray(), None, 0, 0
    try:
        data.decode("utf-8", errors="ragkit-mixed-utf8")
        if _MIXED.replaced * 2 > non_ascii:  # most non-ASCII bytes are on lines UTF-8 cannot read
            return None
        _MIXED.legacy = _detect_encoding(bytes(_MIXED.sample))
        _MIXED.sample, _MIXED.replaced = None, 0
        text = data.decode("utf-8", errors="ragkit-mixed-utf8")
        legacy, legacy_lines, replaced = _MIXED.legacy, _MIXED.legacy_lines, _MIXED.replaced
    finally:
        _MIXED.sample, _MIXED.legacy = None, None
    notes = []
    if legacy_lines:
        notes.append(f"{plural_lines(legacy_lines)} not UTF-8, read as {_encoding_label(legacy)}")
    if replaced:
        notes.append(f"{replaced:,} undecodable byte{'s' if replaced != 1 else ''} replaced by \ufffd")
    return text, notes


def plural_lines(count: int) -> str:
    """'1 line was', '3 lines were'."""
    return f"{count:,} line was" if count == 1 else f"{count:,} lines were"


def _encoding_label(encoding: str) -> str:
    return {"gb18030": "GB18030", "cp1252": "Windows-1252", "latin_1": "Latin-1", "big5": "Big5",
            "shift_jis": "Shift JIS", "euc_kr": "EUC-KR", "cp1251": "Windows-1251"}.get(encoding, encoding)


def _looks_utf16_without_bom(data: bytes) -> bool:
    sample = data[:2000]
    if len(sample) < 4:
        return False
    zeros_even = sample[0::2].count(0)
    zeros_odd = sample[1::2].count(0)
    half = len(sample) / 2
    return max(zeros_even, zeros_odd) > 0.3 * half


def _utf16_byte_order(data: bytes) -> str:
    sample = data[:2000]
    return "utf-16-le" if sample[1::2].count(0) >= sample[0::2].count(0) else "utf-16-be"


def _detect_encoding(data: bytes) -> str | None:
    matches = charset_normalizer.from_bytes(data)
    best = matches.best()
    if best is None or not best.encoding:
        return None
    # Short CJK byte runs are valid in GBK, Big5, EUC-KR... alike; ties go to GB18030.
    # Accented Latin letters read alike in many one-byte code pages; ties go to Windows-1252.
    ties = {match.encoding.lower() for match in matches
            if match.chaos == best.chaos and match.coherence == best.coherence}
    if ties & _GB_ENCODINGS or best.encoding.lower() in _GB_ENCODINGS:
        return "gb18030"
    return "cp1252" if "cp1252" in ties else best.encoding


def _sample(text: str) -> str:
    """The text itself, or 16 windows of 4 K characters spread over a longer one."""
    if len(text) <= _SAMPLE_WINDOWS * _SAMPLE_WINDOW:
        return text
    step = (len(text) - _SAMPLE_WINDOW) // (_SAMPLE_WINDOWS - 1)
    return "".join(text[i * step : i * step + _SAMPLE_WINDOW] for i in range(_SAMPLE_WINDOWS))


def _unprintable_share(text: str) -> float:
    """Share of characters no text file holds: controls other than tab/newline/CR/form
    feed, U+FFFD (bytes the decoder could not map), private-use, unassigned, surrogates.

    Judged on 16 windows spread over the text, so the cost is bounded on any input."""
    sample = _sample(text)
    if not sample:
        return 0.0
    category = unicodedata.category
    bad = sum(
        1
        for char in sample
        if char == "\ufffd" or (category(char) in _UNPRINTABLE_CATEGORIES and char not in _TEXT_CONTROLS)
    )
    return bad / len(sample)


def decode_text_file(data: bytes, filename: str, notes: list[str] | None = None) -> str:
    """Decode a text-type file, refusing binary data (an image renamed .txt, random bytes);
    notes about lossy or mixed decoding are appended to ``notes``."""
    text, decoded_notes = _decode(data)
    if _unprintable_share(text) > BINARY_SHARE:
        raise LoaderError(
            f"{filename}: looks like a binary file, not text (too many unprintable characters): "
            "add the original document instead, or save it as UTF-8 text"
        )
    if notes is not None:
        notes.extend(decoded_notes)
    return text


# Blanks before a newline, matched only from the start of a run of blanks (the
# lookbehind) and without backtracking into it (possessive): a long run of blanks with no
# newline after it is scanned once, not once from every position in it.
_TRAILING_BLANKS = re.compile(r"(?<![ \t\f\v])[ \t\f\v]++\n")
_BLANK_LINES = re.compile(r"\n{3,}")


def normalize_text(text: str) -> str:
    """Unix newlines, no NULs, no trailing blanks on lines, at most one empty line in a row.

    Whole-text substitutions, linear in time and never splitting the text into lines: a
    list of a million short lines costs tens of bytes per line, many times the text."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = _TRAILING_BLANKS.sub("\n", text)
    return _BLANK_LINES.sub("\n\n", text).strip()


_SOFT_BREAK = re.compile(r"([^\s.!?。！？；:：])\n([a-z0-9(（\u3400-\u9fff])")
_CJK = re.compile(r"[\u3400-\u9fff]")


def unwrap_soft_breaks(text: str) -> str:
    """Join PDF lines that were wrapped mid-sentence (a break after no sentence end, before
    a lower-case letter, digit or CJK character); CJK lines join without a space."""

    def join(match: re.Match) -> str:
        before, after = match.group(1), match.group(2)
        return before + ("" if _CJK.match(before) and _CJK.match(after) else " ") + after

    return _SOFT_BREAK.sub(join, text)


def _clean_title(title: str | None) -> str | None:
    title = " ".join((title or "").split())
    return title[:120] or None


def _first_line_title(text: str, fallback: str) -> str:
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:120]
    return fallback


# --- PDF -------------------------------------------------------------------------------


def load_pdf(
    data: bytes, filename: str, max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES, notes: list[str] | None = None,
    ocr=None,
) -> tuple[list[str], str | None]:
    """Text of each PDF page and the document's own title, if any: its metadata's, else the
    heading its first page opens with in the largest type (as a DOCX's first Heading 1).

    pypdf caps each stream at 75 MB but not a document: a 600 KB file can hold ten pages
    that each inflate to 60 MB, all kept decoded. So the bytes inflated are counted over
    the document and the file is refused past ``max_unpacked_bytes``.

    A page whose extracted text is garbage (:func:`garbage_reason`: fonts that do not say
    which characters their glyphs are) is left empty; a PDF with no readable page is
    refused with the reason, one with some is kept and ``notes`` say what was left out."""
    from pypdf import PdfReader

    try:
        with _pypdf_limits(max_unpacked_bytes):
            reader = PdfReader(io.BytesIO(data))
            _unlock_pdf(reader, filename)
            budget = _PdfInflateBudget(max_unpacked_bytes, filename)
            pages = []
            for page in reader.pages:
                budget.charge_page(page)
                pages.append(_pdf_page_text(page))
            title = _pdf_title(reader)
    except LoaderError:
        raise
    except Exception as exc:  # pypdf raises many kinds of errors on broken files
        raise _pdf_error(exc, filename) from None
    if not pages:
        raise LoaderError(f"{filename}: the PDF has no pages: re-export it from the source application")
    if ocr is not None and ocr.enabled:
        pages = _ocr_scanned_pages(data, pages, filename, ocr, notes)
    pages = _without_garbage_pages(pages, filename, notes)
    return pages, title or _opening_heading(pages)


def _opening_heading(pages: list[str]) -> str | None:
    """The level-1 heading the document's first page of text opens with, if it does."""
    first = next((page for page in pages if page.strip()), "")
    line = first.strip().split("\n", 1)[0]
    return _clean_title(line[2:]) if line.startswith("# ") else None


OCR_BELOW_CHARS = 20
"""A PDF page with fewer non-blank characters of text than this (or garbage text) is read by OCR."""


def _ocr_scanned_pages(data: bytes, pages: list[str], filename: str, ocr, notes: list[str] | None) -> list[str]:
    """Pages without a usable text layer (a scan, fonts without a Unicode map) read by OCR,
    at most ``ocr.max_pages`` of them; the notes say which."""
    wanted = [number for number, page in enumerate(pages, start=1)
              if len("".join(page.split())) < OCR_BELOW_CHARS or garbage_reason(page)]
    if not wanted:
        return pages
    chosen, skipped = wanted[: ocr.max_pages], wanted[ocr.max_pages :]
    try:
        read = read_pdf_pages(data, chosen, ocr)
    except LoaderError:
        raise
    except Exception as exc:  # PDFium cannot render it: keep what pypdf read
        logger.warning("%s: OCR failed: %r", filename, exc)
        if notes is not None:
            notes.append(f"OCR failed ({type(exc).__name__}), pages without text were left out")
        return pages
    out = list(pages)
    done = []
    for number, text in read.items():
        text = unwrap_soft_breaks(normalize_text(text))
        if len("".join(text.split())) > len("".join(out[number - 1].split())) or garbage_reason(out[number - 1]):
            out[number - 1] = text
            done.append(number)
    if notes is not None and done:
        shown = ", ".join(map(str, done[:10])) + (" …" if len(done) > 10 else "")
        notes.append(f"{plural_pages(len(done))} read by OCR (p. {shown})")
    if notes is not None and skipped:
        notes.append(f"{plural_pages(len(skipped))} without text not read: over the {ocr.max_pages} pages OCR reads "
                     "in one file (RAGKIT_OCR_MAX_PAGES)")
    return out


GARBAGE_SHARE = 0.25
"""Share of a page's non-blank characters that are garbage above which the page is taken
for garbage (real text holds none but a few symbol-font bullets in private use)."""
_GLYPH_NAMES = re.compile(r"(?:/[A-Za-z._]{0,12}[0-9][0-9A-Fa-f]*){3,}")  # "/g1/g2/g3", "/uni4E2D/uni6587/..."
_GARBAGE_KINDS = {
    "Co": "private-use characters (the font maps its glyphs to no real letters)",
    "\ufffd": "replacement characters (the font's codes map to no characters)",
    "Cc": "control characters",
    "Cn": "unassigned code points",
    "Cs": "unassigned code points",
}


def garbage_reason(text: str) -> str | None:
    """Why extracted PDF text is garbage, or None when it reads as text (any script).

    Counted over the page's non-blank characters: glyph names that pypdf prints for a
    Type3 font without a Unicode map (``/g1/g2/g3``), private-use characters, U+FFFD,
    controls and unassigned code points. Cost: linear, on a sample of at most 64 K
    characters (see _unprintable_share)."""
    sample = _sample(text)
    visible = len(sample) - sum(sample.count(blank) for blank in " \n\t\r\f")
    if visible <= 0:
        return None
    glyph_chars = sum(len(match) for match in _GLYPH_NAMES.findall(sample))
    if glyph_chars > GARBAGE_SHARE * visible:
        return "glyph names instead of letters (such as /g1/g2/g3: a Type3 font without a Unicode map)"
    counts: dict[str, int] = {}
    category = unicodedata.category
    for char in sample:
        kind = "\ufffd" if char == "\ufffd" else category(char)
        if kind in _GARBAGE_KINDS and char not in _TEXT_CONTROLS:
            counts[kind] = counts.get(kind, 0) + 1
    if sum(counts.values()) + glyph_chars <= GARBAGE_SHARE * visible:
        return None
    if glyph_chars >= max(counts.values(), default=0):
        return "glyph names instead of letters (such as /g1/g2/g3: a Type3 font without a Unicode map)"
    return _GARBAGE_KINDS[max(counts, key=counts.get)]


def _without_garbage_pages(pages: list[str], filename: str, notes: list[str] | None) -> list[str]:
    reasons = [garbage_reason(page) for page in pages]
    garbage = [number for number, reason in enumerate(reasons, start=1) if reason]
    if not garbage:
        return pages
    kept = [page if reason is None else "" for page, reason in zip(pages, reasons)]
    if not any(page.strip() for page in kept):
        reason = next(reason for reason in reasons if reason)
        raise LoaderError(
            f"{filename}: the text extracted from the PDF is not readable: it comes out as {reason}. "
            "Its fonts do not say which letters they draw: run the PDF through OCR and add the result, "
            "or export it again with fonts embedded as Unicode"
        )
    if notes is not None:
        shown = ", ".join(map(str, garbage[:10])) + (" …" if len(garbage) > 10 else "")
        notes.append(f"{plural_pages(len(garbage))} of unreadable text left out (p. {shown}: fonts without a "
                     "Unicode map; OCR would read them)")
    return kept


def plural_pages(count: int) -> str:
    """'1 page', '3 pages'."""
    return f"{count} page" if count == 1 else f"{count} pages"


HEADING_SIZE_RATIO = 1.15  # a line set this much larger than the page's body text is a heading


def _pdf_page_text(page) -> str:
    """A page's text with lines wrapped mid-sentence joined and lines set in a larger font
    than the page's body text marked as Markdown headings (never joined to the next line)."""
    sizes: dict[str, float] = {}
    weight: dict[float, int] = {}

    def visit(text, cm, tm, font, size):
        scale = abs(tm[3] * cm[3]) or abs(tm[0] * cm[0]) or 1.0
        effective = round(float(size) * scale, 1)
        stripped = " ".join(text.split())
        if stripped:
            sizes[stripped] = max(sizes.get(stripped, 0.0), effective)
            weight[effective] = weight.get(effective, 0) + len(stripped)

    text = normalize_text(page.extract_text(visitor_text=visit) or "")
    if not weight:
        return unwrap_soft_breaks(text)
    body = max(weight, key=weight.get)
    levels = sorted({size for size in sizes.values() if size >= HEADING_SIZE_RATIO * body}, reverse=True)
    if not levels:
        return unwrap_soft_breaks(text)
    marked = []
    for line in text.split("\n"):
        size = sizes.get(" ".join(line.split()), 0.0)
        if line.strip() and size in levels and len(line) <= 200:
            marked.append("\x00" + "#" * min(levels.index(size) + 1, 6) + " " + line.strip())
        else:
            marked.append(line)
    # headings stand alone: unwrapping joins only the lines between them
    blocks = "\n".join(marked).split("\x00")
    return "\n\n".join(unwrap_soft_breaks(block).strip("\n") if not block.startswith("#") else
                         _heading_block(block) for block in blocks if block.strip())


def _heading_block(block: str) -> str:
    heading, _, rest = block.partition("\n")
    return heading + ("\n\n" + unwrap_soft_breaks(rest).strip("\n") if rest.strip() else "")


def _unlock_pdf(reader, filename: str) -> None:
    """Open a PDF encrypted with an empty user password (owner-password-only protection)."""
    from pypdf.errors import DependencyError

    if not reader.is_encrypted:
        return
    try:
        opened = reader.decrypt("")
    except DependencyError:
        raise
    except Exception:
        raise LoaderError(
            f"{filename}: the PDF is encrypted with a method that cannot be opened: "
            "save an unencrypted copy and add that instead"
        ) from None
    if not opened:
        raise _password_protected(filename)


def _password_protected(filename: str) -> LoaderError:
    return LoaderError(
        f"{filename}: the PDF is password-protected: remove the password "
        "(e.g. print it to a new PDF) and add it again"
    )


def _pdf_title(reader) -> str | None:
    try:
        return _clean_title(reader.metadata.title) if reader.metadata else None
    except Exception:  # a damaged /Info dictionary should not cost the text
        return None


def _pdf_error(exc: Exception, filename: str) -> LoaderError:
    """The user-facing message for an exception pypdf raised."""
    from pypdf.errors import DependencyError, FileNotDecryptedError, LimitReachedError

    logger.info("%s: pypdf failed: %r", filename, exc)
    if isinstance(exc, DependencyError):
        return LoaderError(
            f"{filename}: the PDF is AES-encrypted and the 'cryptography' package is missing: "
            "install it (pip install -r requirements.txt) and add the file again"
        )
    if isinstance(exc, FileNotDecryptedError):
        return _password_protected(filename)
    if isinstance(exc, LimitReachedError):
        return LoaderError(
            f"{filename}: the PDF exceeds a safety limit while being unpacked (a stream inflates too far "
            "or a structure is too large); it may be a decompression bomb: re-export it from the "
            "source application if it is genuine"
        )
    return LoaderError(
        f"{filename}: not a readable PDF (corrupt or truncated): re-export it from the source application"
    )


def _pypdf_limits(max_unpacked_bytes: int):
    """A context lowering pypdf's per-stream output limits to ``max_unpacked_bytes``."""
    from pypdf import apply_configuration, get_configuration

    current = get_configuration()
    names = (
        "zlib_maximum_output_length",
        "lzw_maximum_output_length",
        "run_length_maximum_output_length",
        "brotli_maximum_output_length",
        "array_based_stream_maximum_output_length",
    )
    # 0 means "no limit" to pypdf
    lowered = {name: min(getattr(current, name) or max_unpacked_bytes, max_unpacked_bytes) for name in names}
    return apply_configuration(**lowered)


def _resolve(obj):
    return obj.get_object() if obj is not None else None


class _PdfInflateBudget:
    """Counts the bytes pypdf inflates to extract text and refuses a PDF past a limit.

    A page's content streams count on every page that uses them (each use is parsed
    again); fonts, forms and maps reachable from its resources count once per document,
    as pypdf keeps them decoded. Images are skipped: text extraction never decodes them.
    The first charge of a stream decodes it, one stream at a time, within pypdf's
    per-stream limit, and pypdf keeps that result for the extraction."""

    def __init__(self, limit: int, filename: str):
        self.limit, self.filename, self.spent = limit, filename, 0
        self._visited: set[int] = set()

    def charge_page(self, page) -> None:
        """Charge what extracting ``page`` inflates; raise LoaderError past the limit."""
        from pypdf.generic import ArrayObject

        contents = _resolve(page.get("/Contents"))
        for stream in contents if isinstance(contents, ArrayObject) else [contents]:
            self._charge(_resolve(stream))
        self._charge_resources(page.get("/Resources"))

    def _charge_resources(self, root) -> None:
        from pypdf.generic import ArrayObject, DictionaryObject, StreamObject

        pending = [root]
        while pending:
            obj = _resolve(pending.pop())
            if not isinstance(obj, (DictionaryObject, ArrayObject)) or id(obj) in self._visited:
                continue
            self._visited.add(id(obj))
            if isinstance(obj, StreamObject):
                if _resolve(obj.get("/Subtype")) == "/Image":
                    continue
                self._charge(obj)
            pending.extend(obj.values() if isinstance(obj, DictionaryObject) else obj)

    def _charge(self, stream) -> None:
        from pypdf.errors import LimitReachedError
        from pypdf.generic import StreamObject

        if not isinstance(stream, StreamObject):
            return
        try:
            self.spent += len(stream.get_data())
        except LimitReachedError:
            raise
        except Exception:  # undecodable: extract_text reports or skips it
            return
        if self.spent > self.limit:
            raise LoaderError(
                f"{self.filename}: the PDF's pages inflate to more than {_megabytes(self.limit)} "
                "(RAGKIT_MAX_UNPACKED_MB); it may be a decompression bomb: if it is genuine, "
                "raise RAGKIT_MAX_UNPACKED_MB or split the PDF"
            )


# --- DOCX ------------------------------------------------------------------------------


def check_zip_limits(data: bytes, filename: str, max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
                     office: _Office = DOCX_FORMAT) -> None:
    """Refuse a ZIP-based file (DOCX) that would unpack too far, from its directory alone.

    Nothing is decompressed here; the declared sizes are checked, and :func:`_bounded_copy`
    then makes sure no part unpacks beyond its declared size. bzip2 and lzma parts are
    refused: zipfile inflates a whole compressed chunk of them at once (Word never writes
    them)."""
    if data.count(b"PK\x01\x02") > MAX_ZIP_ENTRIES:  # directory records, before parsing them
        raise LoaderError(
            f"{filename}: the {office.kind} has more than {MAX_ZIP_ENTRIES} parts, which no {office.document} "
            f"needs: re-save it in {office.program}"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError):
        raise _office_unreadable(filename, data, office) from None
    for entry in entries:
        if entry.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            method = _ZIP_METHOD_NAMES.get(entry.compress_type, f"method {entry.compress_type}")
            raise LoaderError(
                f"{filename}: part {entry.filename} is packed with {method}, which {office.program} never "
                f"uses: re-save the document in {office.program}"
            )
    total = sum(entry.file_size for entry in entries)
    if total > max_unpacked_bytes:
        raise LoaderError(
            f"{filename}: the {office.kind} would unpack to {total / MB:.1f} MB, over the "
            f"{_megabytes(max_unpacked_bytes)} limit (RAGKIT_MAX_UNPACKED_MB); it may be a "
            "decompression bomb: if it is genuine, raise RAGKIT_MAX_UNPACKED_MB or split the document"
        )
    for entry in entries:
        if entry.file_size >= _RATIO_CHECK_FROM and entry.file_size > MAX_ZIP_RATIO * max(entry.compress_size, 1):
            ratio = entry.file_size / max(entry.compress_size, 1)
            raise LoaderError(
                f"{filename}: part {entry.filename} would unpack {ratio:.0f} times larger than it is "
                f"stored ({office.program} files stay under {MAX_ZIP_RATIO}); it looks like a decompression "
                f"bomb: re-save the document in {office.program} if it is genuine"
            )


def _office_unreadable(filename: str, data: bytes, office: _Office) -> LoaderError:
    if office is DOCX_FORMAT:
        return _docx_unreadable(filename, data)
    suffix = office.kind.lower()
    if data.startswith(_OLE_MAGIC):
        return LoaderError(
            f"{filename}: this is an old {office.program} 97-2003 file or a password-protected one: "
            f"open it in {office.program} and save it as .{suffix} without a password"
        )
    return LoaderError(
        f"{filename}: not a readable {office.kind} file (corrupt, or not {office.program} 2007+): "
        f"open it in {office.program} and save it again as .{suffix}"
    )


def _docx_unreadable(filename: str, data: bytes) -> LoaderError:
    if data.startswith(_OLE_MAGIC):
        return LoaderError(
            f"{filename}: this is an old Word 97-2003 document or a password-protected one: "
            "open it in Word and save it as .docx (Word 2007+) without a password"
        )
    return LoaderError(
        f"{filename}: not a readable DOCX file (corrupt, or not Word 2007+): "
        "open it in Word and save it again as .docx"
    )


def load_docx(
    data: bytes, filename: str, max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES
) -> tuple[list[str], str | None]:
    """Paragraphs (headings as Markdown headings) and tables of a DOCX, in body order, and
    its title: core properties, else the first "Title" paragraph, else the first Heading 1."""
    import docx

    check_zip_limits(data, filename, max_unpacked_bytes)
    try:
        document = docx.Document(_bounded_copy(data))
        blocks, headings = _docx_blocks(document)
        title = _docx_core_title(document) or headings.get("Title") or headings.get("Heading 1")
    except Exception:
        raise _docx_unreadable(filename, data) from None
    return ["\n\n".join(block for block in blocks if block)], _clean_title(title)


def _bounded_copy(data: bytes) -> io.BytesIO:
    """The zip's parts copied, uncompressed, into a new zip, each read in 64 KB chunks.

    ZipFile.read(), which python-docx uses, inflates a deflated part whole and only then
    cuts it to its declared size: a part declaring 4 KB may inflate to gigabytes first.
    A chunked read stops at the declared size (and the CRC check then fails), so the
    copy, and what python-docx parses, holds no more than the declared sizes."""
    packed = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(packed, "w", zipfile.ZIP_STORED) as target:
        latest = {entry.filename: entry for entry in source.infolist()}  # as zipfile resolves duplicates
        for entry in latest.values():
            if entry.is_dir():
                continue
            with source.open(entry) as part, target.open(entry.filename, "w", force_zip64=True) as copy:
                shutil.copyfileobj(part, copy, 64 * 1024)
    packed.seek(0)
    return packed


def _docx_blocks(document) -> tuple[list[str], dict[str, str]]:
    """Body blocks as text, and the first paragraph of each title/heading style."""
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    blocks: list[str] = []
    first_by_style: dict[str, str] = {}
    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            text = item.text.strip()
            if not text:
                continue
            style = (item.style.name if item.style is not None else "") or ""
            first_by_style.setdefault(style, text)
            level = re.match(r"Heading (\d)", style)
            if level:
                text = "#" * int(level.group(1)) + " " + text
            elif style == "Title":
                text = "# " + text
            blocks.append(text)
        elif isinstance(item, Table):
            blocks.append(_docx_table_text(item))
    return blocks, first_by_style


def _docx_core_title(document) -> str | None:
    """The core-properties title, if the file has core properties (python-docx invents
    "Word Document" for a file without them)."""
    from docx.opc.constants import RELATIONSHIP_TYPE

    try:
        part = document.part.package.part_related_by(RELATIONSHIP_TYPE.CORE_PROPERTIES)
    except KeyError:
        return None
    return _clean_title(part.core_properties.title)


def _docx_table_text(table) -> str:
    rows = []
    for row in table.rows:
        cells = [cell.text.strip().replace("\n", " ") for cell in row.cells]
        rows.append(" | ".join(cells))
    return "\n".join(rows)


# --- XLSX and PPTX ---------------------------------------------------------------------


def load_xlsx(data: bytes, filename: str, max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
              notes: list[str] | None = None) -> tuple[list[str], str | None]:
    """Each sheet of a workbook as one page of labelled rows ("column: value; ..."), the first
    non-empty row of a sheet naming its columns, as for CSV; and the workbook's title.

    Cell values are read as last saved (formulas as their results); the archive is checked
    and copied part by part within its declared sizes first (see check_zip_limits)."""
    import openpyxl

    check_zip_limits(data, filename, max_unpacked_bytes, XLSX_FORMAT)
    try:
        workbook = openpyxl.load_workbook(_bounded_copy(data), read_only=True, data_only=True)
    except Exception:
        raise _office_unreadable(filename, data, XLSX_FORMAT) from None
    pages, budget = [], max_unpacked_bytes
    try:
        for sheet in workbook.worksheets:
            rows = _LabelledRows(filename, budget)
            for values in sheet.iter_rows(values_only=True):
                cells = [_cell_text(value) for value in values]
                if any(cells):
                    rows.add(cells)
            body = rows.text()
            budget -= rows.size
            pages.append(f"## {sheet.title}\n\n{body}" if body else "")
        title = _clean_title(workbook.properties.title) if workbook.properties else None
    except LoaderError:
        raise
    except Exception:
        raise _office_unreadable(filename, data, XLSX_FORMAT) from None
    finally:
        workbook.close()
    if not pages:
        raise LoaderError(f"{filename}: the workbook has no sheets")
    return pages, title


def _cell_text(value) -> str:
    """A cell's value as text: whole numbers without ".0", dates as ISO dates."""
    import datetime

    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime.datetime):
        return value.date().isoformat() if value.time() == datetime.time() else value.isoformat(sep=" ")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return " ".join(str(value).split())


def load_pptx(data: bytes, filename: str,
              max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES) -> tuple[list[str], str | None]:
    """One page per slide: its title as a heading, the text of its shapes (groups and tables
    included) in the order they are drawn, then its speaker notes; and the deck's title."""
    from pptx import Presentation

    check_zip_limits(data, filename, max_unpacked_bytes, PPTX_FORMAT)
    try:
        deck = Presentation(_bounded_copy(data))
        pages = [_slide_text(slide) for slide in deck.slides]
        title = _clean_title(deck.core_properties.title)
    except Exception:
        raise _office_unreadable(filename, data, PPTX_FORMAT) from None
    if not pages:
        raise LoaderError(f"{filename}: the presentation has no slides")
    first_heading = next((page.split("\n", 1)[0][2:] for page in pages if page.startswith("# ")), None)
    return pages, title or _clean_title(first_heading)


def _slide_text(slide) -> str:
    title_shape = slide.shapes.title
    title = title_shape.text_frame.text.strip() if title_shape is not None and title_shape.has_text_frame else ""
    blocks = [f"# {' '.join(title.split())}"] if title else []
    for shape in slide.shapes:
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        blocks.extend(_shape_texts(shape))
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame.text.strip() if slide.notes_slide.notes_text_frame else ""
        if notes:
            blocks.append(f"Notes: {notes}")
    return "\n\n".join(block for block in blocks if block.strip())


def _shape_texts(shape) -> list[str]:
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        return [text for inner in shape.shapes for text in _shape_texts(inner)]
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [" | ".join(cell.text.strip().replace("\n", " ") for cell in row.cells) for row in shape.table.rows]
        return ["\n".join(rows)]
    if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        return [shape.text_frame.text.strip()]
    return []


# --- HTML and CSV ----------------------------------------------------------------------


_HTML_HIDDEN = frozenset({"script", "style", "noscript", "template"})
_HTML_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
MAX_HEADING_CHARS = 300  # longer "headings" (an <h1> never closed) are read as text
_HTML_FEED_CHARS = 64 * 1024
MAX_HTML_NESTING = 1000
"""Deepest nesting of open HTML elements parsed as a tree (browsers flatten deeper ones;
Chromium at 512). A page nested deeper, such as thousands of unclosed ``<b><i><span>``,
is read as flat text instead: libxml2 keeps every open element on a stack."""
_HTML_HIDDEN_OPEN = re.compile(r"<(script|style|noscript|template)\b|<!--", re.IGNORECASE)
_HTML_TAG = re.compile(r"<[^<>]*>")  # stops at the next "<": linear even on "<<<<"


class _NestedTooDeep(Exception):
    """Raised by the parser target past MAX_HTML_NESTING open elements."""


class _TextCollector:
    """Pieces of text joined by newlines, in memory about the size of the text itself: the
    pieces are joined into one block every few thousand (a list of millions of short
    strings costs tens of bytes per piece)."""

    _BLOCK = 4096

    def __init__(self):
        self._blocks: list[str] = []
        self._pieces: list[str] = []

    def add(self, piece: str) -> None:
        """Append one piece."""
        self._pieces.append(piece)
        if len(self._pieces) >= self._BLOCK:
            self._blocks.append("\n".join(self._pieces))
            self._pieces = []

    def text(self) -> str:
        """Every piece, newline-separated."""
        return "\n".join(self._blocks + ["\n".join(self._pieces)] if self._pieces else self._blocks)


class _HtmlText:
    """An lxml parser target that keeps the visible text and the <title>, building no tree.

    Each run of text between two tags is one piece (pieces are joined by newlines, as
    BeautifulSoup's get_text("\\n") did); text inside script, style, noscript and
    template elements is dropped. The <title> names the document and is not a line of its
    text. Each <h1>-<h6> becomes one Markdown heading line ("## Staff") set apart by blank
    lines: passages then know their section, and a heading is never quoted as an answer or
    run into the next line."""

    def __init__(self):
        self.text = _TextCollector()
        self.title: list[str] = []
        self._run: list[str] = []
        self._hidden = 0
        self._in_title = False
        self._depth = 0
        self._heading_level = 0  # the open heading's level (0: none)
        self._heading: list[str] = []

    def _flush(self) -> None:
        if self._run:
            self.text.add("".join(self._run))
            self._run = []

    def start(self, tag, attrib) -> None:
        """An opening tag ends the current run of text (inside a heading, the heading goes on)."""
        self._depth += 1
        if self._depth > MAX_HTML_NESTING:
            raise _NestedTooDeep
        if self._heading_level:
            return
        self._flush()
        if tag in _HTML_HIDDEN:
            self._hidden += 1
        elif tag == "title":
            self._in_title = not self.title  # the first <title> names the page
        elif tag in _HTML_HEADINGS:
            self._heading_level = int(tag[1])

    def end(self, tag) -> None:
        """A closing tag ends the current run of text; a heading's end writes its line."""
        self._depth = max(0, self._depth - 1)
        if self._heading_level:
            if tag in _HTML_HEADINGS:
                words = " ".join("".join(self._heading).split())
                if words:
                    self.text.add(f"\n{'#' * self._heading_level} {words}\n")
                self._heading_level, self._heading = 0, []
            return
        self._flush()
        if tag in _HTML_HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag == "title":
            self._in_title = False

    def data(self, text: str) -> None:
        """Text between tags (possibly in several calls for one run)."""
        if self._hidden:
            return
        if self._in_title:
            if len(self.title) < 100:
                self.title.append(text)
            return
        if self._heading_level:
            self._heading.append(text)
            if sum(map(len, self._heading)) > MAX_HEADING_CHARS:  # an unclosed heading: it was text
                self._run, self._heading_level, self._heading = self._heading, 0, []
            return
        self._run.append(text)

    def close(self) -> None:
        """End of the document."""
        self._flush()


def load_html(data: bytes, filename: str = "document.html",
              notes: list[str] | None = None) -> tuple[list[str], str | None]:
    """Visible text of an HTML page and its <title>.

    libxml2's HTML parser (through lxml) calls back for each tag and run of text, fed 64 K
    characters at a time: no tree is built, so memory is the text plus a few bytes per
    open element (BeautifulSoup's tree cost 127 times the size of a page of unclosed
    tags), and the work is linear. A page nested deeper than MAX_HTML_NESTING is read as
    flat text (:func:`_flat_html_text`)."""
    from lxml import etree

    text = decode_text_file(data, filename, notes)
    target = _HtmlText()
    parser = etree.HTMLParser(target=target, remove_comments=True, remove_pis=True, no_network=True)
    try:
        for offset in range(0, len(text), _HTML_FEED_CHARS):
            parser.feed(text[offset : offset + _HTML_FEED_CHARS])
        parser.close()
    except _NestedTooDeep:
        logger.info("%s: nested deeper than %d elements, read as flat text", filename, MAX_HTML_NESTING)
        return [_flat_html_text(text)], _clean_title("".join(target.title))
    except etree.LxmlError:  # libxml2 recovers from nearly anything; keep what was read
        target.close()
    del text
    return [target.text.text()], _clean_title("".join(target.title))


def _flat_html_text(text: str) -> str:
    """The text of HTML without its tags, comments and script/style/noscript/template
    contents, entities decoded: regular expressions over the text (no parser, no stack),
    linear in time, and in memory about the size of the text (see _html_span_text)."""
    pieces, position = [], 0
    while (hidden := _HTML_HIDDEN_OPEN.search(text, position)) is not None:
        pieces.append(_html_span_text(text, position, hidden.start()))
        if hidden.group(1):
            closing = re.compile(rf"</{hidden.group(1)}\s*>", re.IGNORECASE).search(text, hidden.end())
            position = closing.end() if closing else len(text)
        else:
            closing = text.find("-->", hidden.end())
            position = closing + 3 if closing >= 0 else len(text)
    pieces.append(_html_span_text(text, position, len(text)))
    return "".join(pieces)


_FLAT_CHUNK = 1 << 20


def _html_span_text(text: str, start: int, end: int) -> str:
    """``text[start:end]`` with tags replaced by newlines and entities decoded, a chunk of
    about 1 MB at a time: re.sub collects every match in a list before joining, which for
    millions of tiny tags is many times the text. Chunks end before a "<" or "&" (no tag
    or entity holds one), so none is cut in two."""
    import html

    out = []
    while start < end:
        stop = min(start + _FLAT_CHUNK, end)
        if stop < end:
            cut = max(text.rfind("<", start + 1, stop), text.rfind("&", start + 1, stop))
            stop = cut if cut > start else stop
        out.append(html.unescape(_HTML_TAG.sub("\n", text[start:stop])))
        start = stop
    return "".join(out)


MAX_CSV_COLUMNS = 10_000
"""Most commas on one line of a CSV (quoted ones count too): a row wider than this is not
a table to read row by row (the issue's million-column file took minutes and 1.5 GB)."""
_CSV_TOO_WIDE = re.compile(r"^(?:[^,\n]*+,){%d}" % MAX_CSV_COLUMNS, re.MULTILINE)  # each line scanned once


def load_csv(data: bytes, filename: str = "table.csv",
             max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES, notes: list[str] | None = None) -> list[str]:
    """CSV rows as 'header: value' lines, one row per paragraph.

    Rows are read one at a time. A line of more than MAX_CSV_COLUMNS columns is refused
    before parsing, and so is a table whose labelled text would pass ``max_unpacked_bytes``
    (every value is written with its column name: long names over short values multiply
    the size, like a decompression bomb)."""
    text = decode_text_file(data, filename, notes)
    if _CSV_TOO_WIDE.search(text):
        raise LoaderError(
            f"{filename}: a line of the CSV has more than {MAX_CSV_COLUMNS:,} columns; tables that wide are not "
            "read row by row: transpose it (one record per row) or save it as .txt to index it as plain text"
        )
    reader = csv.reader(io.StringIO(text))
    del text
    rows = _LabelledRows(filename, max_unpacked_bytes)
    try:
        for row in reader:
            rows.add(row)
    except csv.Error as exc:
        raise LoaderError(
            f"{filename}: not a readable CSV (line {reader.line_num}: {exc}): check for an unclosed "
            "quote, or save the file as .txt to index it as plain text"
        ) from None
    return [rows.text()]


class _LabelledRows:
    """Rows of a CSV as paragraphs of "name: value; ..." pairs, counting their size."""

    def __init__(self, filename: str, limit: int):
        self.filename, self.limit, self.size = filename, limit, 0
        self.header: list[str] | None = None
        self.paragraphs = _TextCollector()
        self.empty = True

    def add(self, row: list[str]) -> None:
        """One row: the first is the header."""
        if self.header is None:
            self.header = row
            return
        self.empty = False
        line = "; ".join(f"{name}: {value}" for name, value in zip(self.header, row) if value.strip())
        self.size += len(line) + 2
        if self.size > self.limit:
            raise LoaderError(
                f"{self.filename}: written out as labelled rows (each value with its column name) the table "
                f"would pass {_megabytes(self.limit)} (RAGKIT_MAX_UNPACKED_MB): shorten the column names, "
                "split the file, or save it as .txt to index it as plain text"
            )
        self.paragraphs.add(line + "\n")

    def text(self) -> str:
        """The header alone for a table without rows; else the rows, a blank line apart."""
        if self.header is None:
            return ""
        return " | ".join(self.header) if self.empty else self.paragraphs.text().rstrip("\n")


# --- entry points ----------------------------------------------------------------------


def load_bytes(
    data: bytes,
    filename: str,
    max_bytes: int | None = None,
    max_unpacked_bytes: int | None = None,
    ocr=None,
) -> LoadedDocument:
    """Turn one uploaded file into a LoadedDocument, or raise LoaderError saying why not.

    ``max_bytes`` limits the file (RAGKIT_MAX_UPLOAD_MB), ``max_unpacked_bytes`` what a
    DOCX or PDF may inflate to (RAGKIT_MAX_UNPACKED_MB, 100 MB when not given); ``ocr``
    (``ragkit.ingest.ocr.OcrOptions``, on by default) says whether images and scanned PDF pages
    are read by OCR."""
    doc_type = detect_type(filename)
    if not data:
        raise LoaderError(f"{filename}: the file is empty (0 bytes): check that it was saved completely")
    _check_size(len(data), filename, max_bytes)
    unpacked_limit = DEFAULT_MAX_UNPACKED_BYTES if max_unpacked_bytes is None else max_unpacked_bytes
    own_title = None
    notes: list[str] = []
    if ocr is None:
        ocr = OcrOptions()
    if doc_type == "pdf":
        pages, own_title = load_pdf(data, filename, unpacked_limit, notes, ocr)
    elif doc_type == "image":
        pages = load_image(data, filename, ocr)
        notes.append("read by OCR")
    elif doc_type == "xlsx":
        pages, own_title = load_xlsx(data, filename, unpacked_limit, notes)
    elif doc_type == "pptx":
        pages, own_title = load_pptx(data, filename, unpacked_limit)
    elif doc_type == "docx":
        pages, own_title = load_docx(data, filename, unpacked_limit)
    elif doc_type == "html":
        pages, own_title = load_html(data, filename, notes)
    elif doc_type == "csv":
        pages = load_csv(data, filename, unpacked_limit, notes)
    else:
        pages = [decode_text_file(data, filename, notes)]
    pages = [normalize_text(page) for page in pages]
    if not any(page.strip() for page in pages):
        hint = (
            (" (OCR read no text on its pages either)" if ocr.enabled else
             " (a scanned PDF needs OCR, which is turned off: set RAGKIT_OCR=true, or run it through OCR "
             "and add the result)")
            if doc_type == "pdf"
            else ": the file holds no visible text"
        )
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
        notes=notes,
        raw=data,
    )


def load_path(
    path: str | Path,
    max_bytes: int | None = None,
    max_unpacked_bytes: int | None = None,
    ocr=None,
) -> LoadedDocument:
    """Read a file from disk and load it. Directories, FIFOs and devices are refused, and
    the type and size are checked before a byte is read."""
    path = Path(path)
    with _open_regular_file(path) as handle:
        detect_type(path.name)
        _check_size(os.fstat(handle.fileno()).st_size, path.name, max_bytes)
        try:
            # one byte over the limit is enough to refuse a file that grew since fstat
            data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
        except OSError as exc:
            raise LoaderError(f"{path}: cannot read the file ({exc.strerror}): check that it is readable") from None
    return load_bytes(data, path.name, max_bytes=max_bytes, max_unpacked_bytes=max_unpacked_bytes, ocr=ocr)


def _open_regular_file(path: Path) -> io.BufferedReader:
    """Open ``path`` for reading if it is a regular file. The check is fstat on the opened
    file, so the checked file is the one read; O_NONBLOCK keeps a FIFO from blocking open."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise LoaderError(
            f"{path}: cannot read the file ({exc.strerror}): check that it exists and is readable"
        ) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise LoaderError(f"{path}: {_file_kind(mode)}, not a regular file: give the path of a document file")
    return open(fd, "rb")


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "this is a directory"
    if stat.S_ISFIFO(mode):
        return "this is a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "this is a device"
    if stat.S_ISSOCK(mode):
        return "this is a socket"
    return "this is a special file"

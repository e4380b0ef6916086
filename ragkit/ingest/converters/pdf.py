"""PDF: pypdf's text of each page (headings marked by type size, lines wrapped mid-sentence
joined), pages without a usable text layer read by OCR, pages of garbage text left out."""

from __future__ import annotations

import io
import logging
import re
import unicodedata

from ragkit.errors import LoaderError
from ragkit.ingest.converters.base import Converted, Converter, ReadOptions
from ragkit.ingest.decoding import TEXT_CONTROLS, text_sample
from ragkit.ingest.document import clean_title, normalize_text
from ragkit.ingest.limits import DEFAULT_MAX_UNPACKED_BYTES, PdfInflateBudget, pypdf_limits
from ragkit.ingest.ocr import read_pdf_pages

logging.getLogger("pypdf").setLevel(logging.ERROR)  # broken files are reported by us, once
logger = logging.getLogger(__name__)


class PdfConverter(Converter):
    """PDF files, page by page (see :func:`load_pdf`)."""

    suffixes = (".pdf",)
    doc_type = "pdf"
    label = "PDF"

    def convert(self, data: bytes, filename: str, options: ReadOptions, notes: list[str]) -> Converted:
        """The pages and title :func:`load_pdf` reads."""
        return load_pdf(data, filename, options.max_unpacked_bytes, notes, options.ocr)

    def no_text_hint(self, options: ReadOptions) -> str:
        """Whether OCR read the pages too, or was turned off."""
        if options.ocr.enabled:
            return " (OCR read no text on its pages either)"
        return (" (a scanned PDF needs OCR, which is turned off: set RAGKIT_OCR=true, or run it through OCR "
                "and add the result)")


_SOFT_BREAK = re.compile(r"([^\s.!?。！？；:：])\n([a-z0-9(（\u3400-\u9fff])")
_CJK = re.compile(r"[\u3400-\u9fff]")


def unwrap_soft_breaks(text: str) -> str:
    """Join PDF lines that were wrapped mid-sentence (a break after no sentence end, before
    a lower-case letter, digit or CJK character); CJK lines join without a space."""

    def join(match: re.Match) -> str:
        before, after = match.group(1), match.group(2)
        return before + ("" if _CJK.match(before) and _CJK.match(after) else " ") + after

    return _SOFT_BREAK.sub(join, text)


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
        with pypdf_limits(max_unpacked_bytes):
            reader = PdfReader(io.BytesIO(data))
            _unlock_pdf(reader, filename)
            budget = PdfInflateBudget(max_unpacked_bytes, filename)
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
    return clean_title(line[2:]) if line.startswith("# ") else None


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
    characters (see ``ragkit.ingest.decoding.text_sample``)."""
    sample = text_sample(text)
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
        if kind in _GARBAGE_KINDS and char not in TEXT_CONTROLS:
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
        return clean_title(reader.metadata.title) if reader.metadata else None
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

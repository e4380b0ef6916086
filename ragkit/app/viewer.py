"""The passage where it stands: a PDF page drawn with the cited sentences highlighted, or
the passage in its surrounding text (no Streamlit here; the app's viewer lays it out).

Highlights are found by text, not by stored coordinates: PDFium gives each character of
the page and its box, and the cited text is looked up in that character sequence with
whitespace ignored and both sides in Unicode compatibility form (so a ligature "ﬁ" and
"fi", or a line break and a space, match). The boxes of the characters found are merged
into one rectangle per line and painted translucent over the rendered page.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from ragkit.types import Passage

HIGHLIGHT_RGB = (255, 214, 0)
HIGHLIGHT_ALPHA = 0.42
"""The highlight: this colour at this opacity over the page (on white paper it shows as
:func:`highlight_on_white`)."""
PAGE_SCALE = 1.6  # PDF points to pixels for the viewer (115 dpi: sharp at the dialog's width)
PIECE_SEPARATOR = " … "  # how a quote joins the sentences it keeps (see citations.focus_quotes)
MIN_PIECE_CHARS = 12  # a piece shorter than this (without spaces) is only looked for inside the passage


def highlight_on_white() -> tuple[int, int, int]:
    """The colour the highlight gives white paper (what a screenshot shows)."""
    return tuple(round(255 * (1 - HIGHLIGHT_ALPHA) + channel * HIGHLIGHT_ALPHA) for channel in HIGHLIGHT_RGB)


@dataclass
class RenderedPage:
    """One PDF page as an image, with the number of rectangles highlighted on it."""

    image: object  # PIL.Image.Image
    number: int  # 1-based
    page_count: int
    highlighted: int  # rectangles painted (0: the text was not found on the page's text layer)


def quote_pieces(quote: str) -> list[str]:
    """The sentences a quote holds (a focused quote joins them with " … ")."""
    return [piece.strip() for piece in quote.split(PIECE_SEPARATOR.strip()) if piece.strip()]


def _folded(text: str) -> tuple[str, list[int]]:
    """``text`` without whitespace, in NFKC form and lower case, and for each character of
    the result the index of the character of ``text`` it came from."""
    out, origin = [], []
    for index, char in enumerate(text):
        if char.isspace() or char in "\u00ad\u200b\ufeff":  # soft hyphen, zero-width space, BOM
            continue
        for part in unicodedata.normalize("NFKC", char).lower():
            if not part.isspace():
                out.append(part)
                origin.append(index)
    return "".join(out), origin


def find_spans(text: str, pieces: list[str], within: tuple[int, int] | None = None) -> list[tuple[int, int]]:
    """Where each piece stands in ``text``, as (start, end) character offsets, whitespace,
    case and compatibility forms ignored. A piece not found whole is looked for by its
    first and last 40 characters. ``within`` (offsets) is searched first: the passage's own
    place on the page, so a sentence repeated elsewhere is found where the passage is."""
    folded, origin = _folded(text)
    if not folded:
        return []
    low, high = 0, len(folded)
    if within is not None:
        positions = [i for i, source in enumerate(origin) if within[0] <= source < within[1]]
        if positions:
            low, high = positions[0], positions[-1] + 1
    spans = []
    for piece in pieces:
        needle, _ = _folded(piece)
        if not needle:
            continue
        found = _locate(folded, needle, low, high, short=len(needle) < MIN_PIECE_CHARS)
        if found is not None:
            start, end = found
            spans.append((origin[start], origin[end - 1] + 1))
    return spans


def _locate(folded: str, needle: str, low: int, high: int, short: bool) -> tuple[int, int] | None:
    """``needle`` in ``folded``: in [low, high) first, then anywhere (unless it is short);
    whole, else from its first 40 characters to its last 40."""
    regions = [(low, high)] if short else [(low, high), (0, len(folded))]
    for start_at, stop_at in regions:
        at = folded.find(needle, start_at, stop_at)
        if at >= 0:
            return at, at + len(needle)
        if len(needle) > 80:
            head, tail = needle[:40], needle[-40:]
            at = folded.find(head, start_at, stop_at)
            if at >= 0:
                end = folded.find(tail, at + 40, min(stop_at, at + len(needle) * 2))
                if end >= 0:
                    return at, end + 40
    return None


def page_count(pdf: bytes) -> int:
    """Pages of a PDF."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(pdf)
    try:
        return len(document)
    finally:
        document.close()


def render_pdf_page(pdf: bytes, number: int, pieces: list[str], passage_text: str = "",
                    scale: float = PAGE_SCALE) -> RenderedPage:
    """Page ``number`` (1-based, clamped to the document) drawn at ``scale``, with every
    line of the ``pieces`` found on it painted in the highlight colour. ``passage_text``
    (the whole passage) tells which occurrence of a repeated sentence is meant."""
    import pypdfium2 as pdfium
    from PIL import Image, ImageDraw

    document = pdfium.PdfDocument(pdf)
    try:
        count = len(document)
        number = min(max(number, 1), count)
        page = document[number - 1]
        try:
            image = page.render(scale=scale).to_pil().convert("RGB")
            boxes = _highlight_boxes(page, pieces, passage_text)
            height = page.get_height()
        finally:
            page.close()
    finally:
        document.close()
    if boxes:
        overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
        draw = ImageDraw.Draw(overlay)
        fill = (*HIGHLIGHT_RGB, round(255 * HIGHLIGHT_ALPHA))
        for left, bottom, right, top in boxes:  # PDF space: origin at the bottom left
            draw.rectangle([left * scale - 2, (height - top) * scale - 2, right * scale + 2,
                            (height - bottom) * scale + 2], fill=fill)
        image = Image.alpha_composite(image.convert("RGBA"), overlay).convert("RGB")
    return RenderedPage(image, number, count, len(boxes))


def _highlight_boxes(page, pieces: list[str], passage_text: str) -> list[tuple[float, float, float, float]]:
    """One (left, bottom, right, top) rectangle per line of text the pieces cover."""
    text_page = page.get_textpage()
    try:
        count = text_page.count_chars()
        if count <= 0:
            return []
        text = text_page.get_text_range(0, count)
        within = None
        if passage_text:
            spans = find_spans(text, [passage_text])
            within = spans[0] if spans else None
        spans = find_spans(text, pieces, within)
        boxes: list[list[float]] = []
        for start, end in spans:
            for index in range(start, min(end, count)):
                if text[index].isspace():
                    continue
                left, bottom, right, top = text_page.get_charbox(index)
                if right <= left or top <= bottom:
                    continue
                last = boxes[-1] if boxes else None
                if last is not None and _same_line(last, bottom, top) and left >= last[0] - 1:
                    last[0], last[1] = min(last[0], left), min(last[1], bottom)
                    last[2], last[3] = max(last[2], right), max(last[3], top)
                else:
                    boxes.append([left, bottom, right, top])
        return [tuple(box) for box in boxes]
    finally:
        text_page.close()


def _same_line(box: list[float], bottom: float, top: float) -> bool:
    middle = (bottom + top) / 2
    return box[1] <= middle <= box[3]


def page_text(passages: list[Passage], page: int) -> str:
    """The text of one page as far as its passages hold it: each passage at its own
    offsets (overlaps agree), the whitespace between passages as line breaks."""
    on_page = [p for p in passages if p.page == page]
    if not on_page:
        return ""
    chars = ["\n"] * max(p.end for p in on_page)
    for passage in on_page:
        chars[passage.start : passage.start + len(passage.text)] = passage.text
    return "".join(chars)


@dataclass
class TextContext:
    """A passage in its surrounding text: the text before it, the passage (with the spans
    of the cited sentences inside it), and the text after it."""

    before: str
    passage: str
    cited: list[tuple[int, int]]  # offsets in ``passage``
    after: str
    cut_before: bool
    cut_after: bool


def text_context(text: str, start: int, end: int, pieces: list[str], before_chars: int = 1200,
                 after_chars: int = 2400) -> TextContext:
    """The passage ``text[start:end]`` with up to ``before_chars`` before it and
    ``after_chars`` after it (cut at a line break where there is one nearby)."""
    low = max(0, start - before_chars)
    if low > 0:
        newline = text.find("\n", low, start)
        low = newline + 1 if newline >= 0 else low
    high = min(len(text), end + after_chars)
    if high < len(text):
        newline = text.rfind("\n", end, high)
        high = newline if newline > end else high
    passage = text[start:end]
    return TextContext(text[low:start], passage, find_spans(passage, pieces), text[end:high], low > 0,
                       high < len(text))

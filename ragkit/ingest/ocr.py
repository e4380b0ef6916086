"""Text from images and scanned PDF pages, with RapidOCR (PP-OCRv4 models run by onnxruntime).

The Chinese + English detection, direction and recognition models ship inside the
``rapidocr-onnxruntime`` package: nothing is downloaded, ever. The engine (and OpenCV)
is imported the first time an image needs reading, so a user who never adds a scan pays
nothing at start-up; it is then kept for the process.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from ragkit.errors import LoaderError

log = logging.getLogger(__name__)
_ENGINE = None
_ENGINE_LOCK = threading.Lock()
MAX_IMAGE_PIXELS = 60_000_000
"""Largest image read (about 7,700 x 7,700): a few bytes of PNG can claim billions of pixels."""
OCR_LONG_SIDE = 2400
"""Images are scaled down to this longest side before OCR (text stays readable; time is bounded)."""


@dataclass(frozen=True)
class OcrOptions:
    """Whether and how much to read by OCR."""

    enabled: bool = True
    max_pages: int = 100  # scanned pages of one PDF read by OCR; the rest are left out and said so
    # PDF points to pixels: 300 dpi, what OCR is tuned for (capped by OCR_LONG_SIDE: about 200 dpi
    # for A4). At 144 dpi the recogniser dropped the spaces of whole lines ("Memo:theferryto...").
    render_scale: float = 300 / 72

    @classmethod
    def from_settings(cls, settings) -> "OcrOptions":
        """The options configured in Settings (RAGKIT_OCR, RAGKIT_OCR_MAX_PAGES)."""
        return cls(enabled=settings.ocr, max_pages=settings.ocr_max_pages)


def engine():
    """The OCR engine, created on first use (imports onnxruntime sessions and OpenCV)."""
    global _ENGINE
    with _ENGINE_LOCK:
        if _ENGINE is None:
            from rapidocr_onnxruntime import RapidOCR

            logging.getLogger("RapidOCR").setLevel(logging.WARNING)
            _ENGINE = RapidOCR()
        return _ENGINE


def read_image(image) -> str:
    """The text of a PIL image, line by line in reading order (empty when it holds none)."""
    import numpy as np

    image = image.convert("RGB")
    longest = max(image.size)
    if longest > OCR_LONG_SIDE:
        factor = OCR_LONG_SIDE / longest
        image = image.resize((max(1, round(image.width * factor)), max(1, round(image.height * factor))))
    found, _ = engine()(np.asarray(image)[:, :, ::-1])  # OpenCV order: BGR
    return _lines(found or [])


def _lines(found: list) -> str:
    """Boxes of text grouped into lines (boxes whose vertical middles are close), each line
    read left to right, lines top to bottom."""
    boxes = []
    for box, text, _score in found:
        xs, ys = [point[0] for point in box], [point[1] for point in box]
        boxes.append((min(ys), max(ys), min(xs), text.strip()))
    boxes.sort()
    lines: list[list[tuple]] = []
    for top, bottom, left, text in boxes:
        if not text:
            continue
        middle = (top + bottom) / 2
        if lines:
            last = lines[-1][0]
            if last[0] <= middle <= last[1]:
                lines[-1].append((top, bottom, left, text))
                continue
        lines.append([(top, bottom, left, text)])
    return "\n".join(" ".join(piece[3] for piece in sorted(line, key=lambda b: b[2])) for line in lines)


def open_image(data: bytes, filename: str):
    """A PIL image from file bytes, refusing what is not an image or too large to read."""
    from PIL import Image, UnidentifiedImageError

    try:
        image = Image.open(_bytes_io(data))
        width, height = image.size
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        raise LoaderError(f"{filename}: not a readable image (corrupt, or not the format its name says)") from None
    if width * height > MAX_IMAGE_PIXELS:
        raise LoaderError(f"{filename}: the image is {width} x {height} pixels, over the {MAX_IMAGE_PIXELS:,} "
                          "pixels read by OCR: scale it down and add it again")
    try:
        image.load()
    except (OSError, ValueError, Image.DecompressionBombError):
        raise LoaderError(f"{filename}: the image is damaged (it could not be decoded completely)") from None
    return image


def _bytes_io(data: bytes):
    import io

    return io.BytesIO(data)


def load_image(data: bytes, filename: str, options: OcrOptions) -> list[str]:
    """An image file as one page of text read by OCR."""
    if not options.enabled:
        raise LoaderError(f"{filename}: images are read by OCR, which is turned off (RAGKIT_OCR=false): "
                          "turn it on, or add the text of the image as a file")
    text = read_image(open_image(data, filename))
    if not text.strip():
        raise LoaderError(f"{filename}: no text was found in the image (OCR read nothing): "
                          "is it a photo without writing, or too blurred to read?")
    return [text]


def read_pdf_pages(data: bytes, numbers: list[int], options: OcrOptions) -> dict[int, str]:
    """The text OCR reads on these 1-based pages of a PDF, rendered with PDFium."""
    import pypdfium2 as pdfium

    found: dict[int, str] = {}
    document = pdfium.PdfDocument(data)
    try:
        for number in numbers:
            page = document[number - 1]
            try:
                scale = _render_scale(page, options.render_scale)
                image = page.render(scale=scale).to_pil()
            finally:
                page.close()
            found[number] = read_image(image)
    finally:
        document.close()
    return found


def _render_scale(page, wanted: float) -> float:
    """``wanted``, lowered so that the page's longest side stays within OCR_LONG_SIDE pixels."""
    width, height = page.get_size()
    return min(wanted, OCR_LONG_SIDE / max(width, height, 1.0))

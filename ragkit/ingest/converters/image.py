"""Images: their text read by OCR (see ``ragkit.ingest.ocr``)."""

from __future__ import annotations

from ragkit.ingest.converters.base import Converted, Converter, ReadOptions
from ragkit.ingest.ocr import load_image


class ImageConverter(Converter):
    """PNG, JPEG, WebP, BMP and TIFF images, read by OCR."""

    suffixes = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".tif", ".tiff")
    doc_type = "image"
    label = "image (PNG, JPG…)"

    def convert(self, data: bytes, filename: str, options: ReadOptions, notes: list[str]) -> Converted:
        """The text OCR reads, as one page; the notes say it was read by OCR."""
        pages = load_image(data, filename, options.ocr)
        notes.append("read by OCR")
        return pages, None

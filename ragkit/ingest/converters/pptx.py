"""PPTX: one page per slide (its title as a heading, its shapes' text, its speaker notes), read
with python-pptx from a copy of the archive unpacked within its declared sizes."""

from __future__ import annotations

from ragkit.errors import LoaderError
from ragkit.ingest.converters.base import Converted, Converter, ReadOptions
from ragkit.ingest.document import clean_title
from ragkit.ingest.limits import DEFAULT_MAX_UNPACKED_BYTES, bounded_copy, check_zip_limits
from ragkit.ingest.ooxml import PPTX_FORMAT, office_unreadable


class PptxConverter(Converter):
    """PowerPoint presentations (see :func:`load_pptx`)."""

    suffixes = (".pptx",)
    doc_type = "pptx"
    label = "PPTX"

    def convert(self, data: bytes, filename: str, options: ReadOptions, notes: list[str]) -> Converted:
        """The pages and title :func:`load_pptx` reads."""
        return load_pptx(data, filename, options.max_unpacked_bytes)


def load_pptx(data: bytes, filename: str,
              max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES) -> tuple[list[str], str | None]:
    """One page per slide: its title as a heading, the text of its shapes (groups and tables
    included) in the order they are drawn, then its speaker notes; and the deck's title."""
    from pptx import Presentation

    check_zip_limits(data, filename, max_unpacked_bytes, PPTX_FORMAT)
    try:
        deck = Presentation(bounded_copy(data))
        pages = [_slide_text(slide) for slide in deck.slides]
        title = clean_title(deck.core_properties.title)
    except Exception:
        raise office_unreadable(filename, data, PPTX_FORMAT) from None
    if not pages:
        raise LoaderError(f"{filename}: the presentation has no slides")
    first_heading = next((page.split("\n", 1)[0][2:] for page in pages if page.startswith("# ")), None)
    return pages, title or clean_title(first_heading)


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

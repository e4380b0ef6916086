"""DOCX: python-docx's paragraphs (headings as Markdown headings) and tables in body order,
from a copy of the archive unpacked within its declared sizes."""

from __future__ import annotations

import re

from ragkit.ingest.converters.base import Converted, Converter, ReadOptions
from ragkit.ingest.document import clean_title
from ragkit.ingest.limits import DEFAULT_MAX_UNPACKED_BYTES, bounded_copy, check_zip_limits
from ragkit.ingest.ooxml import DOCX_FORMAT, office_unreadable


class DocxConverter(Converter):
    """Word documents (see :func:`load_docx`)."""

    suffixes = (".docx",)
    doc_type = "docx"
    label = "DOCX"

    def convert(self, data: bytes, filename: str, options: ReadOptions, notes: list[str]) -> Converted:
        """The page and title :func:`load_docx` reads."""
        return load_docx(data, filename, options.max_unpacked_bytes)


def load_docx(
    data: bytes, filename: str, max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES
) -> tuple[list[str], str | None]:
    """Paragraphs (headings as Markdown headings) and tables of a DOCX, in body order, and
    its title: core properties, else the first "Title" paragraph, else the first Heading 1."""
    import docx

    check_zip_limits(data, filename, max_unpacked_bytes)
    try:
        document = docx.Document(bounded_copy(data))
        blocks, headings = _docx_blocks(document)
        title = _docx_core_title(document) or headings.get("Title") or headings.get("Heading 1")
    except Exception:
        raise office_unreadable(filename, data, DOCX_FORMAT) from None
    return ["\n\n".join(block for block in blocks if block)], clean_title(title)


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
    return clean_title(part.core_properties.title)


def _docx_table_text(table) -> str:
    rows = []
    for row in table.rows:
        cells = [cell.text.strip().replace("\n", " ") for cell in row.cells]
        rows.append(" | ".join(cells))
    return "\n".join(rows)

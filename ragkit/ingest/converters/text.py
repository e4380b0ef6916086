"""Plain text and Markdown: the decoded text as one page (see ``ragkit.ingest.decoding``)."""

from __future__ import annotations

from ragkit.ingest.converters.base import Converted, Converter, ReadOptions
from ragkit.ingest.decoding import decode_text_file
from ragkit.ingest.document import first_line_title


class TextConverter(Converter):
    """Plain text files, in any encoding :func:`decode_text_file` recognises."""

    suffixes = (".txt", ".text")
    doc_type = "txt"
    label = "TXT"

    def convert(self, data: bytes, filename: str, options: ReadOptions, notes: list[str]) -> Converted:
        """The decoded text as one page, without a title of its own."""
        return [decode_text_file(data, filename, notes)], None


class MarkdownConverter(TextConverter):
    """Markdown files: text, titled by their first line."""

    suffixes = (".md", ".markdown")
    doc_type = "markdown"
    label = "MD"

    def fallback_title(self, first_page: str, stem: str) -> str:
        """The first line of text (a heading's words without its marks), else the file name."""
        return first_line_title(first_page, stem)

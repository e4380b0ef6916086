"""What a file becomes: a :class:`LoadedDocument`, with the text and title helpers every format shares."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field


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


def clean_title(title: str | None) -> str | None:
    """A title on one line, blanks collapsed, at most 120 characters; None when empty."""
    title = " ".join((title or "").split())
    return title[:120] or None


def first_line_title(text: str, fallback: str) -> str:
    """The first non-empty line of the text, without Markdown heading marks, else ``fallback``."""
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:120]
    return fallback


class TextCollector:
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

"""Pages of text -> token-bounded chunks that end on sentence boundaries.

A chunk is a contiguous slice ``page_text[start:end]`` made of whole sentences
(Chinese 。！？； or English .!?), preferring paragraph breaks, with an overlap of whole
trailing sentences carried into the next chunk. A sentence longer than the budget is
cut into token windows. Offsets always index the page text exactly.

A Markdown heading line (which the loaders also write for the headings of HTML, DOCX and
PDF files) starts a new chunk once the current one holds text, and no overlap is carried
across it: a chunk never runs from one section into the next, so its section path names
all of it. Headings with nothing between them stay together with the text that follows.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragkit.lang.text import HEADING, count_tokens, is_heading, split_paragraphs, split_sentences, token_encoding
from ragkit.types import Span


@dataclass(frozen=True)
class Chunk:
    """One searchable piece of a page with its exact character offsets."""

    text: str
    page: int  # 1-based page number
    position: int  # 0-based index of the chunk within the document
    start: int
    end: int
    tokens: int


@dataclass(frozen=True)
class _Unit:
    span: Span
    tokens: int
    starts_paragraph: bool
    heading: bool = False  # a Markdown heading line: a section starts here


def _hard_split(span: Span, max_tokens: int) -> list[Span]:
    """Cut an over-long sentence into windows of at most ``max_tokens`` tokens."""
    encoding = token_encoding()
    if encoding is None:
        step = max_tokens * 3
        cuts = list(range(0, len(span.text), step))
    else:
        token_ids = encoding.encode(span.text, disallowed_special=())
        _, offsets = encoding.decode_with_offsets(token_ids)
        cuts = sorted({offsets[i] for i in range(0, len(offsets), max_tokens)} | {0})
    bounds = list(zip(cuts, cuts[1:] + [len(span.text)]))
    return [
        Span(span.text[a:b], span.start + a, span.start + b)
        for a, b in bounds
        if span.text[a:b].strip()
    ]


def _units(page_text: str, max_tokens: int) -> list[_Unit]:
    units: list[_Unit] = []
    for paragraph in split_paragraphs(page_text):
        first = True
        for sentence in split_sentences(paragraph.text):
            absolute = Span(sentence.text, paragraph.start + sentence.start, paragraph.start + sentence.end)
            tokens = count_tokens(absolute.text)
            pieces = [absolute] if tokens <= max_tokens else _hard_split(absolute, max_tokens)
            for piece in pieces:
                piece_tokens = tokens if len(pieces) == 1 else count_tokens(piece.text)
                units.append(_Unit(piece, piece_tokens, first, is_heading(piece.text)))
                first = False
    return units


def _pack(units: list[_Unit], max_tokens: int, overlap_tokens: int) -> list[list[_Unit]]:
    """Group units greedily into chunks; carry trailing units as overlap."""
    groups: list[list[_Unit]] = []
    current: list[_Unit] = []
    used = 0
    fresh = 0  # units in `current` that are not overlap
    for unit in units:
        paragraph_break = unit.starts_paragraph and used >= 0.6 * max_tokens
        section_break = unit.heading and any(not u.heading for u in current[-fresh:] if fresh)
        if current and fresh and (used + unit.tokens > max_tokens or paragraph_break or section_break):
            groups.append(current)
            current = [] if unit.heading else _overlap_tail(current, overlap_tokens, max_tokens - unit.tokens)
            used = sum(u.tokens for u in current)
            fresh = 0
        current.append(unit)
        used += unit.tokens
        fresh += 1
    if current and fresh:
        groups.append(current)
    return groups


def _overlap_tail(group: list[_Unit], overlap_tokens: int, room: int) -> list[_Unit]:
    tail: list[_Unit] = []
    used = 0
    for unit in reversed(group[1:]):  # never carry the whole previous chunk
        if used + unit.tokens > min(overlap_tokens, room):
            break
        tail.insert(0, unit)
        used += unit.tokens
    return tail


def chunk_pages(pages: list[str], max_tokens: int = 256, overlap_tokens: int = 48) -> list[Chunk]:
    """Split every page into chunks; page numbers are 1-based, positions run over the document."""
    chunks: list[Chunk] = []
    for page_number, page_text in enumerate(pages, start=1):
        for group in _pack(_units(page_text, max_tokens), max_tokens, overlap_tokens):
            start, end = group[0].span.start, group[-1].span.end
            text = page_text[start:end]
            chunks.append(Chunk(text, page_number, len(chunks), start, end, count_tokens(text)))
    return chunks


def section_paths(pages: list[str], chunks: list[Chunk]) -> list[str]:
    """Each chunk's section path ("Annual Review > Staff"): the Markdown headings (``#`` to
    ``######``, which the loaders write for the headings of HTML, DOCX and PDF files) in
    force where the chunk starts (a chunk holds one section: see the module docstring),
    outermost first; "" where there is none."""
    headings_by_page = [[(m.start(), len(m.group(1)), m.group(2).strip()) for m in HEADING.finditer(page)]
                        for page in pages]
    paths = []
    carried: list[tuple[int, str]] = []  # the path at the end of the previous page
    page_seen = 0
    for chunk in chunks:
        if chunk.page != page_seen:
            carried = _path_at(headings_by_page[page_seen - 1], 10**9, carried) if page_seen else []
            page_seen = chunk.page
        stack = _path_at(headings_by_page[chunk.page - 1], chunk.start + _body_offset(chunk.text) + 1, carried)
        paths.append(" > ".join(title for _, title in stack))
    return paths


def _body_offset(text: str) -> int:
    """Where ``text``'s first line that is not a heading starts (a chunk opening with
    "# Review" then "## Overview" is in Overview): 0 when it opens with text."""
    offset = 0
    for line in text.splitlines(keepends=True):
        if line.strip() and not is_heading(line):
            return offset
        offset += len(line)
    return 0


def _path_at(headings: list[tuple[int, int, str]], position: int,
             start: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The heading stack after the headings before ``position``, from ``start``."""
    stack = list(start)
    for offset, level, title in headings:
        if offset >= position:
            break
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
    return stack


def contextual_text(text: str, section: str) -> str:
    """What is embedded and indexed for a passage: its section path above its text (a
    "contextual header"), so a passage under "Staff" is found for "staff" even when its
    sentences never repeat the word; the passage itself is stored and quoted unchanged."""
    return f"{section}\n{text}" if section else text

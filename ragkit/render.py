"""Untrusted text as inert Markdown, and the spans of a text that match a query.

Document text, quotes, titles, file names, questions, answers and error messages are
data. Before they reach anything that renders Markdown (the app, an exported ``.md``
file) every character that CommonMark, GitHub-flavoured Markdown or Streamlit's
extensions treat as syntax is escaped: images, links, reference definitions, autolinks,
raw HTML, entities, LaTeX, emoji and icon shortcodes, coloured text, tables, headings
and code all come out as the literal characters. Answers then get back a small
allow-list: paragraphs, line breaks, list items and **bold** / *italic*.

Pure text functions: nothing here knows about Streamlit.
"""

from __future__ import annotations

import re

from .text import search_tokens

WORD_JOINER = "\u2060"

# Every ASCII punctuation character that is syntax somewhere in CommonMark, GFM,
# remark-math ($), remark-directive (: [ ] { }) or Streamlit's Markdown.
_SPECIAL = r"[\\`*_{}\[\]()#+\-.!|<>~$:=&]"
# `_`, `.` and `-` between two letters or digits are never syntax (emphasis cannot open
# or close inside a word; list markers, rules and headings need a space or a line
# start), so they stay unescaped and file names like report_en-2.pdf stay readable.
_ESCAPE = re.compile(rf"(?<=[^\W_])([_.\-])(?=[^\W_])|({_SPECIAL})")
# Some renderers rewrite text *after* escapes are resolved: GFM autolink literals
# (http://, www., user@host) and Streamlit's emoji, Material icon and logo shortcodes.
# A zero-width word joiner after the ':' or '@' or before the '.' of "www." breaks them
# without changing what the reader sees.
_REWRITE_TRIGGER = re.compile(r"(?<=[:@])(?=[\w/+-])|(?<=[wW]{3})(?=\.)")
_LINE_START_SPACE = re.compile(r"^[ \t]+", re.MULTILINE)
_NEWLINES = re.compile(r"\r\n?")
_WHITESPACE = re.compile(r"\s+")
_LIST_ITEM = re.compile(r"(?:([-*+•])|(\d{1,9})[.)])\s+(?=\S)")
_EMPHASIS = re.compile(r"\*\*(?=[^\s*])([^*\n]*?[^\s*])\*\*|\*(?=[^\s*])([^*\n]*?[^\s*])\*")


def _escape_chars(text: str) -> str:
    text = _REWRITE_TRIGGER.sub(WORD_JOINER, text)
    return _ESCAPE.sub(lambda m: m.group(1) or "\\" + m.group(2), text)


def escape_markdown(text: str) -> str:
    """Text that renders literally as Markdown: no formatting, links, images, HTML or LaTeX.

    Line breaks are kept (as soft breaks); indentation at a line start is dropped so it
    cannot turn into a code block.
    """
    return _escape_chars(_LINE_START_SPACE.sub("", _NEWLINES.sub("\n", text)))


def escape_line(text: str) -> str:
    """Text on one line as inert Markdown (each whitespace run becomes one space, so pieces
    can be joined): for titles, file names, labels and parts of a line."""
    return _escape_chars(_WHITESPACE.sub(" ", text))


def _inline(text: str) -> str:
    """Escaped text with its **bold** and *italic* pairs re-enabled (their content escaped)."""
    out, cursor = [], 0
    for match in _EMPHASIS.finditer(text):
        marker, content = ("**", match.group(1)) if match.group(1) is not None else ("*", match.group(2))
        out += [_escape_chars(text[cursor : match.start()]), marker, _escape_chars(content), marker]
        cursor = match.end()
    out.append(_escape_chars(text[cursor:]))
    return "".join(out)


def _answer_line(line: str) -> tuple[str, str]:
    """("item" or "text", the line as Markdown) for one stripped, non-empty line."""
    item = _LIST_ITEM.match(line)
    if item is None:
        return "text", _inline(line)
    marker = "-" if item.group(1) else f"{int(item.group(2))}."
    return "item", f"{marker} {_inline(line[item.end():])}"


def safe_answer_markdown(text: str) -> str:
    """An answer as inert Markdown with an allow-list: paragraphs, line breaks, list items
    at a line start, and **bold** / *italic*; everything else (including [n] markers,
    which read the same escaped) is escaped."""
    lines: list[str] = []
    previous = "blank"
    for raw in _NEWLINES.sub("\n", text).split("\n"):
        if not raw.strip():
            previous = "blank"
            continue
        kind, markdown = _answer_line(raw.strip())
        if lines and (previous == "blank" or kind != previous):
            lines.append("")  # a paragraph, or a list starting or ending
        elif kind == "text" and previous == "text":
            lines[-1] += "\\"  # a line break inside a paragraph
        lines.append(markdown)
        previous = kind
    return "\n".join(lines)


def match_spans(text: str, query: str) -> list[tuple[int, int]]:
    """Merged [start, end) spans of ``text`` that match the query's search words."""
    words = search_tokens(query, stem=False)
    terms = sorted({t for t in words if len(t) >= 2 or not t.isascii()}, key=len, reverse=True)
    if not terms:
        return []
    lowered = text.lower()
    spans = []
    for term in terms:
        pattern = re.escape(term) if not term.isascii() else rf"\b{re.escape(term)}\w*"
        for match in re.finditer(pattern, lowered):
            spans.append((match.start(), match.end()))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged

"""Untrusted text as inert Markdown, and the spans of a text that match a query.

Document text, quotes, titles, file names, questions, answers and error messages are
data. Before they reach anything that renders Markdown (the app, an exported ``.md``
file) every character that CommonMark, GitHub-flavoured Markdown or Streamlit's
extensions treat as syntax is escaped: images, links, reference definitions, autolinks,
raw HTML, entities, LaTeX, emoji and icon shortcodes, coloured text, tables, headings
and code all come out as the literal characters. Answers then get back a small
allow-list: paragraphs, line breaks, list items and **bold** / *italic*.

For a terminal (the CLI), :func:`terminal_safe` shows control characters as visible
codes instead: a file name holding ``ESC[2J`` cannot clear the screen, nor a newline
forge a line of output.

Pure text functions: nothing here knows about Streamlit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

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


def _inline(text: str, escape: Callable[[str], str] = _escape_chars) -> str:
    """Escaped text with its **bold** and *italic* pairs re-enabled (their content escaped)."""
    out, cursor = [], 0
    for match in _EMPHASIS.finditer(text):
        marker, content = ("**", match.group(1)) if match.group(1) is not None else ("*", match.group(2))
        out += [escape(text[cursor : match.start()]), marker, escape(content), marker]
        cursor = match.end()
    out.append(escape(text[cursor:]))
    return "".join(out)


def _answer_line(line: str, escape: Callable[[str], str], line_start: Callable[[str], str]) -> tuple[str, str]:
    """("item" or "text", the line as Markdown) for one stripped, non-empty line."""
    item = _LIST_ITEM.match(line)
    if item is None:
        return "text", line_start(_inline(line, escape))
    marker = "-" if item.group(1) else f"{int(item.group(2))}."
    return "item", f"{marker} {line_start(_inline(line[item.end():], escape))}"


def safe_answer_markdown(text: str, escape: Callable[[str], str] = _escape_chars,
                         line_start: Callable[[str], str] = lambda line: line) -> str:
    """An answer as inert Markdown with an allow-list: paragraphs, line breaks, list items
    at a line start, and **bold** / *italic*; everything else (including [n] markers,
    which read the same escaped) is escaped (by ``escape``; ``line_start`` escapes what
    would be syntax at the start of a line, where ``escape`` leaves it)."""
    lines: list[str] = []
    previous = "blank"
    for raw in _NEWLINES.sub("\n", text).split("\n"):
        if not raw.strip():
            previous = "blank"
            continue
        kind, markdown = _answer_line(raw.strip(), escape, line_start)
        if lines and (previous == "blank" or kind != previous):
            lines.append("")  # a paragraph, or a list starting or ending
        elif kind == "text" and previous == "text":
            lines[-1] += "\\"  # a line break inside a paragraph
        lines.append(markdown)
        previous = kind
    return "\n".join(lines)


# ----- Markdown for reading elsewhere (exports) --------------------------------------------
#
# An exported .md file is read raw in an editor as often as rendered (GitHub, Obsidian, VS
# Code): it escapes a character only where CommonMark or GFM would read it as syntax, so
# "Dr. Silva", "14:33" and "well-known" stay as typed. Links stay dead all the same: brackets,
# angle brackets and entities are escaped (a bracket only where it would close a link or start
# a reference definition: "[1]" reads as typed), and a word joiner breaks the three autolink
# literals GFM recognises after parsing (http://, www., user@host).

_READABLE_ALWAYS = re.compile(r"[\\`*<|~]|\](?=\()")  # "](" makes a link; with no definition, "[1]" does not
_READABLE_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")  # at a word edge: emphasis
_READABLE_ENTITY = re.compile(r"&(?=#?[0-9A-Za-z]+;)")
_READABLE_AUTOLINK = re.compile(r"(?<=[A-Za-z]:)(?=//)|(?<=\b[wW]{3})(?=\.)|(?<=[\w.+-]@)(?=[\w-])")
_READABLE_LINE_START = re.compile(
    r"^(?:#{1,6}(?=\s|$)|>|\[(?=[^\]]*\]:)|[-+](?=\s|$)|[=-](?=[=\s-]*$)|(\d{1,9})([.)])(?=\s|$))")


def _readable_chars(text: str) -> str:
    text = _READABLE_AUTOLINK.sub(WORD_JOINER, text)
    text = _READABLE_ALWAYS.sub(lambda m: "\\" + m.group(), text)
    text = _READABLE_UNDERSCORE.sub(r"\\_", text)
    text = _READABLE_ENTITY.sub(r"\\&", text)
    if text.count("$") > 1:  # a pair could open maths (GitHub, Obsidian); one price cannot
        text = text.replace("$", "\\$")
    return text


def _readable_line_start(line: str) -> str:
    """A line whose start would make a heading, quote, list item, rule, setext underline or
    link reference definition gets that character escaped (``1\\.``, ``\\#``, ``\\-``)."""
    match = _READABLE_LINE_START.match(line)
    if match is None:
        return line
    if match.group(1):  # "1. " or "2) ": escape the dot or bracket
        return f"{match.group(1)}\\{match.group(2)}{line[match.end():]}"
    return "\\" + line


def readable_line(text: str) -> str:
    """One line of data as Markdown that reads as typed in raw and renders literally in a
    CommonMark or GFM viewer: no formatting, link, image, HTML or maths."""
    return _readable_line_start(_readable_chars(_WHITESPACE.sub(" ", text).strip()))


def readable_answer_markdown(text: str) -> str:
    """An answer for an export: the allow-list of :func:`safe_answer_markdown`
    (paragraphs, line breaks, list items, **bold** / *italic*), everything else escaped
    only where a viewer would read it as syntax."""
    return safe_answer_markdown(text, escape=_readable_chars, line_start=_readable_line_start)


def clip_words(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters, cut at a word boundary with "…"
    (text without spaces, such as Chinese, is cut at the limit)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"






# What a terminal acts on rather than shows: C0 and C1 controls and DEL (escape
# sequences, carriage returns, NEL), line and paragraph separators, bidirectional
# controls (text shown in another order than stored), and lone surrogates (the bytes of
# a file name that was not UTF-8). Joiners and other invisible characters that scripts
# and emoji need are kept.
_UNSAFE_BEYOND_C0 = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_TERMINAL_UNSAFE = re.compile(f"[\x00-\x1f{_UNSAFE_BEYOND_C0}]")
_TERMINAL_UNSAFE_BUT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f{_UNSAFE_BEYOND_C0}]")
_JSON_UNSAFE = re.compile(f"[{_UNSAFE_BEYOND_C0}]")  # JSON text holds no raw C0 control but its own whitespace
_NAMED_CODES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible_code(char: str) -> str:
    if char in _NAMED_CODES:
        return _NAMED_CODES[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for an undecodable byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str, keep_newlines: bool = False) -> str:
    """Text a terminal shows as it is: controls, separators, bidirectional overrides and
    undecodable file-name bytes become visible codes (``\\x1b``, ``\\n``, ``\\u202e``,
    ``\\xff``); everything else, Chinese included, is kept. With ``keep_newlines`` the
    line breaks of a multi-line text (an answer, an export) stay line breaks."""
    pattern = _TERMINAL_UNSAFE_BUT_NEWLINE if keep_newlines else _TERMINAL_UNSAFE
    return pattern.sub(lambda match: _visible_code(match.group()), text)


def terminal_json(value) -> str:
    """``value`` as one line of JSON that a terminal shows as it is (see
    :func:`terminal_json_text`)."""
    return terminal_json_text(json.dumps(value, ensure_ascii=False))


def terminal_json_text(encoded: str) -> str:
    """JSON text with what :func:`terminal_safe` escapes written as ``\\uXXXX`` escapes:
    the same data (any JSON parser reads it back unchanged), shown as it is by a
    terminal. Non-ASCII text such as Chinese stays readable; the JSON's own line breaks
    and indentation stay."""
    return _JSON_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", encoded)

"""HTML: the visible text of a page and its <title>, read through libxml2's callbacks without
building a tree; a page nested too deep is read as flat text."""

from __future__ import annotations

import logging
import re

from ragkit.ingest.converters.base import Converted, Converter, ReadOptions
from ragkit.ingest.decoding import decode_text_file
from ragkit.ingest.document import TextCollector, clean_title

logger = logging.getLogger(__name__)


class HtmlConverter(Converter):
    """HTML pages (see :func:`load_html`)."""

    suffixes = (".html", ".htm")
    doc_type = "html"
    label = "HTML"

    def convert(self, data: bytes, filename: str, options: ReadOptions, notes: list[str]) -> Converted:
        """The page and title :func:`load_html` reads."""
        return load_html(data, filename, notes)


_HTML_HIDDEN = frozenset({"script", "style", "noscript", "template"})
_HTML_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
MAX_HEADING_CHARS = 300  # longer "headings" (an <h1> never closed) are read as text
_HTML_FEED_CHARS = 64 * 1024
MAX_HTML_NESTING = 1000
"""Deepest nesting of open HTML elements parsed as a tree (browsers flatten deeper ones;
Chromium at 512). A page nested deeper, such as thousands of unclosed ``<b><i><span>``,
is read as flat text instead: libxml2 keeps every open element on a stack."""
_HTML_HIDDEN_OPEN = re.compile(r"<(script|style|noscript|template)\b|<!--", re.IGNORECASE)
_HTML_TAG = re.compile(r"<[^<>]*>")  # stops at the next "<": linear even on "<<<<"


class _NestedTooDeep(Exception):
    """Raised by the parser target past MAX_HTML_NESTING open elements."""


class _HtmlText:
    """An lxml parser target that keeps the visible text and the <title>, building no tree.

    Each run of text between two tags is one piece (pieces are joined by newlines, as
    BeautifulSoup's get_text("\\n") did); text inside script, style, noscript and
    template elements is dropped. The <title> names the document and is not a line of its
    text. Each <h1>-<h6> becomes one Markdown heading line ("## Staff") set apart by blank
    lines: passages then know their section, and a heading is never quoted as an answer or
    run into the next line."""

    def __init__(self):
        self.text = TextCollector()
        self.title: list[str] = []
        self._run: list[str] = []
        self._hidden = 0
        self._in_title = False
        self._depth = 0
        self._heading_level = 0  # the open heading's level (0: none)
        self._heading: list[str] = []

    def _flush(self) -> None:
        if self._run:
            self.text.add("".join(self._run))
            self._run = []

    def start(self, tag, attrib) -> None:
        """An opening tag ends the current run of text (inside a heading, the heading goes on)."""
        self._depth += 1
        if self._depth > MAX_HTML_NESTING:
            raise _NestedTooDeep
        if self._heading_level:
            return
        self._flush()
        if tag in _HTML_HIDDEN:
            self._hidden += 1
        elif tag == "title":
            self._in_title = not self.title  # the first <title> names the page
        elif tag in _HTML_HEADINGS:
            self._heading_level = int(tag[1])

    def end(self, tag) -> None:
        """A closing tag ends the current run of text; a heading's end writes its line."""
        self._depth = max(0, self._depth - 1)
        if self._heading_level:
            if tag in _HTML_HEADINGS:
                words = " ".join("".join(self._heading).split())
                if words:
                    self.text.add(f"\n{'#' * self._heading_level} {words}\n")
                self._heading_level, self._heading = 0, []
            return
        self._flush()
        if tag in _HTML_HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag == "title":
            self._in_title = False

    def data(self, text: str) -> None:
        """Text between tags (possibly in several calls for one run)."""
        if self._hidden:
            return
        if self._in_title:
            if len(self.title) < 100:
                self.title.append(text)
            return
        if self._heading_level:
            self._heading.append(text)
            if sum(map(len, self._heading)) > MAX_HEADING_CHARS:  # an unclosed heading: it was text
                self._run, self._heading_level, self._heading = self._heading, 0, []
            return
        self._run.append(text)

    def close(self) -> None:
        """End of the document."""
        self._flush()


def load_html(data: bytes, filename: str = "document.html",
              notes: list[str] | None = None) -> tuple[list[str], str | None]:
    """Visible text of an HTML page and its <title>.

    libxml2's HTML parser (through lxml) calls back for each tag and run of text, fed 64 K
    characters at a time: no tree is built, so memory is the text plus a few bytes per
    open element (BeautifulSoup's tree cost 127 times the size of a page of unclosed
    tags), and the work is linear. A page nested deeper than MAX_HTML_NESTING is read as
    flat text (:func:`_flat_html_text`)."""
    from lxml import etree

    text = decode_text_file(data, filename, notes)
    target = _HtmlText()
    parser = etree.HTMLParser(target=target, remove_comments=True, remove_pis=True, no_network=True)
    try:
        for offset in range(0, len(text), _HTML_FEED_CHARS):
            parser.feed(text[offset : offset + _HTML_FEED_CHARS])
        parser.close()
    except _NestedTooDeep:
        logger.info("%s: nested deeper than %d elements, read as flat text", filename, MAX_HTML_NESTING)
        return [_flat_html_text(text)], clean_title("".join(target.title))
    except etree.LxmlError:  # libxml2 recovers from nearly anything; keep what was read
        target.close()
    del text
    return [target.text.text()], clean_title("".join(target.title))


def _flat_html_text(text: str) -> str:
    """The text of HTML without its tags, comments and script/style/noscript/template
    contents, entities decoded: regular expressions over the text (no parser, no stack),
    linear in time, and in memory about the size of the text (see _html_span_text)."""
    pieces, position = [], 0
    while (hidden := _HTML_HIDDEN_OPEN.search(text, position)) is not None:
        pieces.append(_html_span_text(text, position, hidden.start()))
        if hidden.group(1):
            closing = re.compile(rf"</{hidden.group(1)}\s*>", re.IGNORECASE).search(text, hidden.end())
            position = closing.end() if closing else len(text)
        else:
            closing = text.find("-->", hidden.end())
            position = closing + 3 if closing >= 0 else len(text)
    pieces.append(_html_span_text(text, position, len(text)))
    return "".join(pieces)


_FLAT_CHUNK = 1 << 20


def _html_span_text(text: str, start: int, end: int) -> str:
    """``text[start:end]`` with tags replaced by newlines and entities decoded, a chunk of
    about 1 MB at a time: re.sub collects every match in a list before joining, which for
    millions of tiny tags is many times the text. Chunks end before a "<" or "&" (no tag
    or entity holds one), so none is cut in two."""
    import html

    out = []
    while start < end:
        stop = min(start + _FLAT_CHUNK, end)
        if stop < end:
            cut = max(text.rfind("<", start + 1, stop), text.rfind("&", start + 1, stop))
            stop = cut if cut > start else stop
        out.append(html.unescape(_HTML_TAG.sub("\n", text[start:stop])))
        start = stop
    return "".join(out)

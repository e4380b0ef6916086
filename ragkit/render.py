"""Safe rendering of document text and model output as Streamlit Markdown.

Document text is data: every Markdown/HTML control character is escaped so an uploaded
file can neither inject markup nor load remote images. Model answers keep simple
Markdown (bold, lists) but lose HTML, images and links (a link or image in a model's
answer could leak the conversation to another site).
"""

from __future__ import annotations

import re

from .text import search_tokens

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=])")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\((?:[^)]*)\)")
_AUTOLINK = re.compile(r"<(https?://[^>]+)>")
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")


def escape_markdown(text: str) -> str:
    """Text shown literally in st.markdown (no formatting, links, images, HTML or LaTeX)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def safe_answer_markdown(text: str) -> str:
    """An answer as Markdown without HTML, images, links or LaTeX; [n] markers kept."""
    text = _TAG.sub("", text)
    text = _IMAGE.sub(lambda m: m.group(1), text)
    text = _LINK.sub(lambda m: m.group(1) if not re.fullmatch(r"\d+", m.group(1)) else m.group(0), text)
    text = _AUTOLINK.sub(lambda m: m.group(1).replace("://", ":\u200b//"), text)
    return text.replace("$", "\\$").replace("<", "&lt;")


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


def highlight_markdown(text: str, query: str) -> str:
    """Escaped text with the query's words on a highlighted background."""
    out, cursor = [], 0
    for start, end in match_spans(text, query):
        out.append(escape_markdown(text[cursor:start]))
        out.append(f":orange-background[{escape_markdown(text[start:end])}]")
        cursor = end
    out.append(escape_markdown(text[cursor:]))
    return "".join(out)

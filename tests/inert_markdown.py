"""Checks that Markdown is inert: what a real CommonMark parser and Streamlit would make of it."""

import html
import re

from markdown_it import MarkdownIt

from ragkit.app.render import WORD_JOINER

# What Streamlit's Markdown (remark-gfm, remark-emoji and its own plugins) rewrites in text
# *after* parsing, copied from its bundle: GFM autolink literals, e-mail links, shortcodes.
REWRITTEN_AFTER_PARSING = [
    re.compile(r"(?:^|[\s\W])(https?://|www(?=\.))[-.\w]+", re.IGNORECASE),
    re.compile(r"(?:^|\s|[^\w\s])[-.\w+]+@[-\w]+(?:\.[-\w]+)+"),
    re.compile(r":[\w+-][\w_+-]*:"),
    re.compile(r":material[/_]\w+:"),
]
PLAIN_TAGS = {"p", "br"}
ANSWER_TAGS = PLAIN_TAGS | {"strong", "em", "ul", "ol", "li"}


def parse(markdown: str) -> tuple[str, list[str]]:
    """The HTML CommonMark (+ GFM tables and strikethrough) makes of it, and its text runs."""
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    texts = [child.content for token in md.parse(markdown) if token.type == "inline"
             for child in token.children or [] if child.type == "text"]
    return md.render(markdown), texts


def tags(rendered: str) -> set[str]:
    """Element names in rendered HTML (text '<' is rendered as '&lt;', so each '<' is a tag)."""
    return {name.lower() for name in re.findall(r"</?([A-Za-z][A-Za-z0-9-]*)", rendered)}


def visible(rendered: str) -> str:
    """The text a reader sees: tags dropped, entities decoded, invisible joiners removed."""
    return html.unescape(re.sub(r"<[^>]+>", " ", rendered)).replace(WORD_JOINER, "")


def unescaped(markdown: str, char: str) -> list[int]:
    """Positions of ``char`` not escaped by a backslash."""
    return [m.start(2) for m in re.finditer(rf"((?:\\\\)*)({re.escape(char)})", markdown)
            if not (m.start(1) > 0 and markdown[m.start(1) - 1] == "\\")]


def assert_inert(markdown: str, allowed: set[str]) -> None:
    """Fail unless ``markdown`` renders to the ``allowed`` elements only, with no unescaped
    syntax character and nothing Streamlit or GFM would turn into a link, image or icon."""
    rendered, texts = parse(markdown)
    assert tags(rendered) <= allowed, f"{tags(rendered) - allowed} in {rendered[:300]!r}"
    for text in texts:
        for pattern in REWRITTEN_AFTER_PARSING:
            assert not pattern.search(text), f"{pattern.pattern} would rewrite {text[:200]!r}"
    for char in "$[]<>&`|~":
        assert not unescaped(markdown, char), f"unescaped {char!r} in {markdown[:300]!r}"
    directives = [at for at in unescaped(markdown, ":") if re.match(r"[\w/+-]", markdown[at + 1 : at + 2])]
    assert not directives, f"a ':' that could start a directive or shortcode in {markdown[:300]!r}"


def assert_inert_for_viewers(markdown: str, allowed: set[str]) -> None:
    """Fail unless ``markdown`` renders to the ``allowed`` elements only in CommonMark (+ GFM
    tables and strikethrough), with nothing GFM turns into a link after parsing, no maths
    ($ pairs) and no raw HTML: what an exported file must be in any viewer (GitHub,
    Obsidian, VS Code). Streamlit's own shortcodes and directives do not apply there."""
    rendered, texts = parse(markdown)
    assert tags(rendered) <= allowed, f"{tags(rendered) - allowed} in {rendered[:300]!r}"
    for text in texts:
        for pattern in REWRITTEN_AFTER_PARSING[:2]:
            assert not pattern.search(text), f"{pattern.pattern} would rewrite {text[:200]!r}"
    for char in "<`|~":
        assert not unescaped(markdown, char), f"unescaped {char!r} in {markdown[:300]!r}"
    for line in markdown.splitlines():
        assert len(unescaped(line, "$")) < 2, f"a $ pair could open maths in {line[:200]!r}"

"""The language layer: which language a text is in, and everything that differs by language.

Every rule that reads words, patterns or weights that differ between English and Chinese
reads them from the text's :class:`Language` (``language_of``), never from a branch of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragkit.lang.text import is_cjk_text


@dataclass(frozen=True)
class Language:
    """A language ragkit reads and answers in."""

    code: str  # "en", "zh": the key of every per-language message and prompt
    name: str  # as a prompt names it ("English", "Chinese")
    full_stop: str  # what ends a sentence the answer writes
    colon: str  # between a label and what it labels ("Alpha Tower: …")
    joiner: str  # between two quoted sentences


ENGLISH = Language("en", "English", full_stop=".", colon=": ", joiner=" ")
CHINESE = Language("zh", "Chinese", full_stop="。", colon="：", joiner="")


def language_of(text: str) -> Language:
    """The language ``text`` is written in: Chinese when a fifth of its letters are CJK."""
    return CHINESE if is_cjk_text(text) else ENGLISH

"""Cutting an over-long English sentence to the clauses that answer, for the offline answerer.

A sentence too long for the answer's room is cut at its clause borders (after a comma,
semicolon or colon, around a dash or a bracket, before "and", "but", "while", "which", "who",
"where", "whereas") rather than at a fixed-width window: the clause that holds the most of the
question's weight, and the thing of the kind asked (``answer_types``) when the question sets
one, is kept whole, and its neighbours are added, the better-scoring first, while they fit.
"The Rev. Michael J. Shea, a 1904 graduate, wrote the music, and his brother, John F. Shea,
who earned degrees in 1906 and 1908, wrote the original lyrics." cut to 60 characters for
"Who wrote the music for the Victory March?" keeps "The Rev. Michael J. Shea, a 1904
graduate, wrote the music,". Measured on the shared English set (``scripts/answer_replay.py``,
the answers of ``eval --answers`` replayed, weights otherwise as before), against the fixed-width
window: answer_contains / chars 0.714 / 197 -> 0.755 / 188 at a 200-character budget, 0.770 / 254
-> 0.803 / 244 at 260, 0.829 / 329 -> 0.825 / 321 at 340 (where few sentences are cut).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ragkit.types import Span

_BREAK = re.compile(r"(?<=[,;:])\s+|\s+(?=[(–—])|(?<=[)–—])\s+"
                    r"|\s+(?=(?:and|but|while|which|who|where|whereas)\s)")
ELLIPSIS = "…"


def split_clauses(text: str) -> list[Span]:
    """``text``'s clauses in order, with their offsets (see the module docstring for the borders)."""
    spans, start = [], 0
    for border in _BREAK.finditer(text):
        if border.start() > start:
            spans.append(Span(text[start : border.start()], start, border.start()))
        start = border.end()
    if start < len(text):
        spans.append(Span(text[start:], start, len(text)))
    return spans


def clause_window(text: str, room: int, score: Callable[[str], float], answer_spans: list | None = None) -> str | None:
    """``text`` cut to at most ``room`` characters at clause borders, with an ellipsis where it
    was cut: the best clause (``score``: its share of the question's words, plus one when it holds
    one of ``answer_spans``, parts of the kind asked) and the neighbours that fit, the
    better-scoring side first (the following one on a tie). None when even the best clause does
    not fit; ``text`` itself when it fits whole."""
    if len(text) <= room:
        return text
    clauses = split_clauses(text)
    if not clauses:
        return None
    scores = [score(c.text) + any(c.start <= s.start and s.end <= c.end for s in answer_spans or [])
              for c in clauses]
    best = max(range(len(clauses)), key=lambda i: (scores[i], -i))
    low = high = best

    def length(first: int, last: int) -> int:
        marks = (clauses[first].start > 0) + (clauses[last].end < len(text))
        return clauses[last].end - clauses[first].start + marks * len(ELLIPSIS)

    if length(low, high) > room:
        return None
    while True:
        sides = []
        if low > 0 and length(low - 1, high) <= room:
            sides.append((scores[low - 1], 0, "before"))
        if high < len(clauses) - 1 and length(low, high + 1) <= room:
            sides.append((scores[high + 1], 1, "after"))
        if not sides:
            break
        if max(sides)[2] == "before":
            low -= 1
        else:
            high += 1
    start, end = clauses[low].start, clauses[high].end
    return (ELLIPSIS if start > 0 else "") + text[start:end].strip() + (ELLIPSIS if end < len(text) else "")

"""Comparisons, offline: each side's fact and the verdict the two facts allow.

- ``side_fact``: the sentence of a side's passage that says what the question asks of it
  (the sentence sharing most of the asked words; English ties broken by meaning; a
  comparative such as "taller" or 更早 wants a sentence holding a number).
- ``verdict``: what the two facts decide, by the question's form:
  - a comparative ("Which is taller, X or Y?", "谁出生得更早？"): the side whose first
    number (digits or Chinese numerals) is larger, or smaller for "first / earlier /
    older / 更早";
  - "the same" (同一): yes when the facts share a name the question does not (the same
    sea, city, person; for a year, the same number), no when each names its own;
  - "both" (都): yes when each side's passage says the question's own name;
  - nothing when the facts do not allow it (the facts are then shown, each labelled).
"""

from __future__ import annotations

import re

from ragkit.answering.decompose import Comparison, name_candidates
from ragkit.lang.text import is_cjk_text, is_heading, search_tokens, split_sentences
from ragkit.types import Hit

_COMPARATIVE = re.compile(r"(?i)\b(?:\w+er|more|less|fewer|first|last|earlier|later|older|younger|bigger)\b"
                          r"|更|最|先|早|晚")
_SMALLER_WINS = re.compile(r"(?i)\b(?:first|earlier|older|before|fewer|less|smaller|shorter|lower)\b"
                           r"|早|先|少|小|矮|短|低")
# a comparison in time (born earlier, founded first, 更早) compares years; any other (taller, more
# students, 更高) compares a measure, never a year
_IN_TIME = re.compile(r"(?i)\b(?:earl(?:y|ier|iest)|first|last|old(?:er|est)|young(?:er|est)|lat(?:er|est)|"
                      r"new(?:er|est)|before|after)\b|早|先|晚|老")
_YEAR_VALUE = re.compile(r"(?<![\d,.])(?:1\d{3}|20\d{2})(?![\d]|,\d)|[一二三四五六七八九〇零]{4}(?=年)")
_SAME = re.compile(r"(?i)\bsame\b|同一|相同")
_BOTH = re.compile(r"(?i)\bboth\b|都")
_YEAR = re.compile(r"(?i)\byear\b|年")
_DIGITS = re.compile(r"\d[\d,]*(?:\.\d+)?")
_CJK_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
               "九": 9}
_CJK_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10_000, "亿": 100_000_000}
# one numeral before a unit of measure counts ("九米"); before a classifier it is an article ("一座塔")
_CJK_NUMBER = re.compile(r"[零〇一二两三四五六七八九十百千万亿]{2,}|[二两三四五六七八九十](?=[米岁年人名])")
_CJK_NOT_ASKED = frozenset("哪一更最比较是否都和与的了在谁几多少个座所位")


def is_comparative(question: str) -> bool:
    """True for "Which is taller / founded first …", 更高, 更早."""
    return bool(_COMPARATIVE.search(question)) and not _SAME.search(question)


def side_sentences(hit: Hit) -> list[str]:
    """A side's passage as sentences, without its title line or headings."""
    return [span.text.strip() for span in split_sentences(hit.context.text)
            if span.text.strip() and not is_heading(span.text) and span.text.strip() != hit.title]


def side_fact(question: str, part: str, side: str, hit: Hit, embed=None) -> str:
    """The sentence of ``hit`` that says what ``question`` asks of ``side`` ("" for none)."""
    sentences = side_sentences(hit)
    if is_comparative(question):
        sentences = [s for s in sentences if compared_number(question, s) is not None] or sentences
    if not sentences:
        return ""
    asked = _asked_words(part, side)
    overlap = [_overlap(asked, sentence) for sentence in sentences]
    best = max(overlap)
    tied = [s for s, score in zip(sentences, overlap) if score == best]
    if len(tied) > 1 and embed is not None and not is_cjk_text(part):
        vectors = embed([part, *tied])
        return tied[int((vectors[1:] @ vectors[0]).argmax())]
    return tied[0]


def verdict(question: str, comparison: Comparison, facts: list[str], hits: list[Hit]) -> str:
    """The side's name, "yes" / "no" (是 / 否), or "" when the facts do not decide it."""
    if len(facts) != 2 or not all(facts):
        return ""
    cjk = is_cjk_text(question)
    yes, no = ("是", "否") if cjk else ("Yes", "No")
    if _SAME.search(question):
        if _YEAR.search(question):
            first, second = (first_number(fact) for fact in facts)
            return "" if first is None or second is None else (yes if first == second else no)
        names = [set(_fact_names(fact, question, comparison)) for fact in facts]
        if not all(names):
            return ""
        return yes if names[0] & names[1] else no
    if _BOTH.search(question):
        wanted = _fact_names(question, " ".join(comparison.sides), comparison)
        if wanted and all(any(name in hit.context.text for name in wanted) for hit in hits):
            return yes
        return ""
    if is_comparative(question):
        values = [compared_number(question, fact) for fact in facts]
        if None in values or values[0] == values[1]:
            return ""
        smaller = comparison.sides[0] if values[0] < values[1] else comparison.sides[1]
        larger = comparison.sides[1] if smaller == comparison.sides[0] else comparison.sides[0]
        return smaller if _SMALLER_WINS.search(question) else larger
    return ""


def compared_number(question: str, text: str) -> float | None:
    """The number of ``text`` a comparative compares: its first year for a comparison in
    time, else its first number that is not a year."""
    years = [m for m in _YEAR_VALUE.finditer(text)]
    if _IN_TIME.search(question):
        return first_number(years[0].group(0)) if years else None
    spans = [(m.start(), m.end()) for m in years]
    rest = "".join(" " if any(a <= i < b for a, b in spans) else ch for i, ch in enumerate(text))
    return first_number(rest)


def first_number(text: str) -> float | None:
    """The first number of ``text``: digits ("1,200", "3.5") or Chinese numerals (四十三)."""
    found = [(m.start(), float(m.group(0).replace(",", ""))) for m in _DIGITS.finditer(text)][:1]
    found += [(m.start(), value) for m in _CJK_NUMBER.finditer(text)
              if (value := cjk_numeral(m.group(0))) is not None][:1]
    return min(found)[1] if found else None


def cjk_numeral(text: str) -> float | None:
    """The value of a Chinese numeral (四十三 → 43, 一千二百 → 1200, 一九〇五 → 1905)."""
    if all(ch in _CJK_DIGITS for ch in text):  # read digit by digit (years)
        return float("".join(str(_CJK_DIGITS[ch]) for ch in text))
    total, section, digit = 0, 0, 0
    for ch in text:
        if ch in _CJK_DIGITS:
            digit = _CJK_DIGITS[ch]
        elif ch in ("万", "亿"):
            total = (total + section + digit) * _CJK_UNITS[ch]
            section = digit = 0
        elif ch in _CJK_UNITS:
            section += (digit or 1) * _CJK_UNITS[ch]
            digit = 0
        else:
            return None
    return float(total + section + digit)


def _asked_words(part: str, side: str) -> set[str]:
    """What the part asks, without the side's own words: English stems, or Chinese
    characters (出生, 建校, 高: jieba cuts a short question and a sentence differently)."""
    if is_cjk_text(part):
        return {ch for ch in part.replace(side, "") if is_cjk_text(ch) and ch not in _CJK_NOT_ASKED}
    return set(search_tokens(part)) - set(search_tokens(side))


def _overlap(asked: set[str], sentence: str) -> int:
    if is_cjk_text(sentence):
        return sum(ch in sentence for ch in asked)
    return len(asked & set(search_tokens(sentence)))


def _fact_names(text: str, question: str, comparison: Comparison) -> list[str]:
    """Names ``text`` holds that are neither a side nor said by ``question``."""
    return [name for name in name_candidates(text, question)
            if not any(name in side or side in name for side in comparison.sides)]

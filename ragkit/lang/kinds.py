"""What kind of answer a question asks for, and where a text says a thing of that kind.

"When / in what year" asks for a date, "how many / 多少" for a number, "who / 谁" for a
person, "where / 哪里" for a place. A sentence that holds such a thing the question does not
already name is a likelier answer than one that only repeats the question's words, and a
passage that holds none cannot answer it ("What is the population of Jan Mayen?" over a page
that names Jan Mayen only as a station's island). Used by the offline answerer (which
sentence, which part of it to highlight) and by the evidence grade.

Person and place spans are found in English by capitals; in Chinese, which has none, only
``says_kind`` looks for them, by jieba's part-of-speech tags (nr: a person's name, ns: a
place name): too rough to highlight a span, enough to tell a passage that names a person
from one that names none.

``kind_naming_words``: the words of a question that only name the kind of answer asked for
("how many", "which year", "价格", "品种"): an answer says a number, a year or a variety, rarely
the word itself, so neither the grade nor the answer check holds their absence against a text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ragkit.lang.text import is_cjk_text, search_tokens

NUMBER, DATE, PERSON, PLACE = "number", "date", "person", "place"

_EN_TYPES = (
    (DATE, re.compile(r"^\s*when\b|\b(?:what|which|in\s+what|in\s+which)\s+(?:year|date|decade|century|month|day)\b"
                      r"|\bwhat\s+time\b", re.IGNORECASE)),
    (NUMBER, re.compile(r"\bhow\s+(?:many|much|long|old|far|often|tall|high|big|large|wide|deep|heavy)\b"
                        r"|\b(?:what|which)\s+(?:percentage|percent|number|amount|size|population|price|cost|"
                        r"height|length|age|share|rank|score|total)\b|\bpopulation\b", re.IGNORECASE)),
    (PERSON, re.compile(r"^\s*(?:who|whom|whose)\b|\bwho\s+(?:was|is|were|are|did|does|had|has)\b"
                        r"|\b(?:what|which)\s+(?:person|president|artist|author|architect|director|founder|"
                        r"coach|engineer|designer|writer|leader|king|queen|pope|bishop|player|scientist)\b",
                        re.IGNORECASE)),
    (PLACE, re.compile(r"^\s*where\b|\bwhere\s+(?:is|was|are|were|did|does)\b"
                       r"|\b(?:what|which)\s+(?:city|country|state|town|place|location|region|continent|island|"
                       r"county|province|village)\b|\bin\s+what\s+(?:city|country|state|town)\b", re.IGNORECASE)),
)
_ZH_TYPES = (
    (DATE, re.compile(r"哪一年|哪年|何年|何时|什么时候|哪一天|哪天|日期|年份|几月|几号|何日|哪个月|什么时间")),
    (NUMBER, re.compile(r"多少|几|多大|多高|多长|多重|多远|多久|多深|多宽|第几|人口|面积|数量")),
    (PERSON, re.compile(r"谁|哪位|什么人")),
    (PLACE, re.compile(r"哪里|哪儿|什么地方|何地|何处|哪个国家|哪个城市|哪个省")),
)

_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
           "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_NUMBER_WORDS = ("one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
                 "sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|"
                 "hundred|thousand|million|billion|dozen|half|twice|once")
_CJK_NUMERAL = "零〇一二三四五六七八九十百千万亿两"
_SPAN_PATTERNS = {
    DATE: re.compile(
        rf"\b(?:1[0-9]{{3}}|20[0-9]{{2}})s?\b|\b(?:{_MONTHS})\.?\s+\d{{1,2}}\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?"
        rf"(?:{_MONTHS})\b|\b(?:{_MONTHS})\b|\d+\s*[年月日]|[{_CJK_NUMERAL}]{{2,}}年|[{_CJK_NUMERAL}]+[月日]|"
        r"\b\d{1,2}(?:st|nd|rd|th)\s+century\b|\b\d{1,2}[:.]\d{2}\b|\b(?:monday|tuesday|wednesday|thursday|"
        r"friday|saturday|sunday|spring|summer|autumn|winter|noon|midnight|dawn|dusk)s?\b|"
        r"星期[一二三四五六日天]|周[一二三四五六日]", re.IGNORECASE),
    NUMBER: re.compile(
        rf"[$€£¥]?\d[\d,.]*(?:\s*(?:%|percent|million|billion|thousand|hundred))?|\b(?:{_NUMBER_WORDS})\b|"
        rf"[{_CJK_NUMERAL}]{{2,}}|[{_CJK_NUMERAL}]\s*(?:[个位名次岁米年月日人座家种项条])", re.IGNORECASE),
    PERSON: re.compile(
        r"\b(?:(?:Rev|Fr|Dr|Mr|Mrs|Ms|Prof|Sir|St)\.?\s+)?[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)?"
        r"(?:\s+(?:[A-Z]\.\s*)*(?:[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)?|(?:de|van|von|da|di|del|la|le)\b))*"),
    PLACE: re.compile(r"\b[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)?(?:\s+(?:of\s+)?[A-Z][a-z]+)*"),
}


def answer_type(question: str) -> str | None:
    """The kind of answer ``question`` asks for: "date", "number", "person", "place", or None."""
    table = _ZH_TYPES if is_cjk_text(question) else _EN_TYPES
    for kind, pattern in table:
        if pattern.search(question):
            return kind
    return None


@dataclass(frozen=True)
class TypedSpan:
    """A part of a text of the asked kind: [start, end) in the text."""

    start: int
    end: int
    text: str


def says_count(text: str) -> bool:
    """True when ``text`` says a number (digits, a number word, Chinese numerals with a measure
    word), not only a date without one ("Jan", "summer"). (``graph.grading.holds_number`` is
    the grade's looser test: any digit or numeral character.)"""
    return bool(_SPAN_PATTERNS[NUMBER].search(text))


def says_date(text: str) -> bool:
    """True when ``text`` says a date or a time (a year, a month, a day, a clock time, a
    weekday, a season), not only a count ("23 permanent staff")."""
    return bool(_SPAN_PATTERNS[DATE].search(text))


def typed_spans(text: str, kind: str | None, question: str) -> list[TypedSpan]:
    """Spans of ``text`` of the kind asked (see answer_type) that say something the
    question does not: their words are not all among the question's. A date also counts
    as a number and a number as a date (a clock time, a count of days)."""
    if kind is None:
        return []
    if (kind in (PERSON, PLACE)) and is_cjk_text(question):
        return []
    asked = set(search_tokens(question, stem=False)) | set(re.findall(r"\d+", question))
    # "When" is answered by a time of day or a weekday as well as a date, and a clock time or a
    # count is a number: dates and numbers answer each other's questions.
    kinds = (DATE, NUMBER) if kind in (DATE, NUMBER) else (kind,)
    found: list[TypedSpan] = []
    for each in kinds:
        for match in _SPAN_PATTERNS[each].finditer(text):
            piece = match.group(0).strip().rstrip(".,;:")
            if not piece or (each in (PERSON, PLACE) and _sentence_opening(text, match.start())
                             and " " not in piece):
                continue
            words = set(search_tokens(piece, stem=False)) | set(re.findall(r"\d+", piece))
            if words and words <= asked:
                continue
            if each in (PERSON, PLACE):
                skip = _leading_stopwords(piece)
                if skip >= len(piece):
                    continue
                start = match.start() + skip
                found.append(TypedSpan(start, match.start() + len(piece), piece[skip:]))
                continue
            found.append(TypedSpan(match.start(), match.start() + len(piece), piece))
    return found


_CAPITALISED_STOP = frozenset(
    "the a an in on at of for by with from to this that these those it its he she they his her their there "
    "when where who what which while after before during since however although though but and or if as "
    "many most some all each every one two three first second also".split())


def _leading_stopwords(piece: str) -> int:
    """How many characters of ``piece`` its leading common words take ("The", "In", "Its")."""
    skip = 0
    for word in re.finditer(r"\S+\s*", piece):
        if word.group(0).strip().lower() not in _CAPITALISED_STOP:
            return word.start()
        skip = word.end()
    return skip


def _sentence_opening(text: str, position: int) -> bool:
    before = text[:position].rstrip()
    return not before or before[-1] in ".!?。！？;:\n\"“(["


def holds_answer(text: str, question: str) -> bool | None:
    """Whether ``text`` holds something of the kind ``question`` asks for (None: the question
    sets no kind this module can find)."""
    kind = answer_type(question)
    if kind is None or (kind in (PERSON, PLACE) and is_cjk_text(question)):
        return None
    return bool(typed_spans(text, kind, question))


def says_kind(text: str, kind: str | None, question: str) -> bool:
    """Whether ``text`` says a thing of ``kind`` that ``question`` does not already name: a
    typed span (see ``typed_spans``) or, for a Chinese person or place, a word jieba tags
    as one."""
    if kind in (PERSON, PLACE) and is_cjk_text(question):
        return any(word not in question for word in _cjk_names(text, _CJK_NAME_TAGS[kind]))
    return bool(typed_spans(text, kind, question))


_CJK_NAME_TAGS = {PERSON: ("nr", "nrfg", "nrt"), PLACE: ("ns",)}


@lru_cache(maxsize=1)
def _jieba_tagger():
    import logging

    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    return jieba.posseg.dt


@lru_cache(maxsize=4096)
def _cjk_tagged(text: str) -> tuple[tuple[str, str], ...]:
    return tuple((pair.word, pair.flag) for pair in _jieba_tagger().cut(text))


def is_cjk_action(text: str) -> bool:
    """True when jieba tags every word of a Chinese ``text`` as a verb ("创立", "成立"), not a
    verbal noun ("设计", "vn") or a noun: what a question says was done, never what it is about."""
    tagged = [flag for word, flag in _cjk_tagged(text) if word.strip()]
    return bool(tagged) and all(flag.startswith("v") and flag != "vn" for flag in tagged)


def _cjk_names(text: str, tags: tuple[str, ...]) -> list[str]:
    """The words of ``text`` jieba tags with one of ``tags`` (two characters or more)."""
    return [word for word, flag in _cjk_tagged(text) if flag in tags and len(word) >= 2]


# Words that name the kind of thing asked, not what it is about. English as search-token stems.
_KIND_NAMING_LATIN = frozenset(search_tokens(
    "many much year date time day month decade century number amount percentage type kind name term "
    "person place long old often far age cost price population"))
_KIND_NAMING_CJK = frozenset(
    "几点 几时 时间 日期 年份 地方 哪些地方 名字 名 名称 几个 多少 几 钱 哪国 国家 品种 种类 类型 价格 价钱 票价 "
    "费用 地址 人口".split())
# Kind nouns a word right before narrows ("茶叶品种", "门票价格"): the answer names one of them
# without repeating that word. Not 时间/人口/多少: "北京人口" asks about 北京, which must be said.
_NARROWED_KINDS_CJK = frozenset("品种 种类 类型 名字 名称 价格 价钱 票价 费用 日期 地址".split())


def kind_naming_words(words: list[str], question: str) -> frozenset[str]:
    """Those of a question's ``words`` (its jieba words for Chinese, search-token stems for
    English) that only name the kind of answer asked for. In Chinese, a word right before a
    variety, name, price, date or address noun narrows the kind ("茶叶品种", tea varieties) and
    is one too: the answer names a variety ("大红袍") without repeating it."""
    if not is_cjk_text(question):
        return frozenset(word for word in words if word in _KIND_NAMING_LATIN)
    kinds = {word for word in words if word in _KIND_NAMING_CJK}
    kinds |= {word for word in words for kind in kinds & _NARROWED_KINDS_CJK if word + kind in question}
    return frozenset(kinds)


_YEAR = r"(1[0-9]{3}|20[0-9]{2})"
_YEAR_RANGE = re.compile(rf"\b{_YEAR}\s*(?:[-–—]|to|until|till|through|and)\s*{_YEAR}\b", re.IGNORECASE)


def years_spanned(text: str, years: set[str]) -> set[str]:
    """Those of ``years`` (as digits) that lie inside a span of years ``text`` names ("from 1946
    to 1952", "1946–1952", "between 1946 and 1952"): a text saying who served from 1946 to 1952
    says who served in 1947, without the word."""
    found: set[str] = set()
    for match in _YEAR_RANGE.finditer(text):
        first, last = int(match.group(1)), int(match.group(2))
        found |= {year for year in years if first <= int(year) <= last}
    return found


def years_named(question: str) -> set[str]:
    """The years (four digits, 1000-2099) ``question`` names."""
    return set(re.findall(rf"\b{_YEAR}\b", question))

"""A question's structure and the entities of passages, offline: what agentic mode's
rounds search for next (no model involved).

- ``comparison_sides``: "Which is older, X or Y?", "Were X and Y ...?", "X和Y，哪个…？"
  name two things; each side is searched on its own.
- ``has_hop_structure``: the question describes a thing by its relation to another
  ("the founder of the company that makes …", "发明…的人"): its answer may sit in a
  document the first search only names.
- ``mentioned_titles``: the knowledge base's document titles a passage names (a proper
  name: a Latin title holds a capital letter or a digit; a Chinese one two characters or
  more), the strongest bridge to the next hop.
- ``name_candidates``: capitalised names (English) and jieba's person, place and
  organisation names (Chinese) in a passage that the question does not name: bridges when
  no title is named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ragkit.lang.text import CJK_CHAR, is_cjk_text, jieba_segmenter, search_tokens, split_sentences, title_positions

# --- comparisons -------------------------------------------------------------------------

_EN_CHOICE = re.compile(r"^(?P<head>(?:which|who|what)\b[^,]*?),\s*(?P<a>.+?)\s+or\s+(?P<b>.+?)$", re.IGNORECASE)
_EN_BOTH = re.compile(r"^(?:are|were|is|was|do|did|does|have|has)\s+(?:both\s+)?(?P<a>.+?)\s+and\s+(?P<tail>.+)$",
                      re.IGNORECASE)
_ZH_CHOICE = re.compile(r"^(?P<a>[^，,和与及跟]+?)(?:和|与|跟|及)(?P<b>[^，,]+?)[，,](?P<rest>.+)$")
_ZH_BOTH = re.compile(rf"^(?P<a>[{CJK_CHAR}A-Za-z0-9]+?)(?:和|与|跟)(?P<b>[{CJK_CHAR}A-Za-z0-9]+?)"
                      r"(?P<rest>(?:是否|是不是|都|的).+)$")
_ZH_ROLE = re.compile(r"^(?:作曲家|诗人|画家|作家|歌手|乐队|公司|学校)")
_ZH_ASKING = re.compile(r"什么|哪|谁|怎么|多少|几")
# What the rest of a question says when it compares the two things it joins: a choice between
# them (哪个/谁/更…), both of them (是否都/同一/分别) or their difference (区别/不同). Without it,
# "X与Y" is one name ("德国环境与自然保护联盟的英文是什么") or a clause ("长宗我部信亲与信长交好，
# 得到了什么奖励"), and 哪些/哪几 ask for a list, not a choice.
_ZH_COMPARES = re.compile(r"哪(?![些几])|谁|更(?![名改换新])|较|相比|比起|是否|是不是|都|同一|相同|一样|分别|区别|"
                          r"不同|差别|差异|异同|共同")


@dataclass(frozen=True)
class Comparison:
    """Two things a question compares and what it asks of each."""

    sides: tuple[str, str]
    asked: str  # the question with the sides left out ("Which was founded first")

    def sub_questions(self) -> list[str]:
        """One self-contained search per side."""
        return [f"{side} {self.asked}".strip() for side in self.sides]


def comparison_sides(question: str) -> Comparison | None:
    """The two sides of a comparison question, or None."""
    text = question.strip().rstrip("?？")
    if is_cjk_text(text):
        match = _ZH_CHOICE.match(text) or _ZH_BOTH.match(text)
        if not match:
            return None
        sides = tuple(_ZH_ROLE.sub("", side).strip() for side in (match["a"], match["b"]))
        rest = match["rest"]
        if not _ZH_COMPARES.search(rest):
            return None
        if any(_ZH_ASKING.search(side) for side in sides):
            return None  # "T-92可与什么一起串联": 与 joins the thing asked for, not two compared things
        return Comparison(sides, rest) if all(len(s) >= 2 for s in sides) else None
    match = _EN_CHOICE.match(text)
    if match:
        sides = (_side(match["a"]), _side(match["b"]))
        return Comparison(sides, match["head"].strip()) if all(sides) else None
    match = _EN_BOTH.match(text)
    if match:
        tail = _side(match["tail"], keep_rest=True)
        name = _LATIN_NAME.match(tail)
        if name:
            sides = (_side(match["a"]), name.group(0).strip())
            return Comparison(sides, tail[name.end():].strip()) if all(sides) else None
    return None


# What makes a Chinese side's sub-question a comparison ("谁出生得更早", "哪一所建校更早"): the
# choice between the sides and the comparative. Neither is said by a side's own passage.
_ZH_COMPARATIVE = re.compile(r"谁|哪一?[个所家位座部本首条项种]?|得?[更较最][\u4e00-\u9fff]?")


def side_question(part: str) -> str:
    """What one side's passage must say, without the comparison's wording ("闻笛秋
    谁出生得更早" → "闻笛秋 出生"): what a side is graded on. English parts are unchanged (the
    grade's sentence similarity reads "Which is older" as a question about age)."""
    if not is_cjk_text(part):
        return part
    return re.sub(r"\s+", " ", _ZH_COMPARATIVE.sub("", part)).strip() or part


def _side(text: str, keep_rest: bool = False) -> str:
    """A compared thing without its article and role words ("the composer Adela Voskuyl"
    → "Adela Voskuyl"); ``keep_rest``: only the leading words are dropped."""
    words = text.strip().split()
    while words and (words[0].lower() == "the" or words[0].islower()):
        words = words[1:]
    side = " ".join(words)
    return side if keep_rest or (side and side[0].isupper()) else ""


# --- hops -------------------------------------------------------------------------------

# "the founder of", "the company that", "the town where", "the album released by", "'s":
# a thing described through another. The described thing is a common noun (lower case):
# "The Basilica of the Sacred Heart" names its thing, it does not describe it.
_EN_RELATION = re.compile(
    r"\b(?i:the|a|an|its|his|her|their)\s+(?:[a-z]+\s+){0,2}?[a-z]+\s+(?:of|that|which|who|whom|whose|where|by|"
    r"on which|in which|at which)\b|\w['’]s\s+[a-z]+\b")
_ZH_RELATION = re.compile(r"的(?:那|这)?(?:个|位|座|所|家|部|条|首)?[\u4e00-\u9fff]{1,6}")


def has_hop_structure(question: str) -> bool:
    """True when the question names a thing through its relation to another one."""
    if is_cjk_text(question):
        return bool(_ZH_RELATION.search(question))
    return bool(_EN_RELATION.search(question))


_LATIN_NAME = re.compile(r"\b(?:[A-Z][\w'’-]*|[A-Z]?\d[\w-]*)(?:\s+(?:of|the|and|&|de|van|von|on)?\s*"
                         r"(?:[A-Z][\w'’-]*|\d[\w-]*))*")
_LEADING = frozenset({"The", "A", "An", "In", "On", "At", "It", "Its", "He", "She", "They", "His", "Her", "Their",
                      "This", "That", "These", "Those", "Today", "Before", "After", "Since", "When", "While"})
CJK_NAME_FLAGS = ("nr", "ns", "nt", "nz")
# A name made only of these words and figures is no thing a document is about: a title
# cut off by its abbreviation's full stop ("Rev" of "Rev. Theodore Hesburgh") or a date
# ("April 1879"). Searching it as a bridge reaches passages about something else.
_NOT_NAMES = frozenset({"rev", "dr", "mr", "mrs", "ms", "fr", "st", "sr", "jr", "prof", "sir", "gen", "col", "capt",
                        "lt", "sgt", "hon", "mt", "no", "vol", "january", "february", "march", "april", "may", "june",
                        "july", "august", "september", "october", "november", "december", "jan", "feb", "mar",
                        "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "monday", "tuesday",
                        "wednesday", "thursday", "friday", "saturday", "sunday", "of", "the", "and"})


def _is_title_or_date(name: str) -> bool:
    return all(word.lower().strip(".,") in _NOT_NAMES or word.isdigit() for word in name.split())


def mentioned_titles(text: str, titles: dict[str, str]) -> list[str]:
    """The titles of ``titles`` (title → document id) that ``text`` names (``text.title_positions``),
    longest first (a title inside a longer named one, "Brightwick" in "Brightwick K4", is not counted)."""
    found: list[str] = []
    # a title the text does not hold as it is written is named nowhere in it: checked first, as the
    # match itself compiles a pattern per title (15,000 titles took 2 s a text, now a few ms)
    for title in sorted((title for title in titles if title.strip() in text), key=len, reverse=True):
        if title_positions(title, text) and not any(title in longer for longer in found):
            found.append(title)
    return found


@lru_cache(maxsize=1)
def _posseg():
    jieba_segmenter()
    import jieba.posseg

    return jieba.posseg


def name_candidates(text: str, question: str) -> list[str]:
    """Names in ``text`` that ``question`` does not contain, in reading order, each once:
    capitalised runs for English (a sentence's first word only when it is part of a longer
    name), jieba's person/place/organisation/other proper names for Chinese."""
    asked = set(search_tokens(question))
    names: list[str] = []
    if is_cjk_text(text):
        for word, flag in _posseg().lcut(text):
            if flag in CJK_NAME_FLAGS and len(word) >= 2 and word not in question and word not in names:
                names.append(word)
        return names
    for sentence in split_sentences(text):
        opening = len(sentence.text) - len(sentence.text.lstrip())
        for match in _LATIN_NAME.finditer(sentence.text):
            name = match.group(0).strip()
            words = name.split()
            while words and words[0] in _LEADING:
                words = words[1:]
            if len(words) == 1 and match.start() == opening and words[0] == name:
                continue  # one capitalised word opening a sentence ("Each", "Besides"): no name
            name = " ".join(words)
            if len(name) < 3 or not any(ch.isupper() for ch in name) or _is_title_or_date(name):
                continue
            if set(search_tokens(name)) <= asked or name in names:
                continue
            names.append(name)
    return names

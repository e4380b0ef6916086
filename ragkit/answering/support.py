"""Does a passage state a sentence? The offline support check, judged on content.

A sentence is supported by a passage when the passage states every *key item* of it and
most of its *claim words*:

- key items are what a wrong answer gets wrong: every quantity (a number with its unit or
  currency, a year, a month, a percentage), every name or place, and every word a
  dictionary does not know. They are compared normalised, so that "3 years" = "3-year",
  "$349.00" = "349 US dollars", "1,5" = "1.5", "三十六" = "36", "3.6亿" = "360,000,000",
  "March" = "3月", "30%" = "百分之三十";
- claim words are the other content words (stemmed in English, jieba words in Chinese, not
  the units of its figures); at least ``MIN_CLAIM_SHARE`` of them must be in the passage
  (or all but one: "The warranty lasts 3 years" over "a 3-year warranty"), so that a
  sentence that only shares its figures and half its words with a passage is not taken as
  stated by it.

Names in English are capitalised words that do not open the sentence (an opening word
counts when the next word is capitalised too: "Tomas Eller founded…"); in Chinese, jieba's
part-of-speech tags (person, place, organisation, other proper noun) and words outside its
dictionary (new words are mostly names). ``python -m ragkit eval --support`` measures the
check on labelled sentences built from the shared QA sets (``support_eval.py``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from ragkit.lang.text import CHINESE_STOPWORDS, CJK_CHAR, ENGLISH_STOPWORDS, PERSON_TITLES, search_tokens

# At least this share of a sentence's claim words (content words that are not key items)
# must be in the passage: two in three, so that a sentence sharing half its words and its
# figures with a passage (a different claim about the same thing) is not taken as stated.
MIN_CLAIM_SHARE = 2 / 3


@dataclass(frozen=True)
class Quantity:
    """A number as stated: its value and its unit ("year", "usd", "%", "kg"…; "" for none)."""

    value: float
    unit: str = ""

    def words(self) -> str:
        """The quantity in words for a message ("349 usd", "3 year")."""
        number = f"{self.value:,.0f}" if self.value == int(self.value) else f"{self.value:g}"
        return f"{number} {self.unit}".strip()


@dataclass(frozen=True)
class Verdict:
    """Whether a passage states a sentence, and why (in words, for the trace)."""

    supported: bool
    reason: str


# ----- normalising numbers ------------------------------------------------------------------

_UNITS = {
    "usd": r"\$|us\$|usd|us dollars?|dollars?|美元|美金",
    "eur": r"€|eur|euros?|欧元",
    "gbp": r"£|gbp|pounds? sterling|british pounds?|英镑",
    "cny": r"¥|cny|rmb|yuan|renminbi|人民币|元",
    "jpy": r"jpy|yen|日元",
    "%": r"%|percent|per cent|pct",
    "year": r"years?|yrs?|年",
    "month": r"months?|个月",
    "week": r"weeks?|周|星期",
    "day": r"days?|天",
    "hour": r"hours?|hrs?|h|小时",
    "minute": r"minutes?|mins?|分钟",
    "second": r"seconds?|secs?|秒",
    "kg": r"kg|kilo(?:gram)?s?|kilogrammes?|公斤|千克",
    "g": r"g|grams?|grammes?|克",
    "t": r"tonnes?|tons?|吨",
    "km": r"km|kilomet(?:er|re)s?|公里|千米",
    "m": r"m|met(?:er|re)s?|米",
    "cm": r"cm|centimet(?:er|re)s?|厘米",
    "mm": r"mm|millimet(?:er|re)s?|毫米",
    "l": r"l|lit(?:er|re)s?|升",
    "ml": r"ml|millilit(?:er|re)s?|毫升",
    "w": r"w|watts?|瓦",
    "kwh": r"kwh|千瓦时",
}
_UNIT_ALT = "|".join(f"(?P<u_{name.replace('%', 'pct')}>{pattern})" for name, pattern in _UNITS.items())
_SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9, "trillion": 1e12,
           "千": 1e3, "万": 1e4, "十万": 1e5, "百万": 1e6, "千万": 1e7, "亿": 1e8, "万亿": 1e12}
_SCALE_ALT = "|".join(sorted((re.escape(s) for s in _SCALES), key=len, reverse=True))
# 1,500 and 1 500 are thousands; 1,5 (a comma and one or two digits) is a decimal comma.
_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?"
_CURRENCY_FIRST = r"(?P<pre>us\$|\$|€|£|¥|usd|eur|gbp|cny|rmb|jpy|人民币|第)\s*"
# Chinese counting words: "10次" and "10个" are different claims about 10.
_CLASSIFIERS = "个位名次类岁人座家种项条届倍号层所支只件台部章集期场门代批辆艘架枚首篇本份"
_QUANTITY_RE = re.compile(
    rf"(?<![a-z0-9.,])(?:{_CURRENCY_FIRST})?(?P<num>{_NUMBER})(?![\d])"
    rf"(?:\s*(?P<scale>{_SCALE_ALT})(?![a-z]))?"
    rf"(?:[\s-]*(?:{_UNIT_ALT})(?![a-z])|(?P<cls>[{_CLASSIFIERS}]))?",
    re.IGNORECASE,
)
_PREFIX_UNIT = {"第": "第", "us$": "usd", "$": "usd", "usd": "usd", "€": "eur", "eur": "eur", "£": "gbp", "gbp": "gbp",
                "¥": "cny", "cny": "cny", "rmb": "cny", "人民币": "cny", "jpy": "jpy"}

_WORD_NUMBERS = {w: i + 2 for i, w in enumerate(
    "two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
_WORD_NUMBERS.update({w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty "
                                                               "ninety".split())})
_WORD_NUMBERS.update({"hundred": 100, "dozen": 12})
_WORD_NUMBER_RE = re.compile(
    r"\b(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)-(?:one|two|three|four|five|six|seven|"
    r"eight|nine)|" + "|".join(sorted(_WORD_NUMBERS, key=len, reverse=True)) + r")\b", re.IGNORECASE)
_ORDINAL_RE = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b", re.IGNORECASE)

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
              "九": 9}
_CN_SMALL = {"十": 10, "百": 100, "千": 1000}
_CN_BIG = {"万": 10_000, "亿": 100_000_000}
_CN_RUN_RE = re.compile(r"百分之[零〇一二三四五六七八九十百千两点]+"
                        r"|[零〇一二三四五六七八九十百千万亿两]+(?:点[零〇一二三四五六七八九]+)?")
# Words that are written with numerals but are not numbers.
_CN_IDIOMS = ("一些", "一起", "一样", "一定", "一直", "一般", "十分", "千万", "万一", "一切", "一致", "统一", "唯一",
              "一旦", "一向", "一度", "一同", "一再", "一律", "一边", "一面", "万物", "一番", "一时", "之一", "一带",
              "一下", "一点", "一生", "一身", "一手", "一心", "一口", "一家", "一体", "一共", "同一", "一部分")
_MONTHS = {m: i + 1 for i, m in enumerate("january february march april may june july august september october "
                                          "november december".split())}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS.pop("may", None)  # "may" is mostly the verb; "May 3" is read as a date below
_MONTH_RE = re.compile(r"\b(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\b\.?"
                       r"|\bmay(?=\s+\d{1,2}\b)|(\d{1,2})\s*月(?!份?\s*[的之])", re.IGNORECASE)


def normalise(text: str) -> str:
    """Text for comparing: NFKC (full-width digits and signs), lower case, Chinese numerals
    as digits, English number words as digits."""
    # A Chinese comma stays a separator: NFKC would make "3年，30%" read as "3年,30%".
    text = unicodedata.normalize("NFKC", text.replace("，", "、")).lower()
    text = re.sub(r"(?<=\d)\s+(?=\d{3}\b)", ",", text)  # "1 500" → "1,500"
    text = _CN_RUN_RE.sub(_cn_run_digits, text)
    text = _WORD_NUMBER_RE.sub(lambda m: str(_word_number(m.group(0).lower())), text)
    return _MIXED_SCALES_RE.sub(lambda m: _number_text(float(m.group(1)) * 1e8 + float(m.group(2)) * 1e4), text)


_MIXED_SCALES_RE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)亿(\d+(?:\.\d+)?)万")  # 3亿6000万


def _word_number(word: str) -> int:
    if "-" in word:
        tens, units = word.split("-")
        return _WORD_NUMBERS[tens] + _WORD_NUMBERS[units]
    return _WORD_NUMBERS[word]


def _cn_run_digits(match: re.Match) -> str:
    run = match.group(0)
    text = match.string
    if run == "一":
        return run  # 一 alone is mostly "a", "one of", "the same"
    around = text[max(0, match.start() - 1): match.end() + 1]
    if len(run) <= 2 and any(idiom in around and run in idiom for idiom in _CN_IDIOMS):
        return run
    if run.startswith("百分之"):
        value = _cn_value(run[3:])
        return f"{_number_text(value)}%" if value is not None else run
    value = _cn_value(run)
    return _number_text(value) if value is not None else run


def _cn_value(run: str) -> float | None:
    """The value of a run of Chinese numerals ("三十六" 36, "一九九〇" 1990, "三亿六千万"
    360000000, "三点五" 3.5), or None when it is not a number."""
    whole, _, fraction = run.partition("点")
    if fraction and not all(c in _CN_DIGITS for c in fraction):
        return None
    if len(whole) >= 2 and all(c in _CN_DIGITS for c in whole):  # read digit by digit: 一九九〇
        value = float("".join(str(_CN_DIGITS[c]) for c in whole))
    else:
        value = _cn_positional(whole)
        if value is None:
            return None
    if fraction:
        value += float("0." + "".join(str(_CN_DIGITS[c]) for c in fraction))
    return value


def _cn_positional(run: str) -> float | None:
    total, section, digit = 0.0, 0.0, None
    for char in run:
        if char in _CN_DIGITS:
            digit = _CN_DIGITS[char]
        elif char in _CN_SMALL:
            section += (1 if digit is None else digit) * _CN_SMALL[char]
            digit = None
        elif char in _CN_BIG:
            section += digit or 0
            if section == 0 and total == 0:
                return None  # a bare 万 or 亿 is a word, not a number
            total = (total + section) * _CN_BIG[char] if _CN_BIG[char] > 10_000 else total + section * _CN_BIG[char]
            section, digit = 0.0, None
    return total + section + (digit or 0)


def _number_text(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def quantities(text: str) -> list[Quantity]:
    """Every quantity ``text`` states, normalised (values with their scale applied)."""
    text = normalise(text)
    found = []
    for match in _QUANTITY_RE.finditer(text):
        raw = match.group("num")
        if re.fullmatch(r"\d+,\d{1,2}", raw):  # a decimal comma
            value = float(raw.replace(",", "."))
        else:
            value = float(raw.replace(",", ""))
        scale = match.group("scale")
        if scale:
            value *= _SCALES[scale.lower()]
        unit = next((name.replace("pct", "%")[2:] for name, hit in match.groupdict().items()
                     if name.startswith("u_") and hit), "")
        if match.group("cls"):
            unit = match.group("cls")
        prefix = match.group("pre")
        if prefix:
            unit = _PREFIX_UNIT[prefix.lower()] + (unit if prefix == "第" else "")
        found.append(Quantity(round(value, 6), unit))
    found += [Quantity(float(m.group(1))) for m in _ORDINAL_RE.finditer(text)]
    return found


def months(text: str) -> set[int]:
    """The months ``text`` names (1-12): "March", "Mar.", "3月"."""
    found = set()
    for match in _MONTH_RE.finditer(normalise(text)):
        if match.group(2):
            number = int(match.group(2))
            if 1 <= number <= 12:
                found.add(number)
        elif match.group(1):
            found.add(_MONTHS[match.group(1).lower()])
        else:
            found.add(5)
    return found


def _stated(quantity: Quantity, passage: list[Quantity], plain_passage: str) -> bool:
    """The passage states the value with the same unit; or without one, when the unit is
    named elsewhere in it ("349" beside "US dollars") or the value is a year (2016 = 2016年)."""
    for stated in passage:
        if stated.value != quantity.value:
            continue
        if not quantity.unit or stated.unit == quantity.unit:
            return True
        if stated.unit:
            continue
        if quantity.unit == "year" and 1000 <= quantity.value <= 2100:
            return True
        pattern = _UNITS.get(quantity.unit)
        if pattern and re.search(rf"(?<![a-z])(?:{pattern})(?![a-z])", plain_passage):
            return True
    return False


# ----- names and claim words ------------------------------------------------------------------

_NAME_RE = re.compile(r"(?<![\w'’-])[A-Z][\w'’.-]*[\w]|(?<![\w'’-])[A-Z](?![\w'’])")
_CJK_RE = re.compile(f"[{CJK_CHAR}]")
_PROPER_TAGS = ("nr", "ns", "nt", "nz", "nrt", "nrfg", "eng")  # besides these, any noun (tags n…) is a key


def english_names(sentence: str) -> list[str]:
    """Capitalised words of ``sentence`` that are names (lower-cased, possessive 's cut): not
    the opening word unless a capitalised word follows it, not common words."""
    names = []
    matches = list(_NAME_RE.finditer(sentence))
    for index, match in enumerate(matches):
        word = re.sub(r"['’]s$", "", match.group(0)).rstrip(".").lower()
        if not word or word in ENGLISH_STOPWORDS or word in PERSON_TITLES or _CJK_RE.search(word):
            continue
        if re.fullmatch(r"[\d.,-]+", word):
            continue
        if _opens_sentence(sentence, match.start()):
            follows = index + 1 < len(matches) and sentence[match.end():matches[index + 1].start()].strip() == ""
            if not follows:
                continue
        names.append(word)
    return names


def _opens_sentence(text: str, position: int) -> bool:
    before = text[:position].rstrip(" \"“‘'(*[")
    return not before or before[-1] in ".!?:;。！？：；\n"


@lru_cache(maxsize=1)
def _jieba_tagger():
    import jieba
    import jieba.posseg

    jieba.setLogLevel(60)
    jieba.initialize()
    return jieba.posseg.dt, jieba.dt.FREQ


def chinese_words(sentence: str) -> list[tuple[str, bool]]:
    """The content words of the Chinese parts of ``sentence``, each with whether it is a
    key item: a noun by jieba's tags (a person, place, organisation or thing: Chinese has no
    capitals to tell names from other nouns), or a word its dictionary does not know (new
    words are mostly names)."""
    runs = re.findall(f"[{CJK_CHAR}]+", normalise(sentence))
    if not runs:
        return []
    tagger, dictionary = _jieba_tagger()
    words = []
    for run in runs:
        for pair in tagger.cut(run):
            word, flag = pair.word, pair.flag
            if word in CHINESE_STOPWORDS or not _CJK_RE.search(word) or flag in ("m", "q", "x", "u", "p", "c", "y"):
                continue
            key = flag.startswith("n") or flag in _PROPER_TAGS or (len(word) >= 2 and not dictionary.get(word))
            words.append((word, key))
    return words


def english_claim_words(sentence: str, names: list[str]) -> list[str]:
    """Stemmed content words of ``sentence`` that are not names or numbers."""
    name_stems = set(search_tokens(" ".join(names)))
    without_figures = _QUANTITY_RE.sub(" ", re.sub(f"[{CJK_CHAR}]+", " ", sentence))
    return [t for t in search_tokens(without_figures) if t not in name_stems and not re.fullmatch(r"[\d.,]+", t)]


@lru_cache(maxsize=256)
def _passage_facts(passage: str) -> tuple[str, list[Quantity], frozenset[str]]:
    """A passage normalised, its quantities and its search tokens (a passage is checked
    against every sentence that cites it)."""
    plain = normalise(passage)
    return plain, quantities(passage), frozenset(search_tokens(plain))


# ----- the check --------------------------------------------------------------------------------


def supports(passage: str, sentence: str) -> Verdict:
    """Whether ``passage`` states ``sentence``: every key item of it, and at least
    ``MIN_CLAIM_SHARE`` of its claim words (see the module's docstring)."""
    plain, stated, passage_words = _passage_facts(passage)
    for quantity in quantities(sentence):
        if not _stated(quantity, stated, plain):
            return Verdict(False, f"the figure {quantity.words()} is not in the source")
    missing_months = months(sentence) - months(passage)
    if missing_months:
        name = list(_MONTHS)[min(missing_months) - 1].capitalize()
        return Verdict(False, f"the month {name} is not in the source")
    lowered = unicodedata.normalize("NFKC", passage).lower()  # names as written ("Big Ten", not "big 10")
    names = english_names(sentence)
    for name in names:
        if not re.search(rf"(?<!\w){re.escape(name)}(?!\w)", lowered) and not (set(search_tokens(name)) <= passage_words
                                                                           and search_tokens(name)):
            return Verdict(False, f"the name {name.title()} is not in the source")
    claims = [(w, w in passage_words) for w in english_claim_words(normalise(sentence), names)]
    for word, key in chinese_words(sentence):
        present = word in plain
        if key and not present:
            return Verdict(False, f"the name {word} is not in the source")
        claims.append((word, present))
    if not claims:
        return Verdict(True, "its names and figures are in the source")
    share = sum(present for _, present in claims) / len(claims)
    found = sum(present for _, present in claims)
    if share < MIN_CLAIM_SHARE and not (found and len(claims) - found == 1):
        missing = [w for w, present in claims if not present][:3]
        return Verdict(False, f"only {share:.0%} of its claim words are in the source (not: {', '.join(missing)})")
    return Verdict(True, f"its names and figures and {share:.0%} of its claim words are in the source")

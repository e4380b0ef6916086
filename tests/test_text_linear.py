"""Every text path does work linear in the size of its input, however adversarial the input
(issue "Nothing lost, nothing leaked", item 5: 300 KB of nested brackets kept the one upload
queue splitting sentences for minutes).

Work is counted, not timed, wherever it can be: ``count_operations`` counts the Python lines
executed in ragkit's own code (``sys.settrace`` line events), which is deterministic and blind
to how busy the machine is. Each path runs on an adversarial input of n and 4n characters:
linear work grows 4x, quadratic work 16x; the tests allow less than 6x and a fixed number of
lines per character. Work that line events cannot see is measured another way: jieba's HMM
by the path entries it copies, C regexes and tiktoken by CPU time (see there).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import jieba
import jieba.finalseg
import pytest

from ragkit.answering.contextualize import FOLLOW_UP_OPENERS, clean_rewrite, heuristic_rewrite, key_terms, needs_context
from ragkit.answering.extractive import extractive_answer
from ragkit.config import Settings
from ragkit.ingest.chunking import chunk_pages
from ragkit.lang import text as text_module
from ragkit.lang.text import (
    _SENTENCE_END_RE,
    _WORD_RE,
    BRACKET_REACH,
    _append_stripped,
    chinese_words,
    count_tokens,
    is_cjk_text,
    search_tokens,
    split_paragraphs,
    split_sentences,
    word_runs,
)
from ragkit.types import Exchange, Hit, Passage, Span
from work_counting import count_operations, cpu_seconds

REPO = Path(__file__).resolve().parents[1]
SHARED_EVAL = REPO.parent / "shared" / "eval"
ISSUE_INPUT = "(" * 50000 + "a。)" * 50000  # the 300 KB (UTF-8) upload from the issue
GROWTH_LIMIT = 6  # 4x the input may cost at most 6x the work (quadratic would be 16x)




def assert_linear(fn, make, n: int, per_char: float) -> None:
    """``fn`` on make(n) and make(4n): work grows < GROWTH_LIMIT x and stays in budget."""
    small, large = make(n), make(4 * n)
    small_ops, large_ops = count_operations(fn, small), count_operations(fn, large)
    growth = large_ops / max(small_ops, 1)
    assert growth < GROWTH_LIMIT, f"{small_ops} -> {large_ops} lines for {len(small)} -> {len(large)} chars"
    assert large_ops <= per_char * len(large), f"{large_ops} lines for {len(large)} chars"


def hit(text: str) -> Hit:
    return Hit(Passage(text, 1, 0, 0, len(text), 0, doc_id="d"), "Title", "file.txt", "txt", 1.0)


# ---------------------------------------------------------------------------------------
# split_sentences: the linear rewrite gives exactly what the quadratic original gave.


def _reference_inside_brackets(text: str, start: int, position: int) -> bool:
    """The original (quadratic) test: rescans the sentence so far at every mark."""
    depth = 0
    for ch in text[start:position]:
        if ch in text_module._OPENING:
            depth += 1
        elif ch in text_module._CLOSING and depth:
            depth -= 1
    if not depth:
        return False
    return any(ch in text_module._CLOSING for ch in text[position : position + BRACKET_REACH])


def _reference_split_sentences(text: str) -> list[Span]:
    """split_sentences as it was before the linear rewrite (commit a57566c), with the
    abbreviation rule added since."""
    spans: list[Span] = []
    start = 0
    for match in _SENTENCE_END_RE.finditer(text):
        if text_module.continues_after_abbreviation(text, match):
            continue
        if not match.group(0).startswith("\n") and _reference_inside_brackets(text, start, match.start()):
            continue
        end = match.end()
        _append_stripped(spans, text, start, end)
        start = end
    _append_stripped(spans, text, start, len(text))
    return spans


def _eval_contexts() -> list[str]:
    contexts = []
    for name in ("cmrc2018_trial.json", "squad_notre_dame.json"):
        data = json.loads((SHARED_EVAL / name).read_text(encoding="utf-8"))
        contexts += [paragraph["context"] for article in data["data"] for paragraph in article["paragraphs"]]
    return contexts


def _samples() -> list[str]:
    return [path.read_text(encoding="utf-8") for path in sorted((REPO / "data" / "samples").iterdir())]


FAR = "x" * (BRACKET_REACH + 5)
TRICKY = [
    "萱侬律(又名：「东芭乐园」；泰文：สวน)位于泰国。He cites (see Fig. 2. above) it. 未闭合（括号。下一句。",
    "外层（内层「更深『最深。』还在。」外面。）结束。后面。",
    "((a. b) c. d) e. f.",
    "(((((a。)))))b。c。",
    "未闭合（括号。下一句。又一句！",
    "Open ( never closed. Next one. And another?",
    f"远处闭合（{FAR}。{FAR}）之后。然后。",
    f"(near. {'y' * (BRACKET_REACH - 10)}) after. Then.",
    f"(edge. {'y' * (BRACKET_REACH - 3)}) closes on the last character reached. Then.",
    f"(edge. {'y' * (BRACKET_REACH - 2)}) closes one character beyond. Then.",
    ") stray closing. 】多余的右括号）。再一句。",
    "他说：“你好。”然后走了。她问：“真的吗？”是的！",
    'He said "Stop." Then left. She asked \'Why?\' He shrugged.',
    "Mr. Smith met Dr. Jones and Mrs. Brown. St. Paul is a city. Ms. Lee vs. Mr. Kim. No. 5 won.",
    "Use e.g. apples, i.e. fruit. J. R. R. Tolkien wrote it. The U.S. is big.",
    "Line one\nLine two\n\n\nLine three。第四行\r\n第五行",
    "Brackets across lines (one.\ntwo.) three.",
    "Ends with quote.” Next.) Next.' End\"",
    "Many marks!!! Really??? Yes。。。好的！！？",
    "《书名。副标题》出版了。[注释. 见下] 正文.",
    "“引号里。”“又一个。”",
    "",
    "   \n\n  ",
    "No mark at all",
    "。！？；!?",
    "(((((" + "a. " * 40 + ")))))",
    "(" * 200 + "a。)" * 200,
    "(" + "a。" * 100,
]


def test_linear_split_matches_the_original_on_the_eval_sets_and_samples():
    texts = _eval_contexts() + _samples()
    assert len(texts) > 300
    for text in texts:
        assert split_sentences(text) == _reference_split_sentences(text), text[:80]


@pytest.mark.parametrize("text", TRICKY)
def test_linear_split_matches_the_original_on_tricky_cases(text):
    assert split_sentences(text) == _reference_split_sentences(text)


def test_linear_split_matches_the_original_on_random_bracket_soup():
    pieces = list("（(「『“《[）)」』”》]。！？；!?.\n '\"") + ["a", "Mr.", "e.g.", " x", FAR, "y" * 60, "\n\n"]
    rng = random.Random(5)
    for _ in range(400):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 80)))
        assert split_sentences(text) == _reference_split_sentences(text), repr(text)


def assert_covers_in_order(text: str, spans: list[Span]) -> None:
    """Spans index the text exactly, in order, without overlap, and leave out only blanks."""
    cursor = 0
    for span in spans:
        assert text[span.start : span.end] == span.text
        assert span.start >= cursor and not text[cursor : span.start].strip()
        cursor = span.end
    assert not text[cursor:].strip()


def test_the_issue_input_is_one_bracketed_sentence_split_in_linear_work():
    spans = split_sentences(ISSUE_INPUT)
    assert_covers_in_order(ISSUE_INPUT, spans)
    assert [(span.start, span.end) for span in spans] == [(0, len(ISSUE_INPUT))]  # every 。 is in an aside
    assert count_operations(split_sentences, ISSUE_INPUT) <= 6 * len(ISSUE_INPUT)


def test_the_issue_input_is_chunked_whole_within_the_token_budget():
    chunks = chunk_pages([ISSUE_INPUT], max_tokens=256, overlap_tokens=48)
    assert chunks[0].start == 0 and chunks[-1].end == len(ISSUE_INPUT)
    for before, after in zip(chunks, chunks[1:]):
        assert before.start < after.start <= before.end  # in order, no gap
    for chunk in chunks:
        assert ISSUE_INPUT[chunk.start : chunk.end] == chunk.text and 0 < chunk.tokens <= 256


# ---------------------------------------------------------------------------------------
# Python work in ragkit/ grows linearly on adversarial inputs (n characters -> 4n).

SETTINGS = Settings(_env_file=None)
LINEAR_CASES = [
    # name, function, input of about n characters, n, budget in lines per character
    ("split_sentences, nested brackets", split_sentences, lambda n: "(" * (n // 4) + "a。)" * (n // 4), 10000, 10),
    ("split_sentences, bracket never closed", split_sentences, lambda n: "(" + "a。" * (n // 2), 10000, 15),
    ("split_sentences, closing beyond reach", split_sentences,
     lambda n: ("（" + "a。" * 70 + "）") * (n // 142), 10000, 15),
    ("split_sentences, abbreviations", split_sentences, lambda n: "Mr. e.g. (a. b) " * (n // 16), 10000, 5),
    ("split_paragraphs, blank lines", split_paragraphs, lambda n: "a\n \n" * (n // 4), 10000, 5),
    ("word_runs, dotted words", word_runs, lambda n: "a.b-c'd " * (n // 8), 10000, 1),
    ("search_tokens, one CJK run", search_tokens, lambda n: "齉" * n, 3000, 10),
    ("search_tokens, English", search_tokens, lambda n: "words and more words " * (n // 21), 10000, 3),
    ("is_cjk_text", is_cjk_text, lambda n: "ab中" * (n // 3), 10000, 4),
    ("chunk_pages, nested brackets", lambda s: chunk_pages([s]),
     lambda n: "(" * (n // 4) + "a。)" * (n // 4), 10000, 10),
    ("chunk_pages, tiny sentences", lambda s: chunk_pages([s]), lambda n: "a. " * (n // 3), 10000, 25),
    ("chunk_pages, tiny paragraphs", lambda s: chunk_pages([s]), lambda n: "a.\n\n" * (n // 4), 10000, 30),
    ("chunk_pages, one giant sentence", lambda s: chunk_pages([s]), lambda n: "x" * n, 10000, 1),
    ("needs_context, one CJK run", needs_context, lambda n: "齉" * n, 3000, 75),
    ("key_terms, one CJK run", key_terms, lambda n: "齉" * n, 3000, 70),
    ("heuristic_rewrite, long questions", lambda s: heuristic_rewrite(s, [Exchange(s, "", s)]),
     lambda n: "what about the tower " * (n // 21), 10000, 6),
    ("clean_rewrite, long rewrite", clean_rewrite,
     lambda n: "question: " + "a " * (n // 2), 10000, 1),
    ("extractive_answer, Chinese hit of one sentence", lambda s: extractive_answer("门票多少钱？", [hit(s)], SETTINGS),
     lambda n: "门票很大" * (n // 4), 10000, 4),
    ("extractive_answer, English hit of one sentence",
     lambda s: extractive_answer("What is the ticket price?", [hit(s)], SETTINGS),
     lambda n: "ticket price is large " * (n // 22), 10000, 5),
    ("extractive_answer, English question on a CJK run",
     lambda s: extractive_answer("What is the price?", [hit(s)], SETTINGS), lambda n: "齉" * n, 3000, 20),
    ("extractive_answer, many tiny sentences",
     lambda s: extractive_answer("What is the ticket price?", [hit(s)], SETTINGS),
     lambda n: "Ticket. " * (n // 8), 10000, 8),
]


@pytest.mark.parametrize(
    "fn, make, n, per_char", [case[1:] for case in LINEAR_CASES], ids=[case[0] for case in LINEAR_CASES]
)
def test_python_work_grows_linearly(fn, make, n, per_char):
    chinese_words("预热")  # load jieba's dictionary outside the count
    assert_linear(fn, make, n, per_char)


# ---------------------------------------------------------------------------------------
# jieba: its HMM (Python, but outside ragkit/) copies the whole path so far at every
# character of a block, one line event hiding O(block) work; so count the copied entries.


def test_jieba_work_on_one_long_cjk_run_grows_linearly(monkeypatch):
    copied = 0
    viterbi = jieba.finalseg.viterbi

    def counting_viterbi(obs, *args):
        nonlocal copied
        copied += len(obs) * (len(obs) + 1) // 2  # path entries copied, per state
        return viterbi(obs, *args)

    monkeypatch.setattr(jieba.finalseg, "viterbi", counting_viterbi)
    sizes = (5000, 20000)
    work = []
    for n in sizes:
        copied = 0
        words = chinese_words("齉" * n)  # no two of these form a word: all of it goes to the HMM
        assert "".join(words) == "齉" * n
        work.append(copied)
    assert work[1] / work[0] < GROWTH_LIMIT
    assert work[1] <= 300 * sizes[1]  # pieces of at most JIEBA_BLOCK characters


def test_chinese_words_equals_jieba_on_normal_text():
    texts = _eval_contexts() + _samples()
    texts.append("\r\n".join(texts[:20]))  # \r\n next to blocks, several thousand characters
    assert sum(len(text) > text_module.JIEBA_BLOCK for text in texts) > 50
    for text in texts:
        assert chinese_words(text) == jieba.lcut(text), text[:80]


def test_an_over_long_block_is_segmented_in_pieces_without_losing_text():
    text = "开头。" + "我们今天去北京天安门" * 200 + "，结尾abc。"
    words = chinese_words(text)
    assert "".join(words) == text
    assert words[:2] == ["开头", "。"] and words[-3:] == ["结尾", "abc", "。"]


# ---------------------------------------------------------------------------------------
# Regexes and tiktoken work in C, where line events see nothing and there is no counter to
# hook. As a last resort these compare CPU time (process_time, best of several runs, so
# other engineers' load mostly washes out) with a generous bound: linear work grows ~4x on
# 4x the input, a backtracking regex ~16x. Inputs are the worst known for each pattern.

CPU_GROWTH_LIMIT = 9
C_CASES = [
    ("sentence ends: dots before long quote runs", lambda s: list(_SENTENCE_END_RE.finditer(s)),
     lambda n: (".'" + "”" * 50 + "x") * (n // 53)),
    ("sentence ends: abbreviations", lambda s: list(_SENTENCE_END_RE.finditer(s)), lambda n: "Mr.Dr.e.g" * (n // 9)),
    ("words: dotted runs", lambda s: _WORD_RE.findall(s), lambda n: "a.b'c-" * (n // 6) + "."),
    ("paragraph breaks: whitespace without a second newline", split_paragraphs,
     lambda n: ("\n" + " " * 99 + "x") * (n // 101)),
    ("follow-up openers: leading whitespace", FOLLOW_UP_OPENERS.search, lambda n: " " * n + "x"),
    ("clean_rewrite: label-like prefix", clean_rewrite, lambda n: "question" + " " * n + "x"),
    ("count_tokens: one letter run", count_tokens, lambda n: "x" * n),
    ("count_tokens: one punctuation run", count_tokens, lambda n: "(" * n),
    ("count_tokens: one CJK run", count_tokens, lambda n: "的" * n),
    ("count_tokens: whitespace", count_tokens, lambda n: " " * n),
]




@pytest.mark.parametrize("fn, make", [case[1:] for case in C_CASES], ids=[case[0] for case in C_CASES])
def test_c_level_work_grows_linearly(fn, make):
    n = 50000
    small, large = make(n), make(4 * n)
    fn(small)  # warm up (tiktoken loads its ranks on first use)
    small_time, large_time = cpu_seconds(fn, small), cpu_seconds(fn, large)
    assert large_time < CPU_GROWTH_LIMIT * max(small_time, 0.002), (small_time, large_time)

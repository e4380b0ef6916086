"""Follow-up questions made standalone, without a model.

A follow-up refers back ("What are its main features?", "它的续航怎么样？"). The offline
rewrite finds the subject of the previous question (the name or phrase it asks about:
rare in the knowledge base, found in the passage that answered it, early in the
question) and puts it in place of the reference: "What are LangGraph's main features?".
A question with no reference is complete and is left exactly as it is, so a change of
topic never drags the old subject along.

With a model the model rewrites, and :func:`plausible_rewrite` decides whether to trust
what it wrote (small models echo markup, answer instead, or drift off topic).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from ragkit.lang.kinds import is_cjk_action
from ragkit.lang.text import (
    CHINESE_STOPWORDS,
    CJK_QUESTION_WORDS,
    ENGLISH_STOPWORDS,
    chinese_words,
    is_cjk_text,
    search_tokens,
)
from ragkit.types import Exchange

ENGLISH_REFERENCES = {
    "it": "{s}", "its": "{s}'s", "they": "{s}", "them": "{s}", "their": "{s}'s", "he": "{s}",
    "him": "{s}", "his": "{s}'s", "she": "{s}", "her": "{s}'s",
}
# Whole words only (jieba's), so 其他 ("other") or 尤其 are not references.
CHINESE_REFERENCES = ("它们", "他们", "她们", "其", "它", "他", "她")
_OPENING_WORDS = frozenset(
    "over around during there after before since until under between among within without against through "
    "across behind beyond following according besides despite near per regarding via while if although".split()
)
FOLLOW_UP_OPENERS = re.compile(r"^\s*(and|also|what about|how about|and what about|那么?|还有|另外)\b", re.IGNORECASE)
QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how main key some many much tell explain describe give list "
    "does do did is are was were can could should would please more about in on at for from by the a an".split()
)
_CONNECTORS = {"of", "the", "de", "and", "for", "&", "du", "la", "von", "van"}
_ENGLISH_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’.&-]*")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")
MAX_CARRIED_TERMS = 6

# "青岚茶园的年产量是多少？" asks the 年产量 of 青岚茶园: the owner before 的, opening the question, is what it
# is about, though the answering passage repeats the attribute ("年产量约为12吨") and not the owner's full name
# (not "谁主演的电影获得了金鸡奖？": a clause before 的 that does not open the question describes, it owns nothing).
POSSESSOR_WEIGHT = 2.0
Rarity = Callable[[str], float]  # higher for a phrase that is rarer in the knowledge base




def references(question: str) -> list[str]:
    """The words of ``question`` that refer back to something said before (not to
    something the question itself names: "Knute Rockne told his team" is complete)."""
    if is_cjk_text(question):
        words = chinese_words(question)
        found = [w for w in words if w in CHINESE_REFERENCES]
        if found and _named_before(question, question.index(found[0])):
            return []
        return found
    words = [m for m in _ENGLISH_WORD.finditer(question) if m.group(0).lower() in ENGLISH_REFERENCES]
    if not words:
        return []
    first = words[0]
    before = question[: first.start()]
    possessive = first.group(0).lower() in {"its", "his", "her", "their"}
    introduced = "," in before and re.search(r"\b(a|an)\s+\w+", before.split(",")[0], re.IGNORECASE)
    if introduced or (possessive and _english_candidates(before)):
        return []
    return [m.group(0) for m in words]


def _named_before(question: str, position: int) -> bool:
    """True when a name (a Latin word run or quoted term) precedes ``position``."""
    before = question[:position]
    return bool(re.search(r"[“\"《「][^”\"》」]+[”\"》」]", before))


def needs_context(question: str) -> bool:
    """True when the question leans on the conversation: a reference, a follow-up opener
    ("what about..."), or no content word of its own."""
    if references(question) or FOLLOW_UP_OPENERS.search(question):
        return True
    return not own_content_terms(question)


def own_content_terms(question: str) -> list[str]:
    """Content words of the question that are not question words or references."""
    return [
        token for token in search_tokens(question)
        if token not in QUESTION_WORDS and token not in ENGLISH_REFERENCES and len(token) > 1
        and not any(token.startswith(ref) for ref in CHINESE_REFERENCES)
    ]


def _english_candidates(question: str) -> list[str]:
    words = _ENGLISH_WORD.findall(question)
    found, run = [], []
    for index, word in enumerate(words):
        clean = word.strip(".'’")
        initial_common = index == 0 and (clean.lower() in QUESTION_WORDS or clean.lower() in _OPENING_WORDS
                                         or clean.lower() in ENGLISH_STOPWORDS)
        capital = clean[:1].isupper() and not initial_common
        if capital or (run and clean.lower() in _CONNECTORS):
            run.append(clean)
            continue
        found.extend(_close(run))
        run = []
    found.extend(_close(run))
    if not found:  # no name: what a "which / what ..." question asks about, or its last content words
        asked = _WHICH_NOUN.match(question) or _DONE_TO_NOUN.match(question)
        if asked:
            return ["the " + next(group for group in asked.groups() if group)]
        tail = re.split(r"\b(?:of|the)\b", question)[-1]
        content = [w for w in _ENGLISH_WORD.findall(tail) if w.lower() not in ENGLISH_STOPWORDS
                   and w.lower() not in QUESTION_WORDS]
        if content:
            found.append("the " + " ".join(content))
    return list(dict.fromkeys(found))


# "Which file types does ragkit accept?" asks about "file types": the words between the
# question word and the verb that starts the rest of the question.
_WHICH_NOUN = re.compile(
    r"^\s*(?:which|what)\s+((?:[a-z][a-z-]*\s+){0,3}?[a-z][a-z-]*)\s+"
    r"(?:does|do|did|is|are|was|were|can|could|should|will|would|has|have|had)\b", re.IGNORECASE)
# "What does the source panel show?", "How are file types indexed?": the words between the
# auxiliary and the closing verb.
_DONE_TO_NOUN = re.compile(
    r"^\s*(?:what|how|why|when|where|who)\s+(?:does|do|did|can|could|should|will|would)\s+(?:the\s+|a\s+|an\s+)?"
    r"((?:[a-z][a-z-]*\s+){0,3}[a-z][a-z-]*)\s+[a-z]+\s*\?\s*$"
    r"|^\s*(?:what|how|why|when|where)(?:\s+(?:often|long|much|many|far|well))?\s+(?:is|are|was|were)\s+(?:the\s+|a\s+|an\s+)?"
    r"((?:[a-z][a-z-]*\s+){0,3}[a-z][a-z-]*)\s+[a-z]+(?:ed|en)\s*\?\s*$", re.IGNORECASE)


def _close(run: list[str]) -> list[str]:
    while run and run[-1].lower() in _CONNECTORS:
        run = run[:-1]
    while run and run[0].lower() in _CONNECTORS - {"the"}:
        run = run[1:]
    if run and run[0].lower() == "the":
        run = run[1:]
    return [" ".join(run)] if run else []


def _chinese_candidates(question: str, evidence: str = "") -> list[str]:
    """Latin names, the longest pieces of the question that the evidence repeats (names
    are cut wrongly by word segmentation, but appear verbatim in their passage), and runs
    of words between function words (in case the evidence is the wrong passage); never a
    piece of verbs alone after the question's opening ("创立" in "云岭茶业是谁创立的？": what was
    done, not what it is about; jieba tags some names as verbs, "联想是谁创立的？", which open it)."""
    found = [run for run in re.findall(r"[A-Za-z0-9][A-Za-z0-9 .&-]*[A-Za-z0-9]", question)
             if any(ch.isalpha() for ch in run)]
    for run in _CJK_RUN.findall(question):
        pieces = (_common_pieces(run, evidence) if evidence else []) + _word_runs(run)
        found.extend(piece for piece in (_trim(p) for p in pieces)
                     if len(piece) >= 2 and not set(piece) <= _TIME_AND_FUNCTION_CHARS
                     and (_opens(question, piece) or not is_cjk_action(piece)))
    return list(dict.fromkeys(found))


def _opens(question: str, piece: str) -> bool:
    """True when ``question`` starts with ``piece``: the place of what a Chinese question is about."""
    return question.strip().startswith(piece)


_TIME_AND_FUNCTION_CHARS = frozenset("年月日至时分秒号的了在是和与及或等个中上下前后之其")


def _common_pieces(run: str, evidence: str) -> list[str]:
    """Maximal substrings of ``run`` found in ``evidence``, left to right."""
    pieces, start = [], 0
    while start < len(run):
        end = start + 1
        if run[start] not in evidence:
            start += 1
            continue
        while end < len(run) and run[start : end + 1] in evidence:
            end += 1
        pieces.append(run[start:end])
        start = end
    return pieces


def _word_runs(run: str) -> list[str]:
    pieces, current = [], ""
    for word in chinese_words(run):
        if word in CHINESE_STOPWORDS or word in _CJK_QUESTION_PIECES or word in CHINESE_REFERENCES:
            pieces.append(current)
            current = ""
        else:
            current += word
    return pieces + [current]


def _trim(piece: str) -> str:
    """A Chinese piece without function words at its ends ("的", "是", "在"...)."""
    words = chinese_words(piece)
    def function_word(word: str) -> bool:
        return word in _CJK_QUESTION_PIECES or word in CHINESE_STOPWORDS or word in CJK_QUESTION_WORDS

    while words and function_word(words[0]):
        words = words[1:]
    while words and function_word(words[-1]):
        words = words[:-1]
    return "".join(words)


_CJK_QUESTION_PIECES = frozenset(
    "什么 哪 哪个 哪些 哪里 谁 多少 几 怎么 怎样 如何 为什么 是否 吗 呢 主要 什么样 何时 哪年 哪一年 多久 "
    "是 有 在 以 为 对 被 把 从 到 了 的 地 得 和 与 及 或 将 会 能 可以 曾 曾经 由 于 并".split()
)


def find_subject(question: str, evidence: str = "", rarity: Rarity | None = None) -> str:
    """The phrase ``question`` is most likely about (see ``subject_options``)."""
    options = subject_options(question, evidence, rarity)
    return options[0] if options else ""


def subject_options(question: str, evidence: str = "", rarity: Rarity | None = None) -> list[str]:
    """Phrases ``question`` may be about, likeliest first: rare in the knowledge base,
    repeated in the evidence (the passage that answered it, which is about its subject),
    early in the question, in Chinese the owner before 的 opening it (``POSSESSOR_WEIGHT``). Only those
    scoring at least a third of the best are kept: a common
    word the passage happens to share is no candidate."""
    cjk = is_cjk_text(question)
    candidates = _chinese_candidates(question, evidence) if cjk else _english_candidates(question)
    measure = rarity or (lambda phrase: float(len(phrase)))
    lowered_evidence = evidence.lower()

    def score(phrase: str) -> float:
        repeats = lowered_evidence.count(phrase.lower()) if evidence else 0
        where = max(question.lower().find(phrase.lower()), 0) / max(len(question), 1)
        owner = POSSESSOR_WEIGHT if cjk and _opens(question, f"{phrase}的") else 1.0
        return owner * measure(phrase) * (1.0 + math.log1p(repeats)) / (1.0 + 0.5 * where)

    scored = sorted(((score(c), c) for c in candidates), reverse=True)
    return [phrase for value, phrase in scored if value >= 0.35 * scored[0][0]] if scored else []


def substitute(question: str, subject: str) -> str:
    """``question`` with its references replaced by ``subject`` (unchanged when it has none)."""
    if is_cjk_text(question):
        words = chinese_words(question)
        for index, word in enumerate(words):
            if word in CHINESE_REFERENCES:
                words[index] = subject + ("的" if word == "其" else "")
                return "".join(words)
        return question

    subject = _without_repeated_edges(subject, question)

    def replace(match: re.Match) -> str:
        pattern = ENGLISH_REFERENCES[match.group(0).lower()]
        return pattern.format(s=subject)

    names = "|".join(sorted(ENGLISH_REFERENCES, key=len, reverse=True))
    return re.sub(rf"\b({names})\b", replace, question, count=1, flags=re.IGNORECASE)


def _without_repeated_edges(subject: str, question: str) -> str:
    """``subject`` without leading or trailing words the question already says: "it at Notre
    Dame" takes "College of Science", not "Notre Dame College of Science"."""
    said = {word.lower() for word in _ENGLISH_WORD.findall(question)} - _CONNECTORS
    words = subject.split()
    article = words[:1] if words and words[0].lower() == "the" else []
    words = words[len(article):]
    while len(words) > 1 and (words[0].lower() in said or words[0].lower() in _CONNECTORS):
        words, article = words[1:], []
    while len(words) > 1 and (words[-1].lower() in said or words[-1].lower() in _CONNECTORS):
        words = words[:-1]
    return " ".join(article + words) if any(word.lower() not in said for word in words) else subject


def heuristic_rewrite(question: str, history: list[Exchange], rarity: Rarity | None = None) -> str:
    """The offline standalone form of a follow-up: its reference replaced by the previous
    question's likeliest subject; a question with no reference is returned as is."""
    options = rewrite_options(question, history, rarity)
    return options[0] if options else question


def rewrite_options(question: str, history: list[Exchange], rarity: Rarity | None = None,
                    limit: int = 3) -> list[str]:
    """Standalone forms of a follow-up, one per likely subject, likeliest first (empty
    when the question needs no rewrite). The graph searches with each and keeps the one
    the documents support best."""
    if not history or not needs_context(question):
        return []
    previous = history[-1]
    options = []
    for subject in subject_options(previous.question, previous.evidence or previous.answer, rarity)[:limit]:
        if subject.lower() in question.lower():
            continue  # the follow-up names this one itself: the reference is to another
        if references(question):
            options.append(substitute(question, subject))
        else:  # "what about the price?" names nothing to replace
            options.append(f"{question.strip()} ({subject})")
    return list(dict.fromkeys(options))


def key_terms(question: str) -> list[str]:
    """The subject words of a question, in their original form."""
    if is_cjk_text(question):
        terms = [w for w in chinese_words(question) if w.strip() and any(ch.isalnum() for ch in w)
                 and w not in CHINESE_STOPWORDS and w not in _CJK_QUESTION_PIECES]
    else:
        terms = [w.strip(".'’") for w in _ENGLISH_WORD.findall(question) if w.lower() not in ENGLISH_STOPWORDS
                 and w.lower() not in QUESTION_WORDS and w.lower() not in ENGLISH_REFERENCES]
    return list(dict.fromkeys(t for t in terms if t))[:MAX_CARRIED_TERMS]


_MARKUP = re.compile(r"<<|>>|\[/?INST\]|<\|[^|]*\|>|<start_of_turn>|<end_of_turn>|^\s*#|</?s>|SYS>", re.IGNORECASE)


def clean_rewrite(text: str) -> str:
    """A model's rewrite tidied: first line, no labels, quotes or trailing chatter."""
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    line = re.sub(r"^((standalone|rewritten) question|question|问题|user|assistant|human|ai)\s*[:：]\s*", "", line,
                  flags=re.IGNORECASE)
    line = re.sub(r"\[\d{1,3}\]", "", line).strip().strip("\"'“”「」 ")
    question_end = re.search(r"[?？]", line)
    if question_end:  # a rambling model keeps going after the question
        line = line[: question_end.end()]
    return line


def plausible_rewrite(rewrite: str, question: str, history: list[Exchange]) -> str:
    """Why a model's rewrite cannot be used ("" when it can): markup echoed from the
    prompt, no words in common with the question or the conversation, far shorter than
    the question, or far longer than question and subject together."""
    if not rewrite or not any(ch.isalnum() for ch in rewrite):
        return "empty"
    if _MARKUP.search(rewrite):
        return "echoed prompt markup"
    own = set(search_tokens(question))
    context = set(search_tokens(" ".join(e.question for e in history[-2:])))
    words = set(search_tokens(rewrite))
    if own and not words & own:
        return "shares no word with the question"
    if context and not words & (own | context):
        return "shares no word with the conversation"
    if len(rewrite) < 0.6 * len(question.strip()):
        return "much shorter than the question"
    if len(rewrite) > 3 * len(question) + 80:
        return "much longer than the question"
    return ""

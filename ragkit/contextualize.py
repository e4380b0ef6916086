"""Deciding whether a follow-up needs the conversation, and the offline rewrite.

Without a model, a follow-up such as "What are its main features?" is made searchable by
carrying the key terms of the previous (standalone) question: "What are its main
features? (LangGraph)". With a model, the model rewrites it; this module still decides
whether that call is needed at all.
"""

from __future__ import annotations

import re

from .text import CHINESE_STOPWORDS, ENGLISH_STOPWORDS, chinese_words, is_cjk_text, search_tokens

ENGLISH_REFERENCES = frozenset(
    "it its it's they them their theirs this that these those he him his she her hers there "
    "former latter above same such one ones".split()
)
CHINESE_REFERENCES = ("它", "它们", "其", "他", "她", "他们", "她们", "这", "那", "该", "此", "上述", "前者", "后者", "这个", "那个", "这些", "那些")
FOLLOW_UP_OPENERS = re.compile(
    r"^\s*(and|also|what about|how about|why|so|then|but|more|tell me more|还有|那么|那|另外|然后|为什么|怎么|再)\b",
    re.IGNORECASE,
)
QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how main key some many much tell explain describe give list "
    "does do did is are was were can could should would please more about".split()
)
MAX_CARRIED_TERMS = 6


def _english_words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z][A-Za-z0-9'’.-]*", text)


def own_content_terms(question: str) -> list[str]:
    """Content words of the question that are not question words or references."""
    return [
        token for token in search_tokens(question)
        if token not in QUESTION_WORDS and token not in ENGLISH_REFERENCES and len(token) > 1
        and not any(token.startswith(ref) for ref in CHINESE_REFERENCES)
    ]


def needs_context(question: str) -> bool:
    """True when the question leans on the conversation (a reference, an opener, no subject)."""
    words = {word.lower() for word in _english_words(question)}
    if words & ENGLISH_REFERENCES:
        return True
    if any(ref in question for ref in CHINESE_REFERENCES):
        return True
    if FOLLOW_UP_OPENERS.search(question):
        return True
    return not own_content_terms(question)


def key_terms(question: str) -> list[str]:
    """The subject words of a question, in their original form (for carrying forward)."""
    if is_cjk_text(question):
        terms = [
            word for word in chinese_words(question)
            if word.strip() and any(ch.isalnum() for ch in word)
            and word not in CHINESE_STOPWORDS and not any(word.startswith(ref) for ref in CHINESE_REFERENCES)
            and word.lower() not in QUESTION_WORDS
        ]
    else:
        terms = [
            word.strip(".'’") for word in _english_words(question)
            if word.lower() not in ENGLISH_STOPWORDS and word.lower() not in QUESTION_WORDS
            and word.lower() not in ENGLISH_REFERENCES
        ]
    unique = list(dict.fromkeys(term for term in terms if term))
    return unique[:MAX_CARRIED_TERMS]


def heuristic_rewrite(question: str, history: list[tuple[str, str]]) -> str:
    """Append the previous question's key terms that the new question lacks."""
    if not history:
        return question
    previous = history[-1][0]
    lowered = question.lower()
    carried = [term for term in key_terms(previous) if term.lower() not in lowered]
    if not carried:
        return question
    joiner = "" if is_cjk_text(question) and all(is_cjk_text(t) for t in carried) else " "
    return f"{question.strip()} ({joiner.join(carried)})"


def clean_rewrite(text: str, fallback: str) -> str:
    """Tidy a model's rewrite (first line, no quotes/labels); the fallback when unusable."""
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    line = re.sub(r"^((standalone|rewritten) question|question|问题|user|assistant|human|ai)\s*[:：]\s*", "", line,
                  flags=re.IGNORECASE)
    line = re.sub(r"\[\d{1,3}\]|\[/?INST\]", "", line).strip()
    line = line.strip("\"'“”「」 ")
    question_end = re.search(r"[?？]", line)
    if question_end:  # a rambling model keeps going after the question
        line = line[: question_end.end()]
    if not line or len(line) > 4 * max(len(fallback), 50) or not any(ch.isalnum() for ch in line):
        return fallback
    return line

"""Checks on what a model wrote, before it is shown or recorded.

A model may continue the prompt instead of answering ("[INST]", "<<SYS>>", a copy of
the instructions), invent citation numbers, or write sentences its sources do not say.
``clean_model_answer`` cuts what is not an answer; ``check_support`` judges each sentence
against the passages it cites with ``ragkit.answering.support.supports``: every name, figure, date
and place in it (normalised), and most of its claim words, must be there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragkit.answering.citations import MARKER_RE, cited_markers
from ragkit.answering.support import supports
from ragkit.lang.text import search_tokens, strip_html
from ragkit.models.streaming import cut_prompt_echo
from ragkit.types import Source


def echoes_instructions(text: str, instructions: str) -> bool:
    """True when the answer repeats a sentence of the system prompt."""
    lines = [line.strip(" -") for line in instructions.splitlines() if len(line.strip(" -")) > 30]
    return any(line[:40] in text for line in lines)


# A sentence of an answer: up to an end mark (。！？!?； or a full stop before a space, a marker
# or the end, or a line break), with the citation markers written after it.
_SENTENCE_RE = re.compile(r".+?(?:[。！？!?；]+|\.(?=\s|\[|$)|\n+)(?:\s*\[\d{1,3}(?:\s*[,，]\s*\d{1,3})*\])*",
                          re.DOTALL)


def answer_sentences(text: str) -> tuple[list[str], str]:
    """The complete sentences of an answer (each with the citation markers after it, which
    ``text.split_sentences`` would give to the next one) and the unfinished rest."""
    sentences, end = [], 0
    for match in _SENTENCE_RE.finditer(text):
        sentences.append(match.group(0))
        end = match.end()
    return sentences, text[end:]


def strip_label(text: str) -> str:
    """The text without a leading "Answer:" / "答案：" label."""
    return _LABEL.sub("", text).strip()


_LABEL = re.compile(r"^\s*(answer|final answer|response|assistant|回答|答案|答)\s*[:：]\s*", re.IGNORECASE)


def clean_model_answer(raw: str, instructions: str) -> tuple[str, str]:
    """(the answer without echoes, labels and HTML, the problem that makes it unusable or "")."""
    text, _ = cut_prompt_echo(raw)
    text = _LABEL.sub("", strip_html(text).strip()).strip()
    if echoes_instructions(text, instructions):
        return text, "it repeated the instructions instead of answering"
    if not MARKER_RE.sub("", text).strip(" .。\n"):
        return text, "it was empty once prompt markup was removed"
    return text, ""


@dataclass(frozen=True)
class SentenceCheck:
    """One sentence of a generated answer and whether its cited passages back it."""

    text: str
    cited: tuple[int, ...]
    supported: bool
    reason: str
    attributed: bool = False  # it cited nothing, but this source says it: the citation was added


def check_support(answer: str, sources: list[Source]) -> list[SentenceCheck]:
    """Judge every sentence: its names, figures, dates and places, and most of its claim
    words, must be in the passages it cites (``support.supports``). A sentence
    citing nothing is attributed to the one source that supports it, if any."""
    by_number = {source.n: source for source in sources}
    checks = []
    sentences, rest = answer_sentences(answer)
    for sentence in sentences + [rest]:
        sentence = sentence.strip()
        cited = tuple(n for n in cited_markers(sentence) if n in by_number)
        claim = MARKER_RE.sub("", sentence)
        if not set(search_tokens(claim)):
            continue
        if cited:
            supported, reason = _supported(claim, " ".join(by_number[n].text for n in cited))
            checks.append(SentenceCheck(sentence, cited, supported, reason))
            continue
        verdicts = [(_supported(claim, source.text), source.n) for source in sources]
        backing = [(reason, n) for (supported, reason), n in verdicts if supported]
        if backing:
            checks.append(SentenceCheck(sentence, (backing[0][1],), True, backing[0][0], attributed=True))
        else:
            checks.append(SentenceCheck(sentence, (), False, "cites no source, and no source says it"))
    return checks


def _supported(claim: str, passages: str) -> tuple[bool, str]:
    verdict = supports(passages, claim)
    return verdict.supported, verdict.reason


def add_attributions(answer: str, checks: list[SentenceCheck]) -> str:
    """The answer with the citation of each attributed sentence written after it."""
    for check in checks:
        if check.attributed and check.text in answer:
            answer = answer.replace(check.text, f"{check.text.rstrip()}[{check.cited[0]}]", 1)
    return answer

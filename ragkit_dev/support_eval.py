"""A labelled set for the support check (``support.supports``), built from SQuAD-format QA
sets, and its precision and recall.

For every question that asks for a date, number, person or place (``answer_types``), the
sentence of its passage holding the gold answer is a *supported* case, and so is the same
sentence restated in another notation ("3-year" → "3 years", "1,500" → "1500",
"36" → "三十六", "30%" → "30 percent"; only where the sentence has such a figure). The same
sentence with the answer swapped for the answer of a question of the same kind about
*another* passage (one its own passage does not state) is an *unsupported* case. The swap
partner is drawn by a random generator seeded per question, so the set is the same at
every run. ``python -m ragkit eval FILE --support`` prints the figures per language.

Precision and recall take "supported" as the positive class: precision is the share of the
sentences the check accepts that the passage states, recall the share of stated sentences
it accepts.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragkit.answering.support import normalise, supports
from ragkit.lang.kinds import answer_type
from ragkit.lang.text import is_cjk_text, split_sentences

SEED = 18
_KINDS = ("date", "number", "person", "place")


@dataclass(frozen=True)
class SupportCase:
    """One labelled sentence: does ``passage`` state ``sentence``?"""

    language: str  # "en" or "zh"
    kind: str  # "gold", "restated" (supported) or "swapped" (unsupported)
    sentence: str
    passage: str
    supported: bool
    question: str


@dataclass(frozen=True)
class _Answered:
    question: str
    kind: str
    answer: str
    start: int
    passage_index: int


def support_cases(path: str | Path, seed: int = SEED) -> list[SupportCase]:
    """The labelled sentences of one SQuAD-format file (see the module's docstring)."""
    passages, answered = _read(path)
    pools: dict[str, list[_Answered]] = {kind: [a for a in answered if a.kind == kind] for kind in _KINDS}
    cases: list[SupportCase] = []
    for item in answered:
        passage = passages[item.passage_index]
        sentence, offset = _sentence_at(passage, item.start, len(item.answer))
        if not sentence:
            continue
        lang = "zh" if is_cjk_text(passage) else "en"
        cases.append(SupportCase(lang, "gold", sentence, passage, True, item.question))
        restated = restate(sentence, lang)
        if restated != sentence:
            cases.append(SupportCase(lang, "restated", restated, passage, True, item.question))
        partner = _swap_partner(item, passage, pools[item.kind], random.Random(f"{seed}:{item.question}"))
        if partner:
            swapped = sentence[:offset] + partner.answer + sentence[offset + len(item.answer):]
            cases.append(SupportCase(lang, "swapped", swapped, passage, False, item.question))
    return cases


def _read(path: str | Path) -> tuple[list[str], list[_Answered]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    passages: list[str] = []
    answered: list[_Answered] = []
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            passages.append(paragraph["context"])
            for qa in paragraph["qas"]:
                kind = answer_type(qa.get("question", ""))
                answers = [a for a in qa.get("answers", []) if a.get("text", "").strip()]
                if kind in _KINDS and answers:
                    first = answers[0]
                    answered.append(_Answered(qa["question"], kind, first["text"], int(first["answer_start"]),
                                              len(passages) - 1))
    return passages, answered


def _sentence_at(passage: str, start: int, length: int) -> tuple[str, int]:
    """The sentence holding passage[start:start+length] and the answer's offset in it
    ("" when the answer is not there or spans sentences)."""
    for span in split_sentences(passage):
        if span.start <= start and start + length <= span.end:
            return span.text, start - span.start
    return "", 0


def _swap_partner(item: _Answered, passage: str, pool: list[_Answered], rng: random.Random) -> _Answered | None:
    """An answer of the same kind to a question about another passage, that this passage
    does not state (compared normalised) and that is not part of the answer."""
    plain = normalise(passage)
    answer = normalise(item.answer)
    choices = sorted({a.answer: a for a in pool if a.passage_index != item.passage_index
                      and normalise(a.answer) not in plain and normalise(a.answer) not in answer
                      and answer not in normalise(a.answer)}.values(), key=lambda a: a.answer)
    return rng.choice(choices) if choices else None


# ----- restating figures in another notation --------------------------------------------------

_CN_DIGIT_CHARS = "零一二三四五六七八九"


def to_chinese_numerals(number: int) -> str:
    """An integer below 100,000,000 in Chinese numerals (36 → 三十六, 2011 → 二千零一十一)."""
    if number == 0:
        return "零"
    if number >= 10_000:
        high, low = divmod(number, 10_000)
        rest = to_chinese_numerals(low) if low else ""
        return to_chinese_numerals(high) + "万" + ("零" if 0 < low < 1000 else "") + rest
    text, zero = "", False
    for value, unit in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
        digit, number = divmod(number, value)
        if digit:
            if zero and text:
                text += "零"
            text += _CN_DIGIT_CHARS[digit] + unit
            zero = False
        elif text:
            zero = True
    return text[1:] if text.startswith("一十") else text


def restate(sentence: str, language: str) -> str:
    """The sentence with its figures in another notation of the same value (years and
    identifiers untouched)."""
    if language == "zh":
        text = re.sub(r"(\d+(?:\.\d+)?)%", lambda m: "百分之" + _zh(m.group(1)), sentence)
        return re.sub(r"(?<![\d.,:/-])(\d{1,3})(?=[个位名次岁人座家种项条届倍年月日天])(?![\d.,])",
                      lambda m: _zh(m.group(1)), text)
    text = re.sub(r"\b(\d+)-year\b", r"\1 years", sentence)
    text = re.sub(r"\b(\d{1,3}),(\d{3})\b(?!,)", r"\1\2", text)
    text = re.sub(r"(\d)\s*%", r"\1 percent", text)
    text = re.sub(r"\$(\d[\d,]*(?:\.\d+)?(?: million| billion)?)", r"\1 US dollars", text)
    return re.sub(r"(?<![\w-])(two|three|four|five|six|seven|eight|nine|ten)(?![\w-])",
                  lambda m: str(("two three four five six seven eight nine ten".split()).index(m.group(1).lower()) + 2),
                  text, flags=re.IGNORECASE)


def _zh(digits: str) -> str:
    if "." in digits:
        whole, fraction = digits.split(".")
        return to_chinese_numerals(int(whole)) + "点" + "".join(_CN_DIGIT_CHARS[int(c)] for c in fraction)
    return to_chinese_numerals(int(digits))


# ----- the figures ---------------------------------------------------------------------------------


def support_metrics(cases: list[SupportCase], progress: Callable[[str, int, int], None] | None = None) -> dict:
    """Precision and recall of ``supports`` per language ("supported" is the positive class),
    with the acceptance rate of each kind of case."""
    summary: dict = {}
    verdicts = []
    for number, case in enumerate(cases, start=1):
        verdicts.append(supports(case.passage, case.sentence).supported)
        if progress:
            progress("support check", number, len(cases))
    for lang in sorted({c.language for c in cases}):
        pairs = [(c, v) for c, v in zip(cases, verdicts) if c.language == lang]
        accepted_true = sum(v and c.supported for c, v in pairs)
        accepted = sum(v for _, v in pairs)
        stated = sum(c.supported for c, _ in pairs)
        summary[f"{lang}_cases"] = len(pairs)
        summary[f"{lang}_supported_cases"] = stated
        summary[f"{lang}_precision"] = round(accepted_true / accepted, 4) if accepted else 0.0
        summary[f"{lang}_recall"] = round(accepted_true / stated, 4) if stated else 0.0
        for kind in ("gold", "restated", "swapped"):
            of_kind = [v for c, v in pairs if c.kind == kind]
            if of_kind:
                summary[f"{lang}_{kind}_accepted"] = round(sum(of_kind) / len(of_kind), 4)
    return summary


def misjudged(cases: list[SupportCase]) -> list[tuple[SupportCase, str]]:
    """The cases the check gets wrong, with its reason: for reading, not for tuning."""
    wrong = []
    for case in cases:
        verdict = supports(case.passage, case.sentence)
        if verdict.supported != case.supported:
            wrong.append((case, verdict.reason))
    return wrong


def run_support(paths: list[str | Path], limit: int | None = None,
                progress: Callable[[str, int, int], None] | None = None) -> dict:
    """The support check's figures over the labelled sets of these files."""
    cases = [case for path in paths for case in support_cases(path)]
    if limit:
        cases = cases[:limit]
    return support_metrics(cases, progress)

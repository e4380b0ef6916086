"""Memory for long conversations: older turns folded into a running summary.

The prompts of a turn carry the last ``RAGKIT_HISTORY_TURNS`` turns word for word. Once a
conversation has more than ``RAGKIT_MEMORY_TURNS`` turns, the turns older than those fold
into a :class:`ConversationMemory`, kept with the session (``HistoryManager.session_memory``)
and updated as the conversation grows: the subjects asked about and the facts the answers
established (offline: deterministic, from each turn's question and its answer's first
sentence), and the summary text the prompts get: the model's when one is configured
(``graph/memory.py``), else these subjects and facts. The summary never exceeds
``RAGKIT_MEMORY_TOKENS``: the oldest facts give way first, so however long a conversation
grows, what it adds to a prompt is bounded.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from ragkit.answering.citations import MARKER_RE
from ragkit.answering.contextualize import subject_options
from ragkit.lang.text import count_tokens, is_cjk_text, split_sentences, strip_html

MAX_SUBJECTS = 12
FACT_CHARS = 220
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class FoldedTurn:
    """A turn as memory reads it."""

    id: int
    question: str  # the question as understood (standalone)
    answer: str
    found: bool
    evidence: str = ""  # the passage it came from (names its subject)


@dataclass
class ConversationMemory:
    """What a conversation established before the turns its prompts carry word for word."""

    summary: str = ""  # what the prompts get
    subjects: list[str] = field(default_factory=list)  # asked about, oldest first (the last is the latest)
    facts: list[str] = field(default_factory=list)  # "subject: fact", oldest first
    through_id: int = 0  # the last turn folded in
    folded: int = 0  # how many turns are folded in
    by: str = "offline"  # who wrote the summary: "offline" or a model's name

    def to_dict(self) -> dict:
        """Plain dict for storage."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict | None) -> "ConversationMemory":
        """Inverse of to_dict (unknown keys ignored; None: empty)."""
        known = cls.__dataclass_fields__
        return cls(**{key: value for key, value in (data or {}).items() if key in known})

    @property
    def latest_subject(self) -> str:
        """The subject asked about last ("" when none)."""
        return self.subjects[-1] if self.subjects else ""


def fold_offline(memory: ConversationMemory, turns: list[FoldedTurn], max_tokens: int) -> ConversationMemory:
    """``memory`` with ``turns`` (oldest first, newer than ``memory.through_id``) folded in:
    each turn's subject, and the first sentence of a found answer as its fact; the summary
    rebuilt from them within ``max_tokens``."""
    subjects, facts = list(memory.subjects), list(memory.facts)
    for turn in turns:
        subject = turn_subject(turn)
        if subject:
            subjects = [s for s in subjects if s.lower() != subject.lower()] + [subject]
        fact = first_sentence(turn.answer) if turn.found else ""
        if fact:
            facts.append(f"{subject}: {fact}" if subject and subject.lower() not in fact.lower() else fact)
    subjects = subjects[-MAX_SUBJECTS:]
    facts = fit_facts(facts, subjects, max_tokens)
    return ConversationMemory(offline_summary(subjects, facts), subjects, facts,
                              turns[-1].id if turns else memory.through_id, memory.folded + len(turns), "offline")


def turn_subject(turn: FoldedTurn) -> str:
    """The likeliest subject of a turn's question ("" for none)."""
    options = subject_options(turn.question, turn.evidence or turn.answer)
    return options[0] if options else ""


def first_sentence(answer: str) -> str:
    """An answer's first sentence as plain text: no citation markers, no markup, clipped."""
    text = _SPACE.sub(" ", MARKER_RE.sub("", strip_html(answer))).strip()
    sentences = split_sentences(text)
    sentence = sentences[0].text.strip() if sentences else text
    return sentence if len(sentence) <= FACT_CHARS else sentence[:FACT_CHARS].rsplit(" ", 1)[0] + "…"


def fit_facts(facts: list[str], subjects: list[str], max_tokens: int) -> list[str]:
    """The newest facts whose summary fits ``max_tokens`` (the oldest give way first)."""
    kept = list(facts)
    while kept and count_tokens(offline_summary(subjects, kept)) > max_tokens:
        kept.pop(0)
    return kept


def offline_summary(subjects: list[str], facts: list[str]) -> str:
    """The subjects and facts in words, in the conversation's language."""
    if not subjects and not facts:
        return ""
    cjk = any(is_cjk_text(s) for s in subjects + facts)
    parts = []
    if subjects:
        parts.append(("此前谈到：" if cjk else "Earlier subjects: ") + ("；" if cjk else "; ").join(subjects))
    if facts:
        parts.append(("已知：" if cjk else "Established: ") + " ".join(f"({n}) {f}" for n, f in enumerate(facts, 1)))
    return "\n".join(parts)


def clip_summary(text: str, max_tokens: int) -> str:
    """A (model's) summary as plain text within ``max_tokens``: whole sentences kept while they fit."""
    text = _SPACE.sub(" ", strip_html(text)).strip()
    if count_tokens(text) <= max_tokens:
        return text
    kept = ""
    for sentence in split_sentences(text):
        candidate = (kept + " " + sentence.text.strip()).strip()
        if count_tokens(candidate) > max_tokens:
            break
        kept = candidate
    return kept

"""Check, then show: a model's answer reaches the screen sentence by sentence, each only
once its cited passages support it (``checks.check_support``) and once the answer has said
what the question asks for (``answer_fit``).

``ScreenedAnswer`` wraps the stream's writer: ``token`` events are held until a sentence is
complete (its end mark and any citation markers after it are in, and more text follows),
then judged. A supported sentence is shown as soon as some sentence of the answer answers
the question (supported sentences before it wait for it); an unsupported one, a sentence
that only repeats the question, and the unfinished sentence of an answer cut at its token
limit are never shown and are listed for the trace. Other events pass through unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ragkit.answering.answer_fit import (
    OFF_SUBJECT,
    UNSAID,
    about_subject,
    answer_problem,
    omits_problem,
    unsaid_problem,
)
from ragkit.answering.checks import answer_sentences, check_support, strip_label
from ragkit.answering.citations import MARKER_RE
from ragkit.events import ChatEvent, EventWriter, token
from ragkit.lang.text import strip_html
from ragkit.types import Source, TraceStep

_PROMPT_DEBRIS = re.compile(r"</?\s*(?:source|sources|question|answer)\b[^>\n]*>?", re.IGNORECASE)


NEVER_ANSWERED = "the answer never said what the question asks for"
REPEATS_QUESTION = "it only repeats the question"


@dataclass
class Withheld:
    """A sentence of the model's answer that was not shown, and why."""

    text: str
    reason: str


@dataclass
class ScreenedAnswer:
    """An ``EventWriter`` that shows a streamed answer's sentences only once they pass."""

    write: EventWriter
    sources: list[Source]
    questions: tuple[str, ...]  # the question as asked and as understood
    shown: list[str] = field(default_factory=list)
    withheld: list[Withheld] = field(default_factory=list)
    answered: bool = False  # a shown sentence says what the question asks for
    _waiting: list[str] = field(default_factory=list)  # supported, held until one answers
    _pending: str = ""

    def __call__(self, event: ChatEvent) -> None:
        if event["type"] != "token":
            self.write(event)
            return
        self._pending += event["text"]
        sentences, rest = answer_sentences(self._pending)
        # The last complete sentence may still get its citation markers: judge it once more follows.
        if sentences and not rest.strip():
            rest = sentences.pop() + rest
        for sentence in sentences:
            self._judge(sentence)
        self._pending = rest

    def finish(self, cut_off: bool, why: str = "cut off at the answer's token limit") -> None:
        """Judge what is left; an answer cut off (at its token limit, or by a model that
        stopped: ``why``) ends at its last complete sentence."""
        sentences, rest = answer_sentences(self._pending)
        for sentence in sentences:
            self._judge(sentence)
        if rest.strip():
            if cut_off:
                self.withheld.append(Withheld(rest.strip(), why))
            else:
                self._judge(rest)
        self._pending = ""
        for sentence in self._waiting:
            self.withheld.append(Withheld(sentence.strip(), NEVER_ANSWERED))
        self._waiting = []

    @property
    def text(self) -> str:
        """The answer as shown."""
        return "".join(self.shown).strip()

    def _judge(self, sentence: str) -> None:
        ending = sentence[len(sentence.rstrip()):]
        sentence = _PROMPT_DEBRIS.sub("", strip_html(sentence)).strip()
        if not self.shown and not self._waiting:
            sentence = strip_label(sentence)
        if not MARKER_RE.sub("", sentence).strip(" \n.。"):
            if self.shown and MARKER_RE.search(sentence):
                self._show(sentence)  # stray markers after a shown sentence belong to it
            return
        checks = check_support(sentence, self.sources)
        failed = [c for c in checks if not c.supported]
        if failed:
            self.withheld.append(Withheld(sentence.strip(), failed[0].reason))
            return
        if any(MARKER_RE.sub("", sentence).strip() == MARKER_RE.sub("", seen).strip()
               for seen in self.shown + self._waiting):
            self.withheld.append(Withheld(sentence.strip(), "it repeats an earlier sentence"))
            return
        cited = sentence
        for check in checks:
            if check.attributed:  # it cited nothing, but one source says it: cite that one
                cited = cited.rstrip() + f"[{check.cited[0]}]"
        cited += ending
        cited_sources = [source for source in self.sources if any(source.n in check.cited for check in checks)]
        cited_text = " ".join(source.text for source in cited_sources)
        titled = " ".join(f"{source.title} {source.text}" for source in cited_sources)
        problems = [answer_problem(cited, q) or ("" if about_subject(cited, cited_text, q) else OFF_SUBJECT)
                    or unsaid_problem(cited, titled, q) or omits_problem(cited, cited_text, q) for q in self.questions]
        if REPEATS_QUESTION in problems or "it is empty" in problems:
            self.withheld.append(Withheld(sentence.strip(), REPEATS_QUESTION))
            return
        if all(_not_about_the_question(problem) for problem in problems):
            self.withheld.append(Withheld(sentence.strip(), problems[0]))
            return
        if self.answered:
            self._show(cited)
        elif any(not problem for problem in problems):
            self.answered = True
            for waiting in self._waiting:
                self._show(waiting)
            self._waiting = []
            self._show(cited)
        else:
            self._waiting.append(cited)

    def _show(self, sentence: str) -> None:
        if self.shown and not self.shown[-1].endswith((" ", "\n")) and not sentence.startswith((" ", "\n", "[")):
            sentence = (" " if sentence[:1].isascii() else "") + sentence
        self.shown.append(sentence)
        self.write(token(sentence))

    def problem(self) -> str:
        """Why nothing of the answer could be shown ("" when something was)."""
        if self.answered:
            return ""
        reasons = [w.reason for w in self.withheld]
        if not reasons:
            return "it was empty"
        if NEVER_ANSWERED in reasons:
            said = " ".join(w.text for w in self.withheld if w.reason == NEVER_ANSWERED)
            detail = answer_problem(said, self.questions[-1]) or "it does not say what the question asks for"
            return f"it did not answer the question: {detail}"
        elsewhere = [r for r in reasons if _not_about_the_question(r)]
        if elsewhere and len(elsewhere) == len([r for r in reasons if r not in _REPEATS]):
            return f"it did not answer the question: {elsewhere[0]}"
        unsupported = [r for r in reasons if r not in _REPEATS]
        if unsupported:
            return f"no sentence of it was supported by its sources ({unsupported[0]})"
        return f"it did not answer the question: {REPEATS_QUESTION}"


_REPEATS = (REPEATS_QUESTION, "it repeats an earlier sentence")


def _not_about_the_question(problem: str) -> bool:
    """True for a sentence about something else than what the question asks about."""
    return problem == OFF_SUBJECT or problem.startswith(UNSAID)


def screened_step(shown: list[str], withheld: list[Withheld]) -> list:
    """The trace step that lists what was shown and, each with its reason, what was not."""
    detail = f"{len(shown)} sentences shown, each after its sources were checked"
    if withheld:
        listed = "; ".join(f"“{w.text[:120]}” ({w.reason})" for w in withheld[:6])
        more = f"; and {len(withheld) - 6} more" if len(withheld) > 6 else ""
        detail += f"; {len(withheld)} not shown: {listed}{more}"
    return [TraceStep("Checked before showing", detail)]

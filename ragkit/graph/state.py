"""The typed state every node reads, one question at a time, and the small helpers that
build a node's update to it (trace steps, timings).

``TurnInput`` is what a caller gives the graph (``ChatEngine`` fills it); ``RagState`` adds
what the nodes find out. A node receives the whole ``RagState`` and returns a dict of the
fields it sets (a partial ``RagState``); ``timings`` and ``usage`` merge key by key and
``trace`` appends, so a node adds to them instead of replacing them.
"""

from __future__ import annotations

import operator
import time
from dataclasses import dataclass, field
from typing import Annotated, Literal

from ragkit.answering.grading import Grade
from ragkit.answering.memory import ConversationMemory
from ragkit.lang.text import is_cjk_text
from ragkit.types import Conversation, Exchange, Hit, SearchFilters, Source, TraceStep, Turn

AnswerMode = Literal["extractive", "llm", "not_found", "direct"]
ChatMode = Literal["default", "agentic"]
CHAT_MODES: tuple[str, ...] = ("default", "agentic")


Outcome = Literal["hops", "generate", "grade"]  # answered hop by hop offline, by the model, or graded


@dataclass(frozen=True)
class HopLink:
    """A passage on the way to a multi-hop answer: found for ``entity``, a name the passage
    ``from_id`` holds ("" for a passage the question itself led to)."""

    entity: str
    hit: Hit
    from_id: str
    round: int


@dataclass(frozen=True)
class PartVerdict:
    """Whether the evidence covers one part of the question (a sub-question, or the last hop)."""

    part: str
    sufficient: bool
    reason: str


@dataclass(frozen=True)
class Plan:
    """What the research found, as the answer nodes read it: the question's parts (a
    comparison's sides), the passages reached on the way, each part's verdict, and why the
    web did not cover a missing part ("" when it was not asked or did); ``outcome``: where the
    conversation graph goes next."""

    outcome: Outcome = "grade"
    sub_questions: tuple[str, ...] = ()
    links: tuple[HopLink, ...] = ()
    parts: tuple[PartVerdict, ...] = ()
    web_failure: str = ""


def merge_dicts(left: dict | None, right: dict | None) -> dict:
    """Reducer: later nodes add keys (timings, usage) instead of replacing the dict."""
    return {**(left or {}), **(right or {})}


@dataclass(frozen=True)
class GradedRound:
    """A search round as graded: kept as the best one, it is what "not found" shows as the
    closest matches and names as the question understood."""

    margin: float  # the grade's score over its threshold (below it: negative)
    hits: tuple[Hit, ...]  # the round's passages, as focused
    question: str  # the question as understood in that round


@dataclass(frozen=True)
class ModelAttempt:
    """One model's try at a step of the turn (``chain.py``): the answer, or a structured
    step (the route, a rewrite, a grade); "answered", "failed" or "skipped", and why."""

    model: str
    outcome: Literal["answered", "failed", "skipped"]
    reason: str = ""
    step: str = "answer"


@dataclass(kw_only=True)
class TurnInput:
    """One question as the caller hands it to the graph."""

    session_id: str
    question: str
    filters: SearchFilters | None = None  # None: the whole knowledge base
    model_id: str | None = None  # the conversation's model choice (None: the default; "extractive": offline)
    history: list[Exchange] = field(default_factory=list)  # earlier turns, oldest first, trimmed to the budget
    chat_mode: ChatMode = "default"  # the conversation's mode (see routing and hops)
    conversation: Conversation | None = None  # the conversation as read for this turn (None: a new one)


@dataclass(kw_only=True)
class RagState(TurnInput):
    """One turn of a conversation as it moves through the graph."""

    # recall (memory.py): the conversation's running summary of its older turns
    memory: ConversationMemory | None = None
    # route, contextualize
    route: str = ""  # where the question goes (see routing.ROUTES)
    standalone_question: str = ""  # the question as understood (a follow-up made standalone)
    alternatives: list[str] = field(default_factory=list)  # a follow-up's rewrites with other subjects
    # retrieval rounds and their grades
    query: str = ""  # what the current search round looks for
    queries: list[str] = field(default_factory=list)  # every query searched so far
    hits: list[Hit] = field(default_factory=list)  # the current round's passages
    grade: Grade | None = None  # the current round's grade
    best: GradedRound | None = None  # the best-graded round so far
    # agentic mode (graph/agentic): what its research found
    plan: Plan | None = None
    web_searched: bool = False  # agentic mode searches the web once, when the knowledge base does not answer
    # answer
    answer: str = ""
    sources: list[Source] = field(default_factory=list)
    closest: list[Source] = field(default_factory=list)  # not found: the closest passages, never cited
    found: bool = True
    mode: AnswerMode = "extractive"
    model: str = ""  # the model that wrote the answer ("" offline)
    error: str = ""  # why the model's answer was replaced, for the user
    # the model chain (chain.py): which model of the chain answers now, and every try so far
    chain_position: int = 0
    attempts: Annotated[list[ModelAttempt], operator.add] = field(default_factory=list)
    usage: Annotated[dict, merge_dicts] = field(default_factory=dict)
    timings: Annotated[dict, merge_dicts] = field(default_factory=dict)
    trace: Annotated[list[TraceStep], operator.add] = field(default_factory=list)
    # record
    turn: Turn | None = None


def passages(count: int) -> str:
    """'1 passage', '3 passages': how a trace step counts them."""
    return f"{count} passage{'' if count == 1 else 's'}"


def step(name: str, detail: str) -> list[TraceStep]:
    """A one-step trace update."""
    return [TraceStep(name, detail)]


def elapsed_ms(started: float) -> float:
    """Milliseconds since ``started`` (a ``time.perf_counter()`` reading)."""
    return round((time.perf_counter() - started) * 1000, 1)


def add_time(state: RagState, key: str, started: float) -> dict:
    """A timings update adding this call's time to what earlier rounds spent on ``key``."""
    return {key: state.timings.get(key, 0.0) + elapsed_ms(started)}


def language(state: RagState) -> str:
    """"zh" or "en": the language the user asked in."""
    return "zh" if is_cjk_text(state.question) else "en"

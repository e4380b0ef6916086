"""The stream's event vocabulary: what ``ChatEngine.stream`` yields while a turn runs.

Every event is a dict with a ``type``; the nodes send them through LangGraph's custom
stream (``runtime.stream_writer``) and ``ChatEngine.stream`` adds ``done``. In the order a
turn sends them:

=============  ==========================  ==================================================
type           keys                        meaning
=============  ==========================  ==================================================
``standalone`` ``question``                the question as understood (a follow-up rewritten,
                                           or another subject tried); the last one wins
``status``     ``text``                    a step in words ("Searching again…", "Waiting for
                                           the model… 6 s"); any time, replaces the last
``sources``    ``sources``, ``found``      the passages the answer draws on (``found``), or the
                                           closest ones when nothing answers it (not found);
                                           always before the answer's first token
``token``      ``text``                    answer text to append (sentence by sentence offline)
``reset``      ``error``, ``then``         the streamed answer is withdrawn (a model failed, or
                                           its sentences were unsupported): clear it; new
                                           ``sources`` and ``token`` events follow, from the
                                           model ``then`` names (the next of the chain), or
                                           the offline answer when ``then`` is ""
``done``       ``turn``                    the last event, once: the ``Turn`` as recorded
=============  ==========================  ==================================================

The answer as recorded (``done``'s ``turn.answer``) may differ from the streamed tokens:
citations checked, unsupported sentences flagged, prompt echoes cut.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypedDict, Union

from ragkit.types import Source, Turn


class StandaloneEvent(TypedDict):
    """The question as understood."""

    type: Literal["standalone"]
    question: str


class StatusEvent(TypedDict):
    """A step in words, shown while the turn runs."""

    type: Literal["status"]
    text: str


class SourcesEvent(TypedDict):
    """The answer's passages (``found``), or the closest ones when nothing answers it."""

    type: Literal["sources"]
    sources: list[Source]
    found: bool


class TokenEvent(TypedDict):
    """Answer text to append."""

    type: Literal["token"]
    text: str


class ResetEvent(TypedDict):
    """The streamed answer is withdrawn, and why."""

    type: Literal["reset"]
    error: str
    then: str


class DoneEvent(TypedDict):
    """The turn as recorded; always the last event."""

    type: Literal["done"]
    turn: Turn


ChatEvent = Union[StandaloneEvent, StatusEvent, SourcesEvent, TokenEvent, ResetEvent, DoneEvent]
EventWriter = Callable[[ChatEvent], None]


def standalone(question: str) -> StandaloneEvent:
    """The question as understood."""
    return {"type": "standalone", "question": question}


def status(text: str) -> StatusEvent:
    """A step in words."""
    return {"type": "status", "text": text}


def sources(found_sources: list[Source], found: bool) -> SourcesEvent:
    """The answer's passages, or (``found`` False) the closest ones."""
    return {"type": "sources", "sources": found_sources, "found": found}


def token(text: str) -> TokenEvent:
    """Answer text to append."""
    return {"type": "token", "text": text}


def reset(error: str, then: str = "") -> ResetEvent:
    """Withdraw the streamed answer; ``then``: the model that answers next ("": offline)."""
    return {"type": "reset", "error": error, "then": then}


def done(turn: Turn) -> DoneEvent:
    """The turn as recorded."""
    return {"type": "done", "turn": turn}

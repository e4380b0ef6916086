"""ChatEngine for a caller that keeps the conversation itself (the HTTP API): the history it
gives is what a follow-up is read against, nothing is recorded, and a cancelled turn stops."""

from __future__ import annotations

import threading

import pytest

from ragkit.app.engine import ChatEngine
from ragkit.errors import TurnCancelled
from ragkit.types import Exchange

ORION = ("# The Orion Bridge\n\nThe Orion Bridge was completed in 1932 by the engineer Mara Lind. It spans the "
         "Vessel river and is 412 metres long.\n")


@pytest.fixture
def engine(kb, settings):
    kb.ingest(ORION.encode(), filename="orion.md")
    return ChatEngine(settings, kb)


def test_a_follow_up_is_read_against_the_callers_history_and_not_recorded(engine):
    earlier = [Exchange("Who built the Orion Bridge?", "The Orion Bridge was completed in 1932 by Mara Lind.")]
    events = list(engine.stream("caller-1", "How long is it?", history=earlier, record=False))

    turn = events[-1]["turn"]
    assert "412 metres" in turn.answer and "Orion Bridge" in turn.standalone_question
    assert turn.id is None and not engine.history.exists("caller-1")
    assert "".join(e["text"] for e in events if e["type"] == "token") == turn.answer


def test_a_cancelled_turn_stops_and_leaves_nothing(engine):
    cancel = threading.Event()
    stream = engine.stream("caller-2", "Who built the Orion Bridge?", cancel=cancel)
    next(stream)  # under way
    cancel.set()
    with pytest.raises(TurnCancelled):
        list(stream)
    assert not engine.history.exists("caller-2")

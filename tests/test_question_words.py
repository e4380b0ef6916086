"""Offline "not found" and question words, over real files through the chat graph: a question
word ("多少钱", "几点", "how much") is no word the passage must say, a noun naming what is asked
("品种", "cost") is not held against a passage that says it, and a question about something the
files never mention still says "not found". Real loaders, real store, real model."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from ragkit.app.engine import ChatEngine


@pytest.fixture
def engine(settings, kb):
    for name in ("tea_garden_zh.pdf", "handbook.docx"):
        assert kb.ingest(FIXTURES / name).ok
    return ChatEngine(settings, kb)


@pytest.mark.parametrize("question, fact", [
    ("门票多少钱？", "六十元"),
    ("茶园的主要茶叶品种是什么？", "大红袍"),
    ("茶园几点开放？", "八点"),
    ("How much do the nebula noodles cost?", "14 credits"),
])
def test_a_question_the_file_answers_is_answered_with_the_fact(engine, question, fact):
    turn = engine.ask("s", question)
    assert turn.found and fact in turn.answer, (turn.mode, turn.answer)


@pytest.mark.parametrize("question", ["茶园有没有停车场？", "How much does the moon pie cost?"])
def test_a_question_about_something_the_files_never_mention_is_not_found(engine, question):
    turn = engine.ask("s", question)
    assert not turn.found and turn.mode == "not_found", turn.answer

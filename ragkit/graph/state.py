"""The typed state that flows through the graph, one question at a time."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from ..citations import Source
from ..contextualize import Exchange
from ..history import TraceStep, Turn
from ..passages import Hit
from .grading import Grade


def merge_dicts(left: dict | None, right: dict | None) -> dict:
    """Reducer: later nodes add keys (timings, usage) instead of replacing the dict."""
    return {**(left or {}), **(right or {})}


class RagState(TypedDict, total=False):
    """One turn of a conversation as it moves through the graph."""

    # input
    session_id: str
    question: str
    filters: dict  # SearchFilters as a dict
    model_id: str  # the conversation's model choice ("extractive" for offline answers)
    history: list[Exchange]  # earlier turns, oldest first, trimmed to the prompt budget
    # contextualize, retrieve, grade, rewrite
    standalone_question: str
    alternatives: list[str]  # a follow-up's rewrites with other subjects, tried after weak evidence
    query: str  # what the current search round looks for
    queries: list[str]  # every query searched so far
    hits: list[Hit]
    grade: Grade
    # the best-graded round: its margin over the threshold, passages (the closest matches), question
    best: tuple[float, list[Hit], str]
    # answer
    answer: str
    sources: list[Source]
    closest: list[Source]
    found: bool
    mode: str  # "extractive", "llm" or "not_found"
    model: str
    error: str  # why the model's answer was replaced, for the user
    usage: Annotated[dict, merge_dicts]
    timings: Annotated[dict, merge_dicts]
    trace: Annotated[list[TraceStep], operator.add]
    turn: Turn

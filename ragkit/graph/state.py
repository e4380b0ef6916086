"""The typed state that flows through the graph."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict


def merge_dicts(left: dict | None, right: dict | None) -> dict:
    """Reducer: later nodes add keys (timings, usage) instead of replacing the dict."""
    return {**(left or {}), **(right or {})}


class RagState(TypedDict, total=False):
    """One turn of a conversation as it moves through the graph."""

    session_id: str
    question: str
    filters: dict  # SearchFilters as a dict
    history: list[tuple[str, str]]  # (question, answer), oldest first, trimmed to budget
    standalone_question: str
    contextualized_by: str  # "none", "llm" or "heuristic"
    hits: list[Any]  # passages.Hit
    sources: list[Any]  # citations.Source
    answer: str
    mode: str  # "llm" or "extractive"
    model: str
    error: str
    usage: Annotated[dict, merge_dicts]
    timings: Annotated[dict, merge_dicts]
    turn: Any  # history.Turn once recorded

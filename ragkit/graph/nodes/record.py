"""The last node: the finished turn, with its sources, timings and trace, appended to the
session in one transaction."""

from __future__ import annotations

from dataclasses import asdict

from langgraph.runtime import Runtime

from ragkit.errors import ReadOnlyDataDir, StorageFull
from ragkit.graph.context import RagContext
from ragkit.graph.state import RagState
from ragkit.types import TraceStep, Turn


def record(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Append the finished turn to the session (one transaction)."""
    timings = dict(state.timings)
    timings["total_ms"] = round(sum(v for k, v in timings.items() if k.endswith("_ms")), 1)
    turn = Turn(
        question=state.question, standalone_question=state.standalone_question, answer=state.answer,
        mode=state.mode, model=state.model, sources=state.sources, timings=timings, usage=state.usage,
        error=state.error, filters=asdict(state.filters) if state.filters else {}, found=state.found,
        closest=state.closest, trace=list(state.trace),
    )
    if not runtime.context.record:  # answered for a caller that keeps the conversation itself (the HTTP API)
        return {"turn": turn}
    try:
        runtime.context.history.add_turn(state.session_id, turn)
    except (ReadOnlyDataDir, StorageFull) as exc:  # the answer still reaches the user, unsaved (id None)
        turn.trace.append(TraceStep("Not saved", str(exc)))
    return {"turn": turn}

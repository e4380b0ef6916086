"""The model fallback chain: when the model answering a turn fails, the next one takes it.

The chain is the conversation's model, then ``RAGKIT_FALLBACK_MODELS`` in order
(``llm.model_chain``); after its last model comes the extractive answer. A model fails as
``generate`` judges it (unreachable, a server error, no reply within the turn's model
time, an unusable or unsupported reply: ``model_io``'s errors and ``screening``); every try
is a ``ModelAttempt`` in the state and a step of the trace. The next model is asked only
while the turn has model time left (``TurnBudget``: ``RAGKIT_LLM_TIMEOUT_S`` bounds all
model waiting in a turn, whichever models it goes to).

    generate ─(failed)→ next_model ─┬─ a model left, time left → generate
                                    └─ otherwise ─────────────→ extract
"""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime

from . import events
from .context import RagContext
from .state import RagState, step

MIN_MODEL_TIME_S = 1.0  # a next model is not asked with less of the turn's model time left


def after_generate(state: RagState) -> Literal["check_citations", "next_model"]:
    """A model answer goes to the citation check; a failed one to the next model."""
    return "next_model" if state.error and not state.answer else "check_citations"


def next_model(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Pass the turn to the chain's next model, or (none left, or no time) to the
    extractive answer; the trace names the failed model and why."""
    context = runtime.context
    chain = context.chain(state)
    failed = context.answerer(state)
    position = state.chain_position + 1
    failures = [a for a in state.attempts if a.outcome == "failed"]
    # the user's message: every model's reason once a chain was tried, the model's own otherwise
    error = "; ".join(f"{a.model}: {a.reason}" for a in failures) if len(chain) > 1 else state.error
    if position < len(chain):
        if context.budget is None or context.budget.remaining() >= MIN_MODEL_TIME_S:
            following = chain[position]
            runtime.stream_writer(events.reset(state.error, following.model))
            return {"chain_position": position, "error": error,
                    "trace": step("Next model", f"{failed.model} failed ({state.error}): asking {following.model} "
                                  f"(model {position + 1} of {len(chain)})")}
        waiting = ", ".join(c.model for c in chain[position:])
        left = f"no model time left in this turn (RAGKIT_LLM_TIMEOUT_S) for {waiting}"
    else:
        left = "no model left in the chain" if len(chain) > 1 else ""
    runtime.stream_writer(events.reset(state.error, ""))
    if not left:
        return {"error": error}
    tried = "; ".join(f"{a.model} {a.outcome}" + (f" ({a.reason})" if a.reason else "") for a in state.attempts)
    return {"error": error, "trace": step("Model chain", f"{tried}; {left}: answering offline")}


def after_next_model(state: RagState) -> Literal["generate", "extract"]:
    """The next model when ``next_model`` moved along the chain, else the extractive answer."""
    return "generate" if state.attempts and len(state.attempts) <= state.chain_position else "extract"

"""The model fallback chain: when a model fails a step of the turn, the next one takes it.

The chain is the conversation's model, then ``RAGKIT_FALLBACK_MODELS`` in order
(``llm.model_chain``); after its last model comes the extractive answer. A model fails as
``generate`` judges it (unreachable, a server error, no reply within the turn's model
time, an unusable or unsupported reply: ``model_io``'s errors and ``screening``); every try
is a ``ModelAttempt`` in the state and a step of the trace. The next model is asked only
while the turn has model time left (``TurnBudget``: ``RAGKIT_LLM_TIMEOUT_S`` bounds all
model waiting in a turn, whichever models it goes to).

    generate ─(failed)→ next_model ─┬─ a model left, time left → generate
    check_citations ─(rejected)─↗   └─ otherwise ─────────────→ extract

An answer fails too when the citation check finds none of its sentences supported by its
sources (``answering.check_citations``): the next model writes it instead.

The structured steps (the route, a follow-up's rewrite, the next search query, the grade)
go through the same chain with ``ask_chain``: each model in order until one gives a
usable reply, then the offline rule. A model is skipped when ``RAGKIT_MODEL_JUDGE`` or the
remembered unusability (``judge_memory``) says not to ask it, and none is asked once the
turn's model time is short; the turn still makes at most one structured step
(``budget.MAX_STRUCTURED_CALLS``), however many models that step asks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ragkit.errors import UnusableAnswer
from ragkit.graph.context import RagContext
from ragkit.graph.state import ModelAttempt, RagState
from ragkit.models.chat import ModelChoice
from ragkit.models.streaming import short

log = logging.getLogger(__name__)
T = TypeVar("T")

MIN_MODEL_TIME_S = 1.0  # a next model is not asked with less of the turn's model time left









def answer_attempts(state: RagState) -> list[ModelAttempt]:
    """The models' tries at the answer (one per model of the chain asked so far)."""
    return [attempt for attempt in state.attempts if attempt.step == "answer"]


# ----- the structured steps ----------------------------------------------------------------


class NotUseful(UnusableAnswer):
    """A well-formed reply that does not serve the step (a search query already tried):
    the next model is asked, but the model is not remembered as unusable."""


@dataclass(frozen=True)
class ChainReply(Generic[T]):
    """A structured step's outcome over the chain: the first usable reply (``value``,
    None when no model gave one: the offline rule decides), the model that gave it, and
    every try in order."""

    value: T | None = None
    model: str = ""
    attempts: list[ModelAttempt] = field(default_factory=list)

    @property
    def asked(self) -> bool:
        """True when some model was asked (not only skipped)."""
        return any(attempt.outcome != "skipped" for attempt in self.attempts)

    def failures(self) -> str:
        """Each model that did not give a usable reply, and why ("" when none)."""
        return "; ".join(f"{a.model} {a.outcome}: {a.reason}" for a in self.attempts if a.outcome != "answered")

    def after(self) -> str:
        """For the trace, after "by MODEL": the models that failed first ("" when none)."""
        failed = self.failures()
        return f" (after {failed})" if failed else ""

    def unusable(self, noun: str) -> str:
        """For the trace, when the offline rule decides: what the models replied."""
        tried = [a for a in self.attempts if a.outcome != "answered"]
        if len(tried) == 1 and tried[0].outcome == "failed":
            return f"the model's {noun} was unusable ({tried[0].reason})"
        return f"no model's {noun} was usable ({self.failures()})"


def judges_now(context: RagContext, state: RagState) -> bool:
    """True when a structured step may ask the chain's models now: the turn has its
    structured step and time left, and some model of the chain may be asked."""
    if context.budget is not None and not context.budget.may_call_structured():
        return False
    return any(context.models.judges(choice) for choice in context.chain(state))


def ask_chain(context: RagContext, state: RagState, name: str, call: Callable[[ModelChoice], T]) -> ChainReply[T]:
    """``call`` each model of the chain in order until one returns a usable reply (it
    raises for an unusable one: unreachable, a server error, a timeout, a reply that does
    not fit); every try is a ``ModelAttempt`` of step ``name``. An empty reply (no model
    asked) when ``judges_now`` says no; the caller then uses its offline rule."""
    if not judges_now(context, state):
        return ChainReply()
    budget = context.budget
    if budget is not None:
        budget.count_structured_step()
    attempts: list[ModelAttempt] = []
    for choice in context.chain(state):
        if not context.models.judges(choice):
            attempts.append(ModelAttempt(choice.model, "skipped", context.models.why_not_judging(choice), name))
            continue
        if attempts and budget is not None and budget.remaining() < MIN_MODEL_TIME_S:
            attempts.append(ModelAttempt(choice.model, "skipped", "no model time left in this turn", name))
            continue
        try:
            value = call(choice)
        except Exception as exc:  # the client's errors and ours alike: the next model, then the rule
            log.info("%s by %s unusable: %s", name, choice.model, exc)
            if not isinstance(exc, NotUseful):
                context.models.judge_failed(choice, short(exc))
            attempts.append(ModelAttempt(choice.model, "failed", str(exc) if isinstance(exc, NotUseful)
                                         else short(exc), name))
            continue
        attempts.append(ModelAttempt(choice.model, "answered", "", name))
        return ChainReply(value, choice.model, attempts)
    return ChainReply(None, "", attempts)

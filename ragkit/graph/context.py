"""The graph's configuration and dependencies for a run (LangGraph's context schema).

The state (``state.py``) holds what changes during a turn; the context holds what does
not: the settings (every threshold and limit the nodes use is a ``Settings`` field,
validated and documented in README's configuration table), the passages, the session
history and the model clients. Nodes receive it as ``runtime.context``:

    def retrieve(state: RagState, runtime: Runtime[RagContext]) -> dict: ...

    graph.stream(TurnInput(...), context=RagContext(settings, kb, history, models))
"""

from __future__ import annotations

from dataclasses import dataclass

from ragkit.config import Settings
from ragkit.graph.protocols import ConversationLog, PassageRetriever
from ragkit.graph.state import RagState
from ragkit.models.budget import TurnBudget
from ragkit.models.chat import ModelChoice, ModelClients, model_chain


@dataclass(frozen=True)
class RagContext:
    """What every node may use besides the state."""

    settings: Settings
    passages: PassageRetriever
    history: ConversationLog
    models: ModelClients
    # Answer even when the grade calls the evidence weak (the grade is still recorded): what
    # ``eval --answers`` measures, the answerer on every question rather than the judge.
    always_answer: bool = False
    budget: TurnBudget | None = None  # this turn's model waiting and structured calls (``ChatEngine`` sets it)
    record: bool = True  # False: the turn is answered but not kept (an HTTP API turn without a session)

    def choice(self, state: RagState) -> ModelChoice:
        """The model this turn answers with (the offline answerer is one of the choices)."""
        return self.models.choice(state.model_id)

    def chain(self, state: RagState) -> list[ModelChoice]:
        """The models this turn may answer with, in order (``RAGKIT_FALLBACK_MODELS``); empty offline."""
        return model_chain(self.settings, self.choice(state))

    def answerer(self, state: RagState) -> ModelChoice:
        """The model of the chain whose turn it is to answer (the conversation's own first)."""
        chain = self.chain(state)
        return chain[min(state.chain_position, len(chain) - 1)] if chain else self.choice(state)

"""One turn's model budget: the time it may wait for models and its structured calls.

``RAGKIT_LLM_TIMEOUT_S`` bounds all model waiting in a turn: the structured calls (a
rewrite, a grade: the whole call is waiting) and the answer stream's silences (until its
first token and between tokens; streaming text is progress, not waiting) draw on one
allowance, and a call gets only what is left of it. A turn makes at most one structured
step (``MAX_STRUCTURED_CALLS``): the first step that would gain from the model's judgement
(the route, a follow-up's rewrite, else the grade) gets it, later ones use the offline
judgement. Within that step the model chain (``chain.ask_chain``) may ask each of its
models in turn, each call drawing on the same time allowance.

``ChatEngine.stream`` gives every turn a new ``TurnBudget`` (``RagContext.budget``).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

MAX_STRUCTURED_CALLS = 1


@dataclass
class TurnBudget:
    """What one turn may still spend on models."""

    limit_s: float
    waited_s: float = 0.0
    structured_calls: int = 0
    # set when the asker went away (an HTTP client hung up): the answer stream stops at once
    cancelled: threading.Event = field(default_factory=threading.Event, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def remaining(self) -> float:
        """Seconds of waiting left in this turn."""
        return max(0.0, self.limit_s - self.waited_s)

    def spend(self, seconds: float) -> None:
        """Count ``seconds`` of waiting for a model."""
        with self._lock:
            self.waited_s += max(0.0, seconds)

    def may_call_structured(self) -> bool:
        """True when this turn has a structured call left and time to wait for it."""
        return self.structured_calls < MAX_STRUCTURED_CALLS and self.remaining() > 1.0

    def count_structured_step(self) -> None:
        """Count one structured step (however many of the chain's models it asks)."""
        self.structured_calls += 1

    def timed(self) -> "_Timed":
        """``with budget.timed(): ...``: counts a call's time as waiting, not as a step."""
        return _Timed(self)


class _Timed:
    def __init__(self, budget: TurnBudget):
        self.budget = budget

    def __enter__(self) -> "_Timed":
        self.started = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        self.budget.spend(time.monotonic() - self.started)



"""The agentic subgraph's own state, and what it hands back to the conversation graph.

``AgentState`` is what the research rounds read and write; the conversation graph sees only
its ``Plan`` (the parts and hops an answer is written from) and the fields ``agentic``
copies back (the answer passages, the queries searched, and, when the hops answered it
themselves, the answer).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated

from ragkit.graph.state import HopLink, Outcome, PartVerdict, Plan, merge_dicts
from ragkit.types import Hit, SearchFilters, Source, TraceStep


@dataclass(frozen=True)
class Bridge:
    """A name found in the evidence that the next round searches: a document's title
    (``doc_id`` set: that document is searched) or another name (the whole knowledge base)."""

    entity: str
    from_id: str
    doc_id: str = ""


@dataclass(frozen=True)
class Found:
    """One fanned-out search's passages: part or bridge number ``index`` of its round."""

    index: int
    hits: tuple[Hit, ...]


def collect(left: list[Found] | None, right: list[Found] | None) -> list[Found]:
    """Reducer for the fanned-out searches of a round: each adds its ``Found``; ``None``
    (the round's join) clears them for the next round."""
    return [] if right is None else [*(left or []), *right]


@dataclass(frozen=True)
class Search:
    """What one fanned-out search is sent: its number, the query, and the document it is
    limited to ("" for the whole scope); ``chained``: documents already on the chain."""

    index: int
    query: str
    filters: SearchFilters | None
    doc_id: str = ""
    entity: str = ""
    chained: frozenset[str] = frozenset()


@dataclass(kw_only=True)
class AgentState:
    """One agentic turn's research, from the plan to the evidence an answer is drawn from."""

    # given by the conversation graph
    question: str  # the question as understood (a follow-up made standalone)
    filters: SearchFilters | None = None
    model_id: str | None = None  # the conversation's model choice (``RagContext.choice`` reads it)
    queries: list[str] = field(default_factory=list)  # searched before the research began
    # the research
    sub_questions: list[str] = field(default_factory=list)  # ordered, self-contained parts (a comparison's sides)
    rounds: int = 0
    links: list[HopLink] = field(default_factory=list)  # the passages each round added on the way, in order
    bridges: list[Bridge] = field(default_factory=list)  # what the next round searches
    followed: list[str] = field(default_factory=list)  # every bridge searched so far
    evidence: list[Hit] = field(default_factory=list)  # every round's passages merged by id, best score kept
    first_evidence: list[Hit] = field(default_factory=list)  # the first round's, as the default path focuses them
    parts: list[PartVerdict] = field(default_factory=list)  # the last round's sufficiency per part
    found: Annotated[list[Found], collect] = field(default_factory=list)  # this round's fanned-out searches
    round_started: float = 0.0  # perf_counter when the current round's searches began
    web_searched: bool = False
    web_failure: str = ""
    # handed back
    hits: list[Hit] = field(default_factory=list)  # the passages the answer draws on
    outcome: Outcome = "grade"
    answer: str = ""
    sources: list[Source] = field(default_factory=list)
    timings: Annotated[dict, merge_dicts] = field(default_factory=dict)
    trace: Annotated[list[TraceStep], operator.add] = field(default_factory=list)

    def plan(self) -> Plan:
        """The research as the answer nodes read it."""
        return Plan(self.outcome, tuple(self.sub_questions), tuple(self.links), tuple(self.parts), self.web_failure)

"""Is the evidence enough? The ``grade`` node judges each round's passages (offline by
``grading.grade_evidence``, or by the conversation's model through structured output),
keeps the best-graded round, and ``after_grade`` decides: answer, search again, or say
it was not found.
"""

from __future__ import annotations

import time

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from ragkit.answering.grading import EvidenceVerdict, Grade, grade_evidence
from ragkit.graph.chain import ask_chain, judges_now
from ragkit.graph.context import RagContext
from ragkit.graph.state import GradedRound, RagState, add_time, step
from ragkit.models import prompts
from ragkit.models.streaming import structured_reply
from ragkit.types import Hit

CLEARLY_BETTER = 0.15  # how much higher a later round's margin must be to replace the first as the best


def grade(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Judge whether the passages likely hold the answer; keep the best-graded round."""
    started = time.perf_counter()
    context = runtime.context
    question = state.standalone_question
    hits = state.hits
    offline = grade_evidence(question, hits, context.passages, context.settings)
    verdict = offline
    if hits and judges_now(context, state):
        verdict = model_grade(context, state, question, hits, offline)
    judged = "sufficient" if verdict.sufficient else "not sufficient"
    detail = f"{verdict.reason}; score {verdict.score:.2f} against {verdict.threshold:.2f}: {judged} ({verdict.by})"
    update = {"grade": verdict, "trace": step("Graded the evidence", detail),
              "timings": add_time(state, "grade_ms", started)}
    # The closest matches, if nothing suffices: the first search's (it is for the question as
    # understood) unless a retry found clearly better evidence.
    if state.best is None or verdict.margin > state.best.margin + CLEARLY_BETTER:
        update["best"] = GradedRound(verdict.margin, tuple(hits), question)
    return update


def model_grade(context: RagContext, state: RagState, question: str, hits: list[Hit], offline: Grade) -> Grade:
    """The verdict on the best three passages of the chain's first model with a usable
    one; the offline grade when no model's is usable."""
    packed = [prompts.PromptSource(n, h.title, h.text) for n, h in enumerate(hits[:3], start=1)]
    messages = [SystemMessage(prompts.GRADE_SYSTEM),
                HumanMessage(f"{prompts.format_sources(packed)}\n\nQuestion: {question}")]
    reply = ask_chain(context, state, "grade", lambda choice: EvidenceVerdict.model_validate_json(
        structured_reply(context, choice, messages, None, EvidenceVerdict)))
    if reply.value is None:
        if not reply.asked:
            return offline
        return Grade(offline.score, offline.threshold, f"offline; {reply.unusable('verdict')}", offline.reason)
    score = 1.0 if reply.value.sufficient else 0.0
    return Grade(score, 0.5, f"model {reply.model}{reply.after()}", reply.value.reason[:200] or offline.reason)



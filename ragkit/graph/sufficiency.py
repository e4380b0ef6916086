"""Is the evidence enough? The ``grade`` node judges each round's passages (offline by
``grading.grade_offline``, or by the conversation's model through structured output),
keeps the best-graded round, and ``after_grade`` decides: answer, search again, or say
it was not found.
"""

from __future__ import annotations

import logging
import time
from typing import Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from ..llm import ModelChoice
from ..passages import Hit
from . import prompts
from .budget import structured_reply
from .context import RagContext
from .grading import EvidenceVerdict, Grade, grade_offline
from .model_io import short
from .rounds import next_query
from .state import GradedRound, RagState, add_time, step

log = logging.getLogger(__name__)
CLEARLY_BETTER = 0.15  # how much higher a later round's margin must be to replace the first as the best


def grade(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Judge whether the passages likely hold the answer; keep the best-graded round."""
    started = time.perf_counter()
    context = runtime.context
    question = state.standalone_question
    hits = state.hits
    offline = grade_offline(question, hits, context.passages.idf(question), context.passages.embed_sentences,
                            context.settings)
    verdict = offline
    choice = context.choice(state)
    if context.models.judges(choice, context.budget) and hits:
        verdict = model_grade(context, choice, question, hits, offline)
    judged = "sufficient" if verdict.sufficient else "not sufficient"
    detail = f"{verdict.reason}; score {verdict.score:.2f} against {verdict.threshold:.2f}: {judged} ({verdict.by})"
    update = {"grade": verdict, "trace": step("Graded the evidence", detail),
              "timings": add_time(state, "grade_ms", started)}
    # The closest matches, if nothing suffices: the first search's (it is for the question as
    # understood) unless a retry found clearly better evidence.
    if state.best is None or verdict.margin > state.best.margin + CLEARLY_BETTER:
        update["best"] = GradedRound(verdict.margin, tuple(hits), question)
    return update


def model_grade(context: RagContext, choice: ModelChoice, question: str, hits: list[Hit], offline: Grade) -> Grade:
    """The model's verdict on the best three passages; the offline grade when it is unusable."""
    packed = [prompts.PromptSource(n, h.title, h.text) for n, h in enumerate(hits[:3], start=1)]
    messages = [SystemMessage(prompts.GRADE_SYSTEM),
                HumanMessage(f"{prompts.format_sources(packed)}\n\nQuestion: {question}")]
    try:
        verdict = EvidenceVerdict.model_validate_json(
            structured_reply(context, choice, messages, None, EvidenceVerdict))
    except Exception as exc:
        log.info("model grade unusable: %s", exc)
        context.models.judge_failed(choice, short(exc))
        return Grade(offline.score, offline.threshold, f"offline; the model's verdict was unusable ({short(exc)})",
                     offline.reason)
    score = 1.0 if verdict.sufficient else 0.0
    return Grade(score, 0.5, f"model {choice.model}", verdict.reason[:200] or offline.reason)


def after_grade(state: RagState, runtime: Runtime[RagContext]) -> Literal[
        "generate", "extract", "rewrite_query", "not_found"]:
    """Answer when the evidence suffices; otherwise search again while rounds are left,
    then say it was not found."""
    context = runtime.context
    choice = context.choice(state)
    if state.grade.sufficient or context.always_answer:
        return "generate" if choice.generated else "extract"
    rounds_left = len(state.queries) <= context.settings.retrieval_retries
    if rounds_left and (next_query(state) or context.models.judges(choice, context.budget)):
        return "rewrite_query"
    return "not_found"

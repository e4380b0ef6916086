"""Where a question goes, and what it asks: the nodes before the first search.

- ``route`` decides the path. Today every question goes to the knowledge base; a route
  that answers without retrieval (small talk, thanks, questions about the app) is a new
  entry in ``ROUTES``, a rule (or a model's structured verdict) in ``route``, and a node
  of its own in ``build.py``.
- ``contextualize`` makes a follow-up standalone ("What about its height?" → "What about
  Skerry Point Lighthouse's height?"), offline from the previous question's subject, or by
  the conversation's model when it gives a usable rewrite.
"""

from __future__ import annotations

import logging
import time
from typing import Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from ..contextualize import Exchange, clean_rewrite, needs_context, plausible_rewrite, rewrite_options
from ..llm import ModelChoice
from . import events, prompts
from .budget import structured_reply
from .context import RagContext
from .grading import PASSAGES_GRADED, coverage
from .model_io import short
from .state import RagState, elapsed_ms, step

log = logging.getLogger(__name__)
SUBJECT_MARGIN = 0.15  # how much better other evidence must be to win over the likeliest subject's

# route -> the first node of its path
ROUTES = {"knowledge_base": "contextualize"}


def route(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Choose the question's path: today, always the knowledge base."""
    return {"route": "knowledge_base"}


def after_route(state: RagState) -> Literal["contextualize"]:
    """The first node of the chosen path."""
    return ROUTES[state.route]


def contextualize(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Make a follow-up standalone (a first question, or a complete one, stays as is)."""
    started = time.perf_counter()
    context = runtime.context
    question = state.question.strip()
    history = state.history
    if not history or not needs_context(question):
        return {"standalone_question": question, "query": question, "queries": [],
                "timings": {"contextualize_ms": elapsed_ms(started)}}
    offline, how, options = offline_rewrite(context, question, history)
    rewritten = offline
    choice = context.choice(state)
    if context.models.judges(choice, context.budget):
        rewritten, how = model_rewrite(context, choice, question, history, offline)
    elif choice.generated:
        how += f" ({choice.model} not asked: {context.models.why_not_judging(choice)})"
    if rewritten != question:
        runtime.stream_writer(events.standalone(rewritten))
    detail = f"“{rewritten}” ({how})" if rewritten != question else "the question is complete: kept as asked"
    return {"standalone_question": rewritten, "query": rewritten, "queries": [],
            # other subjects for the searches after weak evidence, leaving the last for the question as asked
            "alternatives": [option for option in options if option != rewritten][
                : max(context.settings.retrieval_retries - 1, 0)],
            "trace": step("Rewrote the follow-up", detail),
            "timings": {"contextualize_ms": elapsed_ms(started)}}


def offline_rewrite(context: RagContext, question: str, history: list[Exchange]) -> tuple[str, str, list[str]]:
    """Of the rewrites with the previous question's likeliest subjects, the one whose
    search finds the best-covered passage (ties: the likelier subject); also every
    rewrite, likeliest first, for the searches after weak evidence."""
    passages = context.passages
    options = rewrite_options(question, history, lambda phrase: rarity(context, phrase))
    if not options:
        return question, "offline", []
    if len(options) == 1:
        return options[0], "offline, from the previous question's subject", options
    scored = []
    for option in options:
        hits = passages.search(option, PASSAGES_GRADED)
        scored.append((coverage(option, hits, passages.idf(option))[0], option))
    first, best = scored[0], max(scored)
    if best[0] < first[0] + SUBJECT_MARGIN:  # the likeliest subject unless another is clearly better
        return first[1], "offline, from the previous question's subject", options
    return best[1], f"offline: of {len(options)} possible subjects, the one the documents support best", options


def rarity(context: RagContext, phrase: str) -> float:
    """How rare a phrase is in the knowledge base: between its rarest word's IDF and the mean."""
    values = list(context.passages.idf(phrase).values())
    return (max(values) + sum(values) / len(values)) / 2 if values else 0.0


def model_rewrite(context: RagContext, choice: ModelChoice, question: str, history: list[Exchange],
                  offline: str) -> tuple[str, str]:
    """The model's standalone question and how it was made; the offline rewrite when the
    model's is unusable (the trace says why)."""
    conversation = "\n".join(f"User: {e.question}\nAssistant: {e.answer[:300]}" for e in history[-2:])
    messages = [SystemMessage(prompts.CONTEXTUALIZE_SYSTEM),
                HumanMessage(f"Conversation:\n{conversation}\n\nLatest question: {question}")]
    try:
        text = structured_reply(context, choice, messages, "standalone_question")
    except Exception as exc:
        log.info("model rewrite unusable: %s", exc)
        context.models.judge_failed(choice, short(exc))
        return offline, f"the model's rewrite failed ({short(exc)}): used the offline rewrite"
    rewrite = clean_rewrite(text)
    problem = plausible_rewrite(rewrite, question, history)
    if problem:
        return offline, f"the model's rewrite “{rewrite[:60]}” was not usable ({problem}): used the offline rewrite"
    return rewrite, f"rewritten by {choice.model}"

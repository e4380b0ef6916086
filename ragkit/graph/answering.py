"""Answers: quoted offline (``extract``), written by a model (``generate``), checked
against their sources (``check_citations``, with ``checks.py``), or "not found".

A model answer that fails (unreachable, timeout, unusable, unsupported) is withdrawn
with a ``reset`` event and replaced by the extractive one; the trace says why.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import replace
from typing import Literal

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from ..citations import focus_quotes, sources_from_hits, validate_markers
from ..extractive import extractive_answer
from ..llm import ModelChoice, explain_llm_error
from ..text import count_tokens
from . import events, prompts
from .checks import add_attributions, check_support, clean_model_answer, flag_unsupported
from .context import RagContext
from .grading import grade_offline
from .model_io import ContextTooSmall, ModelTimeout, UnusableAnswer, fit_history, pack_context, read_answer
from .rounds import filter_words
from .state import RagState, add_time, elapsed_ms, language, step

log = logging.getLogger(__name__)
CLOSEST_MATCHES = 5


def extract(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Quote the best sentences of the passages, each cited, streamed sentence by sentence."""
    started = time.perf_counter()
    context = runtime.context
    question = state.standalone_question
    asked = state.question if question != state.question else None
    answer = extractive_answer(question, state.hits, context.settings, context.passages.embed_sentences,
                               context.passages.idf(question), asked=asked)
    runtime.stream_writer(events.sources(answer.sources, True))
    for piece in pieces_of(answer.text):
        runtime.stream_writer(events.token(piece))
    replaced = " (instead of the model's answer)" if state.error else ""
    return {"answer": answer.text, "sources": answer.sources, "closest": [], "found": True,
            "mode": "extractive", "model": "", "usage": {},
            "trace": step("Answered", f"quoted {sum(s.cited for s in answer.sources)} passages, offline{replaced}"),
            "timings": add_time(state, "generate_ms", started)}


def pieces_of(text: str) -> list[str]:
    """The answer cut after each citation marker, keeping every character: how an offline
    answer is streamed."""
    pieces = [p for p in re.split(r"(?<=\])(?=[^\[])", text) if p]
    return pieces or [text]


def generate(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Stream the model's answer from the passages; on failure leave ``error`` set so
    ``after_generate`` falls back to the extractive answer."""
    started = time.perf_counter()
    choice = runtime.context.choice(state)
    try:
        result = model_answer(state, runtime, choice)
    except Exception as exc:
        waited = exc.waited_s if isinstance(exc, ModelTimeout) else None
        own = isinstance(exc, (ContextTooSmall, UnusableAnswer))
        error = str(exc) if own else explain_llm_error(exc, choice, waited)
        log.warning("model answer failed, using the extractive answer: %s", error)
        runtime.stream_writer(events.reset(error))
        return {"error": error, "answer": "", "trace": step("Model failed", error),
                "timings": {"generate_ms": elapsed_ms(started)}}
    result["timings"] = {"generate_ms": elapsed_ms(started)}
    return result


def model_answer(state: RagState, runtime: Runtime[RagContext], choice: ModelChoice) -> dict:
    """The model's answer from the passages that fit its context window, as a state update."""
    context = runtime.context
    cjk = language(state) == "zh"
    system = prompts.ANSWER_SYSTEM.format(language=prompts.language_name(cjk))
    sources = sources_from_hits(state.hits)
    history, budget = fit_history(context.settings, choice, system, state.history, state.question)
    packed = pack_context(sources, budget)
    sources = [s for s in sources if s.n in {p.n for p in packed}]
    runtime.stream_writer(events.sources(sources, True))
    messages = [SystemMessage(system)]
    for exchange in history:
        messages += [HumanMessage(exchange.question), AIMessage(exchange.answer)]
    asked = state.question + (f"\n(Standalone form: {state.standalone_question})"
                              if state.standalone_question != state.question else "")
    asked += plan_note(state)
    messages.append(HumanMessage(f"{prompts.format_sources(packed)}\n\nQuestion: {asked}"))
    raw, usage = read_answer(context.models.answering(choice), messages, context.settings, runtime.stream_writer)
    text, problem = clean_model_answer(raw, system)
    if problem:
        raise UnusableAnswer(f"the model's answer was not usable: {problem}")
    answer = validate_markers(text, sources)
    if not usage:
        usage = {"input_tokens": count_tokens("\n".join(str(m.content) for m in messages)),
                 "output_tokens": count_tokens(raw), "counted": True}
    return {"answer": answer, "sources": sources, "closest": [], "found": True, "mode": "llm",
            "model": choice.model, "usage": {k: v for k, v in usage.items() if isinstance(v, (int, float, bool))},
            "trace": step("Answered", f"generated by {choice.model} from {len(sources)} passages")}


def plan_note(state: RagState) -> str:
    """Agentic mode: the sub-questions and the hops followed, for the model's prompt."""
    if len(state.sub_questions) > 1:
        return "\nSub-questions (answer each, then compare):\n" + "\n".join(
            f"{i}. {part}" for i, part in enumerate(state.sub_questions, start=1))
    hops = [link for link in state.links if link.round > 1]
    if hops:
        return "\nHops followed (each source leads to the next): " + " → ".join(
            [state.links[0].hit.title, *(link.entity for link in hops)])
    return ""


def after_generate(state: RagState) -> Literal["check_citations", "extract"]:
    """A failed model answer falls back to the extractive one."""
    return "extract" if state.error and not state.answer else "check_citations"


def check_citations(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Keep only claims the cited passages support: a generated answer whose sentences
    none of its sources back is replaced by quotes; unsupported sentences are flagged."""
    if state.mode != "llm":
        return {}
    sources = state.sources
    checks = check_support(state.answer, sources)
    unsupported = [c for c in checks if not c.supported]
    if checks and len(unsupported) == len(checks):
        error = f"no sentence of the model's answer was supported by its sources ({unsupported[0].reason})"
        runtime.stream_writer(events.reset(error))
        fallback = extract(replace(state, error=error), runtime)
        fallback["error"] = error
        fallback["trace"] = step("Checked the citations", error + ": replaced by quotes") + fallback["trace"]
        return fallback
    answer = validate_markers(add_attributions(state.answer, checks), sources)
    focus_quotes(answer, sources)
    attributed = sum(c.attributed for c in checks)
    added = f"; {attributed} uncited sentences attributed to the source that says them" if attributed else ""
    if not unsupported:
        detail = f"all {len(checks)} sentences supported by their sources{added}"
        return {"answer": answer, "trace": step("Checked the citations", detail)}
    flagged = flag_unsupported(answer, checks, language(state))
    detail = (f"{len(unsupported)} of {len(checks)} sentences not supported (flagged): "
              f"{unsupported[0].reason}{added}")
    return {"answer": flagged, "trace": step("Checked the citations", detail)}


def not_found(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Say plainly that the documents do not answer it; list the closest passages
    separately; name an active filter and what outside it looks relevant."""
    lang = language(state)
    text = prompts.NOT_FOUND[lang]
    # The question as understood is the best-graded round's (a follow-up's other subject
    # tried after weak evidence is not kept when it did no better).
    best_hits, question = (list(state.best.hits), state.best.question) if state.best else \
        (state.hits, state.standalone_question)
    if question != state.standalone_question:
        runtime.stream_writer(events.standalone(question))
    if state.filters:
        text += prompts.FILTER_NOTE[lang].format(what=filter_words(state.filters))
        elsewhere = best_outside(runtime.context, question)
        if elsewhere:
            text += prompts.ELSEWHERE_NOTE[lang].format(title=elsewhere)
    closest = sources_from_hits(best_hits[:CLOSEST_MATCHES])
    runtime.stream_writer(events.sources(closest, False))
    runtime.stream_writer(events.token(text))
    return {"answer": text, "sources": [], "closest": closest, "found": False, "mode": "not_found",
            "standalone_question": question, "model": "", "usage": {},
            "trace": step("Not found", f"no passage answers it after {len(state.queries)} searches")}


def best_outside(context: RagContext, question: str) -> str:
    """The title of the document that answers ``question`` outside the active filter, or ""."""
    passages = context.passages
    hits = passages.search(question, context.settings.top_k)
    verdict = grade_offline(question, hits, passages.idf(question), passages.embed_sentences, context.settings)
    return hits[0].title if hits and verdict.sufficient else ""

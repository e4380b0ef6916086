"""Answers: quoted offline (``extract``), written by a model (``generate``), checked
against their sources (``check_citations``, with ``checks.py``), or "not found".

A model answer that fails (unreachable, timeout, unusable, unsupported) is withdrawn
with a ``reset`` event and replaced by the next model's (``chain.py``), in the end by the
extractive one; the trace says why. A model that stops mid-answer after its shown
sentences already answer the question keeps them: the footer says it stopped.
"""

from __future__ import annotations

import logging
import re
import time

import openai
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from ragkit import events
from ragkit.answering.checks import add_attributions, check_support, clean_model_answer
from ragkit.answering.citations import focus_quotes, sources_from_hits, validate_markers
from ragkit.answering.extractive import extractive_answer
from ragkit.answering.grading import grade_evidence
from ragkit.answering.screening import ScreenedAnswer, screened_step
from ragkit.errors import ContextTooSmall, ModelTimeout, StreamBroken, TurnCancelled, UnusableAnswer
from ragkit.graph.chain import MIN_MODEL_TIME_S, answer_attempts
from ragkit.graph.context import RagContext
from ragkit.graph.nodes.memory import memory_note
from ragkit.graph.policy import filter_words, scope
from ragkit.graph.state import ModelAttempt, RagState, add_time, language, passages, step
from ragkit.lang.text import count_tokens
from ragkit.models import prompts
from ragkit.models.chat import ModelChoice, explain_llm_error, make_chat_model
from ragkit.models.fitting import Fitted, fit_prompt, overflow_message, split_footer, with_footer
from ragkit.models.streaming import read_answer
from ragkit.types import SearchFilters

log = logging.getLogger(__name__)
CLOSEST_MATCHES = 5
STALLED_FOOTER = "the model stopped before finishing ({}); the answer ends at its last checked sentence"


def extract(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Quote the best sentences of the passages, each cited, streamed sentence by sentence."""
    started = time.perf_counter()
    context = runtime.context
    question = state.standalone_question
    asked = state.question if question != state.question else None
    answer = extractive_answer(question, state.hits, context.settings, context.passages.embed_sentences,
                               context.passages.idf(question), asked=asked,
                               sentence_vectors=context.passages.sentence_vectors)
    runtime.stream_writer(events.sources(answer.sources, True))
    for piece in pieces_of(answer.text):
        runtime.stream_writer(events.token(piece))
    replaced = " (instead of the model's answer)" if state.error else ""
    return {"answer": answer.text, "sources": answer.sources, "closest": [], "found": True,
            "mode": "extractive", "model": "", "usage": {},
            "trace": step("Answered", f"quoted {passages(sum(s.cited for s in answer.sources))}, offline{replaced}"),
            "timings": add_time(state, "generate_ms", started)}


def pieces_of(text: str) -> list[str]:
    """The answer cut after each citation marker, keeping every character: how an offline
    answer is streamed."""
    pieces = [p for p in re.split(r"(?<=\])(?=[^\[])", text) if p]
    return pieces or [text]


def generate(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Stream the answer of the chain's current model from the passages; on failure leave
    ``error`` set so ``chain.after_generate`` passes the turn on (the next model, else the
    extractive answer)."""
    started = time.perf_counter()
    choice = runtime.context.answerer(state)  # the chain's current model (chain.py)
    fitted: list[Fitted] = []  # the prompt as fitted, for the trace even when the model fails
    try:
        result = model_answer(state, runtime, choice, fitted)
    except TurnCancelled:
        raise  # nobody is waiting for an answer: no other model, no offline answer
    except Exception as exc:
        error = model_error(exc, choice, fitted)
        log.warning("model answer by %s failed: %s", choice.model, error)
        withheld = screened_step([], exc.withheld) if isinstance(exc, UnusableAnswer) and exc.withheld else []
        return {"error": error, "answer": "", "attempts": [ModelAttempt(choice.model, "failed", error)],
                "trace": fitted_step(fitted) + withheld + step("Model failed", f"{choice.model}: {error}"),
                "timings": add_time(state, "generate_ms", started)}
    result["timings"] = add_time(state, "generate_ms", started)
    return result  # its attempt is recorded by check_citations, which may still reject the answer


def model_error(exc: BaseException, choice: ModelChoice, fitted: list[Fitted]) -> str:
    """A failed answer in words: an overflow named as one, a timeout with the turn's real
    waiting, ragkit's own verdicts as they are, the client's errors explained."""
    if isinstance(exc, (ContextTooSmall, UnusableAnswer)):
        return str(exc)
    if isinstance(exc, ModelTimeout):
        return explain_llm_error(exc, choice, exc.waited_s)
    if fitted:
        overflow = overflow_message(exc, choice, fitted[0].prompt_tokens, fitted[0].window)
        if overflow:
            return overflow
    return explain_llm_error(exc, choice)


def fitted_step(fitted: list[Fitted]) -> list:
    """The trace step saying what was dropped or cut to fit the context window (none
    when nothing was)."""
    if not fitted or not fitted[0].notes:
        return []
    return step("Fitted the prompt", f"{fitted[0].window}-token window: " + "; ".join(fitted[0].notes))


def model_answer(state: RagState, runtime: Runtime[RagContext], choice: ModelChoice,
                 fitted: list[Fitted] | None = None) -> dict:
    """The model's answer from the passages that fit its context window, as a state update
    (``fitted`` receives the prompt as fitted)."""
    context = runtime.context
    cjk = language(state) == "zh"
    system = prompts.ANSWER_SYSTEM.format(language=prompts.language_name(cjk)) + memory_note(state)
    sources = sources_from_hits(state.hits)
    fit = fit_prompt(context.settings, choice, system, state.history, state.question, sources)
    if fitted is not None:
        fitted.append(fit)
    sources = [s for s in sources if s.n in {p.n for p in fit.packed}]
    runtime.stream_writer(events.sources(sources, True))
    messages = [SystemMessage(system)]
    for exchange in fit.history:
        messages += [HumanMessage(exchange.question), AIMessage(exchange.answer)]
    asked = state.question + (f"\n(Standalone form: {state.standalone_question})"
                              if state.standalone_question != state.question else "")
    asked += plan_note(state)
    messages.append(HumanMessage(f"{prompts.format_sources(fit.packed)}\n\nQuestion: {asked}"))
    fit.prompt_tokens = count_tokens("\n".join(str(m.content) for m in messages))
    screen = ScreenedAnswer(runtime.stream_writer, sources, (state.question, state.standalone_question))
    if context.budget and context.budget.remaining() < 1.0:
        raise ModelTimeout(context.budget.waited_s)  # the turn's model time went to rewrites and grades
    runtime.stream_writer(events.status(f"Asking {choice.model}…"))
    settings, client = context.settings, context.models.answering(choice)
    if fit.answer_tokens < settings.max_answer_tokens:
        settings = settings.model_copy(update={"max_answer_tokens": fit.answer_tokens})
        client = make_chat_model(settings, choice)
    stalled = ""
    try:
        raw, usage = read_answer(client, messages, settings, screen, context.budget)
    except (ModelTimeout, StreamBroken, openai.APIError) as exc:
        if not screen.answered:
            raise
        # The sentences already shown passed their checks and answer the question: they stay.
        stalled = model_error(exc, choice, [])
        raw, usage = screen.text, {"truncated": True}
    _, problem = clean_model_answer(raw, system)
    if problem:
        raise UnusableAnswer(f"the model's answer was not usable: {problem}")
    if stalled:
        screen.finish(cut_off=True, why="cut off when the model stopped")
    else:
        screen.finish(cut_off=bool(usage.get("truncated")))
    if not screen.answered:
        raise UnusableAnswer(f"the model's answer was not used: {screen.problem()}", withheld=screen.withheld)
    footer = "; ".join(part for part in (fit.footer, stalled and STALLED_FOOTER.format(stalled)) if part)
    answer = with_footer(validate_markers(screen.text, sources), footer)
    if not usage:
        usage = {"input_tokens": fit.prompt_tokens, "output_tokens": count_tokens(raw), "counted": True}
    return {"answer": answer, "sources": sources, "closest": [], "found": True, "mode": "llm",
            "model": choice.model, "usage": {k: v for k, v in usage.items() if isinstance(v, (int, float, bool))},
            "trace": fitted_step(fitted or [fit])
            + (step("Model stopped", f"{stalled}: the sentences shown before it stopped are kept")
               if stalled else [])
            + step("Answered", f"generated by {choice.model} from {len(sources)} passages")
            + screened_step(screen.shown, screen.withheld)}


def plan_note(state: RagState) -> str:
    """Agentic mode: the sub-questions and the hops followed, for the model's prompt."""
    plan = state.plan
    if plan is None:
        return ""
    if len(plan.sub_questions) > 1:
        return "\nSub-questions (answer each, then compare):\n" + "\n".join(
            f"{i}. {part}" for i, part in enumerate(plan.sub_questions, start=1))
    hops = [link for link in plan.links if link.round > 1]
    if hops:
        return "\nHops followed (each source leads to the next): " + " → ".join(
            [plan.links[0].hit.title, *(link.entity for link in hops)])
    return ""


def check_citations(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Keep only claims the cited passages support. A generated answer was screened
    sentence by sentence as it streamed (``screening.py``); this checks the answer as
    recorded once more: a sentence that fails is removed (the trace lists it), and an
    answer none of whose sentences its sources back passes the turn to the next model of
    the chain (``after_check``), after the last to the quotes."""
    sources = state.sources
    body, footer = split_footer(state.answer)
    checks = check_support(body, sources)
    unsupported = [c for c in checks if not c.supported]
    model = runtime.context.answerer(state).model
    if not checks or len(unsupported) == len(checks):
        reason = unsupported[0].reason if unsupported else "it was empty"
        error = f"no sentence of the model's answer was supported by its sources ({reason})"
        chain = runtime.context.chain(state)
        then = "the next model is asked" if state.chain_position + 1 < len(chain) else "replaced by quotes"
        # chain.next_model withdraws the answer (a reset event) and passes the turn on
        return {"answer": "", "error": error, "attempts": [ModelAttempt(model, "failed", error)],
                "trace": step("Checked the citations", f"{model}: {error}: {then}")}
    answered = [ModelAttempt(model, "answered")]
    answer = body
    for check in unsupported:
        answer = answer.replace(check.text, "", 1)
    answer = validate_markers(add_attributions(answer, checks), sources).strip()
    focus_quotes(answer, sources)
    answer = with_footer(answer, footer)
    attributed = sum(c.attributed for c in checks)
    added = f"; {attributed} uncited sentences attributed to the source that says them" if attributed else ""
    if not unsupported:
        detail = f"all {len(checks)} sentences supported by their sources{added}"
        return {"answer": answer, "attempts": answered, "trace": step("Checked the citations", detail)}
    removed = "; ".join(f"“{c.text[:100]}” ({c.reason})" for c in unsupported)
    detail = f"{len(unsupported)} of {len(checks)} sentences not supported, removed: {removed}{added}"
    return {"answer": answer, "attempts": answered, "trace": step("Checked the citations", detail)}


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
    chosen = filter_words(state.filters) if state.filters else ""
    if chosen:
        text += prompts.FILTER_NOTE[lang].format(what=chosen)
        elsewhere = best_outside(runtime.context, question, scope(state.filters))
        if elsewhere:
            text += prompts.ELSEWHERE_NOTE[lang].format(title=elsewhere)
    if state.plan and state.plan.web_failure:  # agentic hops whose missing parts the web did not cover either
        text += prompts.WEB_FAILED_NOTE[lang].format(reason=state.plan.web_failure)
    closest = sources_from_hits(best_hits[:CLOSEST_MATCHES])
    runtime.stream_writer(events.sources(closest, False))
    runtime.stream_writer(events.token(text))
    return {"answer": text, "sources": [], "closest": closest, "found": False, "mode": "not_found",
            "standalone_question": question, "model": "", "usage": {},
            "trace": step("Not found", f"no passage answers it after {len(state.queries)} searches")}


def best_outside(context: RagContext, question: str, within: SearchFilters | None = None) -> str:
    """The title of the document that answers ``question`` outside the chosen documents,
    tags or types (``within`` the conversation's knowledge bases), or ""."""
    passages = context.passages
    hits = passages.search(question, context.settings.top_k, within)
    verdict = grade_evidence(question, hits, passages, context.settings)
    return hits[0].title if hits and verdict.sufficient else ""


def next_model(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Pass the turn to the chain's next model, or (none left, or no time) to the
    extractive answer; the trace names the failed model and why."""
    context = runtime.context
    chain = context.chain(state)
    failed = context.answerer(state)
    position = state.chain_position + 1
    failures = [a for a in answer_attempts(state) if a.outcome == "failed"]
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
    tried = "; ".join(f"{a.model} {a.outcome}" + (f" ({a.reason})" if a.reason else "")
                      for a in answer_attempts(state))
    return {"error": error, "trace": step("Model chain", f"{tried}; {left}: answering offline")}

"""Talking to a chat model: the answer stream (read with a deadline, cut at prompt echoes
and the token limit), structured replies (JSON schema, else JSON mode), and the context
budget (how much of the window the sources may fill, and packing them into it).

Every failure ragkit names itself derives from ``ragkit.errors.ModelError``; the nodes
that call a model catch these (and the client's own errors, explained by
``llm.explain_llm_error``) and fall back: to the offline rewrite or grade, or to the
extractive answer.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

import openai
from langchain_core.messages import SystemMessage

from ragkit.config import Settings
from ragkit.errors import ContextTooSmall, ModelTimeout, StreamBroken, TurnCancelled, UnusableAnswer
from ragkit.events import EventWriter, status, token
from ragkit.lang.text import count_tokens, split_sentences
from ragkit.models.budget import TurnBudget
from ragkit.models.chat import STRUCTURED_MAX_TOKENS, ModelChoice, context_window
from ragkit.models.prompts import PromptSource
from ragkit.types import Exchange, Source

WAIT_NOTICE_S = 3.0  # tell the user we are waiting for the model after this long
MIN_SOURCE_TOKENS = 150  # a prompt with less room than this for sources is not worth sending










# ----- the answer stream ---------------------------------------------------------------


def stream_with_deadline(client, messages, idle_s: float, on_wait: Callable[[float], None] = lambda waited: None,
                         budget: TurnBudget | None = None):
    """The client's stream, read on a helper thread so that waiting can be reported and
    bounded: ``on_wait(seconds)`` every second after a few seconds of silence,
    ModelTimeout once the silences reach ``idle_s`` (with a ``budget``: what the turn has
    left, and they are added to it). An abandoned request is hung up on (its connection
    closed), which stops a server such as llama.cpp from generating on for nobody."""
    chunks: queue.Queue = queue.Queue()
    stream = client.stream(messages)
    done = object()

    def pump() -> None:
        try:
            for chunk in stream:
                chunks.put(chunk)
        except Exception as exc:  # handed to the reading side
            chunks.put(exc)
        chunks.put(done)

    allowance = budget.remaining() if budget else idle_s
    spent_before = budget.waited_s if budget else 0.0
    threading.Thread(target=pump, daemon=True, name="ragkit-model-stream").start()
    last_heard = time.monotonic()
    silent = 0.0  # this stream's silences before the current one
    finished = False
    try:
        while True:
            if budget and budget.cancelled.is_set():
                raise TurnCancelled("the asker went away: the answer stream was stopped")
            waited = time.monotonic() - last_heard
            left = allowance - silent - waited
            if left <= 0:
                raise ModelTimeout(spent_before + silent + waited)
            try:
                item = chunks.get(timeout=min(1.0, left))
            except queue.Empty:
                waited = time.monotonic() - last_heard
                if waited >= WAIT_NOTICE_S:
                    on_wait(spent_before + silent + waited)
                continue
            gap = time.monotonic() - last_heard
            silent += gap
            if budget:
                budget.spend(gap)
            if item is done:
                finished = True
                return
            if isinstance(item, (TimeoutError, openai.APITimeoutError)):
                raise ModelTimeout(spent_before + silent) from item  # the client's own timeout came first
            if isinstance(item, Exception):
                raise item
            yield item
            last_heard = time.monotonic()  # the reader's own work (checking sentences) is not waiting
    except ModelTimeout:
        if budget:
            budget.spend(time.monotonic() - last_heard)
        raise
    finally:
        if not finished:
            hang_up(client)
        try:
            stream.close()
        except Exception:  # still running on the helper thread: hang_up ends it
            pass


def hang_up(client) -> None:
    """Close the client's connections: an unfinished request ends (the server sees the
    client leave). The client is made again for the next call (``ModelClients.answering``)."""
    try:
        client.root_client.close()
    except Exception:  # not an OpenAI client (a test's), or already closed
        pass


def read_answer(client, messages, settings: Settings, write: EventWriter,
                budget: TurnBudget | None = None) -> tuple[str, dict]:
    """The model's answer text and token usage, each new piece sent as a ``token`` event,
    until the model finishes, echoes the prompt or reaches the answer-token limit (counted
    in tokens, not chunks); usage["truncated"] when it was stopped before its end (the
    token limit, a prompt echo).
    StreamBroken when the stream ends without a finish reason."""
    text, usage, finished = "", {}, False
    waiting = lambda waited: write(status(f"Waiting for the model… {waited:.0f} s"))  # noqa: E731
    for chunk in stream_with_deadline(client, messages, settings.llm_timeout_s, waiting, budget):
        piece = chunk.content if isinstance(chunk.content, str) else ""
        if getattr(chunk, "usage_metadata", None):
            usage = dict(chunk.usage_metadata) | {k: v for k, v in usage.items() if k == "truncated"}  # after the end
        reason = (chunk.response_metadata or {}).get("finish_reason")
        finished = finished or bool(reason)
        if reason == "length":  # the server stopped it at its token limit
            usage["truncated"] = True
        if not piece:
            continue
        clean, echoed = cut_prompt_echo(text + piece)
        if clean[len(text):]:
            write(token(clean[len(text):]))
        text = clean
        if echoed or count_tokens(text) >= settings.max_answer_tokens:
            return text, usage | {"truncated": True}  # stopped here: its last sentence may be unfinished
    if not finished:
        raise StreamBroken("the stream ended before the server said it was complete")
    return text, usage


# ----- structured replies ----------------------------------------------------------------


def structured_text(client, messages, field: str | None, schema=None, *, timeout_s: float,
                    json_mode_only: bool = False, on_schema_refused: Callable[[], None] = lambda: None) -> str:
    """A structured call returning JSON text: ``{field: ...}`` (or ``schema``'s fields),
    within ``timeout_s`` in all.

    JSON-schema output first; a server that does not take a schema (llama.cpp's server
    accepts only "json_object") gets JSON mode with the fields described in words (not the
    schema alongside: llama.cpp would force its shape, and a reply forced into shape looks
    usable however poor the judgement; measured with gemma-3-270m: ~1 s a token, and a grade
    of "not sufficient" for a passage that says the answer); ``on_schema_refused`` is told, so
    that the refusal is remembered and ``json_mode_only`` skips the schema next time. The
    reply is streamed: a call given up at its deadline is hung up on, which stops the
    server's generation (llama.cpp generates on for nobody after a plain request is dropped,
    and the next request waits behind it)."""
    from pydantic import BaseModel, ValidationError, create_model

    model = schema or create_model("Rewrite", **{field: (str, ...)}, __base__=BaseModel)
    deadline = time.monotonic() + timeout_s
    text = None
    if not json_mode_only:
        schema_format = {"type": "json_schema",
                         "json_schema": {"name": model.__name__, "schema": model.model_json_schema()}}
        try:
            text = _stream_json(client, messages, schema_format, deadline)
        except openai.APIStatusError as exc:
            if "response_format" not in str(exc) and "json_schema" not in str(exc):
                raise
            on_schema_refused()
    if text is None:
        fields = ", ".join(f'"{name}"' for name in model.model_fields)
        hint = SystemMessage(f"Reply with one JSON object with the keys {fields} and nothing else.")
        text = _stream_json(client, [messages[0], hint, *messages[1:]],
                            {"type": "json_object"}, deadline)
    try:
        result = model.model_validate_json(_json_object(text))
    except ValidationError as exc:
        raise UnusableAnswer(f"the model's structured reply does not fit the schema ({short(exc)})") from exc
    if schema is not None:
        return result.model_dump_json()
    return getattr(result, field)


_ROLES = {"system": "system", "human": "user", "ai": "assistant"}


def _stream_json(client, messages, response_format: dict, deadline: float) -> str:
    """The text of one streamed structured request, read on a helper thread until
    ``deadline`` (``time.monotonic()``); ModelTimeout then, after hanging up on it."""
    pieces: queue.Queue = queue.Queue()
    done = object()
    payload = {"model": client.model_name, "messages": [{"role": _ROLES.get(m.type, "user"), "content": m.content}
                                                        for m in messages],
               "response_format": response_format, "stream": True,
               # both names: newer OpenAI models take only the first, older servers (llama.cpp) the second
               "max_completion_tokens": STRUCTURED_MAX_TOKENS, "max_tokens": STRUCTURED_MAX_TOKENS,
               "temperature": client.temperature}

    def pump() -> None:
        try:
            for chunk in client.root_client.chat.completions.create(**payload):
                if chunk.choices and chunk.choices[0].delta.content:
                    pieces.put(chunk.choices[0].delta.content)
            pieces.put(done)
        except Exception as exc:  # handed to the reading side
            pieces.put(exc)

    started = time.monotonic()
    threading.Thread(target=pump, daemon=True, name="ragkit-structured-call").start()
    text, finished = "", False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ModelTimeout(time.monotonic() - started)
            try:
                item = pieces.get(timeout=left)
            except queue.Empty:
                continue
            if item is done:
                finished = True
                return text
            if isinstance(item, (TimeoutError, openai.APITimeoutError)):
                raise ModelTimeout(time.monotonic() - started) from item
            if isinstance(item, Exception):
                finished = True  # the server ended the request itself
                raise item
            text += item
    finally:
        if not finished:
            hang_up(client)


def _json_object(text: str) -> str:
    """The reply's JSON object (a small model may wrap it in prose or a code fence)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise UnusableAnswer("the model returned no structured output")
    return text[start:end + 1]


def short(exc: BaseException) -> str:
    """An exception in a few words, for the trace."""
    return f"{type(exc).__name__}: {str(exc)[:80]}"


# ----- the context budget ------------------------------------------------------------------


def source_budget(settings: Settings, choice: ModelChoice, system: str, history: list[Exchange],
                  question: str) -> int:
    """The tokens the sources may fill: the context window less the answer, the system
    prompt, the history and the question (at most ``settings.context_tokens``)."""
    fixed = count_tokens(system) + count_tokens(question) + 120
    fixed += sum(count_tokens(e.question) + count_tokens(e.answer) + 8 for e in history)
    room = context_window(settings, choice) - settings.max_answer_tokens - fixed
    return min(settings.context_tokens, room)


def fit_history(settings: Settings, choice: ModelChoice, system: str, history: list[Exchange],
                question: str) -> tuple[list[Exchange], int]:
    """The history that leaves the sources room (oldest turns dropped first) and that room;
    ContextTooSmall when even no history leaves enough."""
    history = list(history)
    budget = source_budget(settings, choice, system, history, question)
    while budget < MIN_SOURCE_TOKENS and history:
        history = history[1:]
        budget = source_budget(settings, choice, system, history, question)
    if budget < MIN_SOURCE_TOKENS:
        raise ContextTooSmall(f"the question does not fit {choice.model}'s "
                              f"{context_window(settings, choice)}-token context window with its answer; "
                              "raise RAGKIT_MODEL_CONTEXT_TOKENS if the server allows more")
    return history, budget


def pack_context(sources: list[Source], budget_tokens: int) -> list[PromptSource]:
    """The best sources that fit the budget; a source that does not fit whole is shortened
    to its leading whole sentences (never cut mid-sentence)."""
    packed, used = [], 0
    for source in sources:
        cost = count_tokens(source.text) + 16
        if used + cost <= budget_tokens:
            packed.append(PromptSource(source.n, source.title, source.text))
            used += cost
            continue
        kept, kept_cost = [], 16
        for sentence in split_sentences(source.text):
            sentence_cost = count_tokens(sentence.text) + 1
            if used + kept_cost + sentence_cost > budget_tokens:
                break
            kept.append(sentence.text)
            kept_cost += sentence_cost
        if kept:
            packed.append(PromptSource(source.n, source.title, " ".join(kept)))
        break
    return packed


# A model that starts writing these is continuing the prompt, not answering: stop there.
PROMPT_ECHOES = ("\nQuestion:", "\nSources:", "\nUser:", "<source", "</source>", "[INST]", "[/INST]", "<<SYS>>",
                 "<</SYS>>", "<|im_start|>", "<|im_end|>", "<start_of_turn>", "<end_of_turn>", "<|eot_id|>",
                 "<|start_header_id|>", "### Instruction", "### Response")


def cut_prompt_echo(text: str) -> tuple[str, bool]:
    """The text before the first prompt echo, and whether one was found."""
    positions = [text.find(marker) for marker in PROMPT_ECHOES if marker in text]
    if not positions:
        return text, False
    return text[: min(positions)], True


def structured_reply(context, choice, messages, field: str | None, schema=None) -> str:
    """A structured call (``model_io.structured_text``) within the turn's budget: timed,
    with only the time the turn has left (at most RAGKIT_REWRITE_TIMEOUT_S; the step is
    counted by ``chain.ask_chain``, which makes these calls); a usable reply is remembered
    (``JudgeMemory``), an unusable one ``ask_chain`` reports with ``ModelClients.judge_failed``."""

    budget = context.budget
    models = context.models
    timeout_s = models.judge_timeout(budget.remaining() if budget else None)
    client = models.judging(choice, timeout_s)

    def call() -> str:
        return structured_text(client, messages, field, schema, timeout_s=timeout_s,
                               json_mode_only=models.json_mode_only(choice),
                               on_schema_refused=lambda: models.schema_refused(choice))

    if budget is None:
        text = call()
    else:
        with budget.timed():
            text = call()
    models.judge_succeeded(choice)
    return text

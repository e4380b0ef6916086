"""The conversation's memory in the graph: ``recall``, the first node of every turn.

Past ``RAGKIT_MEMORY_TURNS`` turns, the turns older than the ones the prompts carry word for
word (``RAGKIT_HISTORY_TURNS``) fold into the conversation's running summary
(``ragkit.answering.memory``), kept with the session. The summary is written by the conversation's
model when one is configured (one short call, within the turn's model time, the offline
summary when it fails), else offline from the subjects and facts already established. The
turn then uses it: ``contextualize`` reads a follow-up against it (offline: the latest
subject when the previous turn names none; a model sees the summary beside the last
turns), the answer prompt carries it (counted in the context budget), and the trace shows it.
"""

from __future__ import annotations

import time

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from ragkit.answering.contextualize import needs_context, references, subject_options, substitute
from ragkit.answering.memory import ConversationMemory, FoldedTurn, clip_summary, fold_offline
from ragkit.errors import ReadOnlyDataDir, StorageFull
from ragkit.graph.context import RagContext
from ragkit.graph.state import RagState, step
from ragkit.models import prompts
from ragkit.models.chat import make_chat_model
from ragkit.models.streaming import short
from ragkit.types import Exchange, Turn

MIN_MODEL_TIME_S = 2.0  # the model is asked for a summary only with this much of the turn's model time left


def recall(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """The conversation's running summary, with the turns that left the prompts' window
    folded in (and kept with the session); nothing for a short conversation."""
    context = runtime.context
    settings, history = context.settings, context.history
    conversation = state.conversation  # read once for the turn (ChatEngine)
    if conversation is None:
        return {}
    stored = conversation.memory
    memory = ConversationMemory.from_dict(stored)
    turns = conversation.turns
    if len(turns) <= settings.memory_turns and stored is None:
        return {}
    older = turns[: -settings.history_turns] if settings.history_turns else turns
    pending = [turn for turn in older if turn.id > memory.through_id]
    how = f"written by {memory.by}" if memory.by != "offline" else "offline: the subjects and facts established"
    if pending:
        memory, how = fold(context, state, memory, pending)
        try:
            history.set_session_memory(state.session_id, memory.to_dict())
        except (ReadOnlyDataDir, StorageFull) as exc:
            how += f"; not saved ({exc})"
    if not memory.summary:
        return {}
    detail = f"{memory.folded} earlier turns in a summary ({how}): {memory.summary}"
    return {"memory": memory, "trace": step("Remembered", detail)}


def fold(context: RagContext, state: RagState, memory: ConversationMemory,
         pending: list[Turn]) -> tuple[ConversationMemory, str]:
    """``memory`` with ``pending`` folded in, and how its summary was made."""
    # small talk answered directly establishes no subject and no fact
    folded = [FoldedTurn(t.id, "" if t.mode == "direct" else t.standalone_question or t.question, t.answer,
                         t.found and t.mode != "direct",
                         (t.sources or t.closest)[0].text if (t.sources or t.closest) else "") for t in pending]
    offline = fold_offline(memory, folded, context.settings.memory_tokens)
    choice = context.choice(state)
    budget = context.budget
    if not choice.generated or not context.models.judges(choice) or (
            budget is not None and budget.remaining() < MIN_MODEL_TIME_S):
        return offline, "offline: the subjects and facts established"
    try:
        summary = model_summary(context, choice, memory.summary, pending)
    except Exception as exc:  # the client's errors and ours alike: the offline summary stands
        return offline, f"offline; {choice.model}'s summary was unusable ({short(exc)})"
    offline.summary, offline.by = summary, choice.model
    return offline, f"written by {choice.model}"


def model_summary(context: RagContext, choice, previous: str, pending: list[Turn]) -> str:
    """The model's running summary: the previous one with ``pending`` folded in, within
    RAGKIT_MEMORY_TOKENS; the time counts against the turn's model time."""
    limit = context.settings.memory_tokens
    budget = context.budget
    timeout = context.settings.rewrite_timeout_s
    if budget is not None:
        timeout = min(budget.remaining(), timeout)
    # like ModelClients.judging (one short call, no retries), with room for the whole summary
    client = make_chat_model(context.settings, choice, max_tokens=limit + 50, timeout_s=max(timeout, 0.5),
                             streaming=False, retries=0)
    exchanges = "\n".join(f"User: {t.standalone_question or t.question}\nAssistant: {t.answer[:600]}" for t in pending)
    messages = [SystemMessage(prompts.MEMORY_SYSTEM.format(tokens=limit)),
                HumanMessage(f"Summary so far:\n{prompts.fence(previous) or '(none)'}\n\n"
                             f"Turns to add:\n{prompts.fence(exchanges)}")]
    started = time.monotonic()
    try:
        reply = client.invoke(messages)
    finally:
        if budget is not None:
            budget.spend(time.monotonic() - started)
    summary = clip_summary(str(reply.content or ""), limit)
    if not summary:
        raise ValueError("the summary was empty")
    return summary


def memory_rewrite(question: str, earlier: list[Exchange], memory: ConversationMemory | None) -> tuple[str, str]:
    """A follow-up whose previous turn names no subject (thanks, small talk) made standalone
    with the latest subject established: in the ``earlier`` turns the prompts still carry
    (newest last), else in the memory; ("", "") when there is none or the question needs
    no context."""
    if not needs_context(question):
        return "", ""
    for exchange in reversed(earlier):
        options = subject_options(exchange.question, exchange.evidence or exchange.answer)
        if options:
            return with_subject(question, options[0]), "offline, from an earlier turn's subject"
    subject = memory.latest_subject if memory else ""
    if not subject:
        return "", ""
    return with_subject(question, subject), "offline, from the conversation's memory (its latest subject)"


def with_subject(question: str, subject: str) -> str:
    """``question`` about ``subject``: its references replaced, else the subject added."""
    if subject.lower() in question.lower():
        return question
    return substitute(question, subject) if references(question) else f"{question.strip()} ({subject})"


def memory_note(state: RagState) -> str:
    """The summary for a model's prompt ("" without one), fenced as data."""
    if state.memory is None or not state.memory.summary:
        return ""
    return prompts.MEMORY_NOTE.format(summary=prompts.fence(state.memory.summary))

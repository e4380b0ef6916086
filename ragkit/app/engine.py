"""ChatEngine: cited, multi-turn answers over the knowledge base, one call per question.

    engine = ChatEngine(settings, kb)
    for event in engine.stream("demo", "What is LangGraph?"):
        ...  # a ChatEvent: see ragkit/graph/events.py for the vocabulary
    turn = engine.ask("demo", "What are its main features?")
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import closing
from dataclasses import replace

from ragkit import events
from ragkit.app.history import HistoryManager, recent_exchanges, validate_session_id, within_budget
from ragkit.config import Settings
from ragkit.errors import AnswerFailed, QuestionError, RagkitError, SessionError, TurnCancelled
from ragkit.events import ChatEvent
from ragkit.graph import RagContext, TurnInput, build_graph
from ragkit.graph.state import CHAT_MODES
from ragkit.models.budget import TurnBudget
from ragkit.models.chat import ModelChoice, ModelClients, ModelStatus, model_status, require_choice
from ragkit.store.kb import KnowledgeBase
from ragkit.types import Conversation, Exchange, SearchFilters, Turn

log = logging.getLogger(__name__)
MAX_QUESTION_CHARS = 4000


def check_question(question: str) -> str:
    """The trimmed question, or QuestionError saying what is wrong with it."""
    text = (question or "").strip()
    if not text:
        raise QuestionError("Please type a question first. / 请先输入问题。")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes from a terminal arrive as lone surrogates
        raise QuestionError(
            "The question contains bytes that are not valid UTF-8 text. / 问题中有无法识别的字符。"
        ) from None
    if not any(ch.isalnum() for ch in text):
        raise QuestionError("The question has no words in it, only punctuation. / 问题里只有标点符号，请输入文字。")
    if len(text) > MAX_QUESTION_CHARS:
        raise QuestionError(f"The question is {len(text)} characters long; the limit is {MAX_QUESTION_CHARS}.")
    return text


class ChatEngine:
    """The conversational graph plus the session history it reads and writes."""

    def __init__(self, settings: Settings, kb: KnowledgeBase, history: HistoryManager | None = None,
                 always_answer: bool = False):
        """``always_answer``: answer even from evidence graded weak (for ``eval --answers``,
        which measures the answerer on every question)."""
        self.settings = settings
        self.kb = kb
        self.history = history or HistoryManager(settings.sessions_location)
        self.clients = ModelClients(settings)
        self.context = RagContext(settings, kb, self.history, self.clients, always_answer=always_answer)
        self.graph = build_graph()

    @property
    def status(self) -> ModelStatus:
        """The default answer mode."""
        return model_status(self.settings)

    def model_for(self, session_id: str) -> ModelChoice:
        """The model a conversation answers with: its own choice, else the default."""
        return self._model(self.history.conversation(session_id))

    def knowledge_bases_for(self, session_id: str) -> list[str] | None:
        """The knowledge base ids a conversation searches (None: every one); ids of knowledge
        bases deleted since are left out."""
        return self._knowledge_bases(self.history.conversation(session_id))

    def mode_for(self, session_id: str) -> str:
        """The answer mode of a conversation: its own choice, else ``settings.chat_mode``."""
        return self._mode(self.history.conversation(session_id))

    def _model(self, conversation: Conversation | None) -> ModelChoice:
        return self.clients.choice(conversation.model if conversation else None)

    def _knowledge_bases(self, conversation: Conversation | None) -> list[str] | None:
        chosen = conversation.knowledge_bases if conversation else None
        if not chosen:
            return None
        existing = {base.id for base in self.kb.knowledge_bases()}
        return [kb_id for kb_id in chosen if kb_id in existing] or None

    def _mode(self, conversation: Conversation | None) -> str:
        return (conversation.mode if conversation else None) or self.settings.chat_mode

    def _input(self, session_id: str, question: str, filters: SearchFilters | None, model: str | None,
               mode: str | None = None, replace_last: bool = False,
               history: list[Exchange] | None = None) -> tuple[TurnInput, Turn | None]:
        """The graph's input, from one read of the conversation; and the turn it replaces.
        ``history``: the earlier exchanges a caller keeps itself (the HTTP API), instead of
        the conversation's stored ones."""
        validate_session_id(session_id)
        question = check_question(question)
        conversation = self.history.conversation(session_id)  # the turn's one read of its conversation
        replacing = None
        if replace_last:
            if not conversation or not conversation.turns:
                raise SessionError(f"conversation {session_id!r} has no question to answer again")
            replacing = conversation.turns[-1]
        choice = require_choice(self.settings, model) if model else self._model(conversation)
        if filters is None or not filters.knowledge_bases:  # the conversation's own knowledge bases
            filters = replace(filters or SearchFilters(), knowledge_bases=self._knowledge_bases(conversation))
        if mode is not None and mode not in CHAT_MODES:
            raise QuestionError(f"unknown answer mode {mode!r}: choose one of {', '.join(CHAT_MODES)}")
        turns = conversation.turns if conversation else []
        return TurnInput(
            chat_mode=mode or self._mode(conversation),
            session_id=session_id,
            question=question,
            filters=filters if filters and not filters.is_empty() else None,
            model_id=choice.id,
            history=within_budget(history, self.settings.history_turns, self.settings.history_tokens)
            if history is not None else
            recent_exchanges(turns, self.settings.history_turns, self.settings.history_tokens,
                             before=replacing.id if replacing else None),
            conversation=conversation,
        ), replacing

    def stream(self, session_id: str, question: str, filters: SearchFilters | None = None,
               model: str | None = None, mode: str | None = None,
               replace_last: bool = False, *, history: list[Exchange] | None = None, record: bool = True,
               cancel: threading.Event | None = None) -> Iterator[ChatEvent]:
        """Run one turn, yielding its events (``graph/events.py``); the last is ``done``,
        with the recorded Turn.

        ``model`` is a model choice id (see ``llm.chat_models``; ModelNotFound for one that
        is not configured); by default the conversation's own choice, else the first
        configured model. ``mode`` is "default" or "agentic"; by default the conversation's
        own, else the setting's. With ``replace_last`` the new turn replaces the
        conversation's latest one (edit and resend; see :meth:`stream_regenerate`): it is
        answered with the history before it, and the old turn stays in the export only.
        Nothing is replaced when the question is refused or the turn fails.

        For a caller that keeps the conversation itself (the HTTP API): ``history`` is the
        earlier exchanges, oldest first (instead of the session's stored ones; trimmed to the
        same budget), and with ``record`` False the turn is answered but not stored (``done``'s
        turn has no id). ``cancel``, once set, stops the turn: a model's answer stream at once
        (TurnCancelled), else after the step under way; closing the generator stops it too.
        Either way nothing of it is recorded."""
        state, replacing = self._input(session_id, question, filters, model, mode, replace_last, history)
        final: dict = {}
        try:
            budget = TurnBudget(self.settings.llm_timeout_s, cancelled=cancel or threading.Event())
            context = replace(self.context, budget=budget, record=record)
            with closing(self.graph.stream(state, context=context, stream_mode=["custom", "values"])) as steps:
                for mode, payload in steps:
                    if budget.cancelled.is_set():
                        raise TurnCancelled("the asker went away: the turn was stopped, nothing was recorded")
                    if mode == "custom":
                        yield payload
                    else:
                        final = payload
        except RagkitError:
            raise
        except Exception as exc:  # a bug: keep its traceback in the log, tell the user in words
            log.exception("the turn failed")
            raise AnswerFailed(f"the question could not be answered ({type(exc).__name__}: {exc}); "
                               "nothing was recorded, the conversation is unchanged") from exc
        turn = final["turn"]
        if replacing is not None:
            # A separate transaction: should it fail, both turns stay in the conversation
            # (the question shows twice), nothing is lost.
            self.history.replace_turn(session_id, replacing.id, turn.id)
        yield events.done(turn)

    def ask(self, session_id: str, question: str, filters: SearchFilters | None = None,
            model: str | None = None, mode: str | None = None, replace_last: bool = False) -> Turn:
        """Run one turn and return the recorded Turn (``replace_last``: edit and resend)."""
        return _finished(self.stream(session_id, question, filters, model, mode, replace_last))

    def stream_regenerate(self, session_id: str, filters: SearchFilters | None = None,
                          model: str | None = None, mode: str | None = None) -> Iterator[ChatEvent]:
        """Answer the conversation's latest question again, as a new turn that replaces the
        latest one (which stays in the export). ``filters``: by default the ones that
        question was asked with. SessionError when the conversation has no question."""
        last = self.history.last_turn(session_id)
        if filters is None and last.filters:
            filters = SearchFilters(**last.filters)
        return self.stream(session_id, last.question, filters, model, mode, replace_last=True)

    def regenerate(self, session_id: str, filters: SearchFilters | None = None, model: str | None = None,
                   mode: str | None = None) -> Turn:
        """:meth:`stream_regenerate`, returning the recorded Turn."""
        return _finished(self.stream_regenerate(session_id, filters, model, mode))


def _finished(stream: Iterator[ChatEvent]) -> Turn:
    """The Turn of a stream's last event (``done``), after running the stream through."""
    turn = None
    for event in stream:
        if event["type"] == "done":
            turn = event["turn"]
    return turn

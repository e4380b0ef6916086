"""The graph's nodes. Each takes the state and returns the keys it adds.

Dependencies (knowledge base, history, chat model) are held by :class:`RagNodes`, so
the nodes stay plain methods that are easy to test one by one. Tokens are streamed to
the caller through LangGraph's custom stream (``get_stream_writer``) as events:
``{"type": "token", "text": ...}``, ``{"type": "reset"}`` (a failed model stream is
being replaced by the extractive answer) and ``{"type": "status", ...}``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.config import get_stream_writer

from ..citations import Source, focus_quotes, sources_from_hits, strip_html, validate_markers
from ..config import Settings
from ..contextualize import clean_rewrite, heuristic_rewrite, needs_context
from ..extractive import NO_ANSWER, extractive_answer
from ..history import HistoryManager, Turn
from ..kb import KnowledgeBase
from ..llm import explain_llm_error
from ..retrieval import SearchFilters
from ..text import count_tokens, is_cjk_text, split_sentences
from . import prompts
from .policy import answer_passages
from .state import RagState

log = logging.getLogger(__name__)


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def _emit(event: dict) -> None:
    try:
        get_stream_writer()(event)
    except Exception:  # outside a streaming run there is nobody to tell
        pass


def _stream_text(text: str) -> None:
    """Send a ready answer in small pieces so every mode streams the same way."""
    piece = ""
    for char in text:
        piece += char
        if char in " 。，！？；\n" or len(piece) >= 8:
            _emit({"type": "token", "text": piece})
            piece = ""
    if piece:
        _emit({"type": "token", "text": piece})


def pack_context(sources: list[Source], budget_tokens: int) -> list[tuple[int, str, str]]:
    """(n, title, text) of the best sources that fit the budget; a source that does not fit
    whole is shortened to its leading whole sentences (never cut mid-sentence)."""
    packed, used = [], 0
    for source in sources:
        cost = count_tokens(source.text) + 12
        if used + cost <= budget_tokens:
            packed.append((source.n, source.title, source.text))
            used += cost
            continue
        kept = ""
        for sentence in split_sentences(source.text):
            candidate = (kept + " " + sentence.text).strip()
            if used + count_tokens(candidate) + 12 > budget_tokens:
                break
            kept = candidate
        if kept:
            packed.append((source.n, source.title, kept))
            used += count_tokens(kept) + 12
        break
    return packed


REWRITE_MAX_CHUNKS = 80
# A model that starts writing these is continuing the prompt, not answering: stop there.
PROMPT_ECHOES = ("\nQuestion:", "\nSources:", "\nUser:", "[/INST]", "<|im_end|>", "<end_of_turn>", "<|eot_id|>")


def cut_prompt_echo(text: str) -> tuple[str, bool]:
    """The text before the first prompt echo, and whether one was found."""
    positions = [text.find(marker) for marker in PROMPT_ECHOES if marker in text]
    if not positions:
        return text, False
    return text[: min(positions)], True


class StreamBroken(RuntimeError):
    """The model's answer stream stopped before the server said it was complete."""


@dataclass
class RagNodes:
    """The four nodes, bound to their dependencies."""

    settings: Settings
    kb: KnowledgeBase
    history: HistoryManager
    llm: object | None = None  # a LangChain chat model, or None for offline mode

    # ----- contextualize -----------------------------------------------------------

    def contextualize(self, state: RagState) -> dict:
        """Rewrite a follow-up into a standalone question (skipped on the first turn)."""
        started = time.perf_counter()
        question = state["question"].strip()
        history = state.get("history") or []
        if not history or not needs_context(question):
            return {"standalone_question": question, "contextualized_by": "none",
                    "timings": {"contextualize_ms": _elapsed_ms(started)}}
        rewritten, how = heuristic_rewrite(question, history), "heuristic"
        if self.llm is not None:
            try:
                rewritten, how = self._llm_rewrite(question, history), "llm"
            except Exception as exc:
                log.warning("contextualize fell back to the heuristic: %s", exc)
        _emit({"type": "status", "standalone_question": rewritten})
        return {"standalone_question": rewritten, "contextualized_by": how,
                "timings": {"contextualize_ms": _elapsed_ms(started)}}

    def _llm_rewrite(self, question: str, history: list[tuple[str, str]]) -> str:
        conversation = "\n".join(f"User: {q}\nAssistant: {a[:400]}" for q, a in history)
        messages = [
            SystemMessage(prompts.CONTEXTUALIZE_SYSTEM),
            HumanMessage(f"Conversation:\n{conversation}\n\nLatest question: {question}\n\nStandalone question:"),
        ]
        text = ""
        stream = self.llm.stream(messages)
        try:  # streamed and capped: some servers ignore max_tokens and would run to their context limit
            for count, chunk in enumerate(stream, start=1):
                text += chunk.content if isinstance(chunk.content, str) else ""
                if "\n" in text.strip() or count > REWRITE_MAX_CHUNKS:
                    break
        finally:
            stream.close()
        return clean_rewrite(text, heuristic_rewrite(question, history))

    # ----- retrieve ----------------------------------------------------------------

    def retrieve(self, state: RagState) -> dict:
        """Hybrid search for the standalone question, within the UI's filters (plus the
        top document's other best passages: see ``policy.answer_passages``)."""
        started = time.perf_counter()
        filters = SearchFilters(**(state.get("filters") or {}))
        hits = answer_passages(self.kb, state["standalone_question"], self.settings, filters)
        _emit({"type": "status", "retrieved": len(hits)})
        return {"hits": hits, "timings": {"retrieve_ms": _elapsed_ms(started)}}

    # ----- generate ----------------------------------------------------------------

    def generate(self, state: RagState) -> dict:
        """Answer from the hits: streamed by the model, or extractive offline / on failure."""
        started = time.perf_counter()
        hits = state.get("hits") or []
        question = state["standalone_question"]
        cjk = is_cjk_text(state["question"]) or is_cjk_text(question)
        if not hits:
            text = NO_ANSWER["zh" if cjk else "en"]
            _stream_text(text)
            return {"answer": text, "sources": [], "mode": "llm" if self.llm else "extractive", "model": "",
                    "timings": {"generate_ms": _elapsed_ms(started)}}
        if self.llm is not None:
            try:
                result = self._llm_answer(state, hits, cjk)
                result["timings"] = {"generate_ms": _elapsed_ms(started)}
                return result
            except Exception as exc:
                error = explain_llm_error(exc, self.settings)
                log.warning("model answer failed, using the extractive answer: %s", error)
                _emit({"type": "reset", "error": error})
                result = self._extractive(question, hits)
                result["error"] = error
                result["timings"] = {"generate_ms": _elapsed_ms(started)}
                return result
        result = self._extractive(question, hits)
        result["timings"] = {"generate_ms": _elapsed_ms(started)}
        return result

    def _extractive(self, question: str, hits: list) -> dict:
        answer = extractive_answer(question, hits, self.settings, self.kb.embedder, self.kb.idf(question))
        _stream_text(answer.text)
        return {"answer": answer.text, "sources": answer.sources, "mode": "extractive", "model": "",
                "usage": {}}

    def _llm_answer(self, state: RagState, hits: list, cjk: bool) -> dict:
        sources = sources_from_hits(hits)
        packed = pack_context(sources, self.settings.context_tokens)
        sources = [s for s in sources if s.n in {n for n, _, _ in packed}]
        messages = [SystemMessage(prompts.ANSWER_SYSTEM.format(language=prompts.language_name(cjk)))]
        for past_question, past_answer in state.get("history") or []:
            messages += [HumanMessage(past_question), AIMessage(past_answer)]
        messages.append(HumanMessage(f"{prompts.format_sources(packed)}\n\nQuestion: {state['question']}"
                                     + (f"\n(Standalone form: {state['standalone_question']})"
                                        if state['standalone_question'] != state['question'] else "")))
        pieces: list[str] = []
        stream = self.llm.stream(messages)
        try:
            finished, usage = self._consume(stream, pieces)
        finally:
            stream.close()  # hang up: a server that ignores max_tokens would otherwise generate on
        if not finished:
            raise StreamBroken("the stream ended without a finish reason")
        raw, _ = cut_prompt_echo("".join(pieces))
        if not raw.strip():
            raise RuntimeError("the model returned an empty answer")
        answer = validate_markers(strip_html(raw), sources)
        focus_quotes(answer, sources)
        if not usage:
            prompt_text = "\n".join(str(m.content) for m in messages)
            usage = {"input_tokens": count_tokens(prompt_text), "output_tokens": count_tokens(raw), "counted": True}
        return {"answer": answer, "sources": sources, "mode": "llm",
                "model": getattr(self.llm, "model_name", "") or self.settings.chat_model,
                "usage": {k: v for k, v in usage.items() if isinstance(v, (int, float, bool))}}

    def _consume(self, stream, pieces: list[str]) -> tuple[bool, dict]:
        """Forward streamed tokens; (finished normally or at our cap, usage data)."""
        usage: dict = {}
        finished = False
        for count, chunk in enumerate(stream, start=1):
            text = chunk.content if isinstance(chunk.content, str) else ""
            if text:
                pieces.append(text)
                _emit({"type": "token", "text": text})
            if getattr(chunk, "usage_metadata", None):
                usage = dict(chunk.usage_metadata)  # arrives after the finish reason
            finished = finished or bool((chunk.response_metadata or {}).get("finish_reason"))
            if count > self.settings.max_answer_tokens + 16:  # servers that ignore max_tokens
                return True, usage
            if text and cut_prompt_echo("".join(pieces[-8:]))[1]:
                return True, usage
        return finished, usage

    # ----- record ------------------------------------------------------------------

    def record(self, state: RagState) -> dict:
        """Append the finished turn to the session (one transaction)."""
        started = time.perf_counter()
        timings = dict(state.get("timings") or {})
        turn = Turn(
            question=state["question"],
            standalone_question=state["standalone_question"],
            answer=state["answer"],
            mode=state.get("mode", "extractive"),
            model=state.get("model", ""),
            sources=state.get("sources") or [],
            timings=timings,
            usage=state.get("usage") or {},
            error=state.get("error", ""),
            filters=state.get("filters") or {},
        )
        turn.timings["record_ms"] = 0.0
        turn.timings["total_ms"] = round(sum(v for k, v in timings.items() if k.endswith("_ms")), 1)
        self.history.add_turn(state["session_id"], turn)
        return {"turn": turn, "timings": {"record_ms": _elapsed_ms(started)}}

"""The graph's nodes and routes. Each node takes the state and returns the keys it sets.

Dependencies (knowledge base, history, model clients) are held by :class:`RagNodes`, so
the nodes stay small methods that can be tested one by one. Progress reaches the caller
through LangGraph's custom stream (``get_stream_writer``) as events: ``standalone`` (the
rewritten question), ``status`` (a readable step), ``sources`` (as soon as the evidence
is judged), ``token`` (answer text, sentence by sentence offline), ``reset`` (a failed
model answer is being replaced).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass

import openai
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.config import get_stream_writer

from ..citations import Source, focus_quotes, sources_from_hits, validate_markers
from ..config import Settings
from ..contextualize import clean_rewrite, needs_context, plausible_rewrite, rewrite_options
from ..errors import ReadOnlyDataDir, StorageFull
from ..extractive import extractive_answer
from ..history import HistoryManager, TraceStep, Turn
from ..kb import KnowledgeBase, plural
from ..llm import ModelChoice, ModelClients, context_window, explain_llm_error
from ..retrieval import SearchFilters
from ..text import count_tokens, is_cjk_text, search_tokens, split_sentences
from . import prompts
from .checks import add_attributions, check_support, clean_model_answer, flag_unsupported
from .grading import PASSAGES_GRADED, EvidenceVerdict, Grade, coverage, grade_offline
from .policy import add_same_document, relevant_hits

log = logging.getLogger(__name__)
WAIT_NOTICE_S = 3.0  # tell the user we are waiting for the model after this long
CLOSEST_MATCHES = 5
SUBJECT_MARGIN = 0.15  # how much better other evidence must be to win over the likeliest subject's


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def emit(event: dict) -> None:
    """Send an event to whoever streams the graph (nobody outside a streaming run)."""
    try:
        get_stream_writer()(event)
    except Exception:
        pass


def step(name: str, detail: str) -> list[TraceStep]:
    """A one-step trace update."""
    return [TraceStep(name, detail)]


def language(state: dict) -> str:
    """"zh" or "en": the language the user asked in."""
    return "zh" if is_cjk_text(state["question"]) else "en"


def pack_context(sources: list[Source], budget_tokens: int) -> list[tuple[int, str, str]]:
    """(n, title, text) of the best sources that fit the budget; a source that does not fit
    whole is shortened to its leading whole sentences (never cut mid-sentence)."""
    packed, used = [], 0
    for source in sources:
        cost = count_tokens(source.text) + 16
        if used + cost <= budget_tokens:
            packed.append((source.n, source.title, source.text))
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
            packed.append((source.n, source.title, " ".join(kept)))
        break
    return packed


class ModelTimeout(TimeoutError):
    """The model sent nothing for too long."""

    def __init__(self, waited_s: float):
        super().__init__(f"no reply in {waited_s:.0f} s")
        self.waited_s = waited_s


def stream_with_deadline(client, messages, idle_s: float):
    """The client's stream, read on a helper thread so that waiting can be reported and
    bounded: a status event every few seconds, ModelTimeout after ``idle_s`` of silence."""
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

    threading.Thread(target=pump, daemon=True, name="ragkit-model-stream").start()
    last_heard = time.monotonic()
    try:
        while True:
            try:
                item = chunks.get(timeout=1.0)
            except queue.Empty:
                waited = time.monotonic() - last_heard
                if waited >= idle_s:
                    raise ModelTimeout(waited) from None
                if waited >= WAIT_NOTICE_S:
                    emit({"type": "status", "text": f"Waiting for the model… {waited:.0f} s"})
                continue
            if item is done:
                return
            if isinstance(item, (TimeoutError, openai.APITimeoutError)):
                raise ModelTimeout(time.monotonic() - last_heard) from item  # the client's own timeout came first
            if isinstance(item, Exception):
                raise item
            last_heard = time.monotonic()
            yield item
    finally:
        try:
            stream.close()  # hang up: a server that ignores max_tokens would otherwise generate on
        except Exception:
            pass


@dataclass
class RagNodes:
    """The nodes, bound to their dependencies."""

    settings: Settings
    kb: KnowledgeBase
    history: HistoryManager
    clients: ModelClients

    def _choice(self, state: dict) -> ModelChoice:
        return self.clients.choice(state.get("model_id"))

    # ----- contextualize -----------------------------------------------------------

    def contextualize(self, state: dict) -> dict:
        """Make a follow-up standalone (a first question, or a complete one, stays as is)."""
        started = time.perf_counter()
        question = state["question"].strip()
        history = state.get("history") or []
        if not history or not needs_context(question):
            return {"standalone_question": question, "query": question, "queries": [],
                    "timings": {"contextualize_ms": _elapsed_ms(started)}}
        offline, how, options = self._offline_rewrite(question, history, _scope(state))
        rewritten = offline
        choice = self._choice(state)
        if self.clients.judges(choice):
            rewritten, how = self._model_rewrite(choice, question, history, offline)
        elif choice.generated:
            how += f" ({choice.model} gave no usable structured reply twice: not asked again)"
        if rewritten != question:
            emit({"type": "standalone", "question": rewritten})
        detail = f"“{rewritten}” ({how})" if rewritten != question else "the question is complete: kept as asked"
        return {"standalone_question": rewritten, "query": rewritten, "queries": [],
                # other subjects for the searches after weak evidence, leaving the last for the question as asked
                "alternatives": [option for option in options if option != rewritten][
                    : max(self.settings.retrieval_retries - 1, 0)],
                "trace": step("Rewrote the follow-up", detail),
                "timings": {"contextualize_ms": _elapsed_ms(started)}}

    def _offline_rewrite(self, question: str, history: list,
                         scope: SearchFilters | None = None) -> tuple[str, str, list[str]]:
        """Of the rewrites with the previous question's likeliest subjects, the one whose
        search finds the best-covered passage (ties: the likelier subject); also every
        rewrite, likeliest first, for the searches after weak evidence."""
        options = rewrite_options(question, history, self._rarity)
        if not options:
            return question, "offline", []
        if len(options) == 1:
            return options[0], "offline, from the previous question's subject", options
        scored = []
        for rank, option in enumerate(options):
            hits = self.kb.search(option, PASSAGES_GRADED, scope)
            scored.append((coverage(option, hits, self.kb.idf(option))[0], option))
        first, best = scored[0], max(scored)
        if best[0] < first[0] + SUBJECT_MARGIN:  # the likeliest subject unless another is clearly better
            return first[1], "offline, from the previous question's subject", options
        return best[1], f"offline: of {len(options)} possible subjects, the one the documents support best", options

    def _rarity(self, phrase: str) -> float:
        values = list(self.kb.lexical.idf(search_tokens(phrase)).values())
        return (max(values) + sum(values) / len(values)) / 2 if values else 0.0

    def _model_rewrite(self, choice: ModelChoice, question: str, history: list, offline: str) -> tuple[str, str]:
        conversation = "\n".join(f"User: {e.question}\nAssistant: {e.answer[:300]}" for e in history[-2:])
        messages = [SystemMessage(prompts.CONTEXTUALIZE_SYSTEM),
                    HumanMessage(f"Conversation:\n{conversation}\n\nLatest question: {question}")]
        try:
            text = _structured_text(self.clients.judging(choice), messages, "standalone_question")
        except Exception as exc:
            log.info("model rewrite unusable: %s", exc)
            self.clients.judge_failed(choice)
            return offline, f"the model's rewrite failed ({_short(exc)}): used the offline rewrite"
        rewrite = clean_rewrite(text)
        problem = plausible_rewrite(rewrite, question, history)
        if problem:
            return offline, f"the model's rewrite “{rewrite[:60]}” was not usable ({problem}): used the offline rewrite"
        return rewrite, f"rewritten by {choice.model}"

    # ----- retrieve and focus ------------------------------------------------------

    def retrieve(self, state: dict) -> dict:
        """Hybrid search for the current query, within the conversation's filters."""
        started = time.perf_counter()
        query = state.get("query") or state["standalone_question"]
        filters = SearchFilters(**(state.get("filters") or {}))
        hits = self.kb.search(query, self.settings.top_k, filters)
        queries = list(state.get("queries") or []) + [query]
        where = f" in {_filter_words(state.get('filters') or {})}" if _filter_words(state.get("filters") or {}) else ""
        return {"hits": hits, "queries": queries,
                "trace": step("Searched", f"round {len(queries)}: “{query}”{where}, {len(hits)} passages"),
                "timings": {"retrieve_ms": (state.get("timings") or {}).get("retrieve_ms", 0.0) + _elapsed_ms(started)}}

    def focus(self, state: dict) -> dict:
        """The answer policy: drop passages far below the best, add the top document's best
        other passage (it often holds the answer without naming the subject)."""
        query = state.get("query") or state["standalone_question"]
        hits = relevant_hits(state.get("hits") or [], self.settings.min_relative_score)
        hits = add_same_document(self.kb, query, hits, self.settings.same_document_k)
        return {"hits": hits}

    # ----- grade, rewrite the search -------------------------------------------------

    def grade(self, state: dict) -> dict:
        """Judge whether the passages likely hold the answer."""
        started = time.perf_counter()
        question = state["standalone_question"]
        hits = state.get("hits") or []
        offline = grade_offline(question, hits, self.kb.idf(question), self._embed_sentences, self.settings)
        grade = offline
        choice = self._choice(state)
        if self.clients.judges(choice) and hits:
            grade = self._model_grade(choice, question, hits, offline)
        verdict = "sufficient" if grade.sufficient else "not sufficient"
        detail = f"{grade.reason}; score {grade.score:.2f} against {grade.threshold:.2f}: {verdict} ({grade.by})"
        best = state.get("best")
        update = {"grade": grade, "trace": step("Graded the evidence", detail),
                  "timings": {"grade_ms": (state.get("timings") or {}).get("grade_ms", 0.0) + _elapsed_ms(started)}}
        # The closest matches, if nothing suffices: the first search's (it is for the question as
        # understood) unless a retry found clearly better evidence.
        if best is None or grade.margin > best[0] + SUBJECT_MARGIN:
            update["best"] = (grade.margin, hits, question)
        return update

    def _embed_sentences(self, texts: list[str]):
        return self.kb.embedder.embed_remembered(texts)

    def _model_grade(self, choice: ModelChoice, question: str, hits: list, offline: Grade) -> Grade:
        packed = [(n, h.title, h.text) for n, h in enumerate(hits[:3], start=1)]
        messages = [SystemMessage(prompts.GRADE_SYSTEM),
                    HumanMessage(f"{prompts.format_sources(packed)}\n\nQuestion: {question}")]
        try:
            verdict = EvidenceVerdict.model_validate_json(
                _structured_text(self.clients.judging(choice), messages, None, EvidenceVerdict))
        except Exception as exc:
            log.info("model grade unusable: %s", exc)
            self.clients.judge_failed(choice)
            return Grade(offline.score, offline.threshold, f"offline; the model's verdict was unusable ({_short(exc)})",
                         offline.reason)
        score = 1.0 if verdict.sufficient else 0.0
        return Grade(score, 0.5, f"model {choice.model}", verdict.reason[:200] or offline.reason)

    def after_grade(self, state: dict) -> str:
        """Answer when the evidence suffices; otherwise search again while rounds are left,
        then say it was not found."""
        if state["grade"].sufficient:
            return "generate" if self._choice(state).generated else "extract"
        rounds_left = len(state.get("queries") or []) <= self.settings.retrieval_retries
        if rounds_left and (self._next_query(state) or self.clients.judges(self._choice(state))):
            return "rewrite_query"
        return "not_found"

    def _next_query(self, state: dict) -> str:
        """A search not tried yet, offline: for a follow-up, its rewrite with the previous
        question's next likeliest subject (the reference may be to another thing it named),
        then the question as asked. (Searching a first question again with fewer words
        mostly finds the same passages and, measured on the shared sets, turned more
        unanswerable questions into wrong answers than it rescued.)"""
        tried = set(state.get("queries") or [])
        untried = [q for q in [*(state.get("alternatives") or []), state["question"].strip()] if q not in tried]
        return untried[0] if untried else ""

    def rewrite_query(self, state: dict) -> dict:
        """Choose the next search: the model's alternative query, or the next offline one."""
        query, how = self._next_query(state), "offline"
        choice = self._choice(state)
        if self.clients.judges(choice):
            query, how = self._model_search_query(choice, state, query)
        emit({"type": "status", "text": "Searching again with a rewritten query"})
        update = {"query": query}
        if query in (state.get("alternatives") or []):  # now the question as understood
            emit({"type": "standalone", "question": query})
            update["standalone_question"] = query
            how = "offline: the follow-up may refer to another subject of the previous question"
        return update | {"trace": step("Searched again", f"“{query}” ({how})")}

    def _model_search_query(self, choice: ModelChoice, state: dict, fallback: str) -> tuple[str, str]:
        messages = [SystemMessage(prompts.SEARCH_REWRITE_SYSTEM),
                    HumanMessage(f"Question: {state['standalone_question']}\nQueries tried: {state.get('queries')}")]
        try:
            query = clean_rewrite(_structured_text(self.clients.judging(choice), messages, "standalone_question"))
        except Exception as exc:
            self.clients.judge_failed(choice)
            return fallback, f"offline; the model's query was unusable ({_short(exc)})"
        if not query or query in (state.get("queries") or []) or not set(search_tokens(query)):
            return fallback or state["standalone_question"], "offline; the model's query was empty or already tried"
        return query, f"by {choice.model}"

    # ----- answers ---------------------------------------------------------------------

    def _announce_sources(self, sources: list[Source], found: bool) -> None:
        emit({"type": "sources", "sources": sources, "found": found})

    def extract(self, state: dict) -> dict:
        """Quote the best sentences of the passages, each cited, streamed sentence by sentence."""
        started = time.perf_counter()
        question = state["standalone_question"]
        asked = state["question"] if question != state["question"] else None
        answer = extractive_answer(question, state.get("hits") or [], self.settings, self.kb.embedder,
                                   self.kb.idf(question), asked=asked)
        self._announce_sources(answer.sources, True)
        for sentence in _sentences_with_markers(answer.text):
            emit({"type": "token", "text": sentence})
        replaced = " (instead of the model's answer)" if state.get("error") else ""
        return {"answer": answer.text, "sources": answer.sources, "closest": [], "found": True,
                "mode": "extractive", "model": "", "usage": {},
                "trace": step("Answered", f"quoted {sum(s.cited for s in answer.sources)} passages, offline{replaced}"),
                "timings": {"generate_ms": (state.get("timings") or {}).get("generate_ms", 0.0) + _elapsed_ms(started)}}

    def generate(self, state: dict) -> dict:
        """Stream the model's answer from the passages; on failure leave ``error`` set so
        the route falls back to the extractive answer."""
        started = time.perf_counter()
        choice = self._choice(state)
        try:
            result = self._model_answer(state, choice)
        except Exception as exc:
            waited = exc.waited_s if isinstance(exc, ModelTimeout) else None
            own = isinstance(exc, (ContextTooSmall, UnusableAnswer))
            error = str(exc) if own else explain_llm_error(exc, choice, waited)
            log.warning("model answer failed, using the extractive answer: %s", error)
            emit({"type": "reset", "error": error})
            return {"error": error, "answer": "", "trace": step("Model failed", error),
                    "timings": {"generate_ms": _elapsed_ms(started)}}
        result["timings"] = {"generate_ms": _elapsed_ms(started)}
        return result

    def _model_answer(self, state: dict, choice: ModelChoice) -> dict:
        cjk = language(state) == "zh"
        system = prompts.ANSWER_SYSTEM.format(language=prompts.language_name(cjk))
        history = list(state.get("history") or [])
        sources = sources_from_hits(state.get("hits") or [])
        budget = self._source_budget(choice, system, history, state["question"])
        while budget < 150 and history:  # drop the oldest turns before giving up
            history = history[1:]
            budget = self._source_budget(choice, system, history, state["question"])
        if budget < 150:
            raise ContextTooSmall(f"the question does not fit {choice.model}'s "
                                  f"{context_window(self.settings, choice)}-token context window with its answer; "
                                  "raise RAGKIT_MODEL_CONTEXT_TOKENS if the server allows more")
        packed = pack_context(sources, budget)
        sources = [s for s in sources if s.n in {n for n, _, _ in packed}]
        self._announce_sources(sources, True)
        messages = [SystemMessage(system)]
        for exchange in history:
            messages += [HumanMessage(exchange.question), AIMessage(exchange.answer)]
        asked = state["question"] + (f"\n(Standalone form: {state['standalone_question']})"
                                     if state["standalone_question"] != state["question"] else "")
        messages.append(HumanMessage(f"{prompts.format_sources(packed)}\n\nQuestion: {asked}"))
        raw, usage = self._consume(self.clients.answering(choice), messages)
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

    def _source_budget(self, choice: ModelChoice, system: str, history: list, question: str) -> int:
        fixed = count_tokens(system) + count_tokens(question) + 120
        fixed += sum(count_tokens(e.question) + count_tokens(e.answer) + 8 for e in history)
        room = context_window(self.settings, choice) - self.settings.max_answer_tokens - fixed
        return min(self.settings.context_tokens, room)

    def _consume(self, client, messages) -> tuple[str, dict]:
        """Forward streamed text until the model finishes, echoes the prompt or reaches
        the answer-token limit (counted in tokens, not chunks)."""
        from .checks import cut_prompt_echo

        text, usage, finished = "", {}, False
        for chunk in stream_with_deadline(client, messages, self.settings.llm_timeout_s):
            piece = chunk.content if isinstance(chunk.content, str) else ""
            if getattr(chunk, "usage_metadata", None):
                usage = dict(chunk.usage_metadata)  # arrives after the finish reason
            finished = finished or bool((chunk.response_metadata or {}).get("finish_reason"))
            if not piece:
                continue
            clean, echoed = cut_prompt_echo(text + piece)
            if clean[len(text):]:
                emit({"type": "token", "text": clean[len(text):]})
            text = clean
            if echoed or count_tokens(text) >= self.settings.max_answer_tokens:
                return text, usage
        if not finished:
            raise StreamBroken("the stream ended before the server said it was complete")
        return text, usage

    def after_generate(self, state: dict) -> str:
        """A failed model answer falls back to the extractive one."""
        return "extract" if state.get("error") and not state.get("answer") else "check_citations"

    def check_citations(self, state: dict) -> dict:
        """Keep only claims the cited passages support: a generated answer whose sentences
        none of its sources back is replaced by quotes; unsupported sentences are flagged."""
        if state.get("mode") != "llm":
            return {}
        sources = state.get("sources") or []
        checks = check_support(state["answer"], sources)
        unsupported = [c for c in checks if not c.supported]
        if checks and len(unsupported) == len(checks):
            error = f"no sentence of the model's answer was supported by its sources ({unsupported[0].reason})"
            emit({"type": "reset", "error": error})
            fallback = self.extract({**state, "error": error})
            fallback["error"] = error
            fallback["trace"] = step("Checked the citations", error + ": replaced by quotes") + fallback["trace"]
            return fallback
        answer = validate_markers(add_attributions(state["answer"], checks), sources)
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

    def not_found(self, state: dict) -> dict:
        """Say plainly that the documents do not answer it; list the closest passages
        separately; name an active filter and what outside it looks relevant."""
        lang = language(state)
        text = prompts.NOT_FOUND[lang]
        # The question as understood is the best-graded round's (a follow-up's other subject
        # tried after weak evidence is not kept when it did no better).
        _, best_hits, question = state.get("best") or (0.0, state.get("hits") or [], state["standalone_question"])
        if question != state["standalone_question"]:
            emit({"type": "standalone", "question": question})
        filters = state.get("filters") or {}
        if _filter_words(filters):
            text += prompts.FILTER_NOTE[lang].format(what=_filter_words(filters))
            elsewhere = self._best_outside(question, _scope(state))
            if elsewhere:
                text += prompts.ELSEWHERE_NOTE[lang].format(title=elsewhere)
        closest = sources_from_hits(best_hits[:CLOSEST_MATCHES])
        self._announce_sources(closest, False)
        emit({"type": "token", "text": text})
        return {"answer": text, "sources": [], "closest": closest, "found": False, "mode": "not_found",
                "standalone_question": question, "model": "", "usage": {},
                "trace": step("Not found", f"no passage answers it after {len(state.get('queries') or [])} searches")}

    def _best_outside(self, question: str, scope: SearchFilters | None = None) -> str:
        hits = self.kb.search(question, self.settings.top_k, scope)
        grade = grade_offline(question, hits, self.kb.idf(question), self._embed_sentences, self.settings)
        return hits[0].title if hits and grade.sufficient else ""

    # ----- record ------------------------------------------------------------------

    def record(self, state: dict) -> dict:
        """Append the finished turn to the session (one transaction)."""
        timings = dict(state.get("timings") or {})
        timings["total_ms"] = round(sum(v for k, v in timings.items() if k.endswith("_ms")), 1)
        turn = Turn(
            question=state["question"], standalone_question=state["standalone_question"], answer=state["answer"],
            mode=state.get("mode", "extractive"), model=state.get("model", ""), sources=state.get("sources") or [],
            timings=timings, usage=state.get("usage") or {}, error=state.get("error", ""),
            filters=state.get("filters") or {}, found=state.get("found", True), closest=state.get("closest") or [],
            trace=list(state.get("trace") or []),
        )
        try:
            self.history.add_turn(state["session_id"], turn)
        except (ReadOnlyDataDir, StorageFull) as exc:  # the answer still reaches the user, unsaved (id None)
            turn.trace.append(TraceStep("Not saved", str(exc)))
        return {"turn": turn}


class StreamBroken(RuntimeError):
    """The answer stream stopped before the server said it was complete."""


class ContextTooSmall(RuntimeError):
    """The prompt cannot fit the model's context window."""


class UnusableAnswer(RuntimeError):
    """The model's answer is not an answer (empty, echoed instructions)."""


def _structured_text(client, messages, field: str | None, schema=None) -> str:
    """A structured call returning JSON text: ``{field: ...}`` (or ``schema``'s fields).

    JSON-schema output first; a server that does not take a schema (llama.cpp's server
    accepts only "json_object") gets JSON mode with the fields described in words."""
    from pydantic import BaseModel, create_model

    model = schema or create_model("Rewrite", **{field: (str, ...)}, __base__=BaseModel)
    try:
        result = client.with_structured_output(model, method="json_schema").invoke(messages)
    except Exception as exc:
        if "response_format" not in str(exc) and "json_schema" not in str(exc):
            raise
        fields = ", ".join(f'"{name}"' for name in model.model_fields)
        hint = SystemMessage(f"Reply with one JSON object with the keys {fields} and nothing else.")
        result = client.with_structured_output(model, method="json_mode").invoke([messages[0], hint, *messages[1:]])
    if result is None:
        raise ValueError("the model returned no structured output")
    if schema is not None:
        return result.model_dump_json()
    return getattr(result, field)


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:80]}"


def _scope(state: dict) -> SearchFilters:
    """The conversation's knowledge bases: every search of a turn stays inside them."""
    return SearchFilters(knowledge_bases=(state.get("filters") or {}).get("knowledge_bases"))


def _filter_words(filters: dict) -> str:
    """The documents, tags or types chosen within the knowledge bases, in words ("" for none)."""
    parts = []
    if filters.get("doc_ids"):
        parts.append(f"{plural(len(filters['doc_ids']), 'chosen document')}")
    if filters.get("tags"):
        parts.append("tags " + ", ".join(filters["tags"]))
    if filters.get("doc_types"):
        parts.append("types " + ", ".join(filters["doc_types"]))
    return "; ".join(parts)


def _sentences_with_markers(text: str) -> list[str]:
    """The answer cut after each citation marker (or sentence end), keeping every character."""
    import re

    pieces = [p for p in re.split(r"(?<=\])(?=[^\[])", text) if p]
    return pieces or [text]

"""Retrieval rounds: search, focus the passages an answer may use (the answer policy of
``graph.policy``), and choose the next search when the evidence was weak.

A round is ``retrieve → focus → grade``; ``rewrite_query`` starts the next one. The
rounds a question may take are ``settings.retrieval_retries`` + 1 (see
``sufficiency.after_grade``).
"""

from __future__ import annotations

import time

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from ragkit import events
from ragkit.answering.contextualize import clean_rewrite
from ragkit.graph.chain import NotUseful, ask_chain, judges_now
from ragkit.graph.context import RagContext
from ragkit.graph.policy import filter_words, focused
from ragkit.graph.state import RagState, add_time, step
from ragkit.lang.text import search_tokens
from ragkit.models import prompts
from ragkit.models.chat import ModelChoice
from ragkit.models.streaming import structured_reply
from ragkit.types import SearchFilters


def retrieve(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Hybrid search for the current query, within the conversation's filters."""
    started = time.perf_counter()
    context = runtime.context
    query = state.query or state.standalone_question
    hits = context.passages.search(query, context.settings.top_k, state.filters or SearchFilters())
    queries = [*state.queries, query]
    words = filter_words(state.filters) if state.filters else ""
    where = f" in {words}" if words else ""
    return {"hits": hits, "queries": queries,
            "trace": step("Searched", f"round {len(queries)}: “{query}”{where}, {len(hits)} passages"),
            "timings": add_time(state, "retrieve_ms", started)}


def focus(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """The answer policy: drop passages far below the best, add the top document's best
    other passage (it often holds the answer without naming the subject) and the best
    passage of the document the top passage names by title, and of the one that names (a multi-hop
    question's next documents)."""
    query = state.query or state.standalone_question
    passages, settings = runtime.context.passages, runtime.context.settings
    extra = settings.linked_document_k if state.chat_mode == "default" else 0  # agentic mode follows its own hops
    hits = focused(passages, query, state.hits, settings, extra, state.filters)
    linked = [hit.title or hit.filename for hit in hits if hit.linked]
    if not linked:
        return {"hits": hits}
    chain = " → ".join(f"“{title}”" for title in [hits[0].title or hits[0].filename, *linked])
    return {"hits": hits, "trace": step("Followed titles", f"{chain}: each passage names the next document by title")}


def next_query(state: RagState) -> str:
    """A search not tried yet, offline: for a follow-up, its rewrite with the previous
    question's next likeliest subject (the reference may be to another thing it named),
    then the question as asked. (Searching a first question again with fewer words
    mostly finds the same passages and, measured on the shared sets, turned more
    unanswerable questions into wrong answers than it rescued.)"""
    tried = set(state.queries)
    untried = [q for q in [*state.alternatives, state.question.strip()] if q not in tried]
    return untried[0] if untried else ""


def rewrite_query(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Choose the next search: the model's alternative query, or the next offline one."""
    context = runtime.context
    query, how = next_query(state), "offline"
    if judges_now(context, state):
        query, how = model_search_query(context, state, query)
    if not query:  # nothing untried is left and the model gave none: never search for ""
        return {"query": "", "trace": step("No other search", f"every query was tried ({how})")}
    runtime.stream_writer(events.status("Searching again with a rewritten query"))
    update = {"query": query}
    if query in state.alternatives:  # now the question as understood
        runtime.stream_writer(events.standalone(query))
        update["standalone_question"] = query
        how = "offline: the follow-up may refer to another subject of the previous question"
    return update | {"trace": step("Searched again", f"“{query}” ({how})")}


def model_search_query(context: RagContext, state: RagState, fallback: str) -> tuple[str, str]:
    """The next search query of the chain's first model with a usable one, and how it was
    made; ``fallback`` when no model's is usable."""
    messages = [SystemMessage(prompts.SEARCH_REWRITE_SYSTEM),
                HumanMessage(f"Question: {state.standalone_question}\nQueries tried: {state.queries}")]

    def query_by(choice: ModelChoice) -> str:
        query = clean_rewrite(structured_reply(context, choice, messages, "standalone_question"))
        if not query or query in state.queries or not set(search_tokens(query)):
            raise NotUseful("its query was empty or already tried")
        return query

    reply = ask_chain(context, state, "search query", query_by)
    if reply.value:
        return reply.value, f"by {reply.model}{reply.after()}"
    return fallback, f"offline; {reply.unusable('query')}"







"""Retrieval rounds: search, focus the passages an answer may use, and choose the next
search when the evidence was weak.

The answer policy (``focus``): the knowledge base returns ranked passages; what an
answer uses of them is decided here: passages far below the best one are dropped, and
the top document's best other passage is added (found by a search within it): the
passage holding an answer often lacks the subject's name, said in an earlier passage,
and loses to other documents' passages. In the default path, the best passage also brings
the document it names by title, and that one the document it names (``add_linked_documents``):
a multi-hop question's next document holds few of the question's words and ranks low.

A round is ``retrieve → focus → grade``; ``rewrite_query`` starts the next one. The
rounds a question may take are ``settings.retrieval_retries`` + 1 (see
``sufficiency.after_grade``).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from ragkit import events
from ragkit.answering.contextualize import clean_rewrite
from ragkit.answering.decompose import mentioned_titles
from ragkit.answering.extractive import names
from ragkit.config import Settings
from ragkit.graph.context import RagContext
from ragkit.graph.nodes.chain import NotUseful, ask_chain, judges_now
from ragkit.graph.protocols import PassageRetriever
from ragkit.graph.state import RagState, add_time, step
from ragkit.lang.text import plural, search_tokens, title_positions
from ragkit.models import prompts
from ragkit.models.chat import ModelChoice
from ragkit.models.streaming import structured_reply
from ragkit.types import Hit, SearchFilters

# ----- the answer policy -------------------------------------------------------------------


def relevant_hits(hits: list[Hit], min_relative_score: float) -> list[Hit]:
    """Drop hits scoring below ``min_relative_score`` of the best one."""
    if not hits:
        return []
    floor = hits[0].score * min_relative_score
    return [hit for hit in hits if hit.score >= floor]


def add_same_document(passages: PassageRetriever, query: str, hits: list[Hit], extra: int) -> list[Hit]:
    """``hits`` plus the ``extra`` best further passages of the top hit's document,
    scored no higher than the last hit (they were ranked within one document only)."""
    if not hits or extra <= 0:
        return hits
    seen = {hit.id for hit in hits}
    within = passages.search_document(query, hits[0].doc_id, extra + len(hits))
    added = [replace(hit, score=min(hit.score, hits[-1].score), same_document=True)
             for hit in within if hit.id not in seen]
    return hits + added[:extra]


def focus_hits(passages: PassageRetriever, query: str, hits: list[Hit], settings: Settings) -> list[Hit]:
    """The passages an answer is drawn from: the relevant ones of a search's ``hits``, then
    the top document's best other passages."""
    return add_same_document(passages, query, relevant_hits(hits, settings.min_relative_score),
                             settings.same_document_k)


def add_linked_documents(passages: PassageRetriever, query: str, hits: list[Hit], extra: int,
                         filters: SearchFilters | None = None) -> list[Hit]:
    """``hits`` plus a chain of at most ``extra`` linked passages: the best passage for
    ``query`` of the first document the top hit's passage names by title
    (``decompose.mentioned_titles``, in the order it names them), then of the first one that
    passage names, and so on; within ``filters``, scored no higher than the last hit. A
    document already among the hits, or one the query names (its own words found it or
    not), is not added."""
    if not hits or extra <= 0:
        return hits
    titles = passages.document_titles(filters)
    present = {hit.doc_id for hit in hits} | {titles[hit.title] for hit in hits if hit.title in titles}
    floor = hits[-1].score
    added: list[Hit] = []
    source = hits[0]
    while len(added) < extra:
        found = _first_linked(passages, query, source.context.text, titles, present)
        if found is None:
            break
        source = replace(found, score=min(found.score, floor), linked=True)
        added.append(source)
        present.add(source.doc_id)
    return hits + added


def _first_linked(passages: PassageRetriever, query: str, text: str, titles: dict[str, str],
                  present: set[str]) -> Hit | None:
    """The best passage for ``query`` of the first document ``text`` names by title that is
    neither in ``present`` nor named by the query (None when there is none). A one-word title
    counts only where no sentence starts (``extractive.names``: "About 300 people came" names
    no document titled "About")."""
    named = sorted((title for title in mentioned_titles(text, titles) if names(title, text)),
                   key=lambda title: title_positions(title, text)[0])
    for title in named:
        if titles[title] in present or title_positions(title, query):
            continue
        best = passages.search_document(query, titles[title], 1)
        if best:
            return best[0]
    return None


# ----- the nodes -------------------------------------------------------------------------


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
    hits = add_linked_documents(passages, query, focus_hits(passages, query, state.hits, settings), extra,
                                state.filters)
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


def after_rewrite(state: RagState) -> Literal["retrieve", "not_found"]:
    """Search again with the new query; say "not found" when there is none."""
    return "retrieve" if state.query else "not_found"


def scope(filters: SearchFilters | None) -> SearchFilters:
    """The conversation's knowledge bases only: the searches beside a turn's own (a
    follow-up's rewrites, what answers it outside the chosen documents) stay inside them."""
    return filters.scope_only() if filters else SearchFilters()


def filter_words(filters: SearchFilters) -> str:
    """The documents, tags or types chosen within the knowledge bases, in words ("2 chosen
    documents; tags finance"; "" for none)."""
    parts = []
    if filters.doc_ids:
        parts.append(plural(len(filters.doc_ids), "chosen document"))
    if filters.tags:
        parts.append("tags " + ", ".join(filters.tags))
    if filters.doc_types:
        parts.append("types " + ", ".join(filters.doc_types))
    return "; ".join(parts)

"""The graph's shape: its edges, typed nodes, one way to passages, one event vocabulary,
model errors in the one exception tree. Fast: no store, no model."""

from __future__ import annotations

import inspect
import typing

import pytest

from ragkit import KnowledgeBase, errors, events
from ragkit.app import HistoryManager
from ragkit.graph import build_graph
from ragkit.graph.agentic import research_graph
from ragkit.graph.agentic.state import AgentState
from ragkit.graph.build import NODES
from ragkit.graph.protocols import ConversationLog, PassageRetriever
from ragkit.graph.state import RagState


def test_the_graph_has_these_edges_and_routes():
    drawn = build_graph().get_graph()
    edges = {(edge.source, edge.target, edge.conditional) for edge in drawn.edges}
    assert edges == {
        ("__start__", "recall", False), ("recall", "route", False),
        ("route", "contextualize", True), ("route", "direct", True),
        ("direct", "record", False),
        ("contextualize", "retrieve", True), ("contextualize", "agentic", True),
        ("agentic", "grade", True), ("agentic", "generate", True), ("agentic", "note_web", True),
        ("agentic", "record", True),
        ("retrieve", "focus", False), ("focus", "grade", False),
        ("grade", "extract", True), ("grade", "generate", True), ("grade", "rewrite_query", True),
        ("grade", "not_found", True), ("rewrite_query", "retrieve", True), ("rewrite_query", "not_found", True),
        ("grade", "web_search", True), ("rewrite_query", "web_search", True),
        ("web_search", "grade", True), ("web_search", "record", True),
        ("check_citations", "note_web", True), ("check_citations", "next_model", True),
        ("check_citations", "record", True), ("note_web", "record", False),
        ("generate", "check_citations", True), ("generate", "next_model", True),
        ("next_model", "generate", True), ("next_model", "extract", True),
        ("extract", "note_web", True), ("extract", "record", True),
        ("not_found", "record", False), ("record", "__end__", False),
    }


def test_agentic_research_is_a_subgraph_that_fans_out_its_searches():
    edges = {(edge.source, edge.target) for edge in research_graph().get_graph().edges}
    assert edges == {("__start__", "plan"), ("plan", "search"), ("search", "close_round"),
                     ("close_round", "search"), ("close_round", "web_hops"), ("close_round", "finish"),
                     ("web_hops", "finish"), ("finish", "answer_hops"), ("finish", "__end__"),
                     ("answer_hops", "__end__")}


def test_every_node_takes_the_typed_state():
    drawn = {node for node in build_graph().get_graph().nodes if not node.startswith("__")}
    assert {function.__name__ for function in NODES} == drawn
    for function in NODES:
        first = next(iter(inspect.signature(function).parameters))
        assert typing.get_type_hints(function)[first] is RagState, function.__name__


def test_the_graph_reaches_passages_and_conversations_only_through_its_protocols():
    protocol = {name for name, value in vars(PassageRetriever).items()
                if inspect.isfunction(value) and not name.startswith("_")}
    assert protocol == {"search", "search_document", "search_documents", "document_passages", "idf",
                        "indexed_passages", "embed_sentences", "document_titles", "sentence_vectors"}
    assert all(callable(getattr(KnowledgeBase, name, None)) for name in protocol)
    log = {name for name, value in vars(ConversationLog).items()
           if inspect.isfunction(value) and not name.startswith("_")}
    assert log and all(callable(getattr(HistoryManager, name, None)) for name in log)


def test_the_research_state_is_its_own():
    fields = set(AgentState.__dataclass_fields__)
    assert {"sub_questions", "links", "bridges", "evidence"} <= fields
    assert not {"sub_questions", "links", "bridges", "evidence"} & set(RagState.__dataclass_fields__)


def test_the_event_vocabulary_is_one_typed_union():
    kinds = {typing.get_type_hints(kind)["type"].__args__[0] for kind in typing.get_args(events.ChatEvent)}
    assert kinds == {"standalone", "status", "sources", "token", "reset", "done"}
    assert events.token("x") == {"type": "token", "text": "x"}
    assert events.sources([], False) == {"type": "sources", "sources": [], "found": False}


@pytest.mark.parametrize("error", [errors.ModelTimeout(5), errors.StreamBroken("x"),
                                   errors.ContextTooSmall("x"), errors.UnusableAnswer("x")])
def test_model_errors_are_ours(error):
    assert isinstance(error, errors.ModelError) and isinstance(error, errors.RagkitError)


def test_a_model_timeout_is_still_a_timeout_for_the_explanation():
    assert isinstance(errors.ModelTimeout(5), TimeoutError) and errors.ModelTimeout(5).waited_s == 5

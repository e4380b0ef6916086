"""The graph's shape: its edges, typed nodes, one way to passages, one event vocabulary,
model errors in the one exception tree. Fast: no store, no model."""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path

import pytest

from ragkit import errors, events
from ragkit.graph import build_graph
from ragkit.graph.agentic import hops
from ragkit.graph.nodes import answer as answering
from ragkit.graph.nodes import chain, memory, web
from ragkit.graph.nodes import grade as sufficiency
from ragkit.graph.nodes import record as recording
from ragkit.graph.nodes import retrieve as rounds
from ragkit.graph.nodes import route as routing
from ragkit.graph.protocols import PassageRetriever
from ragkit.graph.state import RagState
from ragkit.models import streaming as model_io
from ragkit.store.kb import KnowledgeBase

GRAPH = Path(__file__).resolve().parents[1] / "ragkit" / "graph"
NODE_MODULES = (routing, hops, rounds, sufficiency, answering, chain, web, memory, recording)


def test_the_graph_has_these_edges_and_routes():
    drawn = build_graph().get_graph()
    edges = {(edge.source, edge.target, edge.conditional) for edge in drawn.edges}
    assert edges == {
        ("__start__", "recall", False), ("recall", "route", False),
        ("route", "contextualize", True), ("route", "direct", True),
        ("direct", "record", False),
        ("contextualize", "retrieve", True), ("contextualize", "plan", True), ("plan", "hop_round", False),
        ("hop_round", "hop_round", True), ("hop_round", "extract_hops", True), ("hop_round", "generate", True),
        ("hop_round", "grade", True), ("extract_hops", "record", True), ("extract_hops", "note_web", True),
        ("hop_round", "web_hops", True), ("web_hops", "extract_hops", True),
        ("web_hops", "generate", True), ("web_hops", "grade", True),
        ("retrieve", "focus", False), ("focus", "grade", False),
        ("grade", "extract", True), ("grade", "generate", True), ("grade", "rewrite_query", True),
        ("grade", "not_found", True), ("rewrite_query", "retrieve", True), ("rewrite_query", "not_found", True),
        ("grade", "web_search", True), ("rewrite_query", "web_search", True),
        ("web_search", "grade", True), ("web_search", "record", True),
        ("check_citations", "note_web", True), ("check_citations", "next_model", True),
        ("note_web", "record", False),
        ("generate", "check_citations", True), ("generate", "next_model", True),
        ("next_model", "generate", True), ("next_model", "extract", True),
        ("extract", "check_citations", False), ("check_citations", "record", True),
        ("not_found", "record", False), ("record", "__end__", False),
    }


def test_every_node_takes_the_typed_state():
    nodes = [node for node in build_graph().get_graph().nodes if not node.startswith("__")]
    functions = {name: getattr(module, name) for module in NODE_MODULES for name in nodes if hasattr(module, name)}
    assert set(functions) == set(nodes)
    for name, function in functions.items():
        first = next(iter(inspect.signature(function).parameters))
        assert typing.get_type_hints(function)[first] is RagState, name


def test_the_graph_reaches_passages_only_through_the_retriever_protocol():
    for path in GRAPH.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert not imported & {"kb", "ragkit.store.kb", "chat", "ragkit.app.engine"}, path.name
    protocol = {name for name, value in vars(PassageRetriever).items()
                if inspect.isfunction(value) and not name.startswith("_")}
    assert protocol == {"search", "search_document", "idf", "indexed_passages", "embed_sentences", "document_titles",
                        "sentence_vectors"}
    assert all(callable(getattr(KnowledgeBase, name, None)) for name in protocol)


def test_the_event_vocabulary_is_one_typed_union():
    kinds = {typing.get_type_hints(kind)["type"].__args__[0] for kind in typing.get_args(events.ChatEvent)}
    assert kinds == {"standalone", "status", "sources", "token", "reset", "done"}
    assert events.token("x") == {"type": "token", "text": "x"}
    assert events.sources([], False) == {"type": "sources", "sources": [], "found": False}


@pytest.mark.parametrize("error", [model_io.ModelTimeout(5), model_io.StreamBroken("x"),
                                   model_io.ContextTooSmall("x"), model_io.UnusableAnswer("x")])
def test_model_errors_are_ours(error):
    assert isinstance(error, errors.ModelError) and isinstance(error, errors.RagkitError)


def test_a_model_timeout_is_still_a_timeout_for_the_explanation():
    assert isinstance(model_io.ModelTimeout(5), TimeoutError) and model_io.ModelTimeout(5).waited_s == 5

"""The conversational graph judges its evidence: it answers what the documents hold, says
"not found" (with the closest passages, never as citations) for what they do not, keeps
follow-ups on topic, and records how each answer was reached. Real store, real model."""

from __future__ import annotations

import typing
from dataclasses import replace

import pytest
from langgraph.runtime import Runtime

from ragkit.answering.grading import Grade
from ragkit.app.engine import ChatEngine
from ragkit.events import ChatEvent
from ragkit.graph.nodes.answer import not_found
from ragkit.graph.nodes.grade import grade
from ragkit.graph.nodes.retrieve import rewrite_query
from ragkit.graph.routes import after_generate, after_grade
from ragkit.graph.state import GradedRound, RagState
from ragkit.types import SearchFilters

LIGHTHOUSE = """# Skerry Point Lighthouse

The Skerry Point Lighthouse was first lit in 1887 to guard the northern channel.

The tower stands 31 metres tall and its lantern can be seen 20 nautical miles away.

Anna Berg was the last resident keeper of the lighthouse; she left in 1962 when the light was automated.

Visitors may climb the 148 steps from April to October. Entry tickets cost 12 euros, children enter free.
"""
BAKERY = """# Crumb & Co. bakery handbook

The sourdough starter is fed twice a day with rye flour and water.

Ovens are preheated to 240 degrees at five in the morning. Croissants rest for two hours before baking.
"""
RELEASE = """# Release notes 4.2

Version 4.2 adds dark mode and offline sync. The export dialog now remembers the last folder.
"""


@pytest.fixture
def library(kb):
    docs = {}
    for name, text in (("lighthouse.md", LIGHTHOUSE), ("bakery.md", BAKERY), ("release-notes.md", RELEASE)):
        docs[name] = kb.ingest(text.encode(), filename=name).document
    return docs


@pytest.fixture
def engine(settings, kb, library):
    return ChatEngine(settings, kb)


def steps(turn) -> list[str]:
    return [step.step for step in turn.trace]


def test_an_answerable_question_is_answered_with_citations_and_a_trace(engine):
    turn = engine.ask("a", "How tall is the Skerry Point Lighthouse?")
    assert turn.found and turn.mode == "extractive" and "31 metres" in turn.answer and "[1]" in turn.answer
    assert steps(turn) == ["Searched", "Graded the evidence", "Answered"]
    assert "sufficient" in turn.trace[1].detail


@pytest.mark.parametrize("question, reply", [
    ("What was the population of Quarnova in 2020?", "I could not find this in your documents."),
    ("夸尔诺瓦2020年的人口是多少？", "文档中没有找到相关内容。"),
])
def test_a_question_no_document_covers_is_not_found_in_the_users_language(engine, question, reply):
    turn = engine.ask("n", question)
    assert not turn.found and turn.mode == "not_found" and turn.answer == reply
    assert turn.sources == [] and turn.closest and "[" not in turn.answer
    assert steps(turn)[-1] == "Not found" and "not sufficient" in turn.trace[1].detail
    assert engine.history.turns("n")[0].closest[0].title == turn.closest[0].title  # recorded as closest matches


def test_a_filter_that_excludes_the_answer_says_which_and_what_outside_it_looks_relevant(engine, library):
    only_bakery = SearchFilters(doc_ids=[library["bakery.md"].id])
    turn = engine.ask("f", "Who was the last resident keeper of the lighthouse?", only_bakery)
    assert not turn.found and turn.sources == []
    assert "A filter is active (1 chosen document)" in turn.answer
    assert "Skerry Point Lighthouse" in turn.answer  # the document outside the filter that answers it


def test_a_deleted_document_is_not_answered_from_the_others(engine, kb, library):
    kb.delete(library["release-notes.md"].id)
    turn = engine.ask("d", "Which features does version 4.2 add?")
    assert not turn.found and turn.sources == []


def test_follow_ups_stay_on_their_subject(engine):
    engine.ask("f", "Who was the last resident keeper of the Skerry Point Lighthouse?")
    height = engine.ask("f", "What about its height?")
    assert height.standalone_question == "What about Skerry Point Lighthouse's height?"
    assert "31 metres" in height.answer
    price = engine.ask("f", "What about its entry price?")
    assert "12 euros" in price.answer
    switched = engine.ask("f", "How often is the sourdough starter fed?")
    assert switched.standalone_question == "How often is the sourdough starter fed?"  # no stale subject
    assert "twice a day" in switched.answer


def test_events_bring_the_rewrite_and_the_sources_before_the_answer(engine):
    engine.ask("e", "Who was the last resident keeper of the Skerry Point Lighthouse?")
    events = list(engine.stream("e", "When was it first lit?"))
    kinds = [event["type"] for event in events]
    assert kinds.index("standalone") < kinds.index("sources") < kinds.index("token") < kinds.index("done")
    assert events[kinds.index("sources")]["found"] is True


def test_every_streamed_event_has_the_keys_its_vocabulary_entry_names(engine):
    shapes = {typing.get_type_hints(kind)["type"].__args__[0]: set(typing.get_type_hints(kind))
              for kind in typing.get_args(ChatEvent)}
    streamed = [*engine.stream("v", "How tall is the Skerry Point Lighthouse?"),
                *engine.stream("v", "What was the population of Quarnova in 2020?")]
    assert {event["type"] for event in streamed} >= {"sources", "token", "done"}
    for event in streamed:
        assert set(event) == shapes[event["type"]], event["type"]


# ----- each routing decision, on its own -------------------------------------------


@pytest.fixture
def runtime(engine):
    return Runtime(context=engine.context)


def state(**fields) -> RagState:
    return RagState(session_id="t", **fields)


def graded(score: float) -> Grade:
    return Grade(score, 0.5, "offline", "test")


def test_sufficient_evidence_goes_to_the_offline_answer(runtime):
    sufficient = state(question="q", standalone_question="q", queries=["q"], grade=graded(0.9))
    assert after_grade(sufficient, runtime) == "extract"


def test_weak_evidence_for_a_rewritten_follow_up_searches_again_with_the_question_as_asked(runtime):
    weak = state(question="What about its height?", standalone_question="What about Anna Berg's height?",
                 queries=["What about Anna Berg's height?"], grade=graded(0.1))
    assert after_grade(weak, runtime) == "rewrite_query"
    retry = rewrite_query(weak, runtime)
    assert retry["query"] == "What about its height?" and retry["trace"][0].step == "Searched again"


def test_weak_evidence_for_a_follow_up_tries_the_previous_questions_other_subject_first(runtime):
    # "From where does the Band lead a march to the Stadium?" then "How many seats are in it?"
    weak = state(question="How many seats are in it?", standalone_question="How many seats are in the Band?",
                 alternatives=["How many seats are in the Stadium?"], grade=graded(0.1),
                 queries=["How many seats are in the Band?"])
    assert after_grade(weak, runtime) == "rewrite_query"
    retry = rewrite_query(weak, runtime)
    assert retry["query"] == retry["standalone_question"] == "How many seats are in the Stadium?"
    assert "another subject" in retry["trace"][0].detail
    then = replace(weak, query=retry["query"], standalone_question=retry["standalone_question"],
                   queries=weak.queries + [retry["query"]])
    assert rewrite_query(then, runtime)["query"] == "How many seats are in it?"  # then the question as asked


def test_weak_evidence_with_nothing_left_to_try_is_not_found(runtime, settings):
    tried = state(question="q", standalone_question="q", queries=["q"], grade=graded(0.1))
    assert after_grade(tried, runtime) == "not_found"
    rounds_used = state(question="a", standalone_question="b", grade=graded(0.1),
                        queries=["b", "c", "d"][: settings.retrieval_retries + 1])
    assert after_grade(rounds_used, runtime) == "not_found"


def test_a_failed_model_answer_passes_the_turn_on():
    assert after_generate(state(question="q", error="the model server is unreachable", answer="")) == "next_model"
    assert after_generate(state(question="q", answer="An answer [1].", mode="llm")) == "check_citations"


def test_closest_matches_stay_with_the_first_search_unless_a_retry_is_clearly_better(runtime, kb):
    question = "What is the population of the Skerry Point Lighthouse?"
    first_hits = tuple(kb.search(question, 5))
    retry_hits = kb.search("What is its population?", 5)
    retry = state(question=question, standalone_question=question, hits=retry_hits)
    retry_margin = grade(retry, runtime)["grade"].margin
    first_stays = replace(retry, best=GradedRound(retry_margin - 0.05, first_hits, question))
    assert "best" not in grade(first_stays, runtime)
    better = grade(replace(retry, best=GradedRound(retry_margin - 0.3, first_hits, question)), runtime)["best"]
    assert better == GradedRound(retry_margin, tuple(retry_hits), question)


def test_not_found_after_trying_another_subject_keeps_the_question_as_first_understood(runtime, kb):
    first = "How many seats are in the Skerry Point Lighthouse?"
    tried = "How many seats are in the Quarnova Stadium?"
    weak = state(question="How many seats are in it?", standalone_question=tried, hits=kb.search(tried, 5),
                 best=GradedRound(0.3, tuple(kb.search(first, 5)), first),
                 queries=[first, tried, "How many seats are in it?"])
    result = not_found(weak, runtime)
    assert result["standalone_question"] == first and not result["found"] and result["closest"]
    assert [s.chunk_id for s in result["closest"]] == [h.id for h in weak.best.hits[: len(result["closest"])]]

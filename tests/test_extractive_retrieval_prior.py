"""The offline answerer (English) weighs where the retriever put each sentence's document by its
score, not only its rank: a document far ahead of the rest lends its sentences more than one
level with the next (``Weights.retrieval_prior``). A sentence that is the next link of a chain
may fill the answer past ``Settings.extractive_chars_latin``, up to
``Settings.extractive_chain_chars_latin``. The prior orders documents; within one, whether a
further sentence is worth quoting is judged without it (``Candidate.merit``). Pure functions, no model."""

from __future__ import annotations

import dataclasses

from ragkit.answering import extractive
from ragkit.answering.extractive import extractive_answer, retrieval_shares
from ragkit.config import Settings
from ragkit.types import Hit, Passage

QUESTION = "How many people does Notre Dame Stadium hold?"
ANSWERS = "Today the team plays in Notre Dame Stadium, an 80,795-seat stadium on campus."
REPEATS = "Notre Dame Stadium crowds: many people hold tickets for the stadium each year."


def hit(text, score, doc, title="Title"):
    return Hit(Passage(text, 1, 0, 0, len(text), 0, doc_id=doc, version=1), title, f"{doc}.txt", "txt", score)


def first_quote(hits, settings=None):
    answer = extractive_answer(QUESTION, hits, settings or Settings(extractive_alone_share_latin=0)).text
    return answer.split("[")[0]


def test_each_document_weighs_its_best_retrieval_score_as_a_share_of_the_best():
    hits = [hit("a", 0.8, "a"), hit("b", 0.4, "b"), hit("a again", 0.2, "a"), hit("c", -0.3, "c")]
    assert retrieval_shares(hits) == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert retrieval_shares([hit("z", 0.0, "z")]) == {"z": 0.0}
    assert retrieval_shares([]) == {}


def test_the_sentence_of_the_document_the_retriever_put_far_ahead_is_quoted_first():
    assert first_quote([hit(ANSWERS, 1.0, "team"), hit(REPEATS, 0.3, "crowds")]) == ANSWERS


def test_a_document_level_with_the_next_lends_its_sentence_little():
    assert first_quote([hit(ANSWERS, 1.0, "team"), hit(REPEATS, 0.98, "crowds")]) == REPEATS


def test_without_the_retrieval_prior_the_rank_alone_does_not_lift_the_answer(monkeypatch):
    monkeypatch.setattr(extractive, "LATIN_WEIGHTS",
                        dataclasses.replace(extractive.LATIN_WEIGHTS, retrieval_prior=0.0))
    assert first_quote([hit(ANSWERS, 1.0, "team"), hit(REPEATS, 0.3, "crowds")]) == REPEATS


def chain_hits():
    ship = hit("The SS Calder Rose was a cargo steamer built by the Marlowe & Finch shipyard in 1912.", 1.0, "ship",
               "SS Calder Rose")
    yard = hit("The yard stood in the town of Oss Bridge, on the River Oss.", 0.8, "yard", "Marlowe & Finch")
    return [ship, yard]


def test_the_next_link_of_a_chain_may_fill_the_answer_up_to_the_chain_budget():
    question = "On which river stood the shipyard that built the SS Calder Rose?"
    answer = extractive_answer(question, chain_hits(), Settings(extractive_chars_latin=100)).text
    assert "Marlowe & Finch" in answer and "River Oss" in answer and len(answer) > 100


def test_with_the_chain_budget_no_larger_the_link_must_fit_the_answers_own_budget():
    question = "On which river stood the shipyard that built the SS Calder Rose?"
    settings = Settings(extractive_chars_latin=100, extractive_chain_chars_latin=100)
    answer = extractive_answer(question, chain_hits(), settings).text
    assert "River Oss" not in answer and len(answer) <= 100


def test_a_sentence_saying_nothing_asked_is_not_quoted_because_its_document_ranks_first(monkeypatch):
    """The prior lifts every sentence of the top document alike: a further sentence is judged
    on what it says (its merit), or the answer fills up with whatever else that document holds."""
    text = ("The secret code word is pelican. <script>window.__pwned = 1</script> "
            "<img src=x onerror=\"window.__pwned = 2\"> [click](javascript:window.__pwned=3)")
    hits = [hit(text, 1.0, "hostile")]
    answer = extractive_answer("What is the secret code word?", hits, Settings()).text
    assert answer == "The secret code word is pelican.[1]"
    candidate = extractive.Candidate("x", 0, 0, score=1.2, prior=0.75)
    assert candidate.merit == 1.2 - 0.75

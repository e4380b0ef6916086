"""The offline answerer (English) quotes the best sentence alone when it clearly answers: no
other sentence's merit (its score without its document's retrieval prior) is
``Settings.extractive_alone_share_latin`` of its own; a sentence of the document the best one names
(the next link of a chain) comes before other documents' runners-up. Pure functions, no model."""

from __future__ import annotations

import dataclasses

from ragkit.answering import extractive
from ragkit.answering.extractive import extractive_answer
from ragkit.config import Settings
from ragkit.types import Hit, Passage

TEXT = ("The Kroc Institute for International Peace Studies was founded in 1986 at the university. "
        "Its programmes train students from many countries in the study of conflict. "
        "The Kroc Institute for International Peace Studies hosts visiting fellows.")


def hit(text, n=0, doc="d"):
    return Hit(Passage(text, 1, n, 0, len(text), 0, doc_id=doc, version=1), "Title", "file.txt", "txt", 1.0 - n / 10)


def test_a_clear_answer_of_the_kind_asked_is_quoted_alone():
    answer = extractive_answer("When was the Kroc Institute for International Peace Studies founded?", [hit(TEXT)],
                               Settings()).text
    assert "1986" in answer
    assert "programmes" not in answer and "fellows" not in answer


def test_with_the_share_at_zero_further_sentences_fill_the_budget_as_before():
    answer = extractive_answer("When was the Kroc Institute for International Peace Studies founded?", [hit(TEXT)],
                               Settings(extractive_alone_share_latin=0)).text
    assert "1986" in answer and ("programmes" in answer or "fellows" in answer)


def test_a_best_sentence_with_a_close_runner_up_keeps_its_company():
    answer = extractive_answer("What do the Kroc Institute programmes and fellows do?", [hit(TEXT)], Settings()).text
    assert "programmes" in answer and "fellows" in answer


def test_the_next_link_of_a_chain_is_quoted_before_other_documents_runners_up(monkeypatch):
    ship = hit("The SS Calder Rose was a cargo steamer built by the Marlowe & Finch shipyard in 1912.", 0, "ship")
    sister = hit("The SS Calder Lily was built by another shipyard, which stood on the river Tay.", 1, "lily")
    yard = Hit(Passage("The yard stood in the town of Oss Bridge, on the River Oss.", 1, 0, 0, 60, 0,
                       doc_id="yard", version=1), "Marlowe & Finch", "yard.txt", "txt", 0.8)
    question = "On which river stood the shipyard that built the SS Calder Rose?"
    settings = Settings(extractive_chars_latin=180, extractive_chain_chars_latin=180)  # one budget for every quote
    answer = extractive_answer(question, [ship, sister, yard], settings).text
    assert "River Oss" in answer and "Tay" not in answer
    monkeypatch.setattr(extractive, "LATIN_WEIGHTS", dataclasses.replace(extractive.LATIN_WEIGHTS, links_first=False))
    answer = extractive_answer(question, [ship, sister, yard], settings).text
    assert "Tay" in answer and "River Oss" not in answer

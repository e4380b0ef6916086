"""The offline answerer (English) reads each sentence under its heading: a question word of its
document's title or section counts as said by every sentence under them, so the sentence that
says what was asked beats the one that only names the subject; a further sentence that says no
question word but its heading's is padding, not quoted unless a quote links it; a line that is
only the document's title is never quoted. Chinese answers keep matching the sentence's own words.
A chain's last hop is answered at the chain's budget. Pure functions, no model."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from ragkit.answering import extractive
from ragkit.answering.extractive import extractive_answer, is_title_line
from ragkit.config import Settings
from ragkit.graph.agentic.answer import last_hop_fact
from ragkit.types import Hit, Passage

ORION = [("The Orion Bridge was completed in 2011 by chief engineer Hana Kowalczyk. "
          "It spans the Vell River near St. Albans."),
         "Inspections follow protocol OBP-77 every 18 months. The last inspection was on 5 June 2025."]
HALCYON = ("Halcyon Station is a research base on Jan Mayen. Its director is Dr. Ingrid Solberg, who joined "
           "from St. Olaf College in 2019. The station was opened on 14 March 1998.")


def hits_of(texts, title, doc="d"):
    return [Hit(Passage(text, 1, n, 0, len(text), 0, doc_id=doc, version=1), title, f"{doc}.txt", "txt", 1.0 - n / 10)
            for n, text in enumerate(texts)]


def without(monkeypatch, **weights):
    monkeypatch.setattr(extractive, "LATIN_WEIGHTS", dataclasses.replace(extractive.LATIN_WEIGHTS, **weights))


def test_the_sentence_saying_what_was_asked_leads_though_another_names_the_subject(monkeypatch):
    question = "When was the Orion Bridge last inspected?"
    answer = extractive_answer(question, hits_of(ORION, "Orion Bridge Project"), Settings()).text
    assert "5 June 2025" in answer and "2011" not in answer
    without(monkeypatch, heading_words=False, asked_only=False)
    answer = extractive_answer(question, hits_of(ORION, "Orion Bridge Project"), Settings()).text
    assert answer.startswith("The Orion Bridge was completed in 2011"), "the subject's sentence led without headings"


def test_a_further_sentence_saying_only_its_subject_is_padding(monkeypatch):
    question = "Who is the director of Halcyon Station?"
    answer = extractive_answer(question, hits_of([HALCYON], "Halcyon Station Annual Review"), Settings()).text
    assert answer == "Its director is Dr. Ingrid Solberg, who joined from St. Olaf College in 2019.[1]"
    without(monkeypatch, asked_only=False)
    answer = extractive_answer(question, hits_of([HALCYON], "Halcyon Station Annual Review"), Settings()).text
    assert "research base" in answer and "Ingrid Solberg" in answer


def test_a_line_that_is_only_the_documents_title_is_never_quoted():
    assert is_title_line("Rupert Ansel", "Rupert Ansel")
    assert is_title_line("Aurora annual report 2026.", "aurora annual report 2026")
    assert not is_title_line("Rupert Ansel was a cartographer.", "Rupert Ansel")
    text = "Rupert Ansel\nRupert Ansel (1848-1911) worked as a cartographer for the national survey office."
    answer = extractive_answer("What did Rupert Ansel work as?", hits_of([text], "Rupert Ansel"), Settings()).text
    assert answer == "Rupert Ansel (1848-1911) worked as a cartographer for the national survey office.[1]"


def test_a_chinese_answer_matches_the_sentences_own_words_not_its_heading():
    text = ("青岚茶园位于福建省武夷山市，创建于1986年，创始人是林文华。茶园面积约为320亩。"
            "茶园的主打产品是大红袍，年产量约为12吨。")
    answer = extractive_answer("青岚茶园有多大？", hits_of([text], "青岚茶园简介"), Settings()).text
    assert answer.startswith("青岚茶园位于福建省武夷山市，创建于1986年，创始人是林文华。茶园面积约为320亩。")


def test_the_last_hop_of_a_chain_is_answered_at_the_chains_budget():
    text = ("Rupert Ansel was born in a mill town in 1848. He worked as a cartographer for the national survey office. "
            "His maps of the southern hills are still in use.")
    settings = Settings(extractive_chars_latin=60, extractive_chain_chars_latin=340)
    context = SimpleNamespace(settings=settings, passages=SimpleNamespace(embed_sentences=None, idf=lambda q: {}))
    question = "What was the profession of the husband of the painter of Evening at Stoke Vellum?"
    fact = last_hop_fact(context, question, hits_of([text], "Rupert Ansel")[0], 3)
    assert "cartographer" in fact and fact.endswith("[3]") and len(fact) > 60


def test_a_sentence_saying_no_question_word_is_padding_beside_one_saying_only_the_subject():
    led = "The observatory is led by Dr. Amelia Hart, who came from the U.S. Naval Observatory in 2015."
    telescope = "The main telescope has a mirror of 2.4 metres and was first used on 9 May 2003."
    hits = hits_of([led, telescope], "Marlow Observatory Report")
    answer = extractive_answer("Who leads the Marlow Observatory?", hits, Settings(extractive_alone_share_latin=0)).text
    assert answer == led + "[1]"


def test_the_same_file_in_two_knowledge_bases_is_quoted_once():
    depot = "The depot is run by Mr. Paolo Ricci since 1 Sept. 2021."
    hits = [dataclasses.replace(hit, filename="vantor.docx")
            for hit in hits_of([depot], "Vantor Rail Manual", "one") + hits_of([depot], "Vantor Rail Manual", "two")]
    answer = extractive_answer("Who runs the depot?", hits, Settings()).text
    assert answer.count("Paolo Ricci") == 1


def test_another_document_saying_the_same_sentence_keeps_its_own_citation():
    founded = "The company was founded in 1990 by two engineers."
    hits = hits_of(["Brask Holdings builds ferries. " + founded], "Brask Holdings", "brask") + \
        hits_of(["Velto Systems makes sensors. " + founded], "Velto Systems", "velto")
    answer = extractive_answer("When was Velto Systems founded?", hits, Settings()).text
    assert "founded in 1990 by two engineers.[2]" in answer

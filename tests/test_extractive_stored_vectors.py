"""The offline answerer (English) also reads the sentence vectors the store keeps (pooled at
ingest from the pass that embeds each passage, so a sentence is read in its passage) for the
sentences of the top passage's document, mixed with the sentence embedded alone
(``Settings.extractive_pooled_share_latin``); other documents' sentences keep their own
similarity, and rows that no longer match a passage's sentences are ignored. Pure functions:
vectors are made up, no model."""

from __future__ import annotations

import numpy as np

from ragkit.answering.extractive import extractive_answer
from ragkit.config import Settings
from ragkit.types import Hit, Passage

BAND = ("The band is the oldest university band in continuous existence in the United States. "
        "It began its life on the campus in the year 1846. "
        "It plays the fight song at every home game.")
OTHER = "The glee club was formed in 1915 and sings at every home game."
QUESTION = "When did the marching band form?"


def hit(text, doc="band", n=0):
    return Hit(Passage(text, 1, n, 0, len(text), 0, doc_id=doc, version=1), doc.title(), f"{doc}.txt", "txt",
               1.0 - n / 10)


def unit(*values):
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def embed(texts):
    """The question along one axis, every sentence alone along another: alone, no sentence means it."""
    return np.vstack([unit(1, 0, 0) if text == QUESTION else unit(0, 1, 0) for text in texts])


def answer(stored, share=0.75, hits=None):
    hits = hits or [hit(BAND)]
    settings = Settings(extractive_chars_latin=60, extractive_pooled_share_latin=share)
    return extractive_answer(QUESTION, hits, settings, embed, {},
                             sentence_vectors=lambda ids: {i: stored[i] for i in ids if i in stored}).text


def test_the_stored_vector_of_a_sentence_of_the_top_document_decides_which_one_answers():
    band = hit(BAND)
    rows = np.vstack([unit(0, 1, 0), unit(1, 0.1, 0), unit(0, 0, 1)])  # in its passage, the second means the question
    assert "1846" in answer({band.id: rows}, hits=[band])
    third = np.vstack([unit(0, 1, 0), unit(0, 0, 1), unit(1, 0.1, 0)])  # now the third means the question
    assert "fight song" in answer({band.id: third}, hits=[band]) and "1846" not in answer({band.id: third}, hits=[band])


def test_rows_that_do_not_match_the_passages_sentences_are_ignored():
    band = hit(BAND)
    assert answer({band.id: np.vstack([unit(1, 0, 0)])}, hits=[band]) == answer({}, hits=[band])


def test_other_documents_sentences_keep_their_own_similarity():
    band, club = hit(BAND), hit(OTHER, "club", 1)
    stored = {club.id: np.vstack([unit(1, 0, 0)])}  # would make the glee club's sentence the answer
    assert answer(stored, hits=[band, club]) == answer({}, hits=[band, club])

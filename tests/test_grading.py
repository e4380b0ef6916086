"""The offline evidence grade: answer-type cues before word coverage and similarity."""

import numpy as np
import pytest

from ragkit.config import Settings
from ragkit.graph.grading import grade_offline, holds_number, wants_number
from ragkit.passages import Hit, Passage

SETTINGS = Settings(_env_file=None)


def hit(text: str) -> Hit:
    return Hit(Passage(text, 1, 0, len(text), 1, 1, "d", 1), "Bakery handbook", "bakery.md", "md", 1.0)


@pytest.mark.parametrize("question, wanted", [
    ("When was the bakery founded?", True),
    ("How many loaves are baked each day?", True),
    ("In what year did the bakery open?", True),
    ("面包店是哪一年开业的？", True),
    ("每天烤多少个面包？", True),
    ("Who founded the bakery?", False),
    ("面包店由谁创办？", False),
])
def test_dates_and_counts_are_wanted_by_when_and_how_many_questions(question, wanted):
    assert wants_number(question) is wanted


def test_numbers_are_found_as_digits_chinese_numerals_and_english_words():
    assert holds_number("opened in 1921") and holds_number("每天两次") and holds_number("twice, at five")
    assert not holds_number("The starter is fed with rye flour and water.")


def test_a_when_question_over_passages_without_any_date_is_not_answerable_from_them():
    no_dates = [hit("The Crumb bakery was founded by Ada Lind. The starter is fed with rye flour.")]
    idf = {"crumb": 3.0, "bakeri": 2.0, "found": 1.0}
    when = grade_offline("When was the Crumb bakery founded?", no_dates, idf, None, SETTINGS)
    assert not when.sufficient and "date or number" in when.reason
    who = grade_offline("Who founded the Crumb bakery?", no_dates, idf, None, SETTINGS)
    assert who.sufficient  # the same passage answers a question that wants a name


def similar_by(similarity: float):
    """An embedding function (a unit test's edge) under which every sentence has this
    similarity to the question."""
    def embed(texts):
        vectors = np.tile([similarity, (1 - similarity**2) ** 0.5], (len(texts), 1))
        vectors[0] = [1.0, 0.0]
        return vectors
    return embed


PASSAGE = [hit("Entry tickets cost twelve euros, and children under six enter free of charge.")]
IDF = {"price": 3.0, "admiss": 3.0, "ticket": 3.0, "cost": 2.0}


def test_words_and_meaning_are_each_judged_against_their_own_threshold():
    paraphrase = grade_offline("What is the admission price?", PASSAGE, IDF, similar_by(0.70), SETTINGS)
    assert paraphrase.sufficient and paraphrase.threshold == SETTINGS.grade_similarity_threshold
    assert "similarity 0.70" in paraphrase.reason

    same_words = grade_offline("What do tickets cost?", PASSAGE, IDF, similar_by(0.30), SETTINGS)
    assert same_words.sufficient and same_words.threshold == SETTINGS.grade_threshold_latin
    assert "key words" in same_words.reason

    neither = grade_offline("What is the admission price?", PASSAGE, IDF, similar_by(0.40), SETTINGS)
    assert not neither.sufficient and neither.margin < 0


def test_the_measure_furthest_above_its_threshold_decides_not_the_larger_score():
    idf = {"ticket": 2.0, "cost": 0.8, "harbour": 1.2, "gate": 1.0}  # the passage holds 2.8 of 5.0: 0.56
    grade = grade_offline("What do tickets cost at the harbour gate?", PASSAGE, idf, similar_by(0.60), SETTINGS)
    assert SETTINGS.grade_threshold_latin <= grade.score == 0.56 < 0.60 < SETTINGS.grade_similarity_threshold
    assert grade.sufficient and "key words" in grade.reason

"""The offline evidence grade: answer-type cues before word coverage and similarity."""

import pytest

from ragkit.graph.grading import grade_offline, holds_number, wants_number
from ragkit.passages import Hit, Passage


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
    when = grade_offline("When was the Crumb bakery founded?", no_dates, idf, None, 0.46, 0.59)
    assert not when.sufficient and "date or number" in when.reason
    who = grade_offline("Who founded the Crumb bakery?", no_dates, idf, None, 0.46, 0.59)
    assert who.sufficient  # the same passage answers a question that wants a name

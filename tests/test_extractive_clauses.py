"""An English sentence too long for the offline answer's room is cut at its clause borders, to
the clause that holds the question's words or the kind of thing asked and the neighbours that
fit, never in the middle of a name or a number. Pure functions, no model."""

from __future__ import annotations

from ragkit.answering.extractive import _lexical_scorer, extractive_answer
from ragkit.config import Settings
from ragkit.lang.clauses import ELLIPSIS, clause_window, split_clauses
from ragkit.lang.kinds import answer_type, typed_spans
from ragkit.lang.text import search_tokens
from ragkit.types import Hit, Passage

SHEA = ("The Rev. Michael J. Shea, a 1904 graduate, wrote the music, and his brother, John F. Shea, "
        "who earned degrees in 1906 and 1908, wrote the original lyrics.")
COLLEGE = ("Today the college, housed in the newly built Jordan Hall of Science, includes over 1,200 "
           "undergraduates in six departments of study – biology, chemistry, mathematics, physics, "
           "pre-professional studies, and applied and computational mathematics and statistics – and each "
           "year more than 1,000 students graduate.")


def window(text, question, room):
    score = _lexical_scorer(search_tokens(question), {})
    return clause_window(text, room, score, typed_spans(text, answer_type(question), question))


def test_clauses_end_at_commas_dashes_and_before_joining_words_and_together_are_the_sentence():
    clauses = split_clauses(SHEA)
    assert [c.text for c in clauses][:3] == ["The Rev. Michael J. Shea,", "a 1904 graduate,", "wrote the music,"]
    assert any(c.text.startswith("and ") for c in clauses) and any(c.text.startswith("who ") for c in clauses)
    assert " ".join(c.text for c in clauses) == SHEA
    assert all(SHEA[c.start : c.end] == c.text for c in clauses)


def test_a_sentence_that_fits_is_quoted_whole():
    assert window(SHEA, "Who wrote the music?", len(SHEA)) == SHEA


def test_the_cut_keeps_the_clause_with_the_kind_asked_and_the_question_words_beside_it():
    cut = window(SHEA, "Who wrote the music for the Victory March?", 60)
    assert len(cut) <= 60 and "Michael J. Shea" in cut and "wrote the music" in cut
    assert cut.endswith(ELLIPSIS) and not cut.startswith(ELLIPSIS)  # cut after, not before
    cut = window(COLLEGE, "How many undergraduates does the College of Science have?", 80)
    assert len(cut) <= 80 and "over 1,200 undergraduates" in cut
    assert cut.startswith(ELLIPSIS) and cut.endswith(ELLIPSIS)


def test_more_room_adds_neighbouring_clauses_never_a_piece_of_one():
    question = "Who wrote the music for the Victory March?"
    shorter, longer = window(SHEA, question, 60), window(SHEA, question, 100)
    assert longer.rstrip(ELLIPSIS).startswith(shorter.rstrip(ELLIPSIS)) and len(longer) > len(shorter)
    inner = longer.strip(ELLIPSIS)
    assert any(inner.endswith(c.text) for c in split_clauses(SHEA))


def test_no_clause_fitting_the_room_leaves_the_cut_to_the_fixed_window():
    assert window(SHEA, "Who wrote the music?", 20) is None
    hits = [Hit(Passage(SHEA, 1, 0, 0, len(SHEA), 0, doc_id="d", version=1), "Fight song", "f.txt", "txt", 1.0)]
    answer = extractive_answer("Who wrote the music?", hits,
                               Settings(extractive_chars_latin=40, extractive_clause_cuts_latin=True))
    assert answer.found and len(answer.text) <= 40 + len("[1]")


def test_english_answers_are_cut_at_clauses_when_asked_and_hold_the_answer_in_a_small_budget():
    hits = [Hit(Passage(COLLEGE, 1, 0, 0, len(COLLEGE), 0, doc_id="d", version=1), "Science", "s.txt", "txt", 1.0)]
    answer = extractive_answer("How many undergraduates does the College of Science have?", hits,
                               Settings(extractive_chars_latin=120, extractive_clause_cuts_latin=True))
    assert "over 1,200 undergraduates" in answer.text and len(answer.text) <= 120 + len("[1]")
    quote = answer.text.removesuffix("[1]").strip(ELLIPSIS)
    assert any(quote.endswith(c.text) for c in split_clauses(COLLEGE))

"""The offline answerer's rules for which sentences state the fact: a sentence that points back
at the one before shares its question words, an English question word counts more when few
retrieved sentences hold it, and a further Chinese sentence is quoted only when it adds a
question word (or the kind asked) the quoted ones lack. Pure functions, no model."""

from __future__ import annotations

from ragkit.config import Settings
from ragkit.extractive import (
    Candidate,
    _lexical_scorer,
    _lexical_scores,
    adds_to,
    extractive_answer,
    refers_back,
)
from ragkit.passages import Hit, Passage
from ragkit.text import search_tokens


def hit(text, n=0, doc="d"):
    return Hit(Passage(text, 1, n, 0, len(text), 0, doc_id=doc, version=1), "Title", "file.txt", "txt", 1.0 - n / 10)


def test_a_sentence_opening_with_a_pronoun_or_demonstrative_refers_back():
    for text in ("It was founded in 1986.", "His book Evolution and Dogma appeared in 1896.",
                 "This mural is popularly known as Touchdown Jesus.", "该园始建于一九八五年。", "其叶螺旋状排列。"):
        assert refers_back(text), text
    for text in ("Italy lies south of the Alps.", "The First Year program began in 1962.", "茶园位于杭州。",
                 "Thistle grows on the ridge."):
        assert not refers_back(text), text


def test_a_sentence_that_refers_back_shares_the_question_words_of_the_one_before():
    naming = Candidate("The Kroc Institute studies the causes of violence.", 0, 0)
    founded = Candidate("It was founded in 1986 by Joan Kroc.", 0, 1)
    elsewhere = Candidate("It was founded in 1990 by the city.", 1, 0)  # first of its passage: nothing before
    score = _lexical_scorer(search_tokens("When was the Kroc Institute founded?"), {})
    _lexical_scores([naming, founded, elsewhere], score, carry=0.5)
    alone = score(founded.text)
    assert founded.lexical == alone + 0.5 * (score(naming.text + " " + founded.text) - alone)
    assert founded.lexical > naming.lexical and founded.lexical > elsewhere.lexical == score(elsewhere.text)
    _lexical_scores([naming, founded], score, carry=0.0)
    assert founded.lexical == alone


def test_a_question_word_few_candidates_hold_weighs_more_than_the_shared_subject():
    candidates = [Candidate("Lobund began germ-free research at Notre Dame.", 0, 0),
                  Candidate("Lobund moved to a new building at Notre Dame.", 0, 1),
                  Candidate("In 1958 Lobund was merged into the Department of Biology.", 0, 2)]
    question = search_tokens("When was Lobund merged into Biology at Notre Dame?")
    flat = _lexical_scorer(question, {})
    local = _lexical_scorer(question, {}, candidates)
    assert local(candidates[2].text) - local(candidates[0].text) > flat(candidates[2].text) - flat(candidates[0].text)


def test_a_further_sentence_must_add_a_missing_question_word_or_the_missing_kind():
    question = set(search_tokens("茶园门票多少钱，几点开门？"))
    first = Candidate("茶园门票六十元。", 0, 0)
    chosen = [(first, first.text)]
    assert not adds_to(chosen, Candidate("茶园门票学生半价。", 0, 1), question)
    assert adds_to(chosen, Candidate("茶园早上八点开门。", 0, 2), question)
    typed = Candidate("票价在2019年调整。", 0, 3, answer_spans=["2019年"])
    assert adds_to(chosen, typed, question)  # the first holds no span of the kind asked
    first.answer_spans = ["六十元"]
    assert not adds_to(chosen, typed, question)  # it does now: a second one adds nothing


def test_a_chinese_answer_leaves_out_a_sentence_that_only_repeats_the_subject():
    hits = [hit("青岚茶园位于福建省武夷山市。茶园主要出产大红袍。"),
            hit("青岚茶园是一座茶园，青岚茶园很有名。青岚茶园欢迎游客。", 1, "e")]
    answer = extractive_answer("青岚茶园位于哪里？", hits, Settings())
    assert "福建省武夷山市" in answer.text and answer.text.startswith("青岚茶园位于")
    assert "很有名" not in answer.text and "欢迎游客" not in answer.text
    assert not answer.sources[1].cited

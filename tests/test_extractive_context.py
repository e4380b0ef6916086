"""The offline answerer (Chinese) quotes the context a best sentence leans on: the sentence
before one that opens with a connective ("因此…": its cause), the rest of a clause cut at a
semicolon, and the two sentences after a short one that only restates the question (it
announces the answer). Pure functions, no model."""

from __future__ import annotations

import dataclasses

from ragkit.answering import extractive
from ragkit.answering.extractive import CJK_WEIGHTS, Candidate, announces, connects_back, extractive_answer
from ragkit.config import Settings
from ragkit.types import Hit, Passage


def hit(text, n=0, doc="d"):
    return Hit(Passage(text, 1, n, 0, len(text), 0, doc_id=doc, version=1), "Title", "file.txt", "txt", 1.0 - n / 10)


def test_a_sentence_opening_with_a_connective_connects_back():
    for text in ("因此它有时也被称为笨蛋水果。", "所以到了七、八月间，草原一片碧绿。", "赛后，他正式结束运动生涯。",
                 "但成公英反对。", "此后蒋氏夫妇曾多次到此避暑。"):
        assert connects_back(text), text
    for text in ("猴面包树的叶子可以吃。", "1948年8月，蒋中正题刻“美庐”二字。", "他在桐垣县长大。",
                 "但丁是意大利中世纪诗人。", "但凡下雨，渡轮便停航。"):
        assert not connects_back(text), text


def test_a_best_sentence_opening_with_therefore_is_quoted_with_its_cause(monkeypatch):
    hits = [hit("猴面包树是锦葵科的大型乔木。它的果实钙含量比菠菜高，维生素C含量是橙子的三倍。"
                "因此它有时也被称为笨蛋水果。它的树干可以储水。")]
    answer = extractive_answer("为什么称猴面包树为笨蛋水果？", hits, Settings())
    assert "维生素C含量是橙子的三倍。因此它有时也被称为笨蛋水果。" in answer.text
    plain = dataclasses.replace(CJK_WEIGHTS, previous_when_connected=False)
    monkeypatch.setattr(extractive, "CJK_WEIGHTS", plain)
    assert "三倍" not in extractive_answer("为什么称猴面包树为笨蛋水果？", hits, Settings()).text


def test_a_quote_ending_at_a_semicolon_is_quoted_with_the_rest_of_its_clause(monkeypatch):
    hits = [hit("短叶水蜈蚣是莎草科水蜈蚣属的植物，别名无头香。多年生草本，根状茎匍匐。"
                "中医上以全草入药，主治感冒发热、疟疾、痢疾、蛇虫咬伤等症；近用于乳糜尿。")]
    question = "短叶水蜈蚣主治哪些问题？"
    assert "等症；近用于乳糜尿。" in extractive_answer(question, hits, Settings()).text
    monkeypatch.setattr(extractive, "CJK_WEIGHTS", dataclasses.replace(CJK_WEIGHTS, continue_clauses=False))
    cut = extractive_answer(question, hits, Settings()).text
    assert "等症；" in cut and "乳糜尿" not in cut


def test_a_short_sentence_saying_every_question_word_announces_the_two_after_it():
    restating = Candidate("印度野驴与非洲野驴有些分别。", 0, 1, lexical=1.0)
    assert announces(restating, CJK_WEIGHTS)
    assert not announces(Candidate(restating.text, 0, 1, lexical=0.8), CJK_WEIGHTS)  # it misses a question word
    long = Candidate("印度野驴与非洲野驴有些分别" * 4 + "。", 0, 1, lexical=1.0)
    assert not announces(long, CJK_WEIGHTS)  # long enough to say more than the question
    hits = [hit("印度野驴是马科马属的动物。印度野驴与非洲野驴有些分别。牠们的毛多呈沙色，也有赤灰色。"
                "牠们背上有一道深褐色的斑纹。牠们栖息在干旱的草原。")]
    answer = extractive_answer("印度野驴与非洲野驴的分别是什么？", hits, Settings())
    assert "有些分别。牠们的毛多呈沙色，也有赤灰色。牠们背上有一道深褐色的斑纹。" in answer.text


def test_a_best_sentence_ending_at_a_semicolon_quotes_the_rest_of_its_clause_once():
    # continue_clauses brings the next sentence, which the best one brings anyway (add_next_sentence)
    hits = [hit("水蜈蚣是一种植物。短叶水蜈蚣主治感冒发热、疟疾、痢疾、蛇虫咬伤等症；近用于乳糜尿。它生长在水边。")]
    answer = extractive_answer("短叶水蜈蚣主治哪些问题？", hits, Settings())
    assert answer.text.count("近用于乳糜尿") == 1, answer.text

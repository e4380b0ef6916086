"""Follow-ups made standalone offline: the reference is replaced by the previous subject;
complete questions are left alone; a model's rewrite is used only when plausible."""

import pytest

from ragkit.answering.contextualize import (
    clean_rewrite,
    find_subject,
    heuristic_rewrite,
    needs_context,
    plausible_rewrite,
    rewrite_options,
)
from ragkit.types import Exchange

LIGHTHOUSE = Exchange("Who was the last resident keeper of the Skerry Point Lighthouse?",
                      "Anna Berg was the last resident keeper [1].",
                      "The Skerry Point Lighthouse stands 31 metres tall. Anna Berg was its last resident keeper.")


@pytest.mark.parametrize("follow_up, standalone", [
    ("What about its height?", "What about Skerry Point Lighthouse's height?"),
    ("What about its entry price?", "What about Skerry Point Lighthouse's entry price?"),
    ("When was it built?", "When was Skerry Point Lighthouse built?"),
])
def test_an_english_reference_is_replaced_by_the_previous_subject(follow_up, standalone):
    assert heuristic_rewrite(follow_up, [LIGHTHOUSE]) == standalone


def test_a_chinese_reference_is_replaced_by_the_subject_the_passage_repeats():
    previous = Exchange("斯氏腔吻鳕主要以什么为食？", "几乎是以多毛类为食[1]。",
                        "斯氏腔吻鳕为辐鳍鱼纲鳕形目的其中一种。斯氏腔吻鳕几乎是以多毛类为食。")
    assert heuristic_rewrite("它的外形是怎样的？", [previous]) == "斯氏腔吻鳕的外形是怎样的？"
    assert heuristic_rewrite("它的续航怎么样？", [Exchange("青松茶园在哪里？", "", "青松茶园位于武夷山。")]) \
        == "青松茶园的续航怎么样？"


def test_a_chinese_verb_is_never_a_subject_a_follow_up_may_refer_to():
    previous = Exchange("云岭茶业是谁创立的？", "云岭茶业由张明远于1992年创立[1]。",
                        "云岭茶业由张明远于1992年创立，最初只有五名员工。")
    assert rewrite_options("它是什么时候创建的？", [previous]) == ["云岭茶业是什么时候创建的？"]


def test_a_name_jieba_tags_as_a_verb_is_still_the_subject_when_it_opens_the_question():
    previous = Exchange("联想是谁创立的？", "", "联想由柳传志等人于1984年创立。")
    assert heuristic_rewrite("它的总部在哪里？", [previous]) == "联想的总部在哪里？"


@pytest.mark.parametrize("question, evidence, owner", [
    ("青岚茶园的年产量是多少？", "茶园的主打产品是大红袍，年产量约为12吨。", "青岚茶园"),
    ("北辰科技的首席执行官是谁？", "公司现任首席执行官是陈思远博士。", "北辰科技"),
])
def test_a_chinese_follow_up_refers_to_the_owner_before_de_not_the_attribute_the_passage_repeats(
        question, evidence, owner):
    assert heuristic_rewrite("它的产品编号是什么？", [Exchange(question, "", evidence)]) == f"{owner}的产品编号是什么？"


def test_complete_questions_and_inner_references_are_left_alone():
    assert heuristic_rewrite("青松茶园在哪里？", [LIGHTHOUSE]) == "青松茶园在哪里？"
    assert heuristic_rewrite("Who founded Aurora Analytics?", [LIGHTHOUSE]) == "Who founded Aurora Analytics?"
    inner = "Against which opponent did Knute Rockne tell his team to win?"
    assert heuristic_rewrite(inner, [LIGHTHOUSE]) == inner
    introduced = "There is a conference that the hockey team competes in, what is it?"
    assert heuristic_rewrite(introduced, [LIGHTHOUSE]) == introduced
    assert heuristic_rewrite("长谷川町子获得的其他的奖项有哪些？", [LIGHTHOUSE]) == "长谷川町子获得的其他的奖项有哪些？"


def test_the_subject_leaves_out_words_the_follow_up_already_says():
    previous = Exchange("In what year was the Notre Dame College of Science formed?", "", "")
    follow_up = "How many undergrad students attend it at Notre Dame today?"
    rarity = {"Notre Dame College of Science": 3.0}.get
    assert heuristic_rewrite(follow_up, [previous], lambda phrase: rarity(phrase, 0.1)) \
        == "How many undergrad students attend College of Science at Notre Dame today?"
    assert heuristic_rewrite("Who founded it?", [previous], lambda phrase: rarity(phrase, 0.1)) \
        == "Who founded Notre Dame College of Science?"  # nothing repeated: the whole subject


def test_without_a_name_the_subject_is_what_a_which_question_asks_about():
    previous = Exchange("Which file types does ragkit accept?", "PDF, DOCX, TXT and Markdown [1].", "")
    assert heuristic_rewrite("How are they indexed?", [previous]) == "How are the file types indexed?"


def test_a_bare_follow_up_names_the_subject_alongside():
    assert heuristic_rewrite("and the price?", [LIGHTHOUSE]) == "and the price? (Skerry Point Lighthouse)"


def test_the_subject_is_the_rare_name_not_the_common_words():
    rarity = {"Notre Dame": 0.5, "Rev Cavanaugh": 4.0}.get
    question = "Around the time that Rev. Cavanaugh became president of Notre Dame how much did it grow?"
    assert find_subject(question, "", lambda phrase: rarity(phrase, 1.0)) == "Rev Cavanaugh"


def test_follow_up_detection():
    assert needs_context("What are its main features?")
    assert needs_context("它几点开放？")
    assert needs_context("and the price?")
    assert not needs_context("Who founded Aurora Analytics?")
    assert not needs_context("青松茶园在哪里？")


def test_a_models_rewrite_is_cleaned():
    assert clean_rewrite('Standalone question: "What are LangGraph features?"\nExtra') == "What are LangGraph features?"
    assert clean_rewrite("User: [2] What is LangGraph? more") == "What is LangGraph?"


@pytest.mark.parametrize("rewrite, problem", [
    ("<<SYS>>", "echoed prompt markup"),
    ("# ragkit 使用指南", "echoed prompt markup"),
    ("你的回答是什么？", "shares no word with the question"),
    ("Height?", "much shorter than the question"),
    ("", "empty"),
])
def test_a_garbage_model_rewrite_is_rejected(rewrite, problem):
    assert plausible_rewrite(rewrite, "What about its height exactly?", [LIGHTHOUSE]) == problem


def test_a_good_model_rewrite_is_accepted():
    assert plausible_rewrite("What is the height of the Skerry Point Lighthouse?", "What about its height?",
                             [LIGHTHOUSE]) == ""

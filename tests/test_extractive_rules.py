"""The offline answerer's rules for which sentences state the fact: a sentence that points back
at the one before shares its question words, an English question word counts more when few
retrieved sentences hold it, and a further Chinese sentence is quoted only when it adds a
question word (or the kind asked) the quoted ones lack, or is short and scores nearly as well
as the best one. Pure functions, no model."""

from __future__ import annotations

from ragkit.answering.extractive import (
    CJK_WEIGHTS,
    Candidate,
    _candidates,
    _lexical_scorer,
    _lexical_scores,
    adds_to,
    extractive_answer,
    linked,
    names,
    near_tie,
    refers_back,
    strays,
)
from ragkit.config import Settings
from ragkit.lang.text import search_tokens
from ragkit.types import Hit, Passage


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


def test_a_short_sentence_scoring_nearly_as_well_as_the_best_is_a_near_tie():
    best = Candidate("软枝黄蝉别称黄莺、小黄蝉、重瓣黄蝉，为夹竹桃科黄蝉属植物，原生于巴西。", 0, 0, score=1.0)
    short = "黄蝉别称为硬枝黄蝉、小花黄蝉及黄兰蝉。"
    assert near_tie(best, Candidate(short, 1, 0, score=CJK_WEIGHTS.close_share), CJK_WEIGHTS)
    assert not near_tie(best, Candidate(short, 1, 0, score=CJK_WEIGHTS.close_share - 0.05), CJK_WEIGHTS)
    long = short * (CJK_WEIGHTS.close_chars // len(short) + 1)  # as close, but too long to quote for a tie
    assert not near_tie(best, Candidate(long, 1, 0, score=best.score), CJK_WEIGHTS)


def test_a_sentence_of_another_document_scoring_far_below_the_best_strays():
    best = Candidate("黄蝉别称为硬枝黄蝉、小花黄蝉及黄兰蝉。", 0, 0, document="d", score=1.0)
    chosen = [(best, best.text)]
    share = CJK_WEIGHTS.other_document_share
    coincidence = Candidate("他的编号是007，而系列的俗称叫铁金刚。", 1, 1, document="e", score=share - 0.1)
    assert strays(chosen, coincidence, CJK_WEIGHTS)
    assert not strays(chosen, Candidate(coincidence.text, 1, 1, document="e", score=share), CJK_WEIGHTS)
    assert not strays(chosen, Candidate("为夹竹桃科黄蝉属植物。", 0, 1, document="d", score=0.1), CJK_WEIGHTS)
    # the next link of a chain is another document's by nature: never a stray
    made_by = Candidate("它由槐岗酒厂酿造。", 0, 1, subject="枫露春", document="a", score=1.0)
    founded = Candidate("酒厂由闵守诚于1910年创办。", 1, 1, subject="槐岗酒厂", document="b", score=0.1)
    assert not strays([(made_by, made_by.text)], founded, CJK_WEIGHTS)


def test_a_chinese_answer_quotes_a_near_tie_though_it_repeats_the_question_words():
    hits = [hit("软枝黄蝉别称黄莺、小黄蝉、重瓣黄蝉、泻黄蝉、软枝花蝉，为夹竹桃科黄蝉属植物，"
                "原生于巴西，现广植于热带地区。花期为3-8月，果期10-12月。"),
            hit("黄蝉别称为硬枝黄蝉、小花黄蝉及黄兰蝉。为夹竹桃科黄蝉属植物。", 1, "e")]
    answer = extractive_answer("黄蝉的别称叫什么？", hits, Settings())
    assert answer.text.startswith("软枝黄蝉别称") and "硬枝黄蝉、小花黄蝉及黄兰蝉" in answer.text
    assert answer.sources[1].cited


def test_a_chinese_answer_leaves_out_a_sentence_that_only_repeats_the_subject():
    hits = [hit("青岚茶园位于福建省武夷山市。茶园主要出产大红袍。"),
            hit("青岚茶园是一座茶园，青岚茶园很有名。青岚茶园欢迎游客。", 1, "e")]
    answer = extractive_answer("青岚茶园位于哪里？", hits, Settings())
    assert "福建省武夷山市" in answer.text and answer.text.startswith("青岚茶园位于")
    assert "很有名" not in answer.text and "欢迎游客" not in answer.text
    assert not answer.sources[1].cited


def titled(text, title, n=0):
    """A passage of the document titled ``title`` (its own document), ranked ``n``-th."""
    return Hit(Passage(text, 1, n, 0, len(text), 0, doc_id=title, version=1), title, f"{title}.txt", "txt",
               1.0 - n / 10)


def test_a_sentence_of_the_document_a_sentence_names_is_linked_with_it():
    made_by = Candidate("它由槐岗酒厂酿造。", 0, 1, subject="枫露春")
    founded = Candidate("酒厂由闵守诚于1910年创办。", 1, 1, subject="槐岗酒厂")
    other_brewery = Candidate("槐冈酿造厂是一家酱油厂，由郁长青于1950年创办。", 2, 1, subject="槐冈酿造厂")
    assert linked(made_by, founded) and linked(founded, made_by)  # either way round
    assert not linked(made_by, other_brewery)  # a like name is not the name
    assert not linked(founded, Candidate("槐岗酒厂至今保留传统工艺。", 1, 2, subject="槐岗酒厂"))  # same document
    # a title the question names is the question's own subject, no link
    assert not linked(Candidate("酒厂由闵守诚于1910年创办。", 1, 1), made_by)
    assert not linked(made_by, Candidate("槐岗酒厂", 1, 0, subject="槐岗酒厂"))  # the title line says nothing
    assert names("Agnes Tolland", "It was founded by Agnes Tolland in 1882.")
    assert not names("Fell", "Corin Fellowes grew up on Marra.")  # whole words only


def test_a_title_that_is_a_common_word_names_no_document():
    assert not names("About", "Visitors ask about its kilns.")  # a name keeps its case
    assert not names("About", "About 300 people came.")  # a sentence's first word is capitalised anyway
    assert names("Marra", "Corin grew up on Marra.")  # a one-word name inside the sentence
    assert not names("IT", "It was founded in 1882.") and not names("notes", "See the notes.")  # no name's shape
    assert names("iPhone", "苹果公司于2007年发布iPhone。")  # Chinese text beside a Latin title is its border


def test_a_document_the_question_names_is_the_questions_subject_not_a_link():
    hits = [titled("Drennick Pottery is a pottery workshop. It was founded in 1882 by Agnes Tolland.",
                   "Drennick Pottery"),
            titled("Agnes Tolland was a potter. She died in 1934.", "Agnes Tolland", 1)]
    candidates = _candidates(hits, "In what year did the founder of Drennick Pottery die?")
    assert {c.subject for c in candidates if c.source_index == 0} == {""}
    assert {c.subject for c in candidates if c.source_index == 1} == {"Agnes Tolland"}


def test_the_next_link_is_quoted_though_it_repeats_the_question_words_a_quote_already_says():
    question = set(search_tokens("酿造枫露春黄酒的酒厂是由谁创办的？"))
    other_brewery = Candidate("槐冈酿造厂是一家酱油厂，由郁长青于1950年创办。", 2, 1, subject="槐冈酿造厂")
    made_by = Candidate("它由槐岗酒厂酿造。", 0, 1, subject="枫露春")
    chosen = [(other_brewery, other_brewery.text), (made_by, made_by.text)]
    founded = Candidate("酒厂由闵守诚于1910年创办。", 1, 1, subject="槐岗酒厂")
    assert adds_to(chosen, founded, question)  # 酒厂 and 创办 are said, but of another brewery
    assert not adds_to(chosen, Candidate("酒厂由郁长青经营。", 2, 2, subject="槐冈酿造厂"), question)


def test_a_chinese_answer_follows_the_bridge_to_the_designers_birth_year():
    hits = [titled("静篁园是一座以竹林和水池为主景的私家园林。园林由建筑师严慕白于1948年设计，历时三年建成。",
                   "静篁园"),
            titled("严慕白是一位建筑师，1908年出生于一个木匠家庭。他一生设计了二十多座园林。", "严慕白", 1),
            titled("静竹园是一座城市公园，由园艺师冯晓川设计。冯晓川出生于1921年，曾主持园林绿化工程。", "静竹园", 2)]
    answer = extractive_answer("静篁园的设计者出生于哪一年？", hits, Settings())
    assert "严慕白于1948年设计" in answer.text and "1908年出生" in answer.text


def test_a_sentence_of_a_named_document_shares_the_question_words_of_the_sentence_naming_it():
    opening = Candidate("Drennick Pottery is a pottery workshop.", 0, 0, subject="")
    founded = Candidate("It was founded in 1882 by Agnes Tolland.", 0, 1, subject="")
    died = Candidate("She died in 1934.", 1, 2, subject="Agnes Tolland")
    other = Candidate("Samuel Orde died in 1912.", 2, 1, subject="Samuel Orde")
    score = _lexical_scorer(search_tokens("In what year did the founder of Drennick Pottery die?"), {})
    _lexical_scores([opening, founded, died, other], score, carry=0.5)
    alone = score(died.text)
    assert died.lexical == alone + 0.5 * (score(" ".join((opening.text, founded.text, died.text))) - alone)
    assert died.lexical > other.lexical == score(other.text)  # no sentence names Samuel Orde


def test_an_english_answer_follows_the_bridge_to_the_founders_death():
    hits = [titled("Drennick Pottery is a pottery workshop known for its jugs. It was founded in 1882 by Agnes "
                   "Tolland in a converted barn.", "Drennick Pottery"),
            titled("Brennick Pottery is a studio pottery founded in 1978 by Gordon Lyle. Lyle died in 2001.",
                   "Brennick Pottery", 1),
            titled("Drennick Glassworks was a glass factory founded in 1870 by Samuel Orde, who died in 1912.",
                   "Drennick Glassworks", 2),
            titled("Agnes Tolland was a potter and teacher, born in 1851. She taught at the village school. "
                   "She died in 1934 and was buried in the churchyard.", "Agnes Tolland", 3)]
    answer = extractive_answer("In what year did the founder of Drennick Pottery die?", hits, Settings())
    assert "Agnes Tolland" in answer.text and "died in 1934" in answer.text

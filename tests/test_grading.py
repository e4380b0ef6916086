"""The offline evidence grade: answer-type cues before word coverage and similarity."""

import numpy as np
import pytest

from ragkit.answering.grading import grade_offline, holds_number, wants_number
from ragkit.config import Settings
from ragkit.types import Hit, Passage

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
    assert paraphrase.sufficient and paraphrase.threshold == SETTINGS.grade_similarity_threshold_whole  # no topic
    assert "similarity 0.70" in paraphrase.reason

    same_words = grade_offline("What do tickets cost?", PASSAGE, IDF, similar_by(0.30), SETTINGS)
    assert same_words.sufficient and same_words.threshold == SETTINGS.grade_threshold_latin
    assert "key words" in same_words.reason

    neither = grade_offline("What is the admission price?", PASSAGE, IDF, similar_by(0.40), SETTINGS)
    assert not neither.sufficient and neither.margin < 0


def test_the_measure_furthest_above_its_threshold_decides_not_the_larger_score():
    idf = {"ticket": 2.0, "cost": 0.8, "harbour": 1.2, "gate": 1.0}  # the passage holds 2.8 of 5.0: 0.56
    below = SETTINGS.grade_similarity_threshold - 0.01  # a larger score than 0.56, yet under its threshold
    grade = grade_offline("What do tickets cost at the harbour gate?", PASSAGE, idf, similar_by(below), SETTINGS)
    assert SETTINGS.grade_threshold_latin <= grade.score == 0.56 < below < SETTINGS.grade_similarity_threshold
    assert grade.sufficient and "key words" in grade.reason


# ----- question words: what only asks is never a word the passage must say ----------------

TEA = "参观须知。茶园每天上午八点开放，下午五点关闭。门票价格为六十元，学生半价。"
TEA_VARIETIES = "青松茶园位于福建省武夷山市，始建于一九八五年。茶园主要出产大红袍和正山小种。"


@pytest.mark.parametrize("question, not_content", [
    ("门票多少钱？", {"钱", "多少钱"}),
    ("茶园几点开放？", {"点", "几点"}),
    ("茶园什么时候开放？", {"时候", "什么时候"}),
    ("茶园有没有停车场？", {"有没有", "没有"}),
    ("茶园在哪里？", {"哪里"}),
])
def test_chinese_interrogative_phrases_are_not_content_words(question, not_content):
    from ragkit.lang.text import question_words

    words = question_words(question)
    assert words and not set(words) & not_content


def idf_of(rarity: dict[str, float]) -> dict[str, float]:
    """Search-token idf from word rarities (a word the knowledge base lacks is the rarest)."""
    from ragkit.lang.text import search_tokens

    return {token: weight for word, weight in rarity.items() for token in search_tokens(word)}


@pytest.mark.parametrize("question, passage", [
    ("门票多少钱？", TEA),  # 钱 was a word the passage had to say
    ("茶园几点开放？", TEA),
    ("茶园的主要茶叶品种是什么？", TEA_VARIETIES),  # 品种 names what is asked: the passage names the varieties
])
def test_a_chinese_passage_that_says_what_is_asked_is_enough(question, passage):
    # words the knowledge base lacks ("钱", "品种") are the rarest: they decided the old grade
    idf = idf_of({"钱": 4.0, "点": 3.0, "品种": 4.0, "茶叶": 2.0, "茶园": 1.0, "门票": 2.0, "开放": 2.0, "主要": 1.0})
    grade = grade_offline(question, [hit(passage)], idf, None, SETTINGS)
    assert grade.sufficient, grade.reason


@pytest.mark.parametrize("question", ["茶园有没有停车场？", "博物馆门票多少钱？"])
def test_a_chinese_question_about_something_the_passage_never_names_is_still_not_found(question):
    idf = idf_of({"停车场": 4.0, "博物馆": 4.0, "茶园": 1.0, "门票": 2.0})
    grade = grade_offline(question, [hit(TEA)], idf, None, SETTINGS)
    assert not grade.sufficient, grade.reason


def test_how_much_and_cost_are_not_words_a_price_row_must_say():
    from ragkit.answering.grading import unsaid

    row = [hit("Dish | Price\nNebula noodles | 14 credits\nComet curry | 17 credits")]
    idf = {"nebula": 3.0, "noodl": 3.0, "much": 4.0, "cost": 2.0}
    grade = grade_offline("How much do the nebula noodles cost?", row, idf, None, SETTINGS)
    assert grade.sufficient and grade.score == 1.0, grade.reason
    assert unsaid("How much do the nebula noodles cost?", row[0].text) == []
    other = grade_offline("How much does the moon pie cost?", row, {"moon": 3.0, "pie": 3.0}, None, SETTINGS)
    assert not other.sufficient


def test_a_number_under_the_subjects_heading_is_said_about_the_subject():
    entry = Passage("# Skerry Point\n\nThe lighthouse stands 31 metres tall. Entry costs 5 euros for adults.",
                    1, 0, 0, 80, 20, "d", 1, section="Skerry Point")
    hits = [Hit(entry, "Skerry Point", "skerry.md", "md", 1.0)]
    idf = {"skerri": 4.0, "point": 3.0, "entri": 3.0, "cost": 2.0}
    assert grade_offline("How much does entry to Skerry Point cost?", hits, idf, None, SETTINGS).sufficient


# ----- the topic: words most passages say are left out of the comparison by meaning ---------

def bm25_idf(share_of_passages: float, passages: int) -> float:
    """The idf ``lexical`` gives a word this share of ``passages`` say."""
    said = share_of_passages * passages
    return float(np.log(1 + (passages - said + 0.5) / (said + 0.5)))


def recording(similarity: float, seen: list):
    """``similar_by``, keeping the texts it was asked to embed."""
    def embed(texts):
        seen.append(list(texts))
        return similar_by(similarity)(texts)
    return embed


CAMPUS_IDF = {"notr": bm25_idf(0.6, 40), "dame": bm25_idf(0.6, 40), "librari": bm25_idf(0.1, 40),
              "found": bm25_idf(0.2, 40)}


def test_words_at_least_half_the_passages_say_are_the_knowledge_base_s_topic():
    from ragkit.answering.grading import topic_words

    assert topic_words(CAMPUS_IDF, 40, 0.5, 10) == {"notr", "dame"}
    assert topic_words(CAMPUS_IDF, 40, 1.0, 10) == frozenset()
    assert topic_words(CAMPUS_IDF, 9, 0.5, 10) == frozenset()  # half of a few passages is no topic


def test_the_closest_sentence_is_compared_with_the_question_without_its_topic():
    from ragkit.answering.grading import closest_sentence, topic_words

    seen: list = []
    library = [hit("The Notre Dame library was founded in 1873 by Father Lemonnier.")]
    topic = topic_words(CAMPUS_IDF, 40, 0.5, 10)
    similarity, _ = closest_sentence("When was the Notre Dame library founded?", library, recording(0.7, seen), topic)
    assert similarity == pytest.approx(0.7)
    assert seen[0][0] == "When was the library founded?"  # the sentences are compared whole
    assert seen[0][1] == library[0].text

    seen.clear()
    closest_sentence("Notre Dame?", library, recording(0.7, seen), topic)
    assert seen[0][0] == "Notre Dame?"  # a question of topic words alone is compared whole


def test_the_grade_passes_the_topic_to_the_comparison_by_meaning():
    seen: list = []
    topic = frozenset({"notr", "dame"})
    grade_offline("Who founded the Notre Dame library?", [hit("Father Lemonnier began the library in 1873.")],
                  CAMPUS_IDF, recording(0.7, seen), SETTINGS, topic=topic)
    assert seen[0][0] == "Who founded the library?"


def test_a_question_compared_whole_needs_the_higher_similarity_its_threshold_was_chosen_for():
    between = (SETTINGS.grade_similarity_threshold + SETTINGS.grade_similarity_threshold_whole) / 2
    assert SETTINGS.grade_similarity_threshold < between < SETTINGS.grade_similarity_threshold_whole
    question = "What is the museum's admission price?"  # none of its words in the passage: judged by meaning
    museum = frozenset({"museum"})  # a knowledge base about the museum
    without_topic = grade_offline(question, PASSAGE, IDF, similar_by(between), SETTINGS, topic=museum)
    assert without_topic.threshold == SETTINGS.grade_similarity_threshold and without_topic.sufficient
    # compared whole: a knowledge base without a topic, or a question naming none of it
    for whole in (grade_offline(question, PASSAGE, IDF, similar_by(between), SETTINGS),
                  grade_offline("What is the admission price?", PASSAGE, IDF, similar_by(between), SETTINGS,
                                topic=museum)):
        assert whole.threshold == SETTINGS.grade_similarity_threshold_whole and not whole.sufficient


# ----- the subject: the rarest words, unless they are only the question's own wording ----------

HALL = [hit("A Science Hall was built in 1883 under the direction of Fr. Zahm. It later became a student centre.")]
HALL_IDF = {"person": 2.0, "oversaw": 4.0, "creation": 4.0, "scienc": 1.5, "hall": 1.0, "1883": 3.0,
            "head": 4.0, "chef": 4.0, "orbit": 3.0, "kitchen": 3.0}


def test_rare_words_the_passages_do_not_say_are_wording_when_they_say_most_of_the_question():
    from ragkit.answering.grading import says_asked_kind

    # "oversaw" and "creation" are the rarest words, and unsaid: the passage says the other three
    question = "Which person oversaw the creation of the Science Hall in 1883?"
    assert says_asked_kind(question, HALL, HALL_IDF) is True
    assert grade_offline(question, HALL, HALL_IDF, similar_by(0.7), SETTINGS).sufficient


def test_rare_words_the_passages_do_not_say_stay_the_subject_when_they_say_half_the_question_or_less():
    from ragkit.answering.grading import says_asked_kind

    kitchen = [hit("Orbital Kitchen is a restaurant on the space station Meridian.")]
    question = "Who is the head chef of Orbital Kitchen?"  # head and chef unsaid: two words of four
    assert says_asked_kind(question, kitchen, HALL_IDF) is False
    assert not grade_offline(question, kitchen, HALL_IDF, similar_by(0.9), SETTINGS).sufficient


class Campus:
    """A knowledge base's edge as the grade sees it: 40 passages, most naming Notre Dame."""

    def __init__(self, seen: list):
        self.seen = seen

    def idf(self, text: str) -> dict[str, float]:
        return CAMPUS_IDF

    def indexed_passages(self) -> int:
        return 40

    def embed_sentences(self, texts):
        return recording(0.7, self.seen)(texts)


def test_every_grade_over_a_knowledge_base_leaves_its_topic_out_of_the_comparison():
    from ragkit.answering.grading import grade_evidence

    seen: list = []
    grade = grade_evidence("Who founded the Notre Dame library?", [hit("Father Lemonnier began the library in 1873.")],
                           Campus(seen), SETTINGS)
    assert seen[0][0] == "Who founded the library?" and grade.sufficient

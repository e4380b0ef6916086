"""BM25 neighbour backing: a passage is backed, for the query words it lacks, by the passages
either side of it in its document (the chunk of facts below the chunk naming their subject)."""

import pytest

from ragkit.store.lexical import LexicalEntry, LexicalIndex


def biography_and_others(weight: float) -> LexicalIndex:
    """A two-passage biography (the subject above, the facts below) and other people's
    single passages that hold the facts' words but not the subject."""
    index = LexicalIndex(neighbour_weight=weight)
    index.add([
        LexicalEntry("bio-v1-0", "bio", ["罗保铭", "天津", "汉族"]),
        LexicalEntry("bio-v1-1", "bio", ["1992", "年", "4", "月", "担任", "大港", "区委", "副书记"]),
        LexicalEntry("other-v1-0", "other", ["1992", "年", "担任", "职务", "外交", "部长", "瑞士", "大使"]),
        *[LexicalEntry(f"p{n}-v1-0", f"p{n}", ["职务", "年", f"名字{n}"]) for n in range(6)],
    ])
    return index


QUERY = ["1992", "年", "罗保铭", "担任", "职务"]


def test_without_backing_the_facts_lose_to_a_passage_that_does_not_name_the_subject():
    assert biography_and_others(0.0).search(QUERY, 3)[0][0] == "other-v1-0"


def test_the_subject_and_its_facts_back_each_other_above_a_passage_not_naming_the_subject():
    ranked = [pid for pid, _ in biography_and_others(0.4).search(QUERY, 3)]
    assert set(ranked[:2]) == {"bio-v1-0", "bio-v1-1"}


def test_a_passage_without_neighbours_scores_exactly_as_without_backing():
    alone = [LexicalEntry("a-v1-0", "a", ["茶园", "开放"]), LexicalEntry("b-v1-0", "b", ["茶园"])]
    plain, backed = LexicalIndex(), LexicalIndex(neighbour_weight=0.4)
    plain.add(alone)
    backed.add(alone)
    assert backed.scores(["茶园", "开放"]) == pytest.approx(plain.scores(["茶园", "开放"]))


def test_backing_reaches_only_the_passages_either_side_in_the_same_document():
    index = LexicalIndex(neighbour_weight=0.5)
    index.add([
        LexicalEntry("a-v1-0", "a", ["subject", "x"]),
        LexicalEntry("a-v1-1", "a", ["fact", "x"]),
        LexicalEntry("a-v1-2", "a", ["fact", "y"]),
        LexicalEntry("b-v1-1", "b", ["fact", "y"]),
    ])
    scores = index.scores(["subject", "fact"])
    assert scores["a-v1-1"] > scores["a-v1-2"] == pytest.approx(scores["b-v1-1"])


def test_a_passage_holding_no_query_word_is_never_found_through_its_neighbours():
    index = LexicalIndex(neighbour_weight=1.0)
    index.add([LexicalEntry("a-v1-0", "a", ["subject"]), LexicalEntry("a-v1-1", "a", ["other"])])
    assert [pid for pid, _ in index.search(["subject"], 5)] == ["a-v1-0"]


def test_neighbours_follow_a_document_replaced_by_a_new_version():
    index = LexicalIndex(neighbour_weight=0.5)
    index.replace_document("a", 1, [LexicalEntry("a-v1-0", "a", ["subject"]), LexicalEntry("a-v1-1", "a", ["fact"])])
    before = index.scores(["subject", "fact"])["a-v1-1"]
    index.replace_document("a", 2, [LexicalEntry("a-v2-0", "a", ["preface"]), LexicalEntry("a-v2-1", "a", ["fact"])])
    index.add([LexicalEntry("z-v1-0", "z", ["subject"])])  # "subject" keeps its document frequency
    after = index.scores(["subject", "fact"])
    assert after["a-v2-1"] < before and "a-v2-0" not in after
    index.compact()
    assert index.scores(["subject", "fact"]) == pytest.approx(after)


def test_a_query_sets_its_own_backing_as_the_retriever_does_by_its_script():
    index = biography_and_others(0.0)
    assert index.search(QUERY, 3, backing=0.4) == biography_and_others(0.4).search(QUERY, 3)
    assert index.search(QUERY, 3, backing=0.0)[0][0] == "other-v1-0"


def test_only_a_chinese_question_is_backed_by_default():
    from ragkit.config import Settings
    from ragkit.retrieval.hybrid import dense_weight_for

    settings = Settings(_env_file=None)
    backing = lambda query: dense_weight_for(query, settings.neighbour_backing_latin,  # noqa: E731
                                             settings.neighbour_backing_cjk)
    assert backing("罗保铭1992年担任什么职务？") > 0
    assert backing("What post did he hold in 1992?") == 0

"""Fusion of dense and lexical rankings, and the bilingual search tokenizer."""

import pytest

from ragkit.lang.text import CHARACTER_MARK, index_tokens, is_cjk_text, search_tokens
from ragkit.retrieval.hybrid import dense_weight_for, fuse_scores

LEXICAL = [("a", 12.0), ("b", 11.0), ("c", 3.0)]
DENSE = [("c", 0.61), ("d", 0.60), ("a", 0.20)]


def test_weight_zero_is_exactly_the_lexical_ranking():
    assert [item for item, _ in fuse_scores(DENSE, LEXICAL, 0.0)] == ["a", "b", "c"]


def test_weight_one_is_exactly_the_dense_ranking():
    assert [item for item, _ in fuse_scores(DENSE, LEXICAL, 1.0)] == ["c", "d", "a"]


def test_small_dense_weight_cannot_overturn_a_confident_lexical_top_hit():
    # Weighted rank fusion would put "c" first here (dense rank 1 + lexical rank 3).
    fused = fuse_scores(DENSE, LEXICAL, 0.1)
    assert fused[0][0] == "a"


def test_balanced_weight_rewards_agreement():
    fused = fuse_scores([("x", 0.9), ("y", 0.5), ("z", 0.1)], [("y", 10.0), ("x", 9.5), ("w", 1.0)], 0.5)
    assert fused[0][0] == "x"


def test_one_side_empty_keeps_the_other():
    assert [item for item, _ in fuse_scores([], LEXICAL, 0.5)] == ["a", "b", "c"]
    assert [item for item, _ in fuse_scores(DENSE, [], 0.5)] == ["c", "d", "a"]
    assert fuse_scores([], [], 0.5) == []


def test_dense_weight_follows_the_script_of_the_query():
    assert dense_weight_for("茶园几点开放？", 0.5, 0.1) == 0.1
    assert dense_weight_for("When does the garden open?", 0.5, 0.1) == 0.5
    assert is_cjk_text("LangGraph 是什么？") and not is_cjk_text("What is LangGraph?")


def test_chinese_tokens_combine_words_and_bigrams_and_split_from_digits():
    tokens = search_tokens("若游戏中离，则4分钟内不得进行配对？")
    assert "游戏" in tokens and "配对" in tokens and "4" in tokens and "分钟" in tokens
    assert "中离" in tokens  # bigram even where jieba segments differently


def test_the_index_also_holds_the_marked_characters_of_chinese_content_words():
    tokens = index_tokens("龙胆的花")
    mark = CHARACTER_MARK
    assert {"龙胆", mark + "龙", mark + "胆", mark + "花"} <= set(tokens)  # a one-character name meets its passage
    assert mark + "的" not in tokens and "的" not in tokens  # nor the characters of stopwords
    assert set(search_tokens("龙胆的花")) < set(tokens)  # answering and grading count words, not characters
    assert mark + "龙" not in search_tokens("龙胆的花")


def test_a_characters_token_never_counts_as_the_one_character_word(tmp_path):
    from ragkit.store.lexical import LexicalEntry, LexicalIndex

    index = LexicalIndex()
    # 花 is a word of the first passage only; the other two hold it inside longer words
    index.replace_document("d", 1, [LexicalEntry(f"d-v1-{n}", "d", index_tokens(text))
                                    for n, text in enumerate(["她买了花。", "花园很大。", "花生很香。"])])
    assert index.idf(["花"])["花"] > index.idf([CHARACTER_MARK + "花"])[CHARACTER_MARK + "花"]


def test_the_index_tokens_of_latin_text_are_its_search_tokens():
    assert index_tokens("What are the statues in front of the buildings?") == \
        search_tokens("What are the statues in front of the buildings?")


def test_english_tokens_drop_stopwords_and_meet_at_their_stems():
    assert search_tokens("What are the statues in front of the buildings?") == search_tokens("statue front building")
    assert len(set(search_tokens("university universities"))) == 1
    assert len(set(search_tokens("founded founding"))) == 1
    assert search_tokens("the of and what") == []


def test_punctuation_only_has_no_tokens():
    assert search_tokens("？？！...!!") == []
    assert search_tokens("") == []


def test_passages_tokenized_by_another_tokenizer_version_are_retokenized_on_open(settings, embedder):
    import sqlite3

    from ragkit.store.kb import KnowledgeBase

    KnowledgeBase(settings, embedder=embedder).ingest(b"Statues of the founders.", filename="s.txt").document
    with sqlite3.connect(settings.data_path / "registry.sqlite3") as conn:
        conn.execute("UPDATE passages SET terms = 'stale'")
        conn.execute("UPDATE meta SET value = '-1' WHERE key = 'tokenizer_version'")
    reopened = KnowledgeBase(settings, embedder=embedder)
    assert reopened.search("statue", k=5)[0].filename == "s.txt"
    assert reopened.search("stale", k=5)[0].lexical_score is None


def test_a_flat_dense_list_does_not_outvote_a_passage_standing_far_above_its_bm25_list():
    flat_dense = [(f"d{n}", 0.438 - n * 0.0002) for n in range(50)]  # cosines that barely differ
    lexical = [("code", 3.45)] + [(f"d{n}", 0.3) for n in range(5)]  # the code's passage, no vector
    assert fuse_scores(flat_dense, lexical, 0.5, "minmax")[0][0] != "code"  # the old scaling lost it
    assert fuse_scores(flat_dense, lexical, 0.5)[0][0] == "code"


def test_identifiers_and_quoted_phrases_are_asked_verbatim():
    from ragkit.retrieval.hybrid import exact_terms

    assert exact_terms("Where is part ZQ1499X stocked?").identifiers == ("zq1499x",)
    assert exact_terms("error E-1234 after v2.3").identifiers == ("e-1234", "v2.3")
    assert exact_terms("Who built it in 1887?").identifiers == ()  # a number alone is no identifier
    assert exact_terms('What does "the  Golden Dome" mean?').phrases == ("the golden dome",)
    assert exact_terms("“青岚茶园”在哪里？").phrases == ("青岚茶园",)


def test_the_passage_holding_the_code_ranks_first_even_without_its_vector(kb):
    for n, place in enumerate(["Lyon", "Leeds", "Porto", "Graz"]):
        kb.ingest(f"Part qx{n}417k is a replacement valve assembly stocked in the {place} warehouse.".encode(),
                  filename=f"part-{n}.txt")
    target = next(doc for doc in kb.documents() if doc.filename == "part-2.txt")
    kb.indexer.delete_vectors([p.id for p in kb.passages(target.id)])
    for query in ("qx2417k", "Is the valve with code qx2417k kept in Lyon?", 'Which warehouse has "qx2417k"?'):
        assert kb.search(query, k=3)[0].doc_id == target.id, query


def test_rerankers_are_named_by_the_setting_and_never_downloaded(tmp_path):
    import pytest

    from ragkit.errors import RerankerError
    from ragkit.retrieval.rerank import SentenceReranker, make_reranker

    assert make_reranker("none", None) is None
    assert isinstance(make_reranker("sentences", None), SentenceReranker)
    with pytest.raises(RerankerError, match="RAGKIT_RERANKER"):
        make_reranker(str(tmp_path / "no-such-model"), None)


def test_the_sentence_reranker_lifts_the_passage_whose_sentence_says_it(embedder):
    from ragkit.retrieval.rerank import SentenceReranker

    texts = {"a": "The harbour is busy in summer. Ferries leave every hour for the islands.",
             "b": "The lighthouse keeper retired in 1962. She had lived in the tower for thirty years.",
             "c": "Bread is baked at dawn."}
    fused = [("a", 1.0), ("b", 0.99), ("c", 0.5)]  # a and b nearly tied by the fused scores
    reranked = SentenceReranker(lambda: embedder, 0.75).rerank("When did the lighthouse keeper retire?", fused, texts)
    assert [pid for pid, _ in reranked] == ["b", "a", "c"]


def test_marked_characters_do_not_lengthen_a_passage_so_english_scores_stay_as_they_were():
    from ragkit.store.lexical import LexicalEntry, LexicalIndex

    english = LexicalEntry("e-v1-0", "e", search_tokens("The lighthouse keeper retired in 1950."))
    chinese = "灯塔看守人于一九五零年退休，此后灯塔改为自动运行。"
    words, marked = LexicalIndex(), LexicalIndex()
    words.add([english, LexicalEntry("z-v1-0", "z", search_tokens(chinese))])
    marked.add([english, LexicalEntry("z-v1-0", "z", index_tokens(chinese))])
    question = search_tokens("Who was the lighthouse keeper?")
    assert marked.scores(question) == pytest.approx(words.scores(question))

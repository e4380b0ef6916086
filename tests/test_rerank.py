"""The sentences reranker: a candidate counts by its best sentence, the one that both holds
the question's words (weighted by idf) and means what it asks."""

import numpy as np

from ragkit.retrieval.rerank import SentenceReranker, make_reranker, word_share_scorer


def even(words):
    return {word: 1.0 for word in words}


def test_a_sentence_holds_the_share_of_the_question_word_weight_it_contains():
    sentences = ["The Kroll bridge opened to traffic.", "A bridge crossed the river.", "Bread is baked at dawn."]
    share = word_share_scorer("When did the Kroll bridge open?", lambda words: {
        word: {"kroll": 3.0}.get(word, 1.0) for word in words})
    shares = [share(sentence) for sentence in sentences]
    # kroll 3 + bridg 1 + open 1 of 5; bridg 1 of 5; nothing
    assert np.allclose(shares, [1.0, 0.2, 0.0])


def test_a_question_without_words_gives_every_sentence_no_share():
    assert word_share_scorer("?!", even)("Anything at all.") == 0.0


def test_the_sentence_saying_the_questions_words_beats_a_slightly_closer_paraphrase(embedder):
    # the model finds "finished" closer to the question than "built ... beside the lake"
    # (cosine 0.86 vs 0.80), but only b says what was asked in the question's own words
    texts = {"a": "The main library was finished in 1963.",
             "b": "A library was built in 1963 beside the lake, among other halls.",
             "c": "Bread is baked at dawn."}
    fused = [("a", 1.0), ("b", 0.99), ("c", 0.5)]  # a and b nearly tied by the fused scores
    reranker = SentenceReranker(lambda: embedder, 0.75, even)
    question = "Which library was built in 1963?"
    cosine_a, cosine_b = (float(embedder.embed_remembered([texts[pid]])[0] @ embedder.embed_query(question))
                          for pid in "ab")
    assert cosine_a > cosine_b  # the cosine alone (the earlier reranker) put a first
    assert [pid for pid, _ in reranker.rerank(question, fused, texts)] == ["b", "a", "c"]


def test_the_words_of_one_sentence_count_not_the_words_spread_over_the_passage(embedder):
    reranker = SentenceReranker(lambda: embedder, 0.75, even)
    spread, together = reranker.sentence_scores("Which library was built in 1963?", [
        "The library is the largest in the state. Several halls were built in 1963.",
        "A library was built in 1963 beside the lake.",
    ])
    assert together > spread


def test_weight_zero_keeps_the_fused_order_and_make_reranker_passes_the_weight_on(kb, embedder):
    texts = {"a": "The main library was finished in 1963.", "b": "A library was built in 1963 beside the lake."}
    fused = [("a", 1.0), ("b", 0.99)]
    unweighted = SentenceReranker(lambda: embedder, 0.0, even)
    assert [pid for pid, _ in unweighted.rerank("Which library was built in 1963?", fused, texts)] == ["a", "b"]
    reranker = make_reranker("sentences", lambda: embedder, kb.lexical.idf, 1.5)
    assert isinstance(reranker, SentenceReranker) and reranker.weight == 1.5


def test_the_retriever_builds_the_sentences_reranker_from_the_settings(settings, embedder):
    from ragkit.store.kb import KnowledgeBase

    knowledge_base = KnowledgeBase(settings.model_copy(update={"reranker": "sentences", "rerank_weight": 0.4}),
                                   embedder=embedder)
    try:
        assert knowledge_base.retriever.reranker.weight == 0.4
        assert knowledge_base.retriever.reranker._idf == knowledge_base.lexical.idf  # the index's word weights
    finally:
        knowledge_base.close()


def test_a_chinese_question_keeps_the_fused_order_by_default_and_an_english_one_is_reranked(embedder):
    reranker = make_reranker("sentences", lambda: embedder)
    texts = {"a": "图书馆在湖边。1963年重修了大门。", "b": "1963年建成的图书馆位于湖边。", "c": "面包在黎明时烤好。",
             "d": "The main library was finished in 1963.", "e": "A library was built in 1963 beside the lake.",
             "f": "Bread is baked at dawn."}
    chinese = [("a", 1.0), ("b", 0.99), ("c", 0.5)]
    assert reranker.rerank("哪座图书馆建于1963年？", chinese, texts) == chinese  # rerank_weight_cjk 0
    english = reranker.rerank("Which library was built in 1963?", [("d", 1.0), ("e", 0.99), ("f", 0.5)], texts)
    assert [pid for pid, _ in english] == ["e", "d", "f"]


def test_a_sentence_holding_the_kind_of_thing_asked_scores_the_kind_bonus_more(embedder):
    question = "In what year was the College of Science founded?"
    dated, undated = "The College of Science was founded in 1865.", "The College of Science was founded by monks."
    plain = SentenceReranker(lambda: embedder, 1.0, even)
    with_bonus = SentenceReranker(lambda: embedder, 1.0, even, kind_bonus=0.1)
    gain = np.subtract(with_bonus.sentence_scores(question, [dated, undated]),
                       plain.sentence_scores(question, [dated, undated]))
    assert np.allclose(gain, [0.1, 0.0])  # a year the question does not name; none in the other


def test_the_kind_bonus_passes_over_what_the_question_itself_names(embedder):
    # "1879" is the question's own: a sentence repeating it says no date the question lacks
    reranker = SentenceReranker(lambda: embedder, 1.0, even, kind_bonus=0.1)
    plain = SentenceReranker(lambda: embedder, 1.0, even)
    question = "When did the fire of 1879 happen?"
    text = "The fire of 1879 destroyed the building."
    assert reranker.sentence_scores(question, [text]) == plain.sentence_scores(question, [text])
    assert make_reranker("sentences", lambda: embedder).kind_bonus == 0.1  # Settings' default


def test_a_search_finishes_with_the_reranker_it_began_with(kb, monkeypatch):
    # another thread's _sync may choose the reranker again (to none) while a search reranks
    kb.ingest(b"The harbour was dredged in 1911. The lighthouse keeper served forty years.", "harbour.txt")
    kb.ingest(b"Ferries to the islands leave twice a day from the harbour.", "ferries.txt")
    assert kb.retriever.reranker is not None
    passages = kb.catalog.passages

    def chosen_again_meanwhile(ids):
        kb.retriever.reranker = None
        return passages(ids)

    monkeypatch.setattr(kb.catalog, "passages", chosen_again_meanwhile)
    assert kb.search("When was the harbour dredged?")


def test_a_span_of_years_holds_the_years_inside_it():
    from ragkit.lang.kinds import years_named, years_spanned

    assert years_named("Which president did Notre Dame have in 1947?") == {"1947"}
    for text in ("He served as president from 1946 to 1952.", "President (1946–1952).",
                 "Between 1946 and 1952 he led it."):
        assert years_spanned(text, {"1947", "1953"}) == {"1947"}
    assert years_spanned("He was president in 1946 and wrote in 1952.", set()) == set()
    assert years_spanned("In 1919 Father Burns became president.", {"1947"}) == set()


def test_a_sentence_naming_a_span_of_years_holds_the_questions_year_when_year_ranges_is_on(embedder):
    question = "Which president did the college have in 1947?"
    spanned, other = "Cavanaugh served as president from 1946 to 1952.", "In 1919 Burns became president."
    plain = SentenceReranker(lambda: embedder, 1.0, even)
    ranged = SentenceReranker(lambda: embedder, 1.0, even, year_ranges=True)
    gain = np.subtract(ranged.sentence_scores(question, [spanned, other]),
                       plain.sentence_scores(question, [spanned, other]))
    assert np.allclose(gain, [1 / 3, 0.0])  # 1947, one of three evenly weighted words (colleg, presid, 1947)
    assert make_reranker("sentences", lambda: embedder).year_ranges  # Settings' default


def test_the_cosine_is_blended_with_the_questions_without_the_topic_words(embedder):
    from ragkit.lang.text import search_tokens

    question, sentence = "Which library did Notre Dame build in 1963?", "A library was built in 1963 beside the lake."
    topic = lambda weights: frozenset({"notr", "dame"}) & set(weights)  # noqa: E731
    cosine = float(embedder.embed_remembered([sentence])[0] @ embedder.embed_query(question))
    vector = embedder.embed_remembered([sentence])[0]
    topicless = float(vector @ embedder.embed_query("Which library did build in 1963?"))
    share = word_share_scorer(question, even)(sentence)
    assert set(search_tokens(question)) >= {"notr", "dame"}
    for blend, expected in ((0.0, cosine), (0.5, (cosine + topicless) / 2), (1.0, topicless)):
        reranker = SentenceReranker(lambda: embedder, 1.0, even, topic=topic, topicless_cosine=blend)
        assert np.isclose(reranker.sentence_scores(question, [sentence])[0], share + expected, atol=1e-5)
    no_topic = SentenceReranker(lambda: embedder, 1.0, even, topicless_cosine=1.0)  # no topic words: the question
    assert np.isclose(no_topic.sentence_scores(question, [sentence])[0], share + cosine, atol=1e-5)


def test_the_retriever_gives_the_reranker_the_knowledge_bases_topic_words(settings, embedder):
    from ragkit.store.kb import KnowledgeBase

    knowledge_base = KnowledgeBase(settings.model_copy(update={"reranker": "sentences", "grade_topic_min_passages": 1,
                                                               "rerank_topicless_cosine": 0.25}), embedder=embedder)
    try:
        for number, text in enumerate(("Harbour Point has a lighthouse.", "Harbour Point ferries leave at noon.",
                                       "The bakery opens at dawn.")):
            knowledge_base.ingest(text.encode(), f"p{number}.txt")
        reranker = knowledge_base.retriever.reranker
        assert reranker.topicless_cosine == 0.25
        # said by two of three passages: at least grade_topic_share (0.5) of them
        assert reranker._topic(knowledge_base.lexical.idf(["harbour", "point", "bakeri"])) == {"harbour", "point"}
    finally:
        knowledge_base.close()

"""Topic words: what most passages of a knowledge base say ("Notre Dame" in one about Notre Dame)
tells no passage from another, so the vector search blends in the question without them."""

import numpy as np

from ragkit.lang.topic import topic_words, without_topic

HARBOUR = ("Harbour Point has a lighthouse built in 1911.", "Harbour Point ferries leave at noon.",
           "The bakery opens at dawn.")


def test_the_words_half_the_passages_say_are_the_topic_and_a_question_is_compared_without_them(settings):
    idf = {"harbour": 0.4, "point": 0.4, "ferri": 1.2}
    assert topic_words(idf, 40, settings.grade_topic_share, settings.grade_topic_min_passages) == {"harbour", "point"}
    # a few passages have no topic
    assert topic_words(idf, 5, settings.grade_topic_share, settings.grade_topic_min_passages) == frozenset()
    assert without_topic("When do Harbour Point ferries leave?", frozenset({"harbour", "point"})) == \
        "When do ferries leave?"
    assert without_topic("Harbour Point?", frozenset({"harbour", "point"})) == "Harbour Point?"  # nothing left


def test_the_vector_search_blends_the_question_with_the_question_without_its_topic_words(settings, embedder):
    from ragkit.store.kb import KnowledgeBase

    knowledge_base = KnowledgeBase(settings.model_copy(update={"grade_topic_min_passages": 1}), embedder=embedder)
    try:
        for number, text in enumerate(HARBOUR):
            knowledge_base.ingest(text.encode(), f"p{number}.txt")
        retriever = knowledge_base.retriever
        question = "When do Harbour Point ferries leave?"
        asked, rest = embedder.embed_query(question), embedder.embed_query("When do ferries leave?")
        blend = (asked + rest) / 2  # dense_topicless 0.5, the default
        assert np.allclose(retriever.search_vector(question), blend / np.linalg.norm(blend), atol=1e-5)
        assert np.allclose(retriever.search_vector("When does the bakery open?"),
                           embedder.embed_query("When does the bakery open?"), atol=1e-6)  # no topic word in it
        retriever.settings = retriever.settings.model_copy(update={"dense_topicless": 0.0})
        assert np.allclose(retriever.search_vector(question), asked, atol=1e-6)
    finally:
        knowledge_base.close()

"""Which retrieved passages an answer draws on (the answer policy of ragkit.graph.rounds), on a real store."""

from ragkit.graph.rounds import focus_hits, relevant_hits
from ragkit.kb import KnowledgeBase
from ragkit.passages import Hit, Passage


def test_answer_passages_add_the_top_documents_passage_that_lacks_the_subjects_name(settings, embedder):
    narrow = settings.model_copy(update={"top_k": 2, "chunk_tokens": 48, "chunk_overlap_tokens": 0})
    kb = KnowledgeBase(narrow, embedder=embedder)
    tower = ("长柄艾纳香是菊科艾纳香属的植物，一年生草本，茎直立，高约一米，基部有分枝，全株有腺状短柔毛。\n\n"
             "下部叶有细柄，叶片倒卵形至倒披针形，边缘有锯齿。\n\n头状花序少数，花黄色，花期1-3月。")
    kb.ingest(tower.encode(), filename="长柄艾纳香.txt")
    kb.ingest("六耳铃是菊科艾纳香属的植物，花期从10月起至翌年5月。".encode(), filename="六耳铃.txt")
    kb.ingest("狭叶艾纳香是菊科艾纳香属的植物，花期3-5月，生于山谷。".encode(), filename="狭叶艾纳香.txt")
    question = "长柄艾纳香的花期约是多久？"
    assert not any("花期1-3月" in hit.text for hit in kb.search("长柄艾纳香的花期约是多久", k=2))
    embedded = []
    real_embed_query = kb.embedder.embed_query
    kb.embedder.embed_query = lambda text: embedded.append(text) or real_embed_query(text)
    try:
        passages = focus_hits(kb, question, kb.search(question, narrow.top_k), narrow)
    finally:
        del kb.embedder.embed_query
    assert embedded == [question]  # one embedding per question, not per search
    assert passages[0].filename == "长柄艾纳香.txt"
    added = [hit for hit in passages if hit.same_document]
    assert len(added) == 1 and "花期1-3月" in added[0].text and added[0].filename == "长柄艾纳香.txt"
    assert added[0].score <= passages[len(passages) - 2].score


def test_passages_far_below_the_best_are_dropped():
    def hit(score):
        return Hit(Passage("t", 1, 0, 0, 1, 1, "d", 1), "T", "f", "txt", score)

    assert [h.score for h in relevant_hits([hit(1.0), hit(0.5), hit(0.05)], 0.1)] == [1.0, 0.5]
    assert relevant_hits([], 0.1) == []

"""Which retrieved passages an answer draws on (the answer policy of ragkit.graph.policy), on a real store."""

from ragkit.graph.policy import add_linked_documents, focus_hits, relevant_hits
from ragkit.store.kb import KnowledgeBase
from ragkit.types import Hit, Passage, SearchFilters


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


LINKED = {
    "The Copper Finches.txt": "The Copper Finches are a folk band formed in 2010 by four students. "
                              "The drummer of the band is Mara Quill, who also writes most of the lyrics.",
    "Mara Quill.txt": "Mara Quill is a musician born in 1987. "
                      "She grew up in Hollowmere, where her father taught violin.",
    "Hollowmere.txt": "Hollowmere is a market town in the hills. "
                      "The River Tamsley flows through the centre of the town.",
    "The Copper Kettles.txt": "The Copper Kettles are a jazz band from the coast. Their drummer left in 2004.",
}
HOMETOWN = "Which river flows through the hometown of the drummer of The Copper Finches?"


def linked_library(settings, embedder, **update):
    narrow = settings.model_copy(update={"top_k": 2, **update})
    kb = KnowledgeBase(narrow, embedder=embedder)
    ids = {name: kb.ingest(text.encode(), filename=name).document.id for name, text in LINKED.items()}
    return narrow, kb, ids


def test_the_document_the_best_passage_names_by_title_joins_the_answer_passages(settings, embedder):
    narrow, kb, ids = linked_library(settings, embedder)
    try:
        hits = focus_hits(kb, HOMETOWN, kb.search(HOMETOWN, narrow.top_k), narrow)
        assert hits[0].filename == "The Copper Finches.txt"
        assert ids["Mara Quill.txt"] not in {hit.doc_id for hit in hits}  # the search alone misses the next hop
        passages = add_linked_documents(kb, HOMETOWN, hits, 1)
        added = passages[len(hits):]
        assert [(hit.filename, hit.linked) for hit in added] == [("Mara Quill.txt", True)]
        assert "grew up in Hollowmere" in added[0].text and added[0].score <= hits[-1].score
    finally:
        kb.close()


def test_a_linked_passage_brings_the_document_it_names_in_turn_up_to_the_chains_length(settings, embedder):
    narrow, kb, ids = linked_library(settings, embedder, top_k=1)
    try:
        hits = focus_hits(kb, HOMETOWN, kb.search(HOMETOWN, narrow.top_k), narrow)
        assert [hit.filename for hit in hits] == ["The Copper Finches.txt"]
        chain = add_linked_documents(kb, HOMETOWN, hits, 2)[1:]
        assert [(hit.filename, hit.linked) for hit in chain] == [("Mara Quill.txt", True), ("Hollowmere.txt", True)]
        assert "River Tamsley" in chain[1].text
        assert [hit.filename for hit in add_linked_documents(kb, HOMETOWN, hits, 1)[1:]] == ["Mara Quill.txt"]
        assert len(add_linked_documents(kb, HOMETOWN, hits, 5)) == 3  # Hollowmere names no further document
    finally:
        kb.close()


def test_no_linked_document_is_added_when_off_named_by_the_question_or_outside_the_filters(settings, embedder):
    narrow, kb, ids = linked_library(settings, embedder)
    try:
        hits = focus_hits(kb, HOMETOWN, kb.search(HOMETOWN, narrow.top_k), narrow)
        assert add_linked_documents(kb, HOMETOWN, hits, 0) == hits
        naming = HOMETOWN.replace("the drummer", "Mara Quill, the drummer")
        assert add_linked_documents(kb, naming, hits, 1) == hits  # the question's own words searched for it
        chosen = SearchFilters(doc_ids=[ids["The Copper Finches.txt"], ids["Hollowmere.txt"]])
        assert add_linked_documents(kb, HOMETOWN, hits, 1, chosen) == hits
        assert add_linked_documents(kb, HOMETOWN, [], 1) == []
    finally:
        kb.close()


def test_a_default_mode_answer_cites_from_the_linked_document(settings, embedder):
    from ragkit.app.engine import ChatEngine

    narrow, kb, ids = linked_library(settings, embedder)
    try:
        turn = ChatEngine(narrow, kb, always_answer=True).ask("s", HOMETOWN)
        assert ids["Mara Quill.txt"] in {source.doc_id for source in turn.sources}
        followed = next(step.detail for step in turn.trace if step.step == "Followed titles")
        assert followed.startswith("“The Copper Finches” → “Mara Quill”")
        off = narrow.model_copy(update={"linked_document_k": 0})
        turn = ChatEngine(off, kb, always_answer=True).ask("t", HOMETOWN)
        assert ids["Mara Quill.txt"] not in {source.doc_id for source in turn.sources}
        assert not any(step.step == "Followed titles" for step in turn.trace)
    finally:
        kb.close()


def test_a_one_word_title_at_a_sentence_start_links_nothing(settings, embedder):
    narrow, kb, ids = linked_library(settings, embedder)
    try:
        kb.ingest(b"About: a shoe shop on the high street.", filename="About.txt")
        opening = [Hit(Passage("About 300 people came to hear the band.", 1, 0, 0, 40, 9, "x", 1),
                       "Concert night", "night.txt", "txt", 1.0)]
        assert add_linked_documents(kb, HOMETOWN, opening, 2) == opening
    finally:
        kb.close()


class TwoCopies:
    """The edge of ``add_linked_documents``: a library where the band's file is also in a second
    knowledge base, its title standing for the copy."""

    def document_titles(self, filters=None):
        return {"The Copper Finches": "copy", "Mara Quill": "mara"}

    def search_documents(self, query, wanted):
        found = {}
        for doc_id in wanted:
            text = LINKED["The Copper Finches.txt" if doc_id == "copy" else "Mara Quill.txt"]
            found[doc_id] = [Hit(Passage(text, 1, 0, 0, len(text), 9, doc_id, 1), "", f"{doc_id}.txt", "txt", 0.5)]
        return found


def test_a_copy_of_a_document_already_found_takes_no_place_in_the_chain():
    band = LINKED["The Copper Finches.txt"]
    found = [Hit(Passage(band, 1, 0, 0, len(band), 9, "band", 1), "The Copper Finches", "band.txt", "txt", 1.0)]
    chain = add_linked_documents(TwoCopies(), "Which river flows through the drummer's hometown?", found, 1)[1:]
    assert [hit.doc_id for hit in chain] == ["mara"]

"""Chunks are token-bounded, end on sentence boundaries, overlap, and index the page exactly."""

from ragkit.ingest.chunking import chunk_pages
from ragkit.lang.text import BRACKET_REACH, count_tokens, split_sentences

ENGLISH = " ".join(f"Sentence number {i} talks about topic {i} in some detail." for i in range(60))
CHINESE = "".join(f"第{i}句话介绍了青松茶园的第{i}个特点。" for i in range(60))


def test_offsets_index_the_page_text_exactly():
    pages = [ENGLISH, "Intro.\n\n" + CHINESE]
    for chunk in chunk_pages(pages, max_tokens=64, overlap_tokens=16):
        assert pages[chunk.page - 1][chunk.start : chunk.end] == chunk.text


def test_chunks_respect_the_token_budget():
    for chunk in chunk_pages([ENGLISH, CHINESE], max_tokens=64, overlap_tokens=16):
        assert chunk.tokens <= 64
        assert count_tokens(chunk.text) == chunk.tokens


def test_chunks_end_on_sentence_boundaries_in_both_languages():
    chunks = chunk_pages([ENGLISH, CHINESE], max_tokens=64, overlap_tokens=16)
    assert len(chunks) > 4
    for chunk in chunks:
        assert chunk.text.endswith((".", "。")), chunk.text[-20:]


def test_consecutive_chunks_overlap_by_whole_sentences():
    chunks = chunk_pages([CHINESE], max_tokens=80, overlap_tokens=30)
    for before, after in zip(chunks, chunks[1:]):
        assert after.start < before.end, "no overlap"
        shared = before.text[after.start - before.start :]
        assert shared and shared == after.text[: len(shared)]
        assert shared.endswith("。")


def test_positions_run_over_the_document_and_pages_are_one_based():
    chunks = chunk_pages(["Page one text.", "Page two text."], max_tokens=64, overlap_tokens=8)
    assert [(c.page, c.position) for c in chunks] == [(1, 0), (2, 1)]


def test_overlong_sentence_is_cut_into_windows():
    text = "x" * 20000
    chunks = chunk_pages([text], max_tokens=100, overlap_tokens=10)
    assert len(chunks) > 5
    assert all(c.tokens <= 100 for c in chunks)
    assert "".join(c.text for c in chunks) == text


def test_paragraph_break_is_preferred_once_a_chunk_is_well_filled():
    first = " ".join(["Alpha beta gamma delta."] * 12)
    second = " ".join(["Omega psi chi phi."] * 12)
    chunks = chunk_pages([first + "\n\n" + second], max_tokens=90, overlap_tokens=0)
    assert chunks[0].text == first


def test_sentence_splitter_handles_chinese_and_english_punctuation():
    spans = split_sentences("你好。今天下雨吗？是的！Hello there. How are you? Fine")
    assert [s.text for s in spans] == ["你好。", "今天下雨吗？", "是的！", "Hello there.", "How are you?", "Fine"]


def test_a_clerical_title_does_not_end_the_sentence():
    text = "A Science Hall was built in 1883 under the direction of Fr. Zahm. Br. André and Msgr. Ryan came."
    assert [s.text for s in split_sentences(text)] == [
        "A Science Hall was built in 1883 under the direction of Fr. Zahm.", "Br. André and Msgr. Ryan came."]


def test_a_mark_inside_brackets_does_not_end_the_sentence():
    text = "萱侬律(又名：「东芭乐园」；泰文：สวน)位于泰国。He cites (see Fig. 2. above) it. 未闭合（括号。下一句。"
    assert [s.text for s in split_sentences(text)] == [
        "萱侬律(又名：「东芭乐园」；泰文：สวน)位于泰国。", "He cites (see Fig. 2. above) it.",
        "未闭合（括号。", "下一句。",
    ]


def test_a_bracket_closing_beyond_the_reach_is_a_typo_so_the_mark_ends_the_sentence():
    far = "x" * (BRACKET_REACH + 5)
    text = f"远处（{far}。{far}）之后。"
    assert [s.text for s in split_sentences(text)] == [f"远处（{far}。", f"{far}）之后。"]


def test_nested_asides_keep_their_marks_and_a_stray_closing_bracket_is_ignored():
    text = "外层（内层「更深。」还在。）结束。 ) 多余。Next."
    assert [s.text for s in split_sentences(text)] == ["外层（内层「更深。」还在。）结束。", ") 多余。", "Next."]


def test_empty_page_gives_no_chunks():
    assert chunk_pages(["", "   "]) == []

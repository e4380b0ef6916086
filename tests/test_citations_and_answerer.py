"""Citation markers are checked against real sources; the extractive answerer stays short."""

from ragkit.answering.citations import cited_markers, validate_markers
from ragkit.answering.extractive import extractive_answer
from ragkit.config import Settings
from ragkit.lang.text import strip_html
from ragkit.types import Hit, Passage, Source


def make_sources(count):
    return [Source(n, f"c{n}", f"d{n}", f"T{n}", f"f{n}.txt", 1, "text", "text", 0, 4, 1.0)
            for n in range(1, count + 1)]


def test_marker_with_no_source_is_removed_and_cited_sources_flagged():
    sources = make_sources(2)
    answer = validate_markers("Alpha [1]. Beta [9]. Gamma [2, 7].", sources)
    assert answer == "Alpha [1]. Beta. Gamma [2]."
    assert [s.cited for s in sources] == [True, True]


def test_uncited_sources_stay_listed_as_also_retrieved():
    sources = make_sources(3)
    validate_markers("Only the first [1].", sources)
    assert [s.cited for s in sources] == [True, False, False]
    assert cited_markers("x [3][1] y [3]") == [3, 1]


def test_cited_quote_is_narrowed_to_the_sentences_the_answer_uses():
    from ragkit.answering.citations import focus_quotes

    source = make_sources(1)[0]
    source.text = source.quote = ("The museum opens at nine. Tickets cost twelve euros. "
                                  "Parking is free. Dogs are welcome.")
    source.cited = True
    focus_quotes("A ticket costs twelve euros [1].", [source], max_sentences=1)
    assert source.quote == "Tickets cost twelve euros."


def test_model_html_is_stripped_to_text():
    assert strip_html('<span style="color:red">Hi</span> <script>x</script>&amp;') == "Hi x&"


def hit(text, n=0, doc="d"):
    return Hit(Passage(text, 1, n, 0, len(text), 0, doc_id=doc, version=1), "Title", "file.txt", "txt", 1.0 - n / 10)


def test_extractive_answer_picks_the_matching_sentence_and_cites_it():
    hits = [hit("The museum opens at nine. Tickets cost twelve euros. The cafe closes at five."),
            hit("Parking is free on Sundays.", 1, "e")]
    answer = extractive_answer("How much do tickets cost?", hits, Settings())
    assert "twelve euros" in answer.text and answer.text.count("[1]") >= 1
    assert answer.mode == "extractive" and answer.sources[0].cited


def test_extractive_answer_respects_the_budget_on_long_text():
    long_sentence = "茶园" + "很大" * 400 + "，门票六十元。"
    answer = extractive_answer("门票多少钱？", [hit(long_sentence)], Settings())
    assert len(answer.text) <= Settings().extractive_chars_cjk + 6
    assert "门票六十元" in answer.text


def test_a_sentence_repeated_by_overlapping_chunks_is_quoted_once():
    shared = "门票六十元，学生半价。"
    hits = [hit("龙井茶园位于杭州西湖。" + shared), hit(shared + "茶园早上八点开门。", 1)]
    answer = extractive_answer("龙井茶园门票多少钱？", hits, Settings())
    assert answer.text.count("门票六十元") == 1


def test_chinese_question_words_drop_stop_and_question_words_and_keep_latin_terms():
    from ragkit.lang.text import question_words

    assert question_words("2007年，卡塞雷斯的人口有多少？") == ["2007", "年", "卡塞雷斯", "人口"]
    assert "多久" not in question_words("长柄艾纳香的花期约是多久？")
    assert "agg01" in question_words("AGG01的功效有哪些？")


def test_only_a_sentence_saying_a_thing_of_the_kind_asked_that_the_question_lacks_counts():
    from ragkit.lang.kinds import answer_type, typed_spans

    def says(question: str, sentence: str) -> list[str]:
        return [span.text for span in typed_spans(sentence, answer_type(question), question)]

    assert "91606" in says("2007年，卡塞雷斯的人口有多少？", "2007年人口普查数据为91606人。")
    assert not says("2007年，卡塞雷斯的人口有多少？", "2007年卡塞雷斯举办了节日。")
    assert "1937年" in says("浮龙化石是什么时候发现的？", "他在1937年发现浮龙的化石。")
    assert not says("浮龙化石是在哪里发现的？", "他在1937年发现浮龙的化石。")  # a place: no cue in Chinese
    assert says("Who designed the lighthouse?", "It was designed by engineer Margaret Doyle.") == ["Margaret Doyle"]
    assert "1887" in says("In what year was it first lit?", "It was first lit in 1887.")
    assert not says("How many steps are there?", "The steps were built of granite.")


def test_extractive_without_hits_says_so_in_the_question_language():
    assert "没有找到" in extractive_answer("门票多少钱？", [], Settings()).text
    assert "could not find" in extractive_answer("How much?", [], Settings()).text



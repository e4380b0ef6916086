"""Agentic mode (issue 16): route, comparisons per side, hops followed, the round cap,
the mode kept per conversation; offline over a real knowledge base, and with the model
answering through the local OpenAI-compatible test server."""

from __future__ import annotations

import json

import pytest

from llm_helpers import llm_settings
from ragkit.answering.compare import cjk_numeral, compared_number, first_number, side_fact, verdict
from ragkit.answering.decompose import (
    comparison_sides,
    has_hop_structure,
    mentioned_titles,
    name_candidates,
    side_question,
)
from ragkit.answering.grading import grade_offline, question_terms, says_asked_kind
from ragkit.app.engine import ChatEngine
from ragkit.app.history import HistoryManager
from ragkit.errors import QuestionError
from ragkit.graph.agentic.rounds import hops_kept, merge_hits, side_link
from ragkit.graph.agentic.state import AgentState
from ragkit.graph.agentic.web import with_web_link
from ragkit.graph.state import HopLink
from ragkit.types import Hit, Passage
from ragkit_dev.devserver import Reply, ScriptedOpenAIServer, structured
from ragkit_dev.eval import run_multihop

LOVELACE = "Where was the designer of the machine Ada Lovelace wrote an algorithm for born?"


@pytest.fixture
def lovelace(kb):
    """The issue's three one-line files."""
    kb.ingest(b"Ada Lovelace wrote an algorithm for the Analytical Engine, a machine designed by Charles Babbage.",
              filename="ada.txt")
    kb.ingest(b"Charles Babbage was born in London in 1791.", filename="babbage.txt")
    kb.ingest(b"The Difference Engine was an automatic mechanical calculator designed to tabulate polynomial "
              b"functions.", filename="difference.txt")
    return kb


def searches(turn) -> int:
    return sum(step.step == "Searched" or step.step.startswith("Round ") for step in turn.trace)


def test_the_lovelace_question_is_answered_from_both_documents_both_cited(settings, lovelace):
    engine = ChatEngine(settings, lovelace)
    default = engine.ask("d", LOVELACE, mode="default")
    assert "London" not in default.answer  # one search: the Ada sentence only
    turn = engine.ask("a", LOVELACE, mode="agentic")
    cited = [source.filename for source in turn.sources if source.cited]
    assert cited == ["ada.txt", "babbage.txt"]
    assert "London" in turn.answer
    assert turn.answer.index("Charles Babbage.") < turn.answer.index("born in London")  # the bridge fact first
    steps = [step.step for step in turn.trace]
    assert steps[:3] == ["Routed", "Planned", "Round 1"] and "Round 2" in steps and "Sufficiency" in steps


@pytest.mark.parametrize("message", ["hello", "Thanks!", "what can you do?", "你好", "谢谢"])
def test_small_talk_takes_the_direct_path_in_agentic_mode_only(settings, lovelace, message):
    engine = ChatEngine(settings, lovelace)
    turn = engine.ask("g", message, mode="agentic")
    assert turn.mode == "direct" and turn.sources == [] and searches(turn) == 0
    assert "without searching" in turn.answer or "未检索" in turn.answer
    assert searches(engine.ask("h", message, mode="default")) >= 1


def test_a_comparison_retrieves_both_sides(settings, kb):
    kb.ingest(b"The Sundergate Tower is an office tower. It is 214 metres tall.", filename="sundergate.txt")
    kb.ingest(b"The Wrayburn Spire is a church spire. It rises 96 metres above the square.", filename="wrayburn.txt")
    kb.ingest(b"The Sundergate Bridge is 40 metres tall and crosses the river.", filename="bridge.txt")
    turn = ChatEngine(settings, kb).ask("c", "Which is taller, the Sundergate Tower or the Wrayburn Spire?",
                                        mode="agentic")
    cited = {source.filename for source in turn.sources if source.cited}
    assert cited == {"sundergate.txt", "wrayburn.txt"}
    assert "214 metres" in turn.answer and "96 metres" in turn.answer
    planned = next(step.detail for step in turn.trace if step.step == "Planned")
    assert "Sundergate Tower" in planned and "Wrayburn Spire" in planned


def test_a_comparison_whose_sides_are_in_no_document_is_not_found(settings, lovelace):
    """Each side searched reaches an unrelated passage: no part is covered, so nothing is
    quoted side by side; the closest passages are shown apart, as the default path does."""
    turn = ChatEngine(settings, lovelace).ask("n", "Which is taller, the Sundergate Tower or the Wrayburn Spire?",
                                              mode="agentic")
    assert not turn.found and turn.sources == [] and turn.closest
    steps = [step.step for step in turn.trace]
    assert steps[-1] == "Not found" and "Sufficiency" in steps and "Answered" not in steps


def test_a_chinese_comparison_side_is_judged_on_its_own_passage(settings, kb):
    kb.ingest("闻笛秋\n闻笛秋是一位作曲家，1921年出生于苏州。".encode(), filename="闻笛秋.txt")
    kb.ingest("鲁庭芳\n鲁庭芳是一位作曲家，1934年出生于杭州。".encode(), filename="鲁庭芳.txt")
    turn = ChatEngine(settings, kb).ask("z", "作曲家闻笛秋和作曲家鲁庭芳，谁出生得更早？", mode="agentic")
    assert turn.found and "闻笛秋" in turn.answer.split("。")[0]
    assert "1921" in turn.answer and "1934" in turn.answer
    verdicts = next(step.detail for step in turn.trace if step.step == "Sufficiency")
    assert "missing" not in verdicts


def _chain(kb, length: int) -> None:
    """Documents each naming the next one by title: Stage 1 → Stage 2 → …"""
    for number in range(1, length + 1):
        text = f"Stage {number}\nStage {number} of the relay hands the baton to Stage {number + 1}."
        kb.ingest(text.encode(), filename=f"Stage {number}.txt")


@pytest.mark.parametrize("cap", [1, 2, 3, 10])
def test_the_round_cap_stops_the_hops_before_langgraphs_recursion_limit(settings, kb, cap):
    _chain(kb, 12)
    engine = ChatEngine(settings.model_copy(update={"agentic_rounds": cap}), kb)
    turn = engine.ask("r", "Who takes the baton from the stage after the stage after Stage 1?", mode="agentic")
    assert searches(turn) == cap
    assert f"Round {cap}" in [step.step for step in turn.trace]


def test_a_single_hop_question_costs_one_round_and_the_default_answer(settings, lovelace):
    engine = ChatEngine(settings, lovelace)
    question = "When was Charles Babbage born?"
    agentic, default = engine.ask("s1", question, mode="agentic"), engine.ask("s2", question, mode="default")
    assert searches(agentic) == 1 and agentic.answer == default.answer


def test_the_mode_is_kept_per_conversation_and_the_setting_names_new_ones(settings, lovelace):
    engine = ChatEngine(settings.model_copy(update={"chat_mode": "agentic"}), lovelace)
    assert engine.mode_for("new") == "agentic"
    engine.history.set_session_mode("plain", "default")
    assert engine.mode_for("plain") == "default"
    assert engine.ask("plain", "hello").mode != "direct"
    assert engine.ask("new", "hello").mode == "direct"
    with pytest.raises(QuestionError):
        engine.ask("x", "hello", mode="clever")


def test_the_mode_column_is_a_migration(tmp_path):
    history = HistoryManager(tmp_path / "sessions.sqlite3")
    history.set_session_mode("s", "agentic")
    history.close()
    assert HistoryManager(tmp_path / "sessions.sqlite3").session_mode("s") == "agentic"


# ----- the offline pieces ------------------------------------------------------------------


def test_comparisons_are_split_into_their_two_sides():
    assert comparison_sides("Who was born earlier, the composer Adela Voskuyl or the composer Bertrand Kael?").sides \
        == ("Adela Voskuyl", "Bertrand Kael")
    assert comparison_sides("Were Fjellmark Motors and Corrin Automotive founded by the same person?").sides == \
        ("Fjellmark Motors", "Corrin Automotive")
    assert comparison_sides("望潮塔和栖鹤塔，哪一座更高？").sides == ("望潮塔", "栖鹤塔")
    assert comparison_sides("What is the population of Jan Mayen?") is None


def test_hop_structure_and_bridges():
    assert has_hop_structure("In which town was the founder of the company that makes the K4 born?")
    assert has_hop_structure("发明旋羽测风仪的人在哪所大学任教？")
    assert not has_hop_structure("When was Charles Babbage born?")
    titles = {"Brightwick K4": "a", "Brightwick": "b", "Halvorsen Outdoor Works": "c", "notes": "d"}
    assert mentioned_titles("The Brightwick K4 is made by Halvorsen Outdoor Works; see notes.", titles) == \
        ["Halvorsen Outdoor Works", "Brightwick K4"]
    assert name_candidates("It was designed by Charles Babbage.", "Who designed it?") == ["Charles Babbage"]
    assert "杭素岚" in name_candidates("它的发明者是气象学家杭素岚。", "发明旋羽测风仪的人在哪所大学任教？")


def test_a_title_cut_off_by_its_full_stop_or_a_date_is_no_bridge():
    names = name_candidates("The Rev. Theodore Hesburgh was president. A fire in April 1879 destroyed it.",
                            "How many faculty members were there?")
    assert names == ["Theodore Hesburgh"]


def _hop(entity, text, from_id="", round_number=1, title="t"):
    position = round_number
    hit = Hit(Passage(text, 1, position, 0, len(text), 1, doc_id=f"d{position}"), title, f"{title}.txt", "txt", 0.5)
    return HopLink(entity, hit, from_id, round_number)


def test_a_hop_is_kept_for_what_it_says_about_its_bridge_not_for_naming_it():
    question = "Where was the designer of the machine Ada Lovelace wrote an algorithm for born?"
    ada = _hop(question, "Ada Lovelace wrote an algorithm for the Analytical Engine designed by Charles Babbage.")
    babbage = _hop("Charles Babbage", "Charles Babbage was born in London in 1791.", ada.hit.id, 2, "babbage")
    assert hops_kept(question, [ada, babbage], {})  # "born": said about the bridge
    question = "On what date was the rebuilding of the Main Building begun at Notre Dame?"
    fire = _hop(question, "The Main Building was destroyed by a fire, and rebuilding was begun in May.")
    song = _hop("University of Notre Dame", "The Victory March is the fight song of the University of Notre Dame.",
                fire.hit.id, 2, "song")
    assert not hops_kept(question, [fire, song], {})  # "Notre Dame" only in the bridge's own name
    corby = _hop("William Corby", "William Corby, president of Notre Dame, led the rebuilding.", fire.hit.id, 2,
                 "corby")
    assert hops_kept(question, [fire, corby], {})
    # ... but "Notre Dame" is what most passages of this knowledge base say: a hop adding only it is a detour
    assert not hops_kept(question, [fire, corby], {"notr": 0.1, "dame": 0.1})


def test_a_chinese_question_joining_the_thing_asked_for_is_no_comparison():
    assert comparison_sides("T-92理想上可与什么一起串联，组成完整防空火网？") is None


@pytest.mark.parametrize("question", ["青岚茶业与自然保护协会的英文名是什么？",  # one name
                                      "林志远与陈默交好，得到了什么奖励？",  # a clause
                                      "青岚茶园和白石书院，有哪些活动？"])  # a list, not a choice
def test_a_chinese_and_that_compares_nothing_is_no_comparison(question):
    assert comparison_sides(question) is None


@pytest.mark.parametrize("question", ["琅溪和碧涧河是否都注入白漪湖？", "男子和女子的平均年收入分别是多少？",
                                      "红茶和绿茶的区别是什么？", "望潮塔和栖鹤塔，哪一座更高？"])
def test_a_chinese_choice_both_or_difference_is_a_comparison(question):
    assert comparison_sides(question) is not None


def test_a_web_result_for_one_side_replaces_that_sides_passage_only():
    """Sides are found by what was searched, not by position: side A reached nothing, side
    B did; A's web result must not take B's place."""
    state = AgentState(question="q", sub_questions=["Alpha Tower Which is taller",
                                                                   "Beta Spire Which is taller"])
    beta = _hop("Beta Spire Which is taller", "The Beta Spire is 96 metres tall.", title="beta")
    assert side_link([beta], "Alpha Tower Which is taller") is None
    web = _hop("ignored", "The Alpha Tower is 214 metres tall.", round_number=2, title="alpha").hit
    links = with_web_link(state, [beta], 0, "Alpha Tower Which is taller", web)
    assert side_link(links, "Alpha Tower Which is taller").hit is web
    assert side_link(links, "Beta Spire Which is taller") is beta


def test_chinese_kind_nouns_narrow_only_varieties_names_prices_dates_and_addresses():
    assert question_terms("北京人口是多少？")[1] == frozenset({"人口"})  # 北京 must still be said
    assert "茶叶" in question_terms("茶园的主要茶叶品种是什么？")[1]


def test_a_chinese_side_is_graded_without_the_comparisons_wording():
    assert side_question("闻笛秋 谁出生得更早") == "闻笛秋 出生"
    assert side_question("砚溪中学 哪一所建校更早") == "砚溪中学 建校"
    assert side_question("Adela Voskuyl Who was born earlier") == "Adela Voskuyl Who was born earlier"


def test_a_chain_says_the_date_it_asks_for_about_its_bridge_not_its_subject(settings):
    """The date of "When was the designer of the Analytical Engine born?" is in a sentence
    naming the designer (the chain's bridge), not the engine."""
    chain = Hit(Passage("The Analytical Engine was designed by Charles Babbage.\nCharles Babbage was born in 1791.",
                        1, 0, 0, 90, 1, doc_id="d"), "t", "t.txt", "txt", 0.5)
    question = "When was the designer of the Analytical Engine born?"
    idf = {"analyt": 3.0, "engin": 3.0, "design": 1.0, "born": 1.0}
    assert grade_offline(question, [chain], idf, None, settings).score == 0.0  # the subject's gate
    assert grade_offline(question, [chain], idf, None, settings, ("Charles Babbage",)).score > 0.0
    assert says_asked_kind(question, [chain], idf) is False
    assert says_asked_kind(question, [chain], idf, ("Charles Babbage",)) is True


def test_rounds_merge_by_passage_keeping_the_best_score():
    def hit(position, score):
        return Hit(Passage("t", 1, position, 0, 1, 1, doc_id="d"), "t", "t.txt", "txt", score)

    merged = merge_hits([hit(0, 0.4), hit(1, 0.9)], [hit(0, 0.7), hit(2, 0.1)])
    assert [(h.passage.position, h.score) for h in merged] == [(1, 0.9), (0, 0.7), (2, 0.1)]


def test_eval_multihop_reports_evidence_per_mode_and_language(settings, embedder, tmp_path):
    items = [
        {"_id": "1", "lang": "en", "type": "bridge", "question": "Which river flows through the hometown of the "
         "drummer of The Copper Finches?", "answer": "River Tamsley",
         "supporting_facts": [["The Copper Finches", 1], ["Jonah Peverell", 1], ["Eddlestowe", 1]],
         "context": [["The Copper Finches", ["The Copper Finches are an indie band.",
                                             "Their drummer is Jonah Peverell."]],
                     ["Jonah Peverell", ["Jonah Peverell is a drummer.", "He grew up in Eddlestowe."]],
                     ["Eddlestowe", ["Eddlestowe is a market town.", "The River Tamsley flows through it."]],
                     ["Jonah Pevensey", ["Jonah Pevensey was a pianist born on the River Ambel."]]]},
    ]
    path = tmp_path / "mh.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    agentic = run_multihop(path, settings.model_copy(update={"chat_mode": "agentic"}), embedder=embedder)
    assert agentic["evidence_all_found"] == 1.0 and agentic["en"]["evidence_recall"] == 1.0
    assert agentic["answer_contains"] == 1.0 and agentic["rounds_mean"] == 3
    assert agentic["comparison_correct"] is None and agentic["evidence_passages_mean"] <= 8


# ----- with a model (the local OpenAI-compatible server) -------------------------------------


def test_with_a_model_the_route_is_its_verdict_and_an_unusable_one_falls_back_to_the_rule(settings, lovelace):
    def responder(body):
        system = body["messages"][0]["content"]
        if "where a chat message" in system:
            return structured(route="small_talk") if "weather" in body["messages"][-1]["content"] else Reply("??")
        return Reply("Babbage was born in London [1].")

    with ScriptedOpenAIServer(responder) as server:
        engine = ChatEngine(llm_settings(settings, server.base_url), lovelace)
        chat = engine.ask("w", "Nice weather today, isn't it", mode="agentic")
        assert chat.mode == "direct" and "test-model" in chat.trace[0].detail
    with ScriptedOpenAIServer(responder) as server:
        engine = ChatEngine(llm_settings(settings, server.base_url), lovelace)
        hello = engine.ask("h", "hello", mode="agentic")
        assert hello.mode == "direct" and "unusable" in hello.trace[0].detail


def test_with_a_model_the_prompt_holds_both_hops(settings, lovelace):
    def responder(body):
        system = body["messages"][0]["content"]
        if "where a chat message" in system:
            return structured(route="knowledge_base")
        if "judge whether the passages" in system:
            return structured(sufficient=True, reason="ok")
        return Reply("The Analytical Engine was designed by Charles Babbage [1], who was born in London [2].")

    with ScriptedOpenAIServer(responder) as server:
        turn = ChatEngine(llm_settings(settings, server.base_url), lovelace).ask("m", LOVELACE, mode="agentic")
        prompt = [b for b in server.requests if "answers questions from the user's own documents"
                  in b["messages"][0]["content"]][-1]["messages"][-1]["content"]
    assert "Charles Babbage was born in London" in prompt and "Ada Lovelace wrote an algorithm" in prompt
    assert "Hops followed" in prompt
    assert turn.mode == "llm" and [s.filename for s in turn.sources if s.cited] == ["ada.txt", "babbage.txt"]


def _side(title: str, text: str) -> Hit:
    return Hit(Passage(text, 1, 0, 0, len(text), 1, doc_id=title), title, f"{title}.txt", "txt", 1.0)


@pytest.mark.parametrize(("question", "texts", "decided"), [
    ("Who was born earlier, the composer Adela Voskuyl or the composer Bertrand Kael?",
     ["Adela Voskuyl (1874–1950) was a composer.", "Bertrand Kael (1866–1931) was an organist."], "Bertrand Kael"),
    ("Which lake is deeper, Lake Ostry or Lake Vennel?",
     ["Lake Ostry reaches a depth of 88 metres.", "Lake Vennel is 143 metres deep."], "Lake Vennel"),
    ("Do the Pellan River and the Anwick River flow into the same sea?",
     ["The Pellan River flows into the Gullmere Sea.", "The Anwick River enters the Gullmere Sea."], "Yes"),
    ("Were Fjellmark Motors and Corrin Automotive founded by the same person?",
     ["Fjellmark Motors was founded by Sigrun Dahle.", "Corrin Automotive was founded by Oskar Brem."], "No"),
    ("望潮塔和栖鹤塔，哪一座更高？",
     ["望潮塔是一座砖塔。望潮塔高四十三米。", "栖鹤塔是一座石塔。栖鹤塔高五十一米。"], "栖鹤塔"),
    ("萤火信号乐队和纸鸢电台乐队是否在同一年成立？",
     ["萤火信号乐队成立于2009年。", "纸鸢电台乐队于2009年成立。"], "是"),
    ("Which is taller, the Sundergate Tower or the Wrayburn Spire?",
     ["The Sundergate Tower is an office tower.", "The Wrayburn Spire is a church spire."], ""),  # no numbers
])
def test_a_comparison_is_decided_from_the_two_facts_where_they_allow_it(question, texts, decided):
    comparison = comparison_sides(question)
    hits = [_side(side, text) for side, text in zip(comparison.sides, texts)]
    facts = [side_fact(question, part, side, hit) for part, side, hit in
             zip(comparison.sub_questions(), comparison.sides, hits)]
    assert all(facts)
    assert verdict(question, comparison, facts, hits) == decided


def test_chinese_numerals_are_read_as_numbers():
    assert [cjk_numeral(text) for text in ("四十三", "八百二十", "一千二百", "三万二千", "一九〇五")] == \
        [43, 820, 1200, 32000, 1905]
    assert first_number("栖鹤塔是一座石塔") is None  # 一座: an article, not a number


def test_a_comparison_in_time_compares_years_and_any_other_a_measure():
    assert compared_number("Which festival is older?", "It has 40 stalls; first held in 1761, by farmers.") == 1761
    assert compared_number("Which university has more students?", "Founded in 1892, it has 21,000 students.") == 21000
    assert compared_number("哪一所建校更早？", "学校现有学生两千余人，创办于1928年。") == 1928

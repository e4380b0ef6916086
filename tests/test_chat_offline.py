"""Offline conversations: extractive answers, citations, contextualization, sessions."""

import pytest

from conftest import FIXTURES
from ragkit.answering.citations import cited_markers
from ragkit.app.engine import ChatEngine, QuestionError
from ragkit.app.history import HistoryManager


@pytest.fixture
def engine(kb, settings):
    for name in ["report_en.pdf", "tea_garden_zh.pdf", "handbook.docx"]:
        kb.ingest(FIXTURES / name)
    chat = ChatEngine(settings, kb)
    assert chat.status.mode == "extractive"
    return chat


def test_english_answer_quotes_the_source_with_valid_markers(engine):
    turn = engine.ask("s1", "What was the revenue in the third quarter?")
    assert turn.mode == "extractive"
    assert "4.2 million euros" in " ".join(turn.answer.split())
    markers = cited_markers(turn.answer)
    numbers = {source.n for source in turn.sources}
    assert markers and set(markers) <= numbers
    cited = [s for s in turn.sources if s.cited]
    assert cited[0].filename == "report_en.pdf" and cited[0].page == 2
    assert cited[0].quote in " ".join(cited[0].text.split()) or cited[0].quote in cited[0].text


def test_chinese_answer_is_short_and_cited(engine):
    turn = engine.ask("s1", "茶园的门票价格是多少？")
    assert "六十元" in turn.answer
    assert len(turn.answer) <= engine.settings.extractive_chars_cjk + 10
    assert any(s.cited and s.filename == "tea_garden_zh.pdf" for s in turn.sources)


def test_follow_up_is_contextualized_offline_and_first_turn_is_not(engine):
    first = engine.ask("tea", "青松茶园在哪里？")
    assert first.standalone_question == first.question
    follow = engine.ask("tea", "它每天几点开放？")
    assert follow.standalone_question != follow.question
    assert "青松茶园" in follow.standalone_question
    assert "八点" in follow.answer


def test_english_follow_up_carries_the_subject(engine):
    engine.ask("en", "Who founded Aurora Analytics?")
    follow = engine.ask("en", "Where does it plan to open an office?")
    assert "Aurora" in follow.standalone_question
    assert "Osaka" in follow.answer


def test_turn_records_timings_and_sources(engine):
    turn = engine.ask("s1", "How much is the comet curry?")
    for key in ("contextualize_ms", "retrieve_ms", "generate_ms", "total_ms"):
        assert key in turn.timings
    assert turn.sources and turn.id is not None


def test_stream_yields_tokens_then_done(engine):
    events = list(engine.stream("s2", "When does the kitchen serve breakfast?"))
    tokens = [e["text"] for e in events if e["type"] == "token"]
    assert tokens and all(token.rstrip().endswith("]") for token in tokens)  # sentence by sentence, each cited
    assert events[-1]["type"] == "done"
    assert "".join(tokens) == events[-1]["turn"].answer
    sources_at = next(i for i, e in enumerate(events) if e["type"] == "sources")
    assert sources_at < next(i for i, e in enumerate(events) if e["type"] == "token")  # sources come first


@pytest.mark.parametrize("question", ["", "   ", "？？？", "...!!!"])
def test_punctuation_or_empty_question_is_refused_and_nothing_recorded(engine, question):
    with pytest.raises(QuestionError):
        engine.ask("s3", question)
    assert not engine.history.exists("s3")


def test_question_about_nothing_in_the_store_says_so(settings, kb):
    engine = ChatEngine(settings, kb)
    turn = engine.ask("empty", "What is the capital of Mars?")
    assert "could not find" in turn.answer and turn.sources == []


def test_sessions_are_isolated_and_survive_a_restart(engine, settings):
    engine.ask("alpha", "青松茶园在哪里？")
    engine.ask("beta", "Who founded Aurora Analytics?")
    engine.ask("alpha", "它每天几点开放？")
    reopened = HistoryManager(settings.data_path / "sessions.sqlite3")
    alpha = reopened.turns("alpha")
    beta = reopened.turns("beta")
    assert [t.question for t in alpha] == ["青松茶园在哪里？", "它每天几点开放？"]
    assert [t.question for t in beta] == ["Who founded Aurora Analytics?"]
    assert alpha[1].sources and alpha[1].sources[0].doc_id
    titles = {info.id: info.title for info in reopened.list_sessions()}
    assert titles["alpha"] == "青松茶园在哪里？"
    assert reopened.rename("alpha", "茶园").title == "茶园"
    reopened.delete("alpha")
    assert not reopened.exists("alpha") and reopened.turns("alpha") == []
    assert reopened.exists("beta")


def test_exports_include_sources(engine):
    engine.ask("exp", "What was the revenue in the third quarter?")
    markdown = engine.history.export_markdown("exp")
    assert "report_en.pdf" in markdown and "## 1. What was the revenue" in markdown
    import json

    payload = json.loads(engine.history.export_json("exp"))
    assert payload["turns"][0]["sources"][0]["filename"]


def test_history_for_prompts_is_trimmed_but_storage_is_whole(engine):
    for n in range(6):
        engine.ask("long", f"What was the revenue in quarter {n}?")
    recent = engine.history.recent_exchanges("long", max_turns=3, max_tokens=10_000)
    assert len(recent) == 3 and recent[-1].question.endswith("quarter 5?")
    assert "revenue" in recent[-1].evidence.lower()  # the passage that answered it travels along
    tiny = engine.history.recent_exchanges("long", max_turns=6, max_tokens=5)
    assert len(tiny) == 1
    assert len(engine.history.turns("long")) == 6


def test_a_question_with_undecodable_bytes_is_refused_in_words(engine):
    with pytest.raises(QuestionError, match="not valid UTF-8"):
        engine.ask("s4", "caf\udce9 opening hours?")
    assert not engine.history.exists("s4")

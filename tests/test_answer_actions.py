"""Acting on answers, in the library: regenerate, edit and resend, thumbs up/down with a
comment, searching conversations, exports that keep what was replaced, and a model asked
for by a name that is not configured."""

import json

import pytest

from conftest import FIXTURES
from inert_markdown import parse, tags, visible
from ragkit.app.engine import ChatEngine
from ragkit.app.history import THUMBS_DOWN, THUMBS_UP, HistoryManager
from ragkit.app.render import WORD_JOINER
from ragkit.errors import InputError, ModelNotFound, QuestionError, SessionError
from ragkit.types import Source, Turn


@pytest.fixture
def engine(kb, settings):
    kb.ingest(FIXTURES / "report_en.pdf")
    return ChatEngine(settings, kb)


def test_regenerate_answers_the_same_question_again_in_place_of_the_last_turn(engine):
    first = engine.ask("r", "Who founded Aurora Analytics?")
    second = engine.ask("r", "Where does it plan to open an office?")
    again = engine.regenerate("r")
    assert again.question == second.question and again.id != second.id
    assert "Osaka" in again.answer, "the follow-up is answered with the history before it"
    assert [turn.id for turn in engine.history.turns("r")] == [first.id, again.id]
    everything = engine.history.turns("r", include_replaced=True)
    assert [(turn.id, turn.replaced_by) for turn in everything] == [(first.id, None), (second.id, again.id),
                                                                   (again.id, None)]
    assert engine.history.session("r").turns == 2
    recent = engine.history.recent_exchanges("r", max_turns=10, max_tokens=10_000)
    assert [exchange.question for exchange in recent][-1] == again.standalone_question
    assert len(recent) == 2, "a replaced turn is no longer history for the next question"


def test_edit_and_resend_replaces_the_last_question_and_keeps_the_history_before_it(engine):
    engine.ask("e", "Who founded Aurora Analytics?")
    typo = engine.ask("e", "Where does it plan to open a ofice?")
    edited = engine.ask("e", "Where does it plan to open an office?", replace_last=True)
    assert "Osaka" in edited.answer
    assert "Aurora" in edited.standalone_question, "still a follow-up of the first question"
    questions = [turn.question for turn in engine.history.turns("e")]
    assert questions == ["Who founded Aurora Analytics?", "Where does it plan to open an office?"]
    assert engine.history.turn("e", typo.id).replaced_by == edited.id


def test_nothing_is_replaced_when_the_new_question_is_refused_or_there_is_none(engine):
    kept = engine.ask("n", "Who founded Aurora Analytics?")
    with pytest.raises(QuestionError):
        engine.ask("n", "？？", replace_last=True)
    assert [turn.id for turn in engine.history.turns("n")] == [kept.id]
    assert engine.history.turn("n", kept.id).live
    with pytest.raises(SessionError, match="no question to answer again"):
        engine.regenerate("never-asked")
    with pytest.raises(SessionError):
        engine.ask("never-asked", "Who founded Aurora Analytics?", replace_last=True)
    assert not engine.history.exists("never-asked")


def test_feedback_is_stored_with_the_turn_counted_changed_and_taken_back(engine):
    turn = engine.ask("f", "Who founded Aurora Analytics?")
    other = engine.ask("g", "Who founded Aurora Analytics?")
    history = engine.history
    assert history.set_feedback("f", turn.id, THUMBS_DOWN, "  names only one founder  ").feedback_comment == (
        "names only one founder")
    history.set_feedback("g", other.id, THUMBS_UP)
    counts = history.feedback_counts()
    assert (counts.up, counts.down, counts.comments) == (1, 1, 1)
    assert [(session, t.feedback_comment) for session, t in history.feedback_comments()] == [
        ("f", "names only one founder")]

    history.set_feedback("f", turn.id, THUMBS_UP, "")  # changed their mind
    assert history.turns("f")[0].feedback == THUMBS_UP and history.feedback_counts().down == 0
    history.set_feedback("f", turn.id, None, "ignored without a rating")
    assert history.turn("f", turn.id).feedback is None and history.turn("f", turn.id).feedback_comment == ""
    assert history.feedback_counts().up == 1

    with pytest.raises(SessionError):
        history.set_feedback("f", other.id, THUMBS_UP)  # a turn of another conversation
    with pytest.raises(InputError, match="thumbs up"):
        history.set_feedback("f", turn.id, 5)
    with pytest.raises(InputError, match="limit is 2000"):
        history.set_feedback("f", turn.id, THUMBS_DOWN, "x" * 2001)


def test_a_regenerated_answers_rating_still_counts(engine):
    rated = engine.ask("rr", "Who founded Aurora Analytics?")
    engine.history.set_feedback("rr", rated.id, THUMBS_DOWN, "too short")
    engine.regenerate("rr")
    assert engine.history.feedback_counts().down == 1
    assert engine.history.turns("rr")[0].feedback is None


def test_search_finds_conversations_by_title_question_and_answer_in_any_case_and_script(tmp_path):
    history = HistoryManager(tmp_path / "sessions.sqlite3")
    try:
        history.add_turn("tea", Turn("青松茶园在哪里？", "", "青松茶园位于福建省武夷山。", "extractive"))
        history.add_turn("aurora", Turn("Who founded Aurora Analytics?", "", "Marta Silva founded it in 2011.",
                                        "extractive"))
        history.add_turn("aurora", Turn("Where is the ÜBER office?", "", "In Osaka.", "extractive"))
        history.add_turn("other", Turn("What is the revenue?", "", "Revenue grew 18%.", "extractive"))
        history.rename("other", "Quarterly numbers")

        assert [m.info.id for m in history.search("marta")] == ["aurora"]
        assert [m.info.id for m in history.search("über osaka")] == ["aurora"], "every word, anywhere in it"
        assert history.search("marta revenue") == []
        assert [m.info.id for m in history.search("武夷山")] == ["tea"]
        title_match = history.search("quarterly")[0]
        assert title_match.info.id == "other" and title_match.in_title and title_match.snippet == ""
        snippet = history.search("Silva")[0].snippet
        assert "Marta Silva founded it" in snippet
        assert history.search("   ") == []
    finally:
        history.close()


def test_search_leaves_out_what_was_replaced(tmp_path):
    history = HistoryManager(tmp_path / "sessions.sqlite3")
    try:
        typo = history.add_turn("s", Turn("Who founded Aurora in Lisbonn?", "", "Marta Silva.", "extractive"))
        edited = history.add_turn("s", Turn("Who founded Aurora?", "", "Marta Silva.", "extractive"))
        history.replace_turn("s", typo.id, edited.id)
        assert history.search("lisbonn") == []
        assert [m.info.id for m in history.search("aurora")] == ["s"]
        assert history.session("s").title == "Who founded Aurora?", "a title made from the typo follows the edit"
        history.rename("s", "Founders")
        again = history.add_turn("s", Turn("Who founded Aurora Analytics?", "", "Marta Silva.", "extractive"))
        history.replace_turn("s", edited.id, again.id)
        assert history.session("s").title == "Founders", "a title the user gave stays"
    finally:
        history.close()


def test_exports_keep_replaced_answers_and_feedback_and_read_as_typed(tmp_path):
    history = HistoryManager(tmp_path / "sessions.sqlite3")
    quote = ("Dr. Silva met the board at 14:33 on 2024-05-02; the well-known founder said revenue grew "
             "by a third. ") * 4
    source = Source(n=1, chunk_id="c", doc_id="d", title="Q3 report", filename="report_en-2.pdf", page=3,
                    text=quote, quote=quote, start=0, end=len(quote), score=1.0, cited=False)
    try:
        old = history.add_turn("x", Turn("When did Dr. Silva meet the board?", "", "At 14:33 [1].", "extractive",
                                         sources=[source]))
        new = history.add_turn("x", Turn("When did Dr. Silva meet the board?", "", "At 14:33, on 2 May [1].",
                                         "extractive", sources=[source]))
        history.replace_turn("x", old.id, new.id)
        history.set_feedback("x", new.id, THUMBS_UP, "exact time, thanks")
        markdown = history.export_markdown("x")
        payload = json.loads(history.export_json("x"))
    finally:
        history.close()
    assert "## 1. When did Dr. Silva meet the board?" in markdown
    assert markdown.count("## 1. When did Dr. Silva meet the board?") == 2, "the replaced answer is kept"
    assert "*Replaced: this answer was regenerated below.*" in markdown
    assert "*Feedback:* 👍 helpful: “exact time, thanks”" in markdown
    assert "Conversation x, 1 question." in markdown
    for typed in ("Dr. Silva", "14:33", "2024-05-02", "well-known", "report_en-2.pdf", "At 14:33 [1]."):
        assert typed in markdown, f"{typed!r} is written as typed"
    assert "\\" not in markdown.replace("\\[1\\]", ""), "no backslash but the source numbers' brackets"
    assert WORD_JOINER not in markdown
    also = next(line for line in markdown.splitlines() if "(also retrieved)" in line)
    cut = also.split("“", 1)[1].rstrip("”")
    assert cut.endswith("…") and quote.startswith(cut[:-1]) and quote[len(cut) - 1] == " ", \
        "the quote is cut between words"
    rendered, _ = parse(markdown)
    assert tags(rendered) <= {"h1", "h2", "p", "em", "ul", "li"}
    assert "Dr. Silva met the board at 14:33" in visible(rendered)
    assert [turn["replaced_by"] for turn in payload["turns"]] == [new.id, None]
    assert payload["turns"][1]["feedback"] == THUMBS_UP and payload["turns"][1]["feedback_comment"]


def test_an_unknown_model_is_refused_with_the_known_ones(engine):
    with pytest.raises(ModelNotFound, match=r"no model 'no-such-model' is configured; the known ones are: extractive"):
        engine.ask("m", "Who founded Aurora Analytics?", model="no-such-model")
    assert not engine.history.exists("m"), "nothing was answered"
    assert engine.ask("m", "Who founded Aurora Analytics?", model="extractive").mode == "extractive"


def test_a_deleted_conversations_id_is_remembered_until_something_is_asked_under_it(tmp_path):
    history = HistoryManager(tmp_path / "sessions.sqlite3")
    try:
        history.add_turn("gone", Turn("Who founded Aurora?", "", "Marta Silva.", "extractive"))
        assert not history.was_deleted("gone")
        history.delete("gone")
        assert history.was_deleted("gone") and not history.exists("gone")
        assert not history.was_deleted("never-there")
        with pytest.raises(SessionError):  # deleting twice is an error; the mark stays
            history.delete("gone")
        assert history.was_deleted("gone")
        history.add_turn("gone", Turn("Asked on purpose, e.g. from the CLI", "", "ok", "extractive"))
        assert not history.was_deleted("gone")
    finally:
        history.close()
    reopened = HistoryManager(tmp_path / "sessions.sqlite3")
    try:
        reopened.delete("gone")
    finally:
        reopened.close()
    again = HistoryManager(tmp_path / "sessions.sqlite3")
    try:
        assert again.was_deleted("gone"), "the mark survives a restart"
    finally:
        again.close()


def test_copying_an_answer_gives_its_text_and_the_sources_it_cites():
    cited = Source(n=1, chunk_id="c1", doc_id="d", title="Q3 report", filename="report_en.pdf", page=3,
                   text="t", quote="q", start=0, end=1, score=1.0, cited=True)
    other = Source(n=2, chunk_id="c2", doc_id="d", title="Q3 report", filename="report_en.pdf", page=4,
                   text="t", quote="q", start=0, end=1, score=0.5, cited=False)
    turn = Turn("Where?", "", "  In Osaka [1].\n", "extractive", sources=[cited, other])
    assert turn.as_text() == "In Osaka [1].\n\n[1] Q3 report, report_en.pdf, p. 3"
    assert Turn("Where?", "", "Not in your documents.", "not_found").as_text() == "Not in your documents."


def test_a_passages_match_is_said_in_words_with_the_numbers_kept_for_a_tooltip():
    from ragkit.answering.citations import match_strength
    from ragkit.config import Settings

    settings = Settings(_env_file=None)

    def source(text, score=1.0):
        return Source(n=1, chunk_id="c", doc_id="d", title="T", filename="f.pdf", page=1, text=text, quote=text,
                      start=0, end=len(text), score=score, cited=True, dense_score=0.62, lexical_score=4.11)

    question = "When does the Orbital Kitchen serve breakfast?"
    strong = match_strength(question, source("The Orbital Kitchen serves breakfast from 06:00 to 09:30."), settings)
    partial = match_strength(question, source("The Orbital Kitchen opens at noon."), settings)
    weak = match_strength(question, source("Docking bays are on deck four."), settings)
    assert (strong.label, partial.label, weak.label) == ("strong match", "partial match", "weak match")
    assert strong.found > partial.found > weak.found == 0 and strong.wanted == partial.wanted > 0
    assert strong.detail == f"holds {strong.found} of the question's {strong.wanted} key words"
    assert "semantic similarity 0.62" in strong.scores and "keyword score (BM25) 4.11" in strong.scores
    assert match_strength("青松茶园在哪里？", source("青松茶园位于福建省武夷山。"), settings).label == "strong match"


def test_a_search_in_one_chosen_document_is_told_in_the_singular(engine):
    from ragkit.types import SearchFilters

    doc_id = engine.kb.documents()[0].id
    turn = engine.ask("one", "Who founded Aurora Analytics?", SearchFilters(doc_ids=[doc_id]))
    searched = next(step.detail for step in turn.trace if step.step == "Searched")
    assert "in 1 chosen document," in searched


def test_the_stats_name_each_kind_of_answer_in_words(tmp_path):
    from ragkit.app.stats import turns_frame

    history = HistoryManager(tmp_path / "sessions.sqlite3")
    try:
        for mode in ("extractive", "llm", "not_found"):
            history.add_turn(mode, Turn("Q?", "", "A.", mode))
        frame = turns_frame(history)
    finally:
        history.close()
    assert sorted(frame["outcome"]) == ["not in the documents", "quoted from the documents", "written by a model"]

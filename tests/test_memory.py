"""Memory for long conversations: older turns fold into a running summary kept with the
session, used to read follow-ups, shown in the trace; the prompt stays inside the context
budget however long the conversation grows (offline, and against the scripted model server)."""

import json

import pytest

from llm_helpers import llm_settings
from ragkit.answering.memory import ConversationMemory, FoldedTurn, fold_offline
from ragkit.app.engine import ChatEngine
from ragkit.app.history import MIGRATIONS, HistoryManager
from ragkit.lang.text import count_tokens
from ragkit_dev.devserver import Reply, ScriptedOpenAIServer, structured

LIGHTHOUSES = {
    "Skerry Point Lighthouse": "Skerry Point Lighthouse stands 42 metres tall on a granite ledge. It was first lit "
                               "in 1852 by the Northern Lights Board.",
    "Marrow Head Lighthouse": "Marrow Head Lighthouse stands 19 metres tall above the harbour. It was first lit "
                              "in 1907 and automated in 1988.",
    "Gannet Rock Lighthouse": "Gannet Rock Lighthouse stands 31 metres tall on a sea stack. It was first lit in "
                              "1875 and its keepers left in 1995.",
}
TOPICS = ["When was Skerry Point Lighthouse first lit?", "When was Marrow Head Lighthouse first lit?",
          "When was Gannet Rock Lighthouse first lit?"]
SMALL_TALK = ["Thanks!", "Hello!", "Thank you so much!", "Cheers!"]


@pytest.fixture
def lighthouses(kb):
    for title, body in LIGHTHOUSES.items():
        kb.ingest(f"# {title}\n\n{body}".encode(), filename=title.lower().replace(" ", "_") + ".md")
    return kb


def long_conversation(engine, session, turns=39):
    """``turns`` turns: questions about the lighthouses, Marrow Head last, then small talk
    in the last turns the prompts carry word for word."""
    questions = [TOPICS[i % 3] for i in range(turns - len(SMALL_TALK))]
    questions[-1] = TOPICS[1]
    for question in questions + SMALL_TALK:
        engine.ask(session, question, mode="agentic")


def test_folding_is_deterministic_and_the_summary_stays_within_its_tokens():
    names = {n: "K" + "aeiou"[n % 5] + "bdglmnprst"[n // 6] + "ra" for n in range(1, 60)}  # Kabra, Kebra...
    turns = [FoldedTurn(n, f"When was {names[n]} Lighthouse first lit?",
                        f"{names[n]} Lighthouse was first lit in {1800 + n} [1].", True) for n in range(1, 60)]
    first = fold_offline(ConversationMemory(), turns[:30], 120)
    again = fold_offline(ConversationMemory(), turns[:30], 120)
    assert first == again and first.through_id == 30 and first.folded == 30
    grown = fold_offline(first, turns[30:], 120)
    assert count_tokens(grown.summary) <= 120 and grown.folded == 59
    assert grown.latest_subject == f"{names[59]} Lighthouse" and "first lit in 1859" in grown.summary  # the newest stay
    assert "1801" not in grown.summary and "[1]" not in grown.summary  # the oldest facts gave way, no markers
    assert ConversationMemory.from_dict(json.loads(json.dumps(grown.to_dict()))) == grown


def test_the_memory_is_a_new_numbered_migration():
    assert [m.__name__ for m in MIGRATIONS].index("_conversation_memory") + 1 == 6  # version 6; 7 is the owner


@pytest.mark.slow
def test_a_40_turn_conversation_folds_into_memory_and_still_resolves_a_follow_up_offline(settings, lighthouses):
    engine = ChatEngine(settings, lighthouses)
    long_conversation(engine, "long")
    turn = engine.ask("long", "How tall is it?", mode="agentic")  # turn 40: its previous turns are small talk
    assert turn.standalone_question == "How tall is Marrow Head Lighthouse?"
    assert "19 metres tall" in turn.answer
    remembered = next(step.detail for step in turn.trace if step.step == "Remembered")
    assert "earlier turns in a summary (offline" in remembered and "Marrow Head Lighthouse" in remembered
    stored = ConversationMemory.from_dict(engine.history.session_memory("long"))
    assert stored.folded == 40 - settings.history_turns - 1  # every turn before the window, kept with the session
    assert count_tokens(stored.summary) <= settings.memory_tokens
    # what the next turn's prompts carry is bounded however long it grew: the window and the summary
    history = engine.history.recent_exchanges("long", settings.history_turns, settings.history_tokens)
    assert len(history) <= settings.history_turns
    assert sum(count_tokens(e.question) + count_tokens(e.answer) for e in history) <= settings.history_tokens


def test_a_short_conversation_has_no_memory(settings, lighthouses):
    engine = ChatEngine(settings, lighthouses)
    for question in TOPICS:
        turn = engine.ask("short", question)
    assert engine.history.session_memory("short") is None
    assert not any(step.step == "Remembered" for step in turn.trace)


SUMMARY = "The user asked when lighthouses were first lit; last about Marrow Head Lighthouse (1907)."


def scripted_model(body):
    """A model that summarises with SUMMARY, rewrites a follow-up with the subject its
    prompt's summary names, and answers from source 1."""
    system = body["messages"][0]["content"]
    prompt = body["messages"][-1]["content"]
    if "running summary" in system:
        return Reply(SUMMARY)
    if "standalone question" in system:
        subject = "Marrow Head Lighthouse" if "Summary of earlier turns" in prompt and "Marrow Head" in prompt else "it"
        return structured(standalone_question=f"How tall is {subject}?")
    if "judge whether the passages" in system:
        return structured(sufficient=True, reason="passage 1")
    if "route" in system.lower() and "knowledge_base" in system:
        return structured(route="knowledge_base")
    return Reply("It stands 19 metres tall [1].")


@pytest.mark.slow
def test_a_40_turn_conversation_with_a_model_stays_inside_the_context_window(settings, lighthouses):
    with ScriptedOpenAIServer(scripted_model) as server:
        llm = llm_settings(settings, server.base_url, model_context_tokens=1500, max_answer_tokens=200,
                           llm_timeout_s=10.0, model_judge="on")
        engine = ChatEngine(llm, lighthouses)
        long_conversation(engine, "model")
        turn = engine.ask("model", "How tall is it?", mode="agentic")
        requests = list(server.requests)
    answers = [r for r in requests if r.get("stream")]
    assert len(answers) >= 30
    for body in answers:  # every prompt, however long the conversation, with room for its answer
        prompt = sum(count_tokens(m["content"]) for m in body["messages"])
        assert prompt + llm.max_answer_tokens <= llm.model_context_tokens, prompt
    summaries = [r for r in requests if "running summary" in r["messages"][0]["content"]]
    assert summaries, "the model was asked to fold the older turns"
    assert "<memory>" in answers[-1]["messages"][0]["content"] and SUMMARY in answers[-1]["messages"][0]["content"]
    assert turn.standalone_question == "How tall is Marrow Head Lighthouse?"
    remembered = next(step.detail for step in turn.trace if step.step == "Remembered")
    assert "written by test-model" in remembered and SUMMARY in remembered
    stored = HistoryManager(llm.data_path / "sessions.sqlite3").session_memory("model")
    assert stored["summary"] == SUMMARY and stored["by"] == "test-model"

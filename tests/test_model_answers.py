"""Generated answers against a real local HTTP server (ragkit/devserver.py): every shown
sentence checked, answers that answer, the turn's model time bounded, no wasted calls,
the context window respected, and the exit code of `ask` when the model failed."""

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO
from llm_helpers import llm_settings
from ragkit.app.engine import ChatEngine
from ragkit.models.judge_memory import FILE_NAME, FORMATS
from ragkit_dev.devserver import Reply, ScriptedOpenAIServer, json_mode_only, structured

LANGGRAPH = (b"# LangGraph\n\nLangGraph is a library for building stateful agents. It was released in 2024 by "
             b"LangChain Inc. Its main features are persistence, streaming and human-in-the-loop control.")


@pytest.fixture
def docs(kb):
    kb.ingest(LANGGRAPH, filename="langgraph.md")
    return kb


def is_structured(body: dict) -> bool:
    return "response_format" in body


def answers_with(text: str, **reply):
    """A server that answers with ``text`` and gives usable structured replies."""
    def responder(body):
        if is_structured(body):
            return structured(sufficient=True, reason="passage 1 says it", standalone_question="LangGraph")
        return Reply(text, **reply)
    return responder


def ask(settings, kb, server, question, **extra):
    engine = ChatEngine(llm_settings(settings, server.base_url, **extra), kb)
    events = list(engine.stream("s", question))
    shown = "".join(e["text"] for e in events if e["type"] == "token")
    return events[-1]["turn"], shown


def test_a_cut_off_answer_ends_at_its_last_complete_sentence(settings, docs):
    text = "LangGraph is a library for building stateful agents [1]. It was released in"
    with ScriptedOpenAIServer(answers_with(text, finish_reason="length")) as server:
        turn, shown = ask(settings, docs, server, "What is LangGraph?")
    assert turn.mode == "llm"
    assert turn.answer == shown == "LangGraph is a library for building stateful agents [1]."
    assert "cut off at the answer's token limit" in " ".join(step.detail for step in turn.trace)


def test_an_invented_fact_is_never_shown(settings, docs):
    text = ("LangGraph is a library for building stateful agents [1]. "
            "It was founded by Tomas Eller in Riga in 2019 [1]. It was released in 2024 [1].")
    with ScriptedOpenAIServer(answers_with(text)) as server:
        turn, shown = ask(settings, docs, server, "What is LangGraph?")
    assert "Tomas" not in shown and "Tomas" not in turn.answer
    assert "released in 2024" in turn.answer
    checked = next(step.detail for step in turn.trace if step.step == "Checked before showing")
    assert "Tomas" in checked and "not in the source" in checked


@pytest.mark.parametrize("reply, why", [
    ("What is LangGraph? [1]", "repeats the question"),
    ("LangGraph [1].", "repeats the question"),
])
def test_a_reply_that_does_not_answer_is_replaced_and_the_trace_says_why(settings, docs, reply, why):
    with ScriptedOpenAIServer(answers_with(reply)) as server:
        turn, shown = ask(settings, docs, server, "What is LangGraph?")
    assert turn.mode == "extractive" and "stateful agents" in turn.answer
    assert reply not in shown
    assert why in turn.error


def test_a_reply_without_the_kind_asked_for_is_replaced(settings, docs):
    with ScriptedOpenAIServer(answers_with("LangGraph is a library for building stateful agents [1].")) as server:
        turn, _ = ask(settings, docs, server, "When was LangGraph released?")
    assert turn.mode == "extractive" and "2024" in turn.answer
    assert "does not say a date" in turn.error


def test_a_hanging_server_is_bounded_by_the_turn_timeout_and_the_message_says_the_real_wait(settings, docs):
    with ScriptedOpenAIServer(lambda body: Reply("never", delay_s=30)) as server:
        turn, _ = ask(settings, docs, server, "What is LangGraph?", llm_timeout_s=2.0)
        requests = len(server.requests)
    assert turn.mode == "extractive" and "stateful agents" in turn.answer
    waited = float(re.search(r"waited (\d+(?:\.\d+)?) s", turn.error).group(1))
    assert 2 <= waited <= 3  # the grade's call and the answer's wait together
    assert requests <= 1  # the grade used the turn's time: the answer was not even asked


def test_an_abandoned_stream_is_hung_up_on(settings, docs):
    slow = "LangGraph is a library for building stateful agents [1]. " * 40
    with ScriptedOpenAIServer(answers_with(slow, chunk_chars=8, chunk_delay_s=0.05)) as server:
        ask(settings, docs, server, "What is LangGraph?", max_answer_tokens=16, model_judge="off")
        assert _eventually(lambda: server.disconnects >= 1)


def test_a_structured_call_given_up_at_its_deadline_is_hung_up_on_and_the_answer_still_comes(settings, docs):
    # A grade that streams on for ~20 s (a small model padding JSON mode): the call is given up
    # at RAGKIT_REWRITE_TIMEOUT_S and, being streamed, hung up on, so the server stops generating
    # it (llama.cpp otherwise generates on for nobody while the answer waits behind it).
    rambling = '{"sufficient": true, "reason": "' + "passage one says it " * 50 + '"}'

    def responder(body):
        if is_structured(body):
            return Reply(rambling, chunk_chars=2, chunk_delay_s=0.02)
        return Reply("LangGraph is a library for building stateful agents [1].")
    with ScriptedOpenAIServer(responder) as server:
        turn, _ = ask(settings, docs, server, "What is LangGraph?", rewrite_timeout_s=1.0, llm_timeout_s=10.0)
        structured_requests = [body for body in server.requests if is_structured(body)]
        assert _eventually(lambda: server.disconnects >= 1)
    assert len(structured_requests) == 1 and structured_requests[0]["stream"]
    assert turn.mode == "llm" and "stateful agents" in turn.answer
    graded = next(step.detail for step in turn.trace if step.step == "Graded the evidence")
    assert "the model's verdict was unusable" in graded and "ModelTimeout" in graded


def test_a_server_that_takes_json_mode_only_is_asked_in_json_mode_at_once_from_then_on(settings, docs):
    def formats(server):
        return [body["response_format"]["type"] for body in server.requests if is_structured(body)]
    with ScriptedOpenAIServer(json_mode_only(answers_with("LangGraph builds stateful agents [1]."))) as server:
        first, _ = ask(settings, docs, server, "What is LangGraph?")
        assert formats(server) == ["json_schema", "json_object"]  # refused, then JSON mode
        remembered = json.loads((settings.data_path / FILE_NAME).read_text())
        assert remembered[FORMATS][f"test-model@{server.base_url}"]["format"] == "json_object"
        ask(settings, docs, server, "What is LangGraph?")  # a new engine, as a new process makes
        assert formats(server) == ["json_schema", "json_object", "json_object"]  # the refusal is not asked again
    graded = next(step.detail for step in first.trace if step.step == "Graded the evidence")
    assert "(model test-model)" in graded  # the JSON-mode reply was used


def _eventually(check, attempts=200):
    import threading

    event = threading.Event()
    for _ in range(attempts):
        if check():
            return True
        event.wait(0.05)
    return False


def test_an_overflow_is_named(settings, docs):
    def responder(body):
        if is_structured(body):
            return structured(sufficient=True, reason="ok")
        return Reply(status=400, error="the request exceeds the available context size, try increasing it")
    with ScriptedOpenAIServer(responder) as server:
        turn, _ = ask(settings, docs, server, "What is LangGraph?")
    assert turn.mode == "extractive"
    assert turn.error.startswith("context overflow") and "RAGKIT_MODEL_CONTEXT_TOKENS" in turn.error


def test_the_servers_window_is_read_and_what_did_not_fit_is_reported(settings, kb):
    for number in range(6):
        kb.ingest(f"# Lamp {number}\n\n".encode() + b"The Lumen lamp line is made in Porto. " * 40
                  + f"Lamp {number} costs {100 + number} euros.".encode(), filename=f"lamp{number}.md")
    answer = "The Lumen lamp line is made in Porto [1]."
    with ScriptedOpenAIServer(answers_with(answer), props={"default_generation_settings": {"n_ctx": 1024}}) as server:
        turn, _ = ask(settings, kb, server, "Where is the Lumen lamp line made?", model_judge="off")
        sent = server.requests[-1]
    fitted = next(step.detail for step in turn.trace if step.step == "Fitted the prompt")
    assert fitted.startswith("1024-token window")
    assert "answer budget cut from 700 to" in fitted and "passages dropped" in fitted
    assert sent["max_tokens"] < 700
    assert "did not fit the model's context window" in turn.answer


def test_structured_calls_at_most_one_per_turn_and_off_means_none(settings, docs):
    def responder(body):
        if is_structured(body):
            return structured(sufficient=False, reason="not enough", standalone_question="LangGraph agents")
        return Reply("LangGraph is a library for building stateful agents [1].")
    with ScriptedOpenAIServer(responder) as server:
        ask(settings, docs, server, "What is LangGraph?")
        assert sum(map(is_structured, server.requests)) == 1
        ask(settings, docs, server, "What is LangGraph?", model_judge="off")
        assert sum(map(is_structured, server.requests)) == 1


def test_a_model_found_unusable_is_not_asked_again_by_a_new_engine_until_on(settings, docs):
    def responder(body):
        return Reply("no json here") if is_structured(body) else Reply("LangGraph builds stateful agents [1].")
    with ScriptedOpenAIServer(responder) as server:
        for _ in range(2):
            ask(settings, docs, server, "What is LangGraph?")
        assert sum(map(is_structured, server.requests)) == 2
        remembered = json.loads((settings.data_path / FILE_NAME).read_text())
        assert remembered[f"test-model@{server.base_url}"]["failures"] == 2
        turn, _ = ask(settings, docs, server, "What is LangGraph?")  # a new engine, as a new process makes
        assert sum(map(is_structured, server.requests)) == 2
        ask(settings, docs, server, "What is LangGraph?", model_judge="on")
        assert sum(map(is_structured, server.requests)) == 3


@pytest.mark.slow
def test_ask_exits_3_when_the_model_failed_and_a_second_process_skips_an_unusable_model(settings, docs):
    def responder(body):
        return Reply("no json") if is_structured(body) else Reply(status=500)
    with ScriptedOpenAIServer(responder) as server:
        for _ in range(2):
            ask(settings, docs, server, "What is LangGraph?")
        structured_before = sum(map(is_structured, server.requests))
        docs.close()
        env = {**os.environ, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url,
               "RAGKIT_CHAT_MODEL": "test-model", "RAGKIT_LLM_MAX_RETRIES": "0", "RAGKIT_LLM_TIMEOUT_S": "5"}
        result = subprocess.run([sys.executable, "-m", "ragkit", "--data-dir", str(settings.data_dir), "ask",
                                 "What is LangGraph?"], capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
        assert sum(map(is_structured, server.requests)) == structured_before  # remembered across processes
    assert result.returncode == 3, result.stderr
    assert "stateful agents" in result.stdout
    assert "internal error (500)" in result.stderr and "exit code 3" in result.stderr


@pytest.mark.parametrize("failure", [
    {"stall_after_chunks": 12, "stall_s": 8},  # goes silent past the turn's model time
    {"break_after_chunks": 12},  # drops the connection
])
def test_a_model_that_stops_mid_answer_keeps_the_sentences_already_shown(settings, docs, failure):
    text = "LangGraph is a library for building stateful agents [1]. It was released in 2024 by LangChain Inc. [1]."
    with ScriptedOpenAIServer(answers_with(text, chunk_chars=6, **failure)) as server:
        turn, shown = ask(settings, docs, server, "What is LangGraph?", llm_timeout_s=4.0, model_judge="off")
    assert turn.mode == "llm"
    assert turn.answer.startswith("LangGraph is a library for building stateful agents [1].")
    assert shown == "LangGraph is a library for building stateful agents [1]."  # nothing withdrawn
    assert "the model stopped before finishing" in turn.answer  # the footer says so
    stopped = next(step.detail for step in turn.trace if step.step == "Model stopped")
    assert "sentences shown before it stopped are kept" in stopped


def test_a_model_that_stops_before_anything_answers_falls_back_to_quotes(settings, docs):
    text = "LangGraph is a library for building stateful agents [1]."
    with ScriptedOpenAIServer(answers_with(text, chunk_chars=6, stall_after_chunks=3, stall_s=8)) as server:
        turn, _ = ask(settings, docs, server, "What is LangGraph?", llm_timeout_s=3.0, model_judge="off")
    assert turn.mode == "extractive" and "stateful agents" in turn.answer
    assert "no reply in" in turn.error or "waited" in turn.error


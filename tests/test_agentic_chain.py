"""The model chain for every model step, and the web on the multi-hop path (issue 16).

Against real local OpenAI-compatible servers scripted to fail (unreachable, 5xx, unusable
replies, answers their sources do not support): the route, a follow-up's rewrite and the
grade go down the chain (``RAGKIT_FALLBACK_MODELS``) to the offline rule, an answer that
fails its checks passes the turn to the next model, then to the extractive answer; the
trace names each try. And against a local SearxNG stand-in: a hop or a comparison's side
the knowledge base leaves uncovered is searched on the web and cited as web."""

from __future__ import annotations

import pytest
from langgraph.runtime import Runtime

from conftest import free_port
from llm_helpers import llm_settings
from ragkit.app.engine import ChatEngine
from ragkit.graph.nodes.answer import check_citations
from ragkit.graph.routes import after_check, after_next_model
from ragkit.graph.state import ModelAttempt, RagState
from ragkit.types import Source
from ragkit_dev.devserver import Reply, ScriptedOpenAIServer, default_responder, structured
from searx_helpers import SearxServer

LANGGRAPH = (b"# LangGraph\n\nLangGraph is a library for building stateful agents. "
             b"Its main features are persistence, streaming and human-in-the-loop control.")
ANSWER = "LangGraph is a library for building stateful agents [1]."
LOVELACE = "Where was the designer of the machine Ada Lovelace wrote an algorithm for born?"
BABBAGE_WEB = [{"title": "Charles Babbage - Wikipedia", "url": "https://en.wikipedia.org/wiki/Charles_Babbage",
                "content": "Charles Babbage was born in London in 1791."}]


def kind(body: dict) -> str:
    """What a request to the model asks for: route, rewrite, grade, query or answer."""
    system = body["messages"][0]["content"]
    if "where a chat message" in system:
        return "route"
    if "standalone question" in system:
        return "rewrite"
    if "judge whether the passages" in system:
        return "grade"
    if "search query" in system:
        return "query"
    return "answer"


def scripted(**replies: Reply):
    """A responder giving ``replies[kind]`` (the default responder's reply, else ``ANSWER``)."""
    def responder(body):
        step = kind(body)
        if step in replies:
            return replies[step]
        return Reply(ANSWER) if step == "answer" else default_responder(body)
    return responder


def two_models(settings, first_url: str, second_url: str, **extra):
    """``model-a`` at ``first_url``, then ``model-b`` at ``second_url``; the judge always asked."""
    return llm_settings(settings, first_url, **{"chat_models": f"model-a@{first_url}",
                                                "fallback_models": f"model-b@{second_url}", "model_judge": "on",
                                                **extra})


def trace(turn) -> dict[str, str]:
    return {step.step: step.detail for step in turn.trace}


def asked(server, step: str) -> list[str]:
    return [body["model"] for body in server.requests if kind(body) == step]


@pytest.fixture
def docs(kb):
    kb.ingest(LANGGRAPH, filename="langgraph.md")
    return kb


# ----- structured steps down the chain --------------------------------------------------------


def test_the_route_goes_to_the_next_model_when_the_first_is_unreachable(settings, docs):
    with ScriptedOpenAIServer(scripted(route=structured(route="small_talk"))) as second:
        engine = ChatEngine(two_models(settings, f"http://127.0.0.1:{free_port()}/v1", second.base_url), docs)
        turn = engine.ask("r", "Nice weather today, isn't it", mode="agentic")
        assert asked(second, "route") == ["model-b"]
    assert turn.mode == "direct"
    routed = trace(turn)["Routed"]
    assert routed.startswith("answered directly (small talk) (by model-b (after model-a failed: APIConnectionError")


def test_when_every_models_route_is_unusable_the_rule_decides_and_the_trace_names_each(settings, docs):
    with ScriptedOpenAIServer(scripted(route=Reply(status=500))) as first, \
            ScriptedOpenAIServer(scripted(route=Reply("not json at all"))) as second:
        turn = ChatEngine(two_models(settings, first.base_url, second.base_url), docs).ask(
            "r", "hello", mode="agentic")
        assert asked(first, "route") == ["model-a"] and asked(second, "route") == ["model-b"]
    assert turn.mode == "direct"  # the offline rule: a greeting
    routed = trace(turn)["Routed"]
    assert "offline rule; no model's verdict was usable (model-a failed: InternalServerError" in routed
    assert "model-b failed: UnusableAnswer: the model returned no structured output" in routed


def test_the_grade_goes_to_the_next_model_when_the_first_replies_out_of_schema(settings, docs):
    with ScriptedOpenAIServer(scripted(grade=Reply('{"verdict": "maybe"}'))) as first, \
            ScriptedOpenAIServer(scripted(grade=structured(sufficient=True, reason="passage 1 says it"))) as second:
        turn = ChatEngine(two_models(settings, first.base_url, second.base_url), docs).ask("g", "What is LangGraph?")
        assert asked(first, "grade") == ["model-a"] and asked(second, "grade") == ["model-b"]
        assert asked(first, "answer") == ["model-a"] and asked(second, "answer") == []  # the answer: model-a's
    graded = trace(turn)["Graded the evidence"]
    assert graded.startswith("passage 1 says it;") and "model model-b (after model-a failed: UnusableAnswer" in graded
    assert "does not fit the schema" in graded
    assert turn.mode == "llm" and turn.model == "model-a"


def test_a_follow_ups_rewrite_goes_to_the_next_model_when_the_first_one_is_not_plausible(settings, docs):
    far_off = structured(standalone_question="Tell me a joke about penguins in Antarctica please " * 20)
    good = structured(standalone_question="What are the main features of LangGraph?")
    with ScriptedOpenAIServer(scripted(rewrite=far_off)) as first, \
            ScriptedOpenAIServer(scripted(rewrite=good)) as second:
        engine = ChatEngine(two_models(settings, first.base_url, second.base_url), docs)
        engine.ask("f", "What is LangGraph?")
        turn = engine.ask("f", "What are its main features?")
        assert asked(second, "rewrite") == ["model-b"]
    assert turn.standalone_question == "What are the main features of LangGraph?"
    rewrote = trace(turn)["Rewrote the follow-up"]
    assert "rewritten by model-b (after model-a failed: its rewrite “Tell me a joke" in rewrote


def test_a_model_remembered_unusable_is_skipped_and_the_next_one_judges(settings, docs):
    with ScriptedOpenAIServer(scripted(grade=Reply("no json here"))) as first, \
            ScriptedOpenAIServer(scripted(grade=structured(sufficient=True, reason="ok"))) as second:
        configured = two_models(settings, first.base_url, second.base_url, model_judge="auto")
        for session in ("1", "2"):  # model-a's grade is unusable twice: remembered
            ChatEngine(configured, docs).ask(session, "What is LangGraph?")
        turn = ChatEngine(configured, docs).ask("3", "What is LangGraph?")
        assert asked(first, "grade") == ["model-a", "model-a"]
    graded = trace(turn)["Graded the evidence"]
    assert "model model-b (after model-a skipped: its structured replies were unusable twice" in graded


def test_without_models_the_steps_use_the_offline_rules_and_name_no_attempt(settings, docs):
    turn = ChatEngine(settings, docs).ask("o", "What is LangGraph?", mode="agentic")
    assert trace(turn)["Routed"] == "the knowledge base (offline rule)"
    assert trace(turn)["Graded the evidence"].endswith("(offline)")


# ----- an answer that fails its checks --------------------------------------------------------


def test_an_answer_its_sources_do_not_support_passes_the_turn_to_the_next_model(settings, docs):
    unsupported = Reply("LangGraph was written on the Moon in 1850 by penguins [1].")
    with ScriptedOpenAIServer(scripted(answer=unsupported)) as first, ScriptedOpenAIServer(scripted()) as second:
        events = list(ChatEngine(two_models(settings, first.base_url, second.base_url, model_judge="off"),
                                 docs).stream("s", "What is LangGraph?"))
    turn = events[-1]["turn"]
    assert turn.mode == "llm" and turn.model == "model-b" and turn.answer == ANSWER
    assert turn.error.startswith("model-a: the model's answer was not used")
    steps = trace(turn)
    assert steps["Model failed"].startswith("model-a: the model's answer was not used")
    assert "asking model-b (model 2 of 2)" in steps["Next model"]
    assert [e["then"] for e in events if e["type"] == "reset"] == ["model-b"]
    assert "penguins" not in "".join(e["text"] for e in events if e["type"] == "token")  # never shown


def test_when_every_answer_fails_its_checks_the_answer_is_extractive(settings, docs):
    moon = Reply("LangGraph was written on the Moon in 1850 by penguins [1].")
    mars = Reply("LangGraph is a Martian volcano [1].")
    with ScriptedOpenAIServer(scripted(answer=moon)) as first, ScriptedOpenAIServer(scripted(answer=mars)) as second:
        turn = ChatEngine(two_models(settings, first.base_url, second.base_url, model_judge="off"),
                          docs).ask("e", "What is LangGraph?")
    assert turn.mode == "extractive" and "stateful agents" in turn.answer
    assert "model-a: " in turn.error and "model-b: " in turn.error
    chain_step = trace(turn)["Model chain"]
    assert "model-a failed (the model's answer was not used" in chain_step
    assert "model-b failed (the model's answer was not used" in chain_step and "answering offline" in chain_step


def test_an_answer_the_citation_check_rejects_goes_to_the_next_model(settings, docs):
    # Screening shows only supported sentences, so the final check rarely rejects a whole
    # answer; when it does, the turn moves along the chain like any other failure.
    configured = two_models(settings, "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1")
    runtime = Runtime(context=ChatEngine(configured, docs).context)
    text = LANGGRAPH.decode()
    source = Source(n=1, chunk_id="p", doc_id="d", title="LangGraph", filename="langgraph.md", page=1, text=text,
                    quote=text, start=0, end=len(text), score=1.0, cited=True)
    state = RagState(session_id="c", question="What is LangGraph?", standalone_question="What is LangGraph?",
                     model_id="model-a@127.0.0.1", mode="llm", model="model-a",
                     answer="Penguins invented it on the Moon in 1850 [1].", sources=[source])
    update = check_citations(state, runtime)
    assert update["answer"] == "" and "no sentence of the model's answer was supported" in update["error"]
    assert update["attempts"] == [ModelAttempt("model-a", "failed", update["error"])]
    assert update["trace"][0].detail.startswith("model-a: no sentence") and "the next model is asked" in \
        update["trace"][0].detail
    rejected = RagState(**{**state.__dict__, **{k: v for k, v in update.items() if k != "trace"}})
    assert after_check(rejected) == "next_model"
    moved = RagState(**{**rejected.__dict__, "chain_position": 1})
    assert after_next_model(moved) == "generate"  # model-b has not tried yet


# ----- the web on the multi-hop path ---------------------------------------------------------


@pytest.fixture
def lovelace_only(kb):
    """The Lovelace example without the document saying where Babbage was born."""
    kb.ingest(b"Ada Lovelace wrote an algorithm for the Analytical Engine, a machine designed by Charles Babbage.",
              filename="ada.txt")
    kb.ingest(b"The Difference Engine was an automatic mechanical calculator designed to tabulate polynomial "
              b"functions.", filename="difference.txt")
    return kb


def web_engine(settings, kb, url: str, **extra):
    return ChatEngine(settings.model_copy(update={"web_search_url": url, "web_search_timeout_s": 2.0, **extra}), kb)


def test_a_hop_the_documents_do_not_reach_is_searched_on_the_web_and_cited_as_web(settings, lovelace_only):
    with SearxServer(BABBAGE_WEB) as searx:
        turn = web_engine(settings, lovelace_only, searx.url).ask("w", LOVELACE, mode="agentic")
    assert len(searx.queries) == 1 and searx.queries[0]["q"].startswith("Charles Babbage ")  # the bridge query
    cited = [(source.filename, source.web) for source in turn.sources if source.cited]
    assert cited == [("ada.txt", False), ("en.wikipedia.org", True)]
    assert "designed by Charles Babbage.[1]" in turn.answer and "born in London in 1791.[2]" in turn.answer
    assert "the sources marked web are web search results" in turn.answer
    steps = [step.step for step in turn.trace]
    assert steps.index("Round 2") < steps.index("Searched the web") < steps.index("Answered")
    assert "not added to the knowledge base" in trace(turn)["Searched the web"]
    assert trace(turn)["Cited the web"] == "[2] https://en.wikipedia.org/wiki/Charles_Babbage"
    assert sorted(d.filename for d in lovelace_only.documents()) == ["ada.txt", "difference.txt"]  # nothing stored


def test_hops_the_documents_cover_never_search_the_web(settings, lovelace_only):
    lovelace_only.ingest(b"Charles Babbage was born in London in 1791.", filename="babbage.txt")
    with SearxServer(BABBAGE_WEB) as searx:
        turn = web_engine(settings, lovelace_only, searx.url).ask("k", LOVELACE, mode="agentic")
    assert searx.queries == [] and not any(source.web for source in turn.sources)
    assert [s.filename for s in turn.sources if s.cited] == ["ada.txt", "babbage.txt"]


def test_a_comparisons_side_missing_from_the_documents_is_searched_on_the_web(settings, kb):
    kb.ingest(b"The Sundergate Tower is an office tower. It is 214 metres tall.", filename="sundergate.txt")
    kb.ingest(b"The Harbour Museum opened in 1902 and shows ship models.", filename="museum.txt")
    spire = [{"title": "Wrayburn Spire", "url": "https://spires.example/wrayburn",
              "content": "The Wrayburn Spire is a church spire. It rises 96 metres above the square."}]
    with SearxServer(spire) as searx:
        turn = web_engine(settings, kb, searx.url).ask(
            "c", "Which is taller, the Sundergate Tower or the Wrayburn Spire?", mode="agentic")
    assert [query["q"] for query in searx.queries] == ["Wrayburn Spire Which is taller"]  # that side only
    cited = {(source.filename, source.web) for source in turn.sources if source.cited}
    assert cited == {("sundergate.txt", False), ("spires.example", True)}
    assert "214 metres" in turn.answer and "96 metres" in turn.answer and turn.answer.startswith("Sundergate Tower")


@pytest.mark.parametrize("make, reason", [
    (lambda: None, "is unreachable"),
    (lambda: SearxServer(status=500), "refused the query (500)"),
    (lambda: SearxServer([]), "no result from"),
])
def test_a_failing_provider_leaves_the_side_missing_and_says_why(settings, kb, make, reason):
    kb.ingest(b"The Sundergate Tower is an office tower. It is 214 metres tall.", filename="sundergate.txt")
    kb.ingest(b"The Harbour Museum opened in 1902 and shows ship models.", filename="museum.txt")
    question = "Which is taller, the Sundergate Tower or the Wrayburn Spire?"
    provider = make()
    if provider is None:
        turn = web_engine(settings, kb, f"http://127.0.0.1:{free_port()}").ask("f", question, mode="agentic")
    else:
        with provider:
            turn = web_engine(settings, kb, provider.url).ask("f", question, mode="agentic")
            assert len(provider.queries) == 1
    assert not any(source.web for source in turn.sources)
    assert "Not found in your documents: Wrayburn Spire Which is taller" in turn.answer
    assert "The web search did not help either: " in turn.answer and reason in turn.answer
    web_step = trace(turn)["Searched the web"]
    assert web_step.startswith("“Wrayburn Spire Which is taller”: failed: ") and reason in web_step
    assert "214 metres" in turn.answer  # what is known is still answered


def test_when_neither_side_is_found_anywhere_not_found_says_why_the_web_did_not_help(settings, kb):
    kb.ingest(b"The Harbour Museum opened in 1902 and shows ship models.", filename="museum.txt")
    question = "Which is taller, the Sundergate Tower or the Wrayburn Spire?"
    with SearxServer(status=500) as provider:
        turn = web_engine(settings, kb, provider.url).ask("f", question, mode="agentic")
    assert not turn.found and turn.sources == []
    assert "The web search did not help either: " in turn.answer and "refused the query (500)" in turn.answer


def test_with_a_model_the_web_hop_is_in_the_prompt_and_cited_as_web(settings, lovelace_only):
    reply = Reply("The Analytical Engine was designed by Charles Babbage [1], who was born in London [2].")
    with SearxServer(BABBAGE_WEB) as searx, ScriptedOpenAIServer(scripted(answer=reply)) as server:
        engine = ChatEngine(llm_settings(settings, server.base_url, web_search_url=searx.url, model_judge="off"),
                            lovelace_only)
        turn = engine.ask("m", LOVELACE, mode="agentic")
        prompt = [body for body in server.requests if kind(body) == "answer"][-1]["messages"][-1]["content"]
    assert len(searx.queries) == 1
    assert "Charles Babbage was born in London in 1791." in prompt and "Hops followed" in prompt
    assert turn.mode == "llm" and [(s.filename, s.web) for s in turn.sources if s.cited] == [
        ("ada.txt", False), ("en.wikipedia.org", True)]
    assert "the sources marked web are web search results" in turn.answer

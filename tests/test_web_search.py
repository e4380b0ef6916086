"""Web search in agentic mode, against a real local HTTP server speaking SearxNG's JSON API
(``GET /search?q=...&format=json``): asked only when the knowledge base does not answer,
cited as web everywhere, never stored, and a failing provider says "not found" and why."""

import io

import pytest

from conftest import free_port
from llm_helpers import llm_settings
from ragkit.app.engine import ChatEngine
from ragkit.cli import print_sources
from ragkit.retrieval.websearch import parse_results
from ragkit_dev.devserver import Reply, ScriptedOpenAIServer, default_responder
from searx_helpers import MONGOLIA, SearxServer


@pytest.fixture
def searx():
    with SearxServer(MONGOLIA) as running:
        yield running


@pytest.fixture
def docs(kb):
    kb.ingest(b"# LangGraph\n\nLangGraph is a library for building stateful agents. "
              b"Its main features are persistence, streaming and human-in-the-loop control.", filename="langgraph.md")
    return kb


def web_engine(settings, kb, url, **extra):
    return ChatEngine(settings.model_copy(update={"web_search_url": url, "web_search_timeout_s": 2.0, **extra}), kb)


def test_the_web_is_searched_only_when_the_documents_do_not_answer(settings, docs, searx):
    engine = web_engine(settings, docs, searx.url)
    answered = engine.ask("w", "What is LangGraph?", mode="agentic")
    assert searx.queries == [] and answered.found and not any(s.web for s in answered.sources)
    turn = engine.ask("w2", "What is the capital of Mongolia?", mode="agentic")
    assert searx.queries == [{"path": "/search", "q": "What is the capital of Mongolia?", "format": "json"}]
    assert turn.found and "Ulaanbaatar is the capital of Mongolia" in turn.answer
    cited = [s for s in turn.sources if s.cited]
    assert cited and all(s.web for s in cited) and cited[0].url == "https://en.wikipedia.org/wiki/Mongolia"
    assert f"[{cited[0].n}]" in turn.answer
    assert "sources marked web are web search results" in turn.answer
    steps = [step.step for step in turn.trace]
    assert steps.index("Searched the web") < steps.index("Answered") and "Cited the web" in steps
    assert "not added to the knowledge base" in next(s.detail for s in turn.trace if s.step == "Searched the web")
    assert [d.filename for d in docs.documents()] == ["langgraph.md"]  # nothing stored
    assert docs.search("Ulaanbaatar capital Mongolia", 5)[0].filename == "langgraph.md"


def test_default_mode_and_an_unset_provider_never_search_the_web(settings, docs, searx):
    web_engine(settings, docs, searx.url).ask("d", "What is the capital of Mongolia?", mode="default")
    turn = web_engine(settings, docs, None).ask("u", "What is the capital of Mongolia?", mode="agentic")
    assert searx.queries == [] and not turn.found and turn.mode == "not_found"


@pytest.mark.parametrize("make, reason", [
    (lambda: None, "is unreachable"),
    (lambda: SearxServer(MONGOLIA, delay_s=4), "sent nothing in 2 s"),
    (lambda: SearxServer(body=b"<html><body>Not a search API</body></html>"), "did not answer with JSON"),
    (lambda: SearxServer(status=403), "refused the query (403)"),
    (lambda: SearxServer([]), "no result from"),
])
def test_a_failing_provider_degrades_to_not_found_with_the_reason(settings, docs, make, reason):
    provider = make()
    if provider is None:
        engine = web_engine(settings, docs, f"http://127.0.0.1:{free_port()}")
        turn = engine.ask("f", "What is the capital of Mongolia?", mode="agentic")
    else:
        with provider:
            turn = web_engine(settings, docs, provider.url).ask("f", "What is the capital of Mongolia?", mode="agentic")
            assert len(provider.queries) == 1
    assert turn.mode == "not_found" and not turn.found and not turn.sources
    assert turn.answer.startswith("I could not find this in your documents.")
    assert "The web search did not help either: " in turn.answer and reason in turn.answer
    web_step = next(step.detail for step in turn.trace if step.step == "Searched the web")
    assert web_step.startswith("failed: ") and reason in web_step


def test_web_text_is_plain_text_and_marked_as_web_in_every_listing(settings, docs):
    hostile = [{"title": "<b>Mongolia</b><script>alert(1)</script>", "url": "https://evil.example/m",
                "content": 'Ulaanbaatar is the capital of <span class="highlight">Mongolia</span>.'
                           '<img src=x onerror="alert(2)"> [click](javascript:alert(3))'},
               {"title": "no scheme", "url": "javascript:alert(4)",
                "content": "Ulaanbaatar is the capital of Mongolia."}]
    with SearxServer(hostile) as provider:
        engine = web_engine(settings, docs, provider.url)
        turn = engine.ask("h", "What is the capital of Mongolia?", mode="agentic")
    assert [s.url for s in turn.sources] == ["https://evil.example/m"]  # the javascript: address is dropped
    source = turn.sources[0]
    for text in (source.title, source.quote, source.text, turn.answer):
        assert "<" not in text and "onerror" not in text, text
    assert "Ulaanbaatar is the capital of Mongolia." in turn.answer
    assert turn.as_text().endswith("[1] Mongolia, web: https://evil.example/m")
    exported = engine.history.export_markdown("h")
    assert "\\[1\\] Mongolia (web: https:" in exported and "evil.example/m" in exported and "<script" not in exported
    printed = io.StringIO()
    print_sources(turn.sources, printed)
    assert "[1] Mongolia — web: https://evil.example/m" in printed.getvalue()
    assert turn.to_dict()["sources"][0]["url"] == "https://evil.example/m"


def test_parse_results_keeps_http_results_with_text_once():
    results = parse_results([{"title": "A", "url": "https://a.example", "content": "x <b>y</b>"},
                             {"title": "A again", "url": "https://a.example", "content": "z"},
                             {"title": "", "url": "http://b.example", "content": "text"},
                             {"title": "empty", "url": "https://c.example", "content": ""},
                             {"title": "ftp", "url": "ftp://d.example", "content": "text"}, "not a dict"])
    assert [(r.title, r.url, r.content) for r in results] == [("A", "https://a.example", "x y"),
                                                              ("http://b.example", "http://b.example", "text")]


def test_a_model_answers_from_web_results_it_is_given_as_data(settings, docs, searx):
    def responder(body):
        system = body["messages"][0]["content"]
        if "standalone question" in system or "judge whether" in system or "search query" in system \
                or "route" in system.lower():
            return default_responder(body)
        return Reply("Ulaanbaatar is the capital of Mongolia [1].")

    with ScriptedOpenAIServer(responder) as server:
        engine = ChatEngine(llm_settings(settings, server.base_url, web_search_url=searx.url, model_judge="off"), docs)
        turn = engine.ask("m", "What is the capital of Mongolia?", mode="agentic")
        prompt = server.chat_requests("answer")[-1]["messages"][-1]["content"]
    assert len(searx.queries) == 1
    assert "Ulaanbaatar is the capital of Mongolia and its largest city." in prompt and '<source n="1"' in prompt
    assert turn.mode == "llm" and turn.sources[0].web and turn.sources[0].cited
    assert "sources marked web" in turn.answer

"""The HTTP API, as its users reach it: the real app (`streamlit run streamlit_app.py`, a
password on the page), the official `openai` client and LangChain's `ChatOpenAI` on its /v1,
curl-like calls on its /api. One server for the module; the documents are added through
the API itself."""

from __future__ import annotations

import httpx
import openai
import pytest
from langchain_openai import ChatOpenAI

from api_helpers import ORION, api_app, bearer, error_of, upload

ALL_KEY = "test-all-knowledge-0001"
MANUALS_KEY = "test-manuals-only-0002"
PASSWORD = "the page's own password"
PUMP = ("# Pump P-7 manual\n\nThe pump P-7 must be primed with 2 litres of water before its first start. "
        "Its seals are replaced every 1,800 hours of running.\n")

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The app with two knowledge bases (Default and Manuals), a key for all and one for
    Manuals only, the page behind a password; the Orion Bridge document in Default."""
    from ragkit.config import Settings
    from ragkit.store.kb import KnowledgeBase

    tmp = tmp_path_factory.mktemp("api")
    kb = KnowledgeBase(Settings(data_dir=tmp / "data", _env_file=None))
    kb.create_knowledge_base("Manuals")
    kb.close()
    with api_app(tmp, RAGKIT_API_KEYS=f"{ALL_KEY}:*;{MANUALS_KEY}:Manuals", RAGKIT_APP_PASSWORD=PASSWORD) as running:
        added = upload(running, ALL_KEY, ("orion.md", ORION.encode()))
        assert added.status_code == 200, added.text
        assert [r["status"] for r in added.json()["data"]] == ["added"]
        yield running
        assert "test-all-knowledge" not in running.log_text() and "test-manuals-only" not in running.log_text()


@pytest.fixture(scope="module")
def client(app):
    return openai.OpenAI(base_url=app.v1, api_key=ALL_KEY, max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def manuals_client(app):
    return openai.OpenAI(base_url=app.v1, api_key=MANUALS_KEY, max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def manuals_id(app):
    bases = httpx.get(app.url + "/api/knowledge-bases", headers=bearer(MANUALS_KEY)).json()["data"]
    assert [base["name"] for base in bases] == ["Manuals"]
    return bases[0]["id"]


def ask(client, model: str, *messages: str, **options):
    """A chat completion of alternating user / assistant messages (the last a question)."""
    roles = ["user", "assistant"] * len(messages)
    return client.chat.completions.create(
        model=model, messages=[{"role": role, "content": text} for role, text in zip(roles, messages)], **options)


def history(app):
    from ragkit.app.history import HistoryManager

    return HistoryManager(app.data_dir / "sessions.sqlite3")


# ----- models ----------------------------------------------------------------------------


def test_models_are_the_knowledge_bases_the_key_may_use_with_their_names(client, manuals_client, manuals_id):
    everything = {model.id: model for model in client.models.list()}
    assert {"ragkit", "kb-default", f"kb-{manuals_id}", "kb-default:agentic"} <= set(everything)
    assert everything["kb-default"].model_extra["name"] == "Default"
    assert everything[f"kb-{manuals_id}"].model_extra["name"] == "Manuals"
    assert everything["kb-default"].owned_by == "ragkit"

    assert {model.id for model in manuals_client.models.list()} == {
        "ragkit", "ragkit:agentic", f"kb-{manuals_id}", f"kb-{manuals_id}:agentic"}
    assert client.models.retrieve("kb-default").id == "kb-default"


# ----- asking ----------------------------------------------------------------------------


def test_a_question_gets_the_cited_fact_with_its_sources_and_usage(client):
    answer = ask(client, "kb-default", "Who built the Orion Bridge?")

    text = answer.choices[0].message.content
    assert "Mara Lind" in text and "[1]" in text
    assert answer.choices[0].finish_reason == "stop" and answer.object == "chat.completion"
    source = answer.model_extra["sources"][0]
    assert source["n"] == 1 and source["cited"]
    assert source["title"] == "The Orion Bridge" and source["filename"] == "orion.md" and source["page"] == 1
    assert "Mara Lind" in source["text"] and source["score"] > 0
    assert source["knowledge_base"] == {"id": "default", "name": "Default"}
    assert answer.model_extra["ragkit"]["found"] is True
    assert answer.usage.prompt_tokens > 0 and answer.usage.completion_tokens > 0
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens


def test_a_follow_up_is_answered_from_the_history_it_sends(client):
    first = ask(client, "ragkit", "Who built the Orion Bridge?").choices[0].message.content

    follow_up = ask(client, "ragkit", "Who built the Orion Bridge?", first, "How long is it?")

    assert "412 metres" in follow_up.choices[0].message.content
    assert "Orion Bridge" in follow_up.model_extra["ragkit"]["standalone_question"]


def test_a_system_message_is_accepted(client):
    answer = client.chat.completions.create(model="ragkit", messages=[
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": [{"type": "text", "text": "Who built the Orion Bridge?"}]}])
    assert "Mara Lind" in answer.choices[0].message.content


def test_streaming_sends_the_same_answer_and_the_sources_last(client):
    messages = ("Who built the Orion Bridge?", "The Orion Bridge was completed in 1932 by the engineer Mara Lind.",
                "How long is it?")
    whole = ask(client, "ragkit", *messages).choices[0].message.content

    chunks = list(ask(client, "ragkit", *messages, stream=True, stream_options={"include_usage": True}))

    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == whole and "412 metres" in streamed
    assert chunks[0].choices[0].delta.role == "assistant"
    finishing = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(finishing) == 1 and finishing[0].choices[0].finish_reason == "stop"
    assert finishing[0].model_extra["sources"][0]["title"] == "The Orion Bridge"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0 and not chunks[-1].choices


def test_langchain_chat_openai_asks_and_streams(app):
    llm = ChatOpenAI(base_url=app.v1, api_key=ALL_KEY, model="ragkit", max_retries=0, timeout=120)

    said = llm.invoke("Who built the Orion Bridge?")
    streamed = "".join(chunk.content for chunk in llm.stream("Who built the Orion Bridge?"))

    assert "Mara Lind" in said.content and streamed == said.content


def test_not_found_is_a_normal_answer(client):
    answer = ask(client, "kb-default", "What is the capital of Peru?")
    assert answer.choices[0].finish_reason == "stop"
    assert answer.model_extra["ragkit"]["found"] is False and answer.model_extra["sources"] == []
    assert answer.choices[0].message.content


# ----- documents and search --------------------------------------------------------------


def test_an_uploaded_file_is_answered_and_each_file_gets_its_result(app, manuals_client, manuals_id):
    response = upload(app, MANUALS_KEY, ("../manuals/pump_p7.md", PUMP.encode()), ("tool.exe", b"MZ\x90\x00binary"),
                      tags="pumps")

    assert response.status_code == 200
    results = {r["filename"]: r for r in response.json()["data"]}
    assert results["pump_p7.md"]["status"] == "added"
    assert results["pump_p7.md"]["document"]["tags"] == ["pumps"]
    assert results["pump_p7.md"]["knowledge_base"] == {"id": manuals_id, "name": "Manuals"}
    assert results["tool.exe"]["status"] == "refused" and "tool.exe" in results["tool.exe"]["message"]

    answer = ask(manuals_client, "ragkit", "How much water does pump P-7 need before its first start?")
    assert "2 litres" in answer.choices[0].message.content
    assert answer.model_extra["sources"][0]["filename"] == "pump_p7.md"


def test_documents_are_listed_searched_and_deleted_by_id(app):
    listed = httpx.get(app.url + "/api/documents", headers=bearer(ALL_KEY)).json()["data"]
    orion = next(doc for doc in listed if doc["filename"] == "orion.md")
    assert orion["knowledge_base"] == {"id": "default", "name": "Default"} and orion["object"] == "document"

    found = httpx.post(app.url + "/api/search", headers=bearer(ALL_KEY), json={"query": "Vessel river", "k": 3})
    assert found.status_code == 200 and found.json()["data"][0]["doc_id"] == orion["id"]
    assert "412 metres" in found.json()["data"][0]["text"]
    assert httpx.get(app.url + "/api/search", params={"q": "Vessel river"},
                     headers=bearer(ALL_KEY)).json()["data"][0]["doc_id"] == orion["id"]

    extra = upload(app, ALL_KEY, ("scratch.md", b"# Scratch\n\nA note about the Quillon ferry timetable.\n"))
    scratch = extra.json()["data"][0]["document"]["id"]
    deleted = httpx.delete(f"{app.url}/api/documents/{scratch}", headers=bearer(ALL_KEY))
    assert deleted.status_code == 200 and deleted.json()["deleted"] is True
    assert httpx.get(f"{app.url}/api/documents/{scratch}", headers=bearer(ALL_KEY)).status_code == 404
    assert scratch not in {doc["id"] for doc in httpx.get(app.url + "/api/documents", headers=bearer(ALL_KEY))
                           .json()["data"]}


def test_a_key_limited_to_one_knowledge_base_never_sees_another(app, manuals_client):
    listed = httpx.get(app.url + "/api/documents", headers=bearer(MANUALS_KEY)).json()["data"]
    assert "orion.md" not in {doc["filename"] for doc in listed}
    found = httpx.post(app.url + "/api/search", headers=bearer(MANUALS_KEY), json={"query": "Orion Bridge Mara Lind"})
    assert all(hit["filename"] != "orion.md" for hit in found.json()["data"])

    answer = ask(manuals_client, "ragkit", "Who built the Orion Bridge?")
    assert "Mara Lind" not in answer.choices[0].message.content
    assert all(s["filename"] != "orion.md" for s in answer.model_extra["sources"] + answer.model_extra["ragkit"]
               ["closest"])
    with pytest.raises(openai.NotFoundError):
        ask(manuals_client, "kb-default", "Who built the Orion Bridge?")

    orion = next(d for d in httpx.get(app.url + "/api/documents", headers=bearer(ALL_KEY)).json()["data"]
                 if d["filename"] == "orion.md")
    for method in ("GET", "DELETE"):
        refused = httpx.request(method, f"{app.url}/api/documents/{orion['id']}", headers=bearer(MANUALS_KEY))
        assert refused.status_code == 404 and error_of(refused)["code"] == "document_not_found"
    assert httpx.get(app.url + "/api/documents", params={"knowledge_base": "Default"},
                     headers=bearer(MANUALS_KEY)).status_code == 404


# ----- keys, sessions, the page ----------------------------------------------------------


def test_a_wrong_or_missing_key_is_refused(app):
    wrong = openai.OpenAI(base_url=app.v1, api_key="not-a-key-of-this-server", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as refused:
        wrong.models.list()
    assert "not-a-key-of-this-server" not in str(refused.value)
    with pytest.raises(openai.AuthenticationError):
        wrong.chat.completions.create(model="ragkit", messages=[{"role": "user", "content": "Who built it?"}])
    for path in ("/v1/models", "/api/documents", "/api/search?q=bridge"):
        response = httpx.get(app.url + path)
        assert response.status_code == 401 and error_of(response)["type"] == "authentication_error"


def test_api_conversations_stay_out_of_the_sidebar_unless_a_session_is_asked_for(app, client):
    sessions = history(app)
    before = {s.id for s in sessions.list_sessions()}
    ask(client, "ragkit", "Who built the Orion Bridge?")
    assert {s.id for s in sessions.list_sessions()} == before

    first = ask(client, "ragkit", "Who built the Orion Bridge?", extra_headers={"X-Ragkit-Session": "from-api-1"})
    assert first.model_extra["ragkit"]["session_id"] == "from-api-1"
    # The session keeps the history: the follow-up alone is enough.
    follow_up = ask(client, "ragkit", "How long is it?", extra_body={"session_id": "from-api-1"})

    assert "412 metres" in follow_up.choices[0].message.content
    turns = sessions.turns("from-api-1")
    assert [t.question for t in turns] == ["Who built the Orion Bridge?", "How long is it?"]
    assert "from-api-1" in {s.id for s in sessions.list_sessions()}


def test_a_limited_key_cannot_continue_a_conversation_beyond_its_knowledge_bases(app, manuals_client):
    with pytest.raises(openai.NotFoundError):
        ask(manuals_client, "ragkit", "And its length?", extra_body={"session_id": "from-api-1"})


def test_the_page_keeps_its_password_while_the_api_answers_by_key(app, client):
    from streamlit_client import RawClient

    visitor = RawClient(app.port)
    try:
        screen = visitor.run()
    finally:
        visitor.close()
    assert list(screen.text_inputs) == ["Password"]
    assert not any("Orion" in text for text in screen.texts)
    assert "Mara Lind" in ask(client, "ragkit", "Who built the Orion Bridge?").choices[0].message.content


def test_the_openapi_description_names_every_route(app):
    described = httpx.get(app.url + "/api/openapi.json").json()
    assert described["openapi"].startswith("3.")
    assert {"/v1/models", "/v1/chat/completions", "/api/documents", "/api/documents/{doc_id}",
            "/api/search"} <= set(described["paths"])

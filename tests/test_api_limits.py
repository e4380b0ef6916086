"""The HTTP API under bad input and load: bodies refused before they are read whole, OpenAI-
style errors for malformed requests, a client that hangs up stops its turn, a bounded queue
of questions, per-key and per-address rate limits. One real app for the module, its answers
written by a scripted OpenAI-compatible model server (ragkit_dev.devserver) so that a turn
can be made slow; small limits so that they are reached quickly."""

from __future__ import annotations

import socket
import time

import httpx
import openai
import pytest
from starlette.testclient import TestClient

from api_helpers import ORION, api_app, bearer, error_of, upload, wait_until
from ragkit.config import Settings, load_settings
from ragkit.errors import SettingsError
from ragkit_dev.devserver import Reply, ScriptedOpenAIServer, default_responder

MAIN_KEY = "limits-main-key-000001"
RATE_KEY = "limits-rate-key-000002"
BUSY_KEY = "limits-busy-key-000003"
SLOW_QUESTION = "Who was the engineer of the Orion Bridge?"
SLOW_ANSWER = "The Orion Bridge was completed in 1932 by the engineer Mara Lind [1]. " * 40  # about a minute
RATE_LIMIT = 30

pytestmark = pytest.mark.timeout(600)


def responder(body: dict) -> Reply:
    """Answers to the slow question trickle in (8 characters every 0.15 s); others as usual."""
    if "engineer of the Orion" in str(body["messages"][-1]["content"]) and "Question:" in str(
            body["messages"][-1]["content"]):
        return Reply(SLOW_ANSWER, chunk_chars=8, chunk_delay_s=0.15)
    return default_responder(body)


@pytest.fixture(scope="module")
def model_server():
    with ScriptedOpenAIServer(responder) as server:
        yield server


@pytest.fixture(scope="module")
def app(tmp_path_factory, model_server):
    settings = {
        "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": model_server.base_url, "RAGKIT_CHAT_MODEL": "test-model",
        "RAGKIT_MODEL_JUDGE": "off",  # offline rewrites and grades: the model is asked for answers only
        "RAGKIT_API_KEYS": f"{MAIN_KEY}:*;{RATE_KEY}:*;{BUSY_KEY}:*",
        "RAGKIT_API_MAX_BODY_KB": "64", "RAGKIT_API_MAX_UPLOAD_MB": "1", "RAGKIT_MAX_UPLOAD_MB": "0.25",
        "RAGKIT_API_RATE_LIMIT_PER_MINUTE": str(RATE_LIMIT), "RAGKIT_API_CONCURRENT_TURNS": "1",
        "RAGKIT_API_MAX_WAITING_TURNS": "1", "RAGKIT_API_MAX_MESSAGES": "20",
    }
    with api_app(tmp_path_factory.mktemp("api-limits"), **settings) as running:
        assert upload(running, MAIN_KEY, ("orion.md", ORION.encode())).status_code == 200
        yield running


def post_chat(app, payload, key: str = MAIN_KEY) -> httpx.Response:
    return httpx.post(app.v1 + "/chat/completions", json=payload, headers=bearer(key), timeout=120)


def raw_request(app, head: bytes, body: bytes = b"") -> bytes:
    """Send a request's head (and a start of its body) over a socket; what the server answers,
    without the rest of the body ever being sent."""
    with socket.create_connection(("127.0.0.1", app.port), timeout=30) as sock:
        sock.sendall(head + body)
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < 20:
            piece = sock.recv(65536)
            if not piece:
                break
            answer += piece
        return answer


def question(text: str) -> dict:
    return {"model": "ragkit", "messages": [{"role": "user", "content": text}]}


# ----- bodies --------------------------------------------------------------------------


def test_a_body_over_the_limit_is_refused_before_it_is_read(app):
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {MAIN_KEY}\r\n"
            "Content-Type: application/json\r\nContent-Length: 50000000\r\n\r\n").encode()
    answer = raw_request(app, head, b'{"model": "ragkit", "messages": [')  # 50 MB announced, 33 bytes sent

    assert answer.startswith(b"HTTP/1.1 413")
    assert b'"code":"request_too_large"' in answer and b"RAGKIT_API_MAX_BODY_KB" in answer


def test_a_chunked_body_is_cut_off_once_it_passes_the_limit(app):
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {MAIN_KEY}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    piece = b"x" * 40_000
    answer = raw_request(app, head, (b"%x\r\n" % len(piece) + piece + b"\r\n") * 2)  # 80 KB of no end

    assert answer.startswith(b"HTTP/1.1 413")


def test_an_upload_over_the_limit_is_refused_before_it_is_read(app):
    head = (f"POST /api/documents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {MAIN_KEY}\r\n"
            "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 5000000\r\n\r\n").encode()
    answer = raw_request(app, head, b"--b\r\n")
    assert answer.startswith(b"HTTP/1.1 413") and b"RAGKIT_API_MAX_UPLOAD_MB" in answer


def test_a_file_over_the_file_limit_gets_the_pages_refusal(app):
    response = upload(app, MAIN_KEY, ("big.txt", b"word " * 70_000), ("small.md", b"# Small\n\nA small note.\n"))
    results = {r["filename"]: r for r in response.json()["data"]}
    assert response.status_code == 200
    assert results["big.txt"]["status"] == "refused" and "MB" in results["big.txt"]["message"]
    assert results["small.md"]["status"] == "added"


# ----- malformed requests ----------------------------------------------------------------


@pytest.mark.parametrize(("body", "code"), [
    (b'{"model": "ragkit", "messages": [', "invalid_json"),
    (b"[1, 2]", None),
    (b"", None),
])
def test_malformed_json_gets_an_openai_error(app, body, code):
    response = httpx.post(app.v1 + "/chat/completions", content=body, timeout=30,
                          headers={**bearer(MAIN_KEY), "Content-Type": "application/json"})
    assert response.status_code == 400
    error = error_of(response)
    assert error["type"] == "invalid_request_error" and error["code"] == code


@pytest.mark.parametrize(("payload", "param"), [
    ({"model": "ragkit", "messages": []}, "messages"),
    ({"model": "ragkit"}, "messages"),
    (question("   "), "messages"),
    (question("?!…"), "messages"),
    (question("Why " + "very " * 1000 + "long?"), "messages"),
    ({"model": "ragkit", "messages": [{"role": "user", "content": "Who built it?"},
                                      {"role": "assistant", "content": "Mara Lind."}]}, "messages"),
    ({"model": "ragkit", "messages": [{"role": "user", "content": f"Question {n}?"} for n in range(21)]}, "messages"),
    ({"model": "ragkit", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
     "messages[0].content"),
    ({"model": "ragkit", "messages": [{"role": "tool", "content": "42"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": "Who built it?"}]}, "model"),
    ({**question("Who built it?"), "stream": "yes"}, "stream"),
])
def test_bad_messages_get_a_400_naming_the_field(app, payload, param):
    response = post_chat(app, payload)
    assert response.status_code == 400, response.text
    assert error_of(response)["param"] == param


def test_an_unknown_model_is_not_found(app):
    client = openai.OpenAI(base_url=app.v1, api_key=MAIN_KEY, max_retries=0)
    with pytest.raises(openai.NotFoundError) as refused:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Who built it?"}])
    assert refused.value.body["code"] == "model_not_found"


def test_unknown_addresses_and_methods_answer_json_not_the_page(app):
    unknown = httpx.get(app.v1 + "/embeddings", headers=bearer(MAIN_KEY))
    assert unknown.status_code == 404 and error_of(unknown)["code"] == "unknown_url"
    wrong_method = httpx.put(app.v1 + "/chat/completions", headers=bearer(MAIN_KEY))
    assert wrong_method.status_code == 405 and wrong_method.headers["allow"] == "POST"


# ----- load ------------------------------------------------------------------------------


def first_content(lines) -> str:
    """Read SSE lines until the first chunk with answer text; that text."""
    import json

    for line in lines:
        if line.startswith("data: {"):
            delta = json.loads(line[6:])["choices"][0]["delta"]
            if delta.get("content"):
                return delta["content"]
    raise AssertionError("the stream ended without answer text")


def test_a_client_that_hangs_up_mid_stream_stops_the_turn(app, model_server):
    hung_up_before = model_server.disconnects
    payload = {**question(SLOW_QUESTION), "stream": True, "session_id": "hangs-up-1"}
    with httpx.stream("POST", app.v1 + "/chat/completions", json=payload, headers=bearer(MAIN_KEY),
                      timeout=120) as response:
        assert response.status_code == 200
        assert "Mara Lind" in first_content(response.iter_lines())
    # The client is gone: the model's stream is hung up on at once (it had a minute to go) ...
    wait_until(lambda: model_server.disconnects > hung_up_before, 20, "the model stream being hung up on")
    # ... and nothing of the turn is kept, though a session was asked for.
    from ragkit.app.history import HistoryManager

    assert not HistoryManager(app.data_dir / "sessions.sqlite3").exists("hangs-up-1")


def test_questions_past_the_queue_wait_no_more_and_the_rest_is_served_meanwhile(app, model_server):
    streams = []
    try:
        for _ in range(2):  # one answered (slowly), one waiting: RAGKIT_API_MAX_WAITING_TURNS=1
            client = httpx.Client(timeout=120)
            response = client.send(client.build_request("POST", app.v1 + "/chat/completions", headers=bearer(BUSY_KEY),
                                                        json={**question(SLOW_QUESTION), "stream": True}), stream=True)
            assert response.status_code == 200
            streams.append((client, response))
        first = first_content(streams[0][1].iter_lines())  # the first is being answered, by the model
        assert first.startswith("The Orion Bridge was completed in 1932 by the engineer Mara Lind [1]."), first

        started = time.monotonic()
        busy = post_chat(app, question("Who built the Orion Bridge?"), BUSY_KEY)
        assert busy.status_code == 503 and int(busy.headers["retry-after"]) > 0, (busy.status_code, busy.text[:300])
        assert error_of(busy)["code"] == "overloaded"
        # The server itself is not held up: the page's health check, listings and search answer at once.
        assert httpx.get(app.url + "/_stcore/health").status_code == 200
        assert httpx.get(app.v1 + "/models", headers=bearer(BUSY_KEY)).status_code == 200
        assert httpx.post(app.url + "/api/search", headers=bearer(BUSY_KEY),
                          json={"query": "Vessel river"}).json()["data"]
        assert time.monotonic() - started < 10
    finally:
        for client, response in streams:
            response.close()
            client.close()


def test_a_key_past_its_rate_limit_is_told_when_to_come_back(app):
    statuses = []
    for _ in range(RATE_LIMIT + 5):
        response = httpx.get(app.v1 + "/models", headers=bearer(RATE_KEY))
        statuses.append(response.status_code)
        if response.status_code == 429:
            break
    assert statuses[-1] == 429 and len(statuses) >= RATE_LIMIT, statuses
    assert int(response.headers["retry-after"]) >= 1 and error_of(response)["type"] == "rate_limit_error"
    with pytest.raises(openai.RateLimitError):
        openai.OpenAI(base_url=app.v1, api_key=RATE_KEY, max_retries=0).models.list()
    assert httpx.get(app.v1 + "/models", headers=bearer(MAIN_KEY)).status_code == 200  # other keys are not held


def test_an_address_guessing_keys_is_held_back(app):
    guesser = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.9"))
    statuses = [guesser.get(app.v1 + "/models", headers=bearer(f"guess-number-{n:010d}")).status_code
                for n in range(25)]
    assert statuses[0] == 401 and statuses[-1] == 429
    assert guesser.get(app.v1 + "/models", headers=bearer(MAIN_KEY)).status_code == 429  # even a right key, for now
    assert httpx.get(app.v1 + "/models", headers=bearer(MAIN_KEY)).status_code == 200  # from elsewhere: served
    guesser.close()


def test_secrets_never_reach_the_log(app):
    assert not any(key in app.log_text() for key in (MAIN_KEY, RATE_KEY, BUSY_KEY, "guess-number-"))


# ----- without a server ------------------------------------------------------------------


def test_without_keys_the_api_answers_403_naming_the_setting(tmp_path):
    from starlette.applications import Starlette

    from ragkit.app.api import ApiServer

    def no_service():
        raise AssertionError("the service is never needed to refuse")

    server = ApiServer(no_service, lambda: Settings(data_dir=tmp_path, _env_file=None))
    with TestClient(Starlette(routes=server.routes())) as client:
        for method, path in (("GET", "/v1/models"), ("POST", "/v1/chat/completions"), ("GET", "/api/documents")):
            response = client.request(method, path, headers=bearer("anything-at-all-123456"))
            assert response.status_code == 403 and "RAGKIT_API_KEYS" in error_of(response)["message"]


@pytest.mark.parametrize("keys", ["short:*", "has space in it 1234:*", "good-key-0123456789:",
                                  "dup-key-0123456789;dup-key-0123456789"])
def test_bad_keys_are_refused_at_start_without_repeating_them(keys):
    with pytest.raises(SettingsError) as refused:
        load_settings(api_keys=keys, _env_file=None)
    assert "RAGKIT_API_KEYS" in str(refused.value)
    assert not any(part and part in str(refused.value) for part in keys.replace(";", ":").split(":") if part != "*")


def test_keys_may_be_limited_to_knowledge_bases_by_name():
    from ragkit.app.api.keys import KeyRing
    from ragkit.types import KnowledgeBaseInfo

    ring = KeyRing(Settings(api_keys="first-key-0123456789:Default, manuals;second-key-012345678", _env_file=None))
    bases = [KnowledgeBaseInfo("default", "Default", 0), KnowledgeBaseInfo("m1", "Manuals", 0),
             KnowledgeBaseInfo("x", "Secret", 0)]
    assert [b.id for b in ring.authenticate("Bearer first-key-0123456789").allowed(bases)] == ["default", "m1"]
    assert [b.id for b in ring.authenticate("bearer second-key-012345678").allowed(bases)] == ["default", "m1", "x"]

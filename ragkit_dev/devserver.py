"""A small, real OpenAI-compatible HTTP server, for tests and the benchmark.

It speaks ``POST /v1/chat/completions`` (plain JSON and SSE streaming, with usage data)
and ``GET /v1/models`` over real sockets on 127.0.0.1, so the real ``openai`` /
``langchain-openai`` client is exercised end to end. What it answers is scripted by a
``responder`` function; every request body is kept in ``requests`` for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    """What the server does with one request."""

    content: str = "OK"
    status: int = 200
    delay_s: float = 0.0
    chunk_chars: int = 4
    break_after_chunks: int | None = None  # drop the connection mid-stream
    chunk_delay_s: float = 0.0  # pause between streamed chunks
    stall_after_chunks: int | None = None  # go silent after this many chunks, for stall_s
    stall_s: float = 0.0
    finish_reason: str = "stop"  # "length": the server's token limit cut the answer
    error: str = ""  # the error message of a failure status (llama.cpp's words, say)
    usage: dict | None = field(
        default_factory=lambda: {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}
    )


def structured(**fields) -> Reply:
    """A reply carrying JSON, as a server answers a request with a ``response_format``."""
    return Reply(json.dumps(fields))


# What llama.cpp's Python server (llama_cpp.server) answers a JSON-schema response format with.
JSON_SCHEMA_REFUSAL = ("1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                       "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}")


def json_mode_only(responder):
    """``responder`` behind a server that, like llama.cpp's Python server, refuses the
    JSON-schema response format (500) and takes only JSON mode ("json_object")."""
    def refusing(body: dict) -> Reply:
        if (body.get("response_format") or {}).get("type") == "json_schema":
            return Reply(status=500, error=JSON_SCHEMA_REFUSAL)
        return responder(body)
    return refusing


def default_responder(body: dict) -> Reply:
    """Rewrites get a fixed standalone question, grades say "sufficient", answers cite
    source 1 (true) and a bogus 9 (invented)."""
    system = body["messages"][0]["content"]
    if "standalone question" in system:
        return structured(standalone_question="What are the main features of LangGraph?")
    if "judge whether the passages" in system:
        return structured(sufficient=True, reason="passage 1 describes it")
    if "search query" in system:
        return structured(standalone_question="LangGraph features")
    return Reply("LangGraph builds stateful agents [1]. It also flies to the moon [9].")


class ScriptedOpenAIServer:
    """Start with ``with ScriptedOpenAIServer() as server: server.base_url``."""

    def __init__(self, responder=default_responder, props: dict | None = None):
        """``props``: what ``GET /props`` answers (llama.cpp's server settings, such as
        ``{"default_generation_settings": {"n_ctx": 2048}}``); None: 404 like other servers."""
        self.responder = responder
        self.props = props
        self.disconnects = 0  # streams the client hung up on before their end
        self.requests: list[dict] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The /v1 URL to give the client."""
        host, port = self._server.server_address
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> "ScriptedOpenAIServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def chat_requests(self, kind: str) -> list[dict]:
        """Requests whose system prompt is a rewrite ('rewrite') or an answer ('answer')."""
        def is_rewrite(body):
            return "standalone question" in body["messages"][0]["content"]
        return [b for b in self.requests if is_rewrite(b) == (kind == "rewrite")]

    def _handler_class(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                if self.path.rstrip("/") == "/props" and outer.props is not None:
                    self._json(200, outer.props)
                elif self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": "test-model", "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                outer.requests.append(body)
                reply = outer.responder(body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.status != 200:
                    message = reply.error or f"scripted failure {reply.status}"
                    self._json(reply.status, {"error": {"message": message, "type": "test"}})
                    return
                if body.get("stream"):
                    try:
                        self._stream(body, reply)
                    except (BrokenPipeError, ConnectionResetError):
                        outer.disconnects += 1  # the client stopped reading (its token limit, a hang-up)
                else:
                    self._json(200, self._completion(body, reply))

            def _json(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _completion(self, body, reply):
                return {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "test-model"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content},
                                 "finish_reason": "stop"}],
                    "usage": reply.usage,
                }

            def _stream(self, body, reply):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                base = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": int(time.time()),
                        "model": body.get("model", "test-model")}
                size = reply.chunk_chars
                pieces = [reply.content[i:i + size] for i in range(0, len(reply.content), size)]
                for number, piece in enumerate(pieces):
                    if number == reply.stall_after_chunks:
                        time.sleep(reply.stall_s)
                    if reply.break_after_chunks is not None and number >= reply.break_after_chunks:
                        self.wfile.write(b"data: {broken json")
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    if reply.chunk_delay_s:
                        time.sleep(reply.chunk_delay_s)
                        self.wfile.write(b": keep-alive\n\n")  # a gone client shows here
                        self.wfile.flush()
                    delta = {"role": "assistant", "content": piece} if number == 0 else {"content": piece}
                    chunk = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                done = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}]}
                self.wfile.write(f"data: {json.dumps(done)}\n\n".encode())
                if reply.usage and (body.get("stream_options") or {}).get("include_usage"):
                    usage = {**base, "choices": [], "usage": reply.usage}
                    self.wfile.write(f"data: {json.dumps(usage)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        return Handler

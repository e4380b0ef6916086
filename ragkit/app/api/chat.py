"""OpenAI's chat completions, spoken by ragkit: the request read into a question and its
history, the answer written back as a ``chat.completion`` or as ``chat.completion.chunk``
events, with ragkit's sources beside it.

The whole ``messages`` list is the conversation: its last message is the question (a user
message); each earlier user message followed by an assistant message is one earlier turn,
the history a follow-up is read against ("When was it built?" after a question about the
bridge). System and developer messages are accepted and not used: the answer policy is
ragkit's own (quotes or a checked model answer, with [n] citations), whatever a client's
system prompt asks. Tool messages and tool calls are not supported.

Besides OpenAI's fields a response carries ``sources`` (the numbered passages the answer's
[n] markers cite: title, file, page, passage text, score...) and ``ragkit`` (found or not,
the question as understood, the closest passages when not found, how it was answered, the
session when one was asked for). OpenAI's clients keep unknown fields
(``completion.model_extra``); streaming, they come in the chunk that carries
``finish_reason``.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field

from ragkit.answering.citations import MARKER_RE
from ragkit.app.engine import check_question
from ragkit.app.history import validate_session_id
from ragkit.errors import ApiError, RagkitError
from ragkit.lang.text import count_tokens
from ragkit.types import Exchange, Source, Turn

SESSION_HEADER = "x-ragkit-session"
QUESTION_ROLES = ("user",)
IGNORED_ROLES = ("system", "developer")
MODES = ("default", "agentic")


def invalid(message: str, param: str | None = None, code: str | None = None) -> ApiError:
    """400 invalid_request_error."""
    return ApiError(400, message, "invalid_request_error", code, param)


@dataclass
class ChatRequest:
    """A chat completion request as ragkit reads it."""

    model: str
    question: str
    history: list[Exchange]
    stream: bool = False
    include_usage: bool = False
    session_id: str | None = None
    prompt_text: str = ""  # every message's text, for the usage count
    filters: dict = field(default_factory=dict)  # tags, doc_types, doc_ids (ragkit's own field)


def parse_json(body: bytes) -> dict:
    """The body as a JSON object; 400 naming what is wrong."""
    if not body.strip():
        raise invalid("The request body is empty: send a JSON object.")
    try:
        data = json.loads(body)
    except UnicodeDecodeError:
        raise invalid("The request body is not UTF-8 text.") from None
    except json.JSONDecodeError as exc:
        raise invalid(f"The request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}.",
                      code="invalid_json") from None
    if not isinstance(data, dict):
        raise invalid("The request body must be a JSON object.")
    return data


def message_text(message: dict, number: int) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") not in ("text", "input_text"):
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise invalid(f"messages[{number}]: content parts of type {kind!r} are not supported; send text.",
                              f"messages[{number}].content")
            if not isinstance(part.get("text"), str):
                raise invalid(f"messages[{number}]: a text part needs a 'text' string.", f"messages[{number}].content")
            texts.append(part["text"])
        return "\n".join(texts)
    raise invalid(f"messages[{number}].content must be a string or a list of text parts.",
                  f"messages[{number}].content")


def _evidence(message: dict) -> str:
    """The first source's passage of an assistant message that carries ragkit's sources back
    (a client that keeps whole responses): what the turn's subject was read from."""
    sources = message.get("sources")
    if isinstance(sources, list) and sources and isinstance(sources[0], dict):
        return str(sources[0].get("text") or "")
    return ""


def read_messages(messages, max_messages: int) -> tuple[str, list[Exchange], str]:
    """(question, earlier exchanges oldest first, all the text) of a ``messages`` list."""
    if not isinstance(messages, list) or not messages:
        raise invalid("'messages' must be a non-empty list of messages.", "messages")
    if len(messages) > max_messages:
        raise invalid(f"'messages' holds {len(messages)} messages; at most {max_messages} are taken "
                      "(RAGKIT_API_MAX_MESSAGES).", "messages", "too_many_messages")
    turns: list[tuple[str, dict]] = []
    texts: list[str] = []
    for number, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise invalid(f"messages[{number}] must be an object with a 'role'.", f"messages[{number}]")
        role = message["role"]
        if role in IGNORED_ROLES:
            texts.append(message_text(message, number))
            continue
        if role not in ("user", "assistant"):
            raise invalid(f"messages[{number}]: role {role!r} is not supported (user, assistant, system).",
                          f"messages[{number}].role")
        text = message_text(message, number)
        texts.append(text)
        turns.append((role, {"text": text, "evidence": _evidence(message) if role == "assistant" else ""}))
    if not turns or turns[-1][0] != "user":
        raise invalid("The last message must be the user's question.", "messages")
    exchanges: list[Exchange] = []
    pending_question = ""
    for role, item in turns[:-1]:
        if role == "user":
            pending_question = item["text"].strip()  # a question left unanswered is not history
        elif pending_question:
            answer = MARKER_RE.sub("", item["text"]).strip()
            exchanges.append(Exchange(pending_question, answer, item["evidence"]))
            pending_question = ""
    return turns[-1][1]["text"], exchanges, "\n".join(texts)


def read_request(data: dict, header_session: str | None, max_messages: int) -> ChatRequest:
    """A chat completion request's fields, checked; 400 (OpenAI's words) for a bad one."""
    model = data.get("model")
    if not isinstance(model, str) or not model.strip():
        raise invalid("'model' is required: one of the ids GET /v1/models lists.", "model")
    question, history, text = read_messages(data.get("messages"), max_messages)
    try:
        question = check_question(question)
    except RagkitError as exc:
        raise invalid(str(exc), "messages", "invalid_question") from None
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise invalid("'stream' must be true or false.", "stream")
    options = data.get("stream_options") or {}
    if not isinstance(options, dict):
        raise invalid("'stream_options' must be an object.", "stream_options")
    session = data.get("session_id")
    if session is not None and not isinstance(session, str):
        raise invalid("'session_id' must be a string.", "session_id")
    if header_session and session and header_session != session:
        raise invalid("The X-Ragkit-Session header and 'session_id' name different conversations.", "session_id")
    session = session or header_session or None
    if session is not None:
        try:
            validate_session_id(session)
        except RagkitError as exc:
            raise invalid(str(exc), "session_id") from None
    filters = data.get("filters") or {}
    if not isinstance(filters, dict) or any(
            key not in ("tags", "doc_types", "doc_ids") or not isinstance(value, list)
            or not all(isinstance(item, str) for item in value) for key, value in filters.items()):
        raise invalid("'filters' is an object of lists of strings: tags, doc_types, doc_ids.", "filters")
    return ChatRequest(model.strip(), question, history, stream, bool(options.get("include_usage")), session, text,
                       filters)


def completion_id() -> str:
    """A new chat completion id."""
    return "chatcmpl-" + uuid.uuid4().hex


def source_dict(source: Source, bases: dict[str, dict]) -> dict:
    """A source as the API shows it: its fields plus the knowledge base of its document."""
    data = source.to_dict()
    data["knowledge_base"] = bases.get(source.doc_id)
    return data


def extras(turn: Turn, bases: dict[str, dict], session_id: str | None, model: str) -> dict:
    """The fields OpenAI's clients ignore and ragkit's read: ``sources`` and ``ragkit``."""
    return {
        "sources": [source_dict(source, bases) for source in turn.sources],
        "ragkit": {
            "found": turn.found,
            "answer": turn.answer,
            "question": turn.question,
            "standalone_question": turn.standalone_question,
            "mode": turn.mode,
            "answered_by": turn.model or "extractive",
            "model": model,
            "closest": [source_dict(source, bases) for source in turn.closest],
            "session_id": session_id,
            "turn_id": turn.id,
            "trace": [step.to_dict() for step in turn.trace],
            "timings": turn.timings,
        },
    }


def usage(turn: Turn, prompt_text: str) -> dict:
    """OpenAI's usage object: the model's own counts when it gave them, else counted here
    (cl100k tokens of every message and of the answer)."""
    prompt = int(turn.usage.get("input_tokens") or 0) or count_tokens(prompt_text)
    completion = int(turn.usage.get("output_tokens") or 0) or count_tokens(turn.answer)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def completion(request: ChatRequest, turn: Turn, bases: dict[str, dict], cid: str | None = None) -> dict:
    """The whole answer as a ``chat.completion``."""
    return {
        "id": cid or completion_id(), "object": "chat.completion", "created": int(time.time()),
        "model": request.model, "system_fingerprint": None,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": turn.answer, "refusal": None},
                     "logprobs": None, "finish_reason": "stop"}],
        "usage": usage(turn, request.prompt_text),
        **extras(turn, bases, request.session_id, request.model),
    }


def sse(payload: dict | str) -> bytes:
    """One Server-Sent Event."""
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    return f"data: {data}\n\n".encode()


class ChunkWriter:
    """Turns the engine's events into ``chat.completion.chunk`` events.

    Answer text is passed on as it comes (``token`` events); when the turn is recorded
    (``done``) whatever of the recorded answer has not been sent follows, so the text a
    client puts together is the answer the page shows. Should the engine withdraw text
    already sent (a model that failed after its first sentences: ``reset``), OpenAI's format
    cannot take it back: the rest is held, and the last chunk's ``ragkit.answer`` is the
    answer as recorded."""

    def __init__(self, request: ChatRequest, cid: str | None = None):
        self.request = request
        self.id = cid or completion_id()
        self.created = int(time.time())
        self.sent = ""
        self.withdrawn = False

    def _chunk(self, delta: dict, finish: str | None = None, **more) -> bytes:
        return sse({"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                    "model": self.request.model, "system_fingerprint": None,
                    "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], **more})

    def start(self) -> bytes:
        """The first chunk: the assistant's role."""
        return self._chunk({"role": "assistant", "content": ""})

    def event(self, event: dict) -> bytes:
        """The chunk for one engine event (b"" when it has no text to send)."""
        kind = event["type"]
        if kind == "reset":
            if self.sent:
                self.withdrawn = True
            return b""
        if kind == "token" and event["text"] and not self.withdrawn:
            self.sent += event["text"]
            return self._chunk({"content": event["text"]})
        return b""

    def finish(self, turn: Turn, bases: dict[str, dict]) -> bytes:
        """The rest of the recorded answer, the chunk with ``finish_reason`` (and the sources),
        the usage chunk when asked for (``stream_options.include_usage``), and ``[DONE]``."""
        out = b""
        if not self.withdrawn and turn.answer.startswith(self.sent) and turn.answer != self.sent:
            out += self._chunk({"content": turn.answer[len(self.sent):]})
            self.sent = turn.answer
        counted = usage(turn, self.request.prompt_text)
        more = extras(turn, bases, self.request.session_id, self.request.model)
        more["ragkit"]["streamed_text_is_answer"] = self.sent == turn.answer
        if not self.request.include_usage:
            more["usage"] = counted
        out += self._chunk({}, "stop", **more)
        if self.request.include_usage:
            out += sse({"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                        "model": self.request.model, "system_fingerprint": None, "choices": [], "usage": counted})
        return out + sse("[DONE]")

    @staticmethod
    def error(exc: ApiError) -> bytes:
        """An error after the stream began (as OpenAI sends one), then ``[DONE]``."""
        return sse(exc.to_dict()) + sse("[DONE]")

"""Chat models: which ones are configured, the client for each, and errors in words.

With ``OPENAI_API_KEY`` set (or ``RAGKIT_CHAT_MODELS`` listing endpoints), answers can come
from any OpenAI-compatible server (OpenAI, DeepSeek, Qwen, Ollama, vLLM, llama.cpp)
through langchain-openai; "extractive, offline" is always one of the choices. API keys are
read from the environment when a client is made and never stored or shown.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlparse

from ragkit.config import Settings
from ragkit.errors import ModelNotFound
from ragkit.models.judge_memory import FILE_NAME, JSON_OBJECT, JudgeMemory

EXTRACTIVE = "extractive"
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
# A rewrite, a grade or a route is a JSON object of a sentence (~20-40 tokens); room beyond
# that only lets a small model ramble (or pad JSON mode with whitespace) for nobody: llama.cpp's
# Python server samples JSON mode at ~1 s a token for gemma-3-270m on two cores.
STRUCTURED_MAX_TOKENS = 64


@dataclass(frozen=True)
class ModelChoice:
    """One answer mode a conversation can use."""

    id: str  # "extractive" or "<model>@<host>"
    label: str
    model: str = ""
    base_url: str = ""
    key_variable: str = "OPENAI_API_KEY"

    @property
    def generated(self) -> bool:
        """True for a language model, False for the offline extractive answerer."""
        return self.id != EXTRACTIVE


@dataclass
class ModelStatus:
    """Which answer mode is active by default, for the UI and the CLI."""

    mode: str  # "llm" or "extractive"
    model: str
    base_url: str

    @property
    def description(self) -> str:
        """One line for people."""
        if self.mode == "llm":
            return f"generated answers by {self.model} at {self.base_url}"
        return "extractive answers (offline: quotes the best sentences of your documents)"


OFFLINE = ModelChoice(EXTRACTIVE, "extractive, offline")


def chat_models(settings: Settings) -> list[ModelChoice]:
    """The configured models, the default first, then the offline extractive answerer."""
    choices = [_parse_entry(settings, entry) for entry in _entries(settings.chat_models)]
    if not choices and settings.llm_enabled:
        choices.append(_choice(settings.chat_model, settings.openai_base_url or "", "OPENAI_API_KEY"))
    return choices + [OFFLINE]


def _entries(listing: str) -> list[str]:
    return [entry.strip() for entry in listing.split(",") if entry.strip()]


def _parse_entry(settings: Settings, entry: str) -> ModelChoice:
    """``model``, ``model@base_url`` or ``model@base_url|KEY_VARIABLE`` as a choice."""
    spec, _, key_variable = entry.partition("|")
    model, _, base_url = spec.partition("@")
    return _choice(model.strip(), base_url.strip() or (settings.openai_base_url or ""),
                   key_variable.strip() or "OPENAI_API_KEY")


def model_chain(settings: Settings, first: ModelChoice) -> list[ModelChoice]:
    """The models a turn tries in order: the conversation's model, then each of
    ``RAGKIT_FALLBACK_MODELS`` (an entry naming a configured choice by id, or a
    ``RAGKIT_CHAT_MODELS`` entry; the same model twice is tried once). Empty for the
    offline choice: after the last model comes the extractive answer."""
    if not first.generated:
        return []
    configured = chat_models(settings)
    chain = [first]
    for entry in _entries(settings.fallback_models):
        parsed = _parse_entry(settings, entry)
        known = next((c for c in configured if c.generated and (
            c.id == entry or (c.model, c.base_url) == (parsed.model, parsed.base_url))), None)
        candidate = known or parsed
        if all((c.model, c.base_url) != (candidate.model, candidate.base_url) for c in chain):
            chain.append(candidate)
    return chain


def _choice(model: str, base_url: str, key_variable: str) -> ModelChoice:
    host = urlparse(base_url).hostname or "api.openai.com" if base_url else "api.openai.com"
    return ModelChoice(f"{model}@{host}", f"{model} · {host}", model, base_url, key_variable)


def find_choice(settings: Settings, model_id: str | None) -> ModelChoice:
    """The choice with this id; the default one when the id is unknown or None (a
    conversation's remembered model that is no longer configured)."""
    choices = chat_models(settings)
    return next((c for c in choices if c.id == model_id), choices[0])


def require_choice(settings: Settings, model_id: str) -> ModelChoice:
    """The choice with this id, asked for by name; ModelNotFound listing the configured
    ones when there is none (an explicit request is never silently answered otherwise)."""
    choices = chat_models(settings)
    for choice in choices:
        if choice.id == model_id:
            return choice
    known = ", ".join(choice.id for choice in choices)
    raise ModelNotFound(f"no model {model_id!r} is configured; the known ones are: {known} "
                        "(RAGKIT_CHAT_MODELS lists models as model@base-url)")


def model_status(settings: Settings) -> ModelStatus:
    """The default answer mode."""
    choice = chat_models(settings)[0]
    if choice.generated:
        return ModelStatus("llm", choice.model, choice.base_url or "https://api.openai.com/v1")
    return ModelStatus("extractive", "", "")


def api_key(choice: ModelChoice) -> str:
    """The choice's key from the environment (local servers need none)."""
    key = os.environ.get(choice.key_variable, "")
    if not key and (urlparse(choice.base_url).hostname or "") in LOCAL_HOSTS:
        return "not-needed"
    return key


def make_chat_model(settings: Settings, choice: ModelChoice | None = None, max_tokens: int | None = None,
                    timeout_s: float | None = None, streaming: bool = True, retries: int | None = None):
    """A streaming ChatOpenAI client for a generated choice (None for the extractive one).

    The answer length is sent both as ``max_completion_tokens`` (what langchain-openai sends
    for max_tokens) and as ``max_tokens`` in the body, which older servers (llama.cpp,
    vLLM) honour instead."""
    choice = choice or chat_models(settings)[0]
    if not choice.generated:
        return None
    import httpx
    from langchain_openai import ChatOpenAI

    limit = max_tokens or settings.max_answer_tokens
    timeout = timeout_s or settings.llm_timeout_s
    return ChatOpenAI(
        # Its own connection pool, so that hanging up on an abandoned request (closing it) ends
        # that request alone; langchain-openai otherwise shares one pool per base URL.
        http_client=httpx.Client(timeout=timeout, follow_redirects=True),
        model=choice.model,
        api_key=api_key(choice) or settings.openai_api_key or "missing",
        base_url=choice.base_url or None,
        timeout=timeout,
        max_retries=settings.llm_max_retries if retries is None else retries,
        max_tokens=limit,
        extra_body={"max_tokens": limit},
        temperature=0.1,
        streaming=streaming,
        stream_usage=streaming,
    )


@lru_cache(maxsize=16)
def reported_context_window(base_url: str, model: str) -> int | None:
    """The context window the server reports for ``model`` (llama.cpp's ``/props`` n_ctx,
    vLLM's max_model_len, Ollama-style context_length in ``/models``), or None."""
    if not base_url:
        return None
    props = _read_json(re.sub(r"/v1/?$", "", base_url.rstrip("/")) + "/props")  # llama.cpp's server
    if isinstance(props, dict):
        settings = props.get("default_generation_settings")
        for value in (props.get("n_ctx"), settings.get("n_ctx") if isinstance(settings, dict) else None):
            if isinstance(value, int) and value > 0:
                return value
    payload = _read_json(base_url.rstrip("/") + "/models")
    for entry in payload.get("data", []) if isinstance(payload, dict) else []:
        if not isinstance(entry, dict) or entry.get("id") not in (model, None):
            continue
        meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
        for key in ("max_model_len", "context_length", "n_ctx", "context_window"):
            value = entry.get(key) or meta.get(key)
            if isinstance(value, int) and value > 0:
                return value
    return None


def _read_json(url: str):
    """The JSON at ``url`` (a short GET), or None."""
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return json.loads(response.read(1_000_000))
    except Exception:
        return None


def context_window(settings: Settings, choice: ModelChoice) -> int:
    """The tokens a prompt plus its answer may use: the setting, or less when the server says so."""
    reported = reported_context_window(choice.base_url, choice.model)
    return min(settings.model_context_tokens, reported) if reported else settings.model_context_tokens


def explain_llm_error(exc: BaseException, choice: ModelChoice, waited_s: float | None = None) -> str:
    """A short, specific message for a failed model call, naming the real cause."""
    import openai

    where = choice.base_url or "the OpenAI API"
    status = getattr(exc, "status_code", None)
    body = str(getattr(exc, "body", "") or getattr(exc, "message", "") or exc).lower()
    waited = f" (waited {waited_s:.0f} s)" if waited_s else ""
    if isinstance(exc, (openai.APITimeoutError, TimeoutError)):
        return f"the model server at {where} sent nothing in time{waited}"
    if isinstance(exc, openai.APIConnectionError):
        return f"the model server at {where} is unreachable (connection refused or no network)"
    if isinstance(exc, openai.AuthenticationError) or status == 401:
        return f"the model server at {where} rejected the API key in {choice.key_variable} (401)"
    if isinstance(exc, openai.PermissionDeniedError) or status == 403:
        return f"the model server at {where} refused access (403)"
    if isinstance(exc, openai.NotFoundError) or status == 404:
        if "model" in body and choice.model.lower() in body or "model_not_found" in body:
            return f"model {choice.model!r} was not found at {where} (404)"
        hint = "" if where.rstrip("/").endswith("/v1") else "; the base URL usually ends with /v1"
        return f"{where} has no OpenAI-compatible /chat/completions endpoint (404){hint}"
    if isinstance(exc, openai.RateLimitError) or status == 429:
        return f"the model server at {where} is rate-limiting requests (429); try again shortly"
    if status == 400 and ("context" in body or "too long" in body or "exceed" in body):
        return f"the prompt is longer than the model at {where} accepts (400: context length)"
    if status is not None and status >= 500:
        return f"the model server at {where} failed with an internal error ({status})"
    if status is not None:
        return f"the model server at {where} refused the request ({status})"
    return f"the answer stream from {where} broke off ({type(exc).__name__}: {str(exc)[:120]})"


class ModelClients:
    """Clients per model choice: a streaming one for answers (made again after it was hung
    up on) and short, bounded ones for structured judgements (rewrites, grades), asked only
    while ``judges`` says so (``RAGKIT_MODEL_JUDGE``, ``judge_memory.JudgeMemory``)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.memory = JudgeMemory(settings.data_path / FILE_NAME, settings.judge_memory_hours * 3600)
        self._answer: dict[str, object] = {}

    def choice(self, model_id: str | None) -> ModelChoice:
        """The choice for a conversation's model id (the default when unknown)."""
        return find_choice(self.settings, model_id)

    def answering(self, choice: ModelChoice):
        """The streaming client that writes answers (None for the extractive choice)."""
        if not choice.generated:
            return None
        client = self._answer.get(choice.id)
        if client is None or client.root_client.is_closed():
            client = self._answer[choice.id] = make_chat_model(self.settings, choice)
        return client

    def judge_failed(self, choice: ModelChoice, why: str = "") -> None:
        """Remember an unusable structured reply (small models rarely follow a schema)."""
        self.memory.record(choice.model, choice.base_url, usable=False, why=why)

    def judge_succeeded(self, choice: ModelChoice) -> None:
        """Remember a usable structured reply."""
        self.memory.record(choice.model, choice.base_url, usable=True)

    def judges(self, choice: ModelChoice, budget=None) -> bool:
        """True when the model is to be asked for a rewrite or a grade now: a generated
        choice, RAGKIT_MODEL_JUDGE not off, the turn's ``budget`` (a ``TurnBudget``) has a
        structured call left, and (auto) the model was not found unusable."""
        mode = self.settings.model_judge
        if not choice.generated or mode == "off":
            return False
        if budget is not None and not budget.may_call_structured():
            return False
        return mode == "on" or self.memory.usable(choice.model, choice.base_url)

    def why_not_judging(self, choice: ModelChoice) -> str:
        """Why a generated model is not asked for a structured reply, in words."""
        if self.settings.model_judge == "off":
            return "RAGKIT_MODEL_JUDGE=off"
        if not self.memory.usable(choice.model, choice.base_url):
            return "its structured replies were unusable twice (remembered; RAGKIT_JUDGE_MEMORY_HOURS)"
        return "this turn's structured call or model time was already used"

    def judge_timeout(self, timeout_s: float | None = None) -> float:
        """The time one structured call may take: RAGKIT_REWRITE_TIMEOUT_S, less when
        ``timeout_s`` (what the turn has left) is shorter."""
        limit = self.settings.rewrite_timeout_s
        if timeout_s is not None:
            limit = min(timeout_s, limit)
        return max(limit, 0.5)

    def json_mode_only(self, choice: ModelChoice) -> bool:
        """True when the model's server refused the JSON-schema format (remembered)."""
        return self.memory.json_format(choice.model, choice.base_url) == JSON_OBJECT

    def schema_refused(self, choice: ModelChoice) -> None:
        """Remember that the model's server takes JSON mode only."""
        self.memory.record_json_format(choice.model, choice.base_url, JSON_OBJECT)

    def judging(self, choice: ModelChoice, timeout_s: float | None = None):
        """A client for one short structured call: no retries, at most ``judge_timeout``
        per read; none for the extractive choice."""
        if not choice.generated:
            return None
        return make_chat_model(self.settings, choice, max_tokens=STRUCTURED_MAX_TOKENS,
                               timeout_s=self.judge_timeout(timeout_s), retries=0)

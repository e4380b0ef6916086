"""Chat models: which ones are configured, the client for each, and errors in words.

With ``OPENAI_API_KEY`` set (or ``RAGKIT_CHAT_MODELS`` listing endpoints), answers can come
from any OpenAI-compatible server (OpenAI, DeepSeek, Qwen, Ollama, vLLM, llama.cpp)
through langchain-openai; "extractive, offline" is always one of the choices. API keys are
read from the environment when a client is made and never stored or shown.
"""

from __future__ import annotations

import json
import os
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlparse

from .config import Settings
from .errors import ModelNotFound

EXTRACTIVE = "extractive"
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}


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
    choices = []
    for entry in [e.strip() for e in settings.chat_models.split(",") if e.strip()]:
        spec, _, key_variable = entry.partition("|")
        model, _, base_url = spec.partition("@")
        choices.append(_choice(model.strip(), base_url.strip() or (settings.openai_base_url or ""),
                               key_variable.strip() or "OPENAI_API_KEY"))
    if not choices and settings.llm_enabled:
        choices.append(_choice(settings.chat_model, settings.openai_base_url or "", "OPENAI_API_KEY"))
    return choices + [OFFLINE]


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
    from langchain_openai import ChatOpenAI

    limit = max_tokens or settings.max_answer_tokens
    return ChatOpenAI(
        model=choice.model,
        api_key=api_key(choice) or settings.openai_api_key or "missing",
        base_url=choice.base_url or None,
        timeout=timeout_s or settings.llm_timeout_s,
        max_retries=settings.llm_max_retries if retries is None else retries,
        max_tokens=limit,
        extra_body={"max_tokens": limit},
        temperature=0.1,
        streaming=streaming,
        stream_usage=streaming,
    )


@lru_cache(maxsize=16)
def reported_context_window(base_url: str, model: str) -> int | None:
    """The context window the server reports for ``model`` (vLLM's max_model_len,
    llama.cpp's n_ctx, Ollama-style context_length), or None."""
    if not base_url:
        return None
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=3) as response:
            payload = json.loads(response.read(1_000_000))
    except Exception:
        return None
    for entry in payload.get("data", []) if isinstance(payload, dict) else []:
        if not isinstance(entry, dict) or entry.get("id") not in (model, None):
            continue
        meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
        for key in ("max_model_len", "context_length", "n_ctx", "context_window"):
            value = entry.get(key) or meta.get(key)
            if isinstance(value, int) and value > 0:
                return value
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
    """Clients per model choice, made once: a streaming one for answers and a short,
    bounded one for structured judgements (rewrites, grades)."""

    GIVE_UP_AFTER = 2  # unusable structured replies before a model is no longer asked for them

    def __init__(self, settings: Settings):
        self.settings = settings
        self._answer: dict[str, object] = {}
        self._judge: dict[str, object] = {}
        self._judge_failures: dict[str, int] = {}

    def choice(self, model_id: str | None) -> ModelChoice:
        """The choice for a conversation's model id (the default when unknown)."""
        return find_choice(self.settings, model_id)

    def answering(self, choice: ModelChoice):
        """The streaming client that writes answers (None for the extractive choice)."""
        if choice.generated and choice.id not in self._answer:
            self._answer[choice.id] = make_chat_model(self.settings, choice)
        return self._answer.get(choice.id)

    def judge_failed(self, choice: ModelChoice) -> None:
        """Count an unusable structured reply (small models rarely follow a schema)."""
        self._judge_failures[choice.id] = self._judge_failures.get(choice.id, 0) + 1

    def judges(self, choice: ModelChoice) -> bool:
        """True while the model is still asked for rewrites and grades."""
        return choice.generated and self._judge_failures.get(choice.id, 0) < self.GIVE_UP_AFTER

    def judging(self, choice: ModelChoice):
        """A client for short structured calls, with its own shorter timeout."""
        if choice.generated and choice.id not in self._judge:
            self._judge[choice.id] = make_chat_model(self.settings, choice, max_tokens=200,
                                                     timeout_s=self.settings.rewrite_timeout_s, streaming=False,
                                                     retries=0)
        return self._judge.get(choice.id)

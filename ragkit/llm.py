"""Chat model factory and error explanations.

With ``OPENAI_API_KEY`` set, answers come from that OpenAI-compatible endpoint (OpenAI,
DeepSeek, Qwen, Ollama, vLLM, llama.cpp...) through langchain-openai; without it,
ragkit answers offline with the extractive answerer.
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import Settings


@dataclass
class ModelStatus:
    """Which answer mode is active, for the UI and the CLI."""

    mode: str  # "llm" or "extractive"
    model: str
    base_url: str

    @property
    def description(self) -> str:
        """One line for people."""
        if self.mode == "llm":
            return f"generated answers by {self.model} at {self.base_url}"
        return "extractive answers (offline: quotes the best sentences of your documents)"


def model_status(settings: Settings) -> ModelStatus:
    """The answer mode the settings select."""
    if settings.llm_enabled:
        return ModelStatus("llm", settings.chat_model, settings.openai_base_url or "https://api.openai.com/v1")
    return ModelStatus("extractive", "", "")


def make_chat_model(settings: Settings, max_tokens: int | None = None):
    """A streaming ChatOpenAI client, or None when no endpoint is configured."""
    if not settings.llm_enabled:
        return None
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=settings.chat_model,
        api_key=settings.openai_api_key,
        base_url=settings.openai_base_url,
        timeout=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
        max_tokens=max_tokens or settings.max_answer_tokens,
        temperature=0.1,
        streaming=True,
        stream_usage=True,
    )


def explain_llm_error(exc: BaseException, settings: Settings) -> str:
    """A short, specific message for a failed model call."""
    import openai

    where = settings.openai_base_url or "the OpenAI API"
    status = getattr(exc, "status_code", None)
    if isinstance(exc, openai.APITimeoutError):
        return f"the model server at {where} did not answer within {settings.llm_timeout_s:.0f} s"
    if isinstance(exc, openai.APIConnectionError):
        return f"the model server at {where} is unreachable"
    if isinstance(exc, openai.AuthenticationError) or status == 401:
        return f"the model server at {where} rejected the API key (401)"
    if isinstance(exc, openai.PermissionDeniedError) or status == 403:
        return f"the model server at {where} refused access (403)"
    if isinstance(exc, openai.NotFoundError) or status == 404:
        return f"model {settings.chat_model!r} was not found at {where} (404)"
    if isinstance(exc, openai.RateLimitError) or status == 429:
        return f"the model server at {where} is rate-limiting requests (429); try again shortly"
    if status is not None and status >= 500:
        return f"the model server at {where} failed with an internal error ({status})"
    if status is not None:
        return f"the model server at {where} refused the request ({status})"
    return f"the answer stream from {where} broke off ({type(exc).__name__})"

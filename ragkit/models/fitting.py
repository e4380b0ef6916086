"""Fitting an answer's prompt into the model's context window, and saying what it cost.

The window is what the server reports (``llm.context_window``: llama.cpp's ``/props``
``n_ctx``, vLLM's ``max_model_len``), else ``RAGKIT_MODEL_CONTEXT_TOKENS``. The answer keeps
``RAGKIT_MAX_ANSWER_TOKENS`` of it when it can; a window too small for that and a useful
prompt gets a shorter answer budget rather than an overflow (never below
``MIN_ANSWER_TOKENS``). Then the oldest turns of the history, and the passages that do not
fit, are dropped (``model_io.fit_history``, ``model_io.pack_context``). ``Fitted.notes``
says each of these in words, for the trace and, when passages were dropped or the answer
cut short, for the answer's footer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ragkit.config import Settings
from ragkit.errors import ContextTooSmall
from ragkit.lang.text import count_tokens
from ragkit.models.chat import ModelChoice, context_window
from ragkit.models.prompts import PromptSource
from ragkit.models.streaming import MIN_SOURCE_TOKENS, fit_history, pack_context
from ragkit.types import Exchange, Source

MIN_ANSWER_TOKENS = 64
PROMPT_OVERHEAD = 120  # the fences and labels around the sources and the question




@dataclass
class Fitted:
    """The prompt's parts that fit, and what was given up for it."""

    history: list[Exchange]
    packed: list[PromptSource]
    answer_tokens: int
    window: int
    notes: list[str] = field(default_factory=list)  # what was dropped or cut, in words
    footer: str = ""  # what the reader should know ("" when nothing of note was dropped)
    prompt_tokens: int = 0  # the prompt as sent, counted offline


FOOTER_START = "\n\n*Note: "


def with_footer(answer: str, footer: str) -> str:
    """The answer with its footer (what was dropped to fit) in a last line of its own."""
    return f"{answer}{FOOTER_START}{footer}.*" if footer else answer


def split_footer(answer: str) -> tuple[str, str]:
    """(the answer's body, its footer's words or "")."""
    body, found, footer = answer.partition(FOOTER_START)
    return (body, footer.removesuffix(".*")) if found else (answer, "")


def fit_prompt(settings: Settings, choice: ModelChoice, system: str, history: list[Exchange], question: str,
               sources: list[Source]) -> Fitted:
    """The history, passages and answer budget that fit ``choice``'s context window."""
    window = context_window(settings, choice)
    answer_tokens = settings.max_answer_tokens
    fixed = count_tokens(system) + count_tokens(question) + PROMPT_OVERHEAD
    notes = []
    room = window - fixed - MIN_SOURCE_TOKENS
    if room < answer_tokens:
        answer_tokens = max(MIN_ANSWER_TOKENS, room)
        notes.append(f"answer budget cut from {settings.max_answer_tokens} to {answer_tokens} tokens to fit the "
                     f"{window}-token context window")
    fitting = settings.model_copy(update={"max_answer_tokens": answer_tokens,
                                          "model_context_tokens": window})
    try:
        kept_history, budget = fit_history(fitting, choice, system, history, question)
    except ContextTooSmall:
        raise ContextTooSmall(f"the question does not fit {choice.model}'s {window}-token context window even "
                              f"with a {answer_tokens}-token answer; raise the server's context size") from None
    if len(kept_history) < len(history):
        notes.append(f"{len(history) - len(kept_history)} earlier turns of {len(history)} dropped to fit")
    packed = pack_context(sources, budget)
    kept = {p.n: p for p in packed}
    dropped = [s for s in sources if s.n not in kept]
    shortened = [s for s in sources if s.n in kept and kept[s.n].text != s.text]
    footer = []
    if dropped:
        titles = ", ".join(f"[{s.n}] {s.title}" for s in dropped[:5])
        notes.append(f"{len(dropped)} of {len(sources)} passages dropped to fit the {window}-token window: {titles}")
        footer.append(f"{len(dropped)} of {len(sources)} passages did not fit the model's context window")
    if shortened:
        notes.append("shortened to their first sentences: " + ", ".join(f"[{s.n}]" for s in shortened))
    if answer_tokens < settings.max_answer_tokens:
        footer.append(f"the answer was limited to {answer_tokens} tokens by the model's context window")
    return Fitted(kept_history, packed, answer_tokens, window, notes, "; ".join(footer))


def overflow_message(exc: BaseException, choice: ModelChoice, prompt_tokens: int, window: int) -> str:
    """The words for a server's refusal of an over-long prompt, or "" when ``exc`` is not one.

    llama.cpp says "the request exceeds the available context size" (400); through
    langchain a refused stream can also arrive as "No generation chunks were returned"."""
    status = getattr(exc, "status_code", None)
    text = str(getattr(exc, "body", "") or "") + " " + str(exc)
    lowered = text.lower()
    overflow_words = ("context size", "context length", "context window", "exceed", "too long", "n_ctx")
    if "no generation chunks" in lowered:
        return (f"probably a context overflow: the server returned nothing for a prompt of about {prompt_tokens} "
                f"tokens, as llama.cpp does for one longer than its context size (ragkit assumed {window} tokens; "
                "set RAGKIT_MODEL_CONTEXT_TOKENS to the server's)")
    if (status == 400 and any(w in lowered for w in overflow_words)) or ("exceed" in lowered and "context" in lowered):
        return (f"context overflow: the prompt (about {prompt_tokens} tokens plus the answer) did not fit "
                f"{choice.model}'s context window (ragkit assumed {window} tokens; the server refused it). Set "
                f"RAGKIT_MODEL_CONTEXT_TOKENS to the server's context size")
    return ""

"""Where a question goes, and what it asks: the nodes before the first search.

- ``route`` decides the path. In default mode every question goes to the knowledge base;
  in agentic mode small talk, thanks and questions about the app itself are answered by
  ``direct`` without retrieval (offline by the rules of ``direct_route``; with a model by
  its structured verdict, the rule when the reply is unusable).
- ``contextualize`` makes a follow-up standalone ("What about its height?" → "What about
  Skerry Point Lighthouse's height?"), offline from the previous question's subject, or by
  the conversation's model when it gives a usable rewrite.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel

from ragkit import events
from ragkit.answering.contextualize import clean_rewrite, needs_context, plausible_rewrite, rewrite_options
from ragkit.answering.grading import PASSAGES_GRADED, coverage
from ragkit.graph.chain import ChainReply, NotUseful, ask_chain, judges_now
from ragkit.graph.context import RagContext
from ragkit.graph.nodes.memory import memory_rewrite
from ragkit.graph.policy import scope
from ragkit.graph.state import RagState, elapsed_ms, language, step
from ragkit.models import prompts
from ragkit.models.chat import ModelChoice
from ragkit.models.streaming import structured_reply
from ragkit.types import Exchange, SearchFilters

log = logging.getLogger(__name__)
SUBJECT_MARGIN = 0.15  # how much better other evidence must be to win over the likeliest subject's

# route -> the first node of its path
ROUTES = {"knowledge_base": "contextualize", "small_talk": "direct", "thanks": "direct", "about_app": "direct"}

_END = r"[\s!！.。,，~～?？]*$"
DIRECT_RULES = {  # whole messages only: "hi, who founded Acme?" is a question
    "small_talk": re.compile(r"(?i)^(?:hi|hello|hey|hiya|howdy|good (?:morning|afternoon|evening)|"
                             r"how are you(?: doing)?|hi there|hello there|"
                             r"你好|您好|嗨|哈喽|早上好|下午好|晚上好|你好吗)" + _END),
    "thanks": re.compile(r"(?i)^(?:(?:ok(?:ay)?|great|cool|perfect)[,!. ]*)?(?:thanks?(?: you)?(?: (?:so|very) much)?|"
                         r"thx|ty|cheers|much appreciated|bye|goodbye|see you|"
                         r"谢谢(?:你|您)?|多谢|感谢|非常感谢|再见|拜拜)"
                         + _END),
    "about_app": re.compile(r"(?i)^(?:who are you|what are you|what can you do|what do you do|help|"
                            r"how (?:do|can) i (?:use (?:you|this|ragkit)|add|upload) ?(?:documents?|files?)?|"
                            r"what is ragkit|你是谁|你能做什么|你会做什么|帮助|怎么(?:用|上传文档|添加文档))" + _END),
}


class RouteVerdict(BaseModel):
    """A model's choice of path for a message."""

    route: Literal["knowledge_base", "small_talk", "thanks", "about_app"]


def direct_route(question: str) -> str:
    """The rule: a message that is only a greeting, thanks or a question about the app
    takes that route; anything else goes to the knowledge base."""
    text = question.strip()
    return next((name for name, rule in DIRECT_RULES.items() if rule.match(text)), "knowledge_base")


def route(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Choose the question's path: default mode always searches; agentic mode answers
    small talk, thanks and questions about the app directly."""
    if state.chat_mode != "agentic":
        return {"route": "knowledge_base"}
    context = runtime.context
    chosen, how = direct_route(state.question), "offline rule"
    reply = ask_chain(context, state, "route", lambda choice: RouteVerdict.model_validate_json(
        structured_reply(context, choice, [SystemMessage(prompts.ROUTE_SYSTEM), HumanMessage(state.question)],
                         None, RouteVerdict)).route) if not state.history else ChainReply()
    if reply.value:
        chosen, how = reply.value, f"by {reply.model}{reply.after()}"
    elif reply.asked:
        how = f"offline rule; {reply.unusable('verdict')}"
    where = "the knowledge base" if chosen == "knowledge_base" else f"answered directly ({chosen.replace('_', ' ')})"
    return {"route": chosen, "trace": step("Routed", f"{where} ({how})")}




def direct(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Answer small talk, thanks or a question about the app without retrieval, saying so."""
    lang = language(state)
    text = prompts.DIRECT_REPLIES[state.route][lang] + prompts.DIRECT_NOTE[lang]
    runtime.stream_writer(events.sources([], True))
    runtime.stream_writer(events.token(text))
    return {"answer": text, "sources": [], "closest": [], "found": True, "mode": "direct", "model": "",
            "standalone_question": state.question, "usage": {},
            "trace": step("Answered directly", "no search: " + state.route.replace("_", " "))}




def contextualize(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Make a follow-up standalone (a first question, or a complete one, stays as is)."""
    started = time.perf_counter()
    context = runtime.context
    question = state.question.strip()
    history = state.history
    if not history or not needs_context(question):
        return {"standalone_question": question, "query": question, "queries": [],
                "timings": {"contextualize_ms": elapsed_ms(started)}}
    offline, how, options = offline_rewrite(context, question, history, scope(state.filters))
    small_talk = direct_route(history[-1].question) != "knowledge_base"  # "Thanks!" names no subject
    if offline == question or small_talk:
        earlier = [e for e in history[:-1] if direct_route(e.question) == "knowledge_base"]
        remembered, remembered_how = memory_rewrite(question, earlier, state.memory)
    else:
        remembered = remembered_how = ""
    if remembered and remembered != question:  # the previous turn names no subject: the latest one established
        offline, how, options = remembered, remembered_how, [remembered]
    rewritten = offline
    choice = context.choice(state)
    if judges_now(context, state):
        rewritten, how = model_rewrite(context, state, question, history, offline,
                                       state.memory.summary if state.memory else "")
    elif choice.generated:
        how += f" ({choice.model} not asked: {context.models.why_not_judging(choice)})"
    if rewritten != question:
        runtime.stream_writer(events.standalone(rewritten))
    detail = f"“{rewritten}” ({how})" if rewritten != question else "the question is complete: kept as asked"
    return {"standalone_question": rewritten, "query": rewritten, "queries": [],
            # other subjects for the searches after weak evidence, leaving the last for the question as asked
            "alternatives": [option for option in options if option != rewritten][
                : max(context.settings.retrieval_retries - 1, 0)],
            "trace": step("Rewrote the follow-up", detail),
            "timings": {"contextualize_ms": elapsed_ms(started)}}


def offline_rewrite(context: RagContext, question: str, history: list[Exchange],
                    within: SearchFilters | None = None) -> tuple[str, str, list[str]]:
    """Of the rewrites with the previous question's likeliest subjects, the one whose
    search finds the best-covered passage (ties: the likelier subject); also every
    rewrite, likeliest first, for the searches after weak evidence."""
    passages = context.passages
    options = rewrite_options(question, history, lambda phrase: rarity(context, phrase))
    if not options:
        return question, "offline", []
    if len(options) == 1:
        return options[0], "offline, from the previous question's subject", options
    scored = []
    for option in options:
        hits = passages.search(option, PASSAGES_GRADED, within)
        scored.append((coverage(option, hits, passages.idf(option))[0], option))
    first, best = scored[0], max(scored)
    if best[0] < first[0] + SUBJECT_MARGIN:  # the likeliest subject unless another is clearly better
        return first[1], "offline, from the previous question's subject", options
    return best[1], f"offline: of {len(options)} possible subjects, the one the documents support best", options


def rarity(context: RagContext, phrase: str) -> float:
    """How rare a phrase is in the knowledge base: between its rarest word's IDF and the mean."""
    values = list(context.passages.idf(phrase).values())
    return (max(values) + sum(values) / len(values)) / 2 if values else 0.0


def model_rewrite(context: RagContext, state: RagState, question: str, history: list[Exchange],
                  offline: str, summary: str = "") -> tuple[str, str]:
    """The standalone question of the chain's first model with a usable rewrite, and how it
    was made; the offline rewrite when no model's is usable (the trace says why).
    ``summary``: the conversation's memory."""
    conversation = "\n".join(f"User: {e.question}\nAssistant: {e.answer[:300]}" for e in history[-2:])
    if summary:
        conversation = f"(Summary of earlier turns: {prompts.fence(summary)})\n{conversation}"
    messages = [SystemMessage(prompts.CONTEXTUALIZE_SYSTEM),
                HumanMessage(f"Conversation:\n{conversation}\n\nLatest question: {question}")]

    def rewrite_by(choice: ModelChoice) -> str:
        rewrite = clean_rewrite(structured_reply(context, choice, messages, "standalone_question"))
        problem = plausible_rewrite(rewrite, question, history)
        if problem:
            raise NotUseful(f"its rewrite “{rewrite[:60]}” was not usable: {problem}")
        return rewrite

    reply = ask_chain(context, state, "rewrite", rewrite_by)
    if reply.value:
        return reply.value, f"rewritten by {reply.model}{reply.after()}"
    failed = [a for a in reply.attempts if a.outcome == "failed"]
    if len(failed) == 1 and len(reply.attempts) == 1:
        return offline, f"the model's rewrite failed ({failed[0].reason}): used the offline rewrite"
    return offline, f"{reply.unusable('rewrite')}: used the offline rewrite"

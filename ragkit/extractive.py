"""The offline answerer: quotes the few sentences of the retrieved chunks that best answer
the question, each with its [n] citation. No language model is involved.

A sentence's score mixes (1) how much of the question's IDF-weighted vocabulary it
contains (jieba words + bigrams for Chinese, folded words for English), (2) the
embedding similarity between question and sentence, and (3) the rank of the chunk it
comes from. Sentences are added best first until the language's character budget is
used; an over-long sentence is cut to the window around its matching words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .citations import Source, sources_from_hits
from .config import Settings
from .retrieval import SearchHit
from .text import is_cjk_text, search_tokens, split_sentences

EXTRACTIVE_LABEL = "extractive"
NO_ANSWER = {
    "zh": "知识库中没有找到与这个问题相关的内容。",
    "en": "I could not find anything about this in the knowledge base.",
}


@dataclass
class Candidate:
    """A sentence of a retrieved chunk and its scores."""

    text: str
    source_index: int  # 0-based index into the hits
    order: int  # sentence position within the chunk
    lexical: float = 0.0
    semantic: float = 0.0
    score: float = 0.0


@dataclass
class ExtractiveAnswer:
    """The quoted answer, its numbered sources (cited ones flagged) and the mode label."""

    text: str
    sources: list[Source] = field(default_factory=list)
    mode: str = EXTRACTIVE_LABEL
    found: bool = True


def _candidates(hits: list[SearchHit], max_chunks: int) -> list[Candidate]:
    found = []
    for index, hit in enumerate(hits[:max_chunks]):
        for order, span in enumerate(split_sentences(hit.text)):
            text = span.text.lstrip("#").strip()
            if sum(ch.isalnum() for ch in text) >= 2:
                found.append(Candidate(text, index, order))
    return found


def _lexical_scores(question_tokens: list[str], candidates: list[Candidate], idf: dict[str, float]) -> None:
    wanted = set(question_tokens)
    mass = sum(idf.get(token, 1.0) for token in wanted) or 1.0
    for candidate in candidates:
        present = wanted & set(search_tokens(candidate.text))
        candidate.lexical = sum(idf.get(token, 1.0) for token in present) / mass


def _semantic_scores(question: str, candidates: list[Candidate], embed: Callable | None) -> None:
    if embed is None or not candidates:
        return
    vectors = embed([question] + [c.text for c in candidates])
    similarities = vectors[1:] @ vectors[0]
    for candidate, similarity in zip(candidates, similarities):
        candidate.semantic = float(similarity)


def _fit(text: str, budget: int, question_tokens: set[str]) -> str:
    """Cut a sentence longer than the budget to the window with most question words."""
    if len(text) <= budget:
        return text
    best_start, best_hits = 0, -1
    step = max(1, budget // 8)
    for start in range(0, len(text) - budget + step, step):
        window = text[start : start + budget]
        hits = sum(1 for token in question_tokens if token in window.lower())
        if hits > best_hits:
            best_start, best_hits = start, hits
    window = text[best_start : best_start + budget - 1].strip()
    prefix = "…" if best_start > 0 else ""
    return prefix + window + "…"


def extractive_answer(
    question: str,
    hits: list[SearchHit],
    settings: Settings,
    embedder=None,
    idf: dict[str, float] | None = None,
) -> ExtractiveAnswer:
    """Answer by quoting the best sentences of ``hits`` with [n] markers."""
    cjk = is_cjk_text(question) or (not question.strip() and bool(hits) and is_cjk_text(hits[0].text))
    sources = sources_from_hits(hits)
    if not hits:
        return ExtractiveAnswer(NO_ANSWER["zh" if cjk else "en"], sources, found=False)
    budget = settings.extractive_chars_cjk if cjk else settings.extractive_chars_latin
    question_tokens = search_tokens(question)
    candidates = _candidates(hits, settings.top_k)
    _lexical_scores(question_tokens, candidates, idf or {})
    embed = (lambda texts: embedder.embed_documents(texts, batch_size=64)) if embedder is not None else None
    _semantic_scores(question, candidates, embed)
    semantic_weight = 0.15 if cjk else 0.45
    for candidate in candidates:
        rank_prior = 1.0 / (1.0 + 0.5 * candidate.source_index)
        candidate.score = (1 - semantic_weight) * candidate.lexical + semantic_weight * candidate.semantic + 0.15 * rank_prior
    chosen = _select(candidates, budget, set(question_tokens))
    return _compose(chosen, sources, cjk)


def _select(candidates: list[Candidate], budget: int, question_tokens: set[str]) -> list[tuple[Candidate, str]]:
    ranked = sorted(candidates, key=lambda c: -c.score)
    chosen: list[tuple[Candidate, str]] = []
    used = 0
    for candidate in ranked:
        marker_len = len(f"[{candidate.source_index + 1}]")
        room = budget - used - marker_len
        if chosen and (room < 12 or candidate.score < 0.5 * chosen[0][0].score):
            break
        if any(candidate.text == existing.text for existing, _ in chosen):
            continue
        if not chosen:
            text = _fit(candidate.text, room, question_tokens)
        elif len(candidate.text) <= room:
            text = candidate.text
        else:
            continue
        chosen.append((candidate, text))
        used += len(text) + marker_len + 1
    return chosen


def _compose(chosen: list[tuple[Candidate, str]], sources: list[Source], cjk: bool) -> ExtractiveAnswer:
    chosen.sort(key=lambda pair: (pair[0].source_index, pair[0].order))  # reading order
    quotes: dict[int, list[str]] = {}
    parts = []
    for candidate, text in chosen:
        parts.append(f"{text}[{candidate.source_index + 1}]")
        quotes.setdefault(candidate.source_index, []).append(text)
    for index, texts in quotes.items():
        sources[index].cited = True
        sources[index].quote = " ".join(texts)
    separator = "" if cjk else " "
    return ExtractiveAnswer(separator.join(parts), sources)

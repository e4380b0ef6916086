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

import math


from .citations import Source, sources_from_hits
from .config import Settings
from .retrieval import SearchHit
from .text import is_cjk_text, search_tokens, split_sentences

EXTRACTIVE_LABEL = "extractive"
CJK_FUNCTION_CHARS = frozenset("的了是在和与及或而也就都被把对从以为于之其这那个什么哪谁多少几怎样如何吗呢吧啊有没一我你他她它们中上下等")


@dataclass(frozen=True)
class Weights:
    """How sentences are scored and picked, per script (tuned on the shared eval sets)."""

    lexical_local: bool
    semantic: float
    characters: float
    document_opening: float
    rank_prior: float
    keep_ratio: float  # further sentences must score at least this share of the best
    add_next_sentence: bool


SEMANTIC_SHORTLIST = 16
CJK_WEIGHTS = Weights(True, 0.0, 0.5, 0.1, 0.15, 0.3, True)
LATIN_WEIGHTS = Weights(False, 0.45, 0.0, 0.05, 0.15, 0.5, False)
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
            if span.text.startswith("#"):  # a Markdown heading is a label, not an answer
                continue
            text = span.text.strip()
            if sum(ch.isalnum() for ch in text) >= 2:
                found.append(Candidate(text, index, order))
    return found


def _lexical_scores(question_tokens: list[str], candidates: list[Candidate], idf: dict[str, float], local: bool) -> None:
    """Share of the question's weighted vocabulary each sentence contains.

    With ``local`` the weights are IDF over the candidate sentences themselves: the topic
    word that every retrieved sentence shares says nothing about which one answers.
    """
    wanted = set(question_tokens)
    sentence_tokens = [set(search_tokens(c.text)) for c in candidates]
    if local:
        total = len(candidates) or 1
        weights = {t: math.log(1 + total / (1 + sum(t in tokens for tokens in sentence_tokens))) for t in wanted}
    else:
        weights = {t: idf.get(t, 1.0) for t in wanted}
    mass = sum(weights.values()) or 1.0
    for candidate, tokens in zip(candidates, sentence_tokens):
        candidate.lexical = sum(weights[t] for t in wanted & tokens) / mass


def _character_overlap(question: str, text: str) -> float:
    """Share of the question's content characters (CJK) found in the sentence."""
    wanted = {ch for ch in question if is_cjk_text(ch) and ch not in CJK_FUNCTION_CHARS}
    if not wanted:
        return 0.0
    return sum(1 for ch in wanted if ch in text) / len(wanted)


def _semantic_scores(question: str, candidates: list[Candidate], embed: Callable | None, limit: int) -> None:
    """Embedding similarity for the ``limit`` lexically best candidates (the rest get the
    lowest similarity seen): embedding every sentence of every hit costs most of the time."""
    if embed is None or not candidates:
        return
    shortlist = sorted(candidates, key=lambda c: -c.lexical)[:limit]
    vectors = embed([question] + [c.text for c in shortlist])
    similarities = vectors[1:] @ vectors[0]
    for candidate, similarity in zip(shortlist, similarities):
        candidate.semantic = float(similarity)
    floor = float(similarities.min())
    scored = {id(candidate) for candidate in shortlist}
    for candidate in candidates:
        if id(candidate) not in scored:
            candidate.semantic = floor


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
    weights = CJK_WEIGHTS if cjk else LATIN_WEIGHTS
    question_tokens = search_tokens(question)
    candidates = _candidates(hits, settings.top_k)
    _lexical_scores(question_tokens, candidates, idf or {}, weights.lexical_local)
    embed = (lambda texts: embedder.embed_documents(texts, batch_size=64)) if embedder is not None else None
    if weights.semantic:
        _semantic_scores(question, candidates, embed, SEMANTIC_SHORTLIST)
    for candidate in candidates:
        hit = hits[candidate.source_index]
        opening = hit.position == 0 and candidate.order == 0
        candidate.score = (
            (1 - weights.semantic) * candidate.lexical
            + weights.semantic * candidate.semantic
            + weights.characters * _character_overlap(question, candidate.text)
            + weights.document_opening * opening
            + weights.rank_prior / (1.0 + 0.5 * candidate.source_index)
        )
    chosen = _select(candidates, budget, set(question_tokens), weights)
    return _compose(chosen, sources, cjk)


def _select(candidates: list[Candidate], budget: int, question_tokens: set[str], weights: Weights) -> list[tuple[Candidate, str]]:
    """Best sentences first while they fit; the best one may bring the sentence after it."""
    ranked = sorted(candidates, key=lambda c: -c.score)
    chosen: list[tuple[Candidate, str]] = []
    used = 0

    def take(candidate: Candidate, text: str) -> None:
        nonlocal used
        chosen.append((candidate, text))
        used += len(text) + len(f"[{candidate.source_index + 1}]")

    for candidate in ranked:
        room = budget - used - len(f"[{candidate.source_index + 1}]")
        if chosen and (room < 12 or candidate.score < weights.keep_ratio * chosen[0][0].score):
            break
        if any(candidate is existing for existing, _ in chosen):
            continue
        if not chosen:
            take(candidate, _fit(candidate.text, room, question_tokens))
            if weights.add_next_sentence:
                following = _next_sentence(candidates, candidate)
                if following is not None and used + len(following.text) + 4 <= budget:
                    take(following, following.text)
        elif len(candidate.text) <= room:
            take(candidate, candidate.text)
    return chosen


def _next_sentence(candidates: list[Candidate], candidate: Candidate) -> Candidate | None:
    for other in candidates:
        if other.source_index == candidate.source_index and other.order == candidate.order + 1:
            return other
    return None


def _compose(chosen: list[tuple[Candidate, str]], sources: list[Source], cjk: bool) -> ExtractiveAnswer:
    """Quote the chosen sentences in reading order; one marker per run from the same source."""
    chosen.sort(key=lambda pair: (pair[0].source_index, pair[0].order))
    separator = "" if cjk else " "
    runs: list[tuple[int, list[str]]] = []
    previous: Candidate | None = None
    for candidate, text in chosen:
        contiguous = previous is not None and previous.source_index == candidate.source_index and previous.order + 1 == candidate.order
        if contiguous:
            runs[-1][1].append(text)
        else:
            runs.append((candidate.source_index, [text]))
        previous = candidate
    parts = []
    for index, texts in runs:
        quote = separator.join(texts)
        parts.append(f"{quote}[{index + 1}]")
        source = sources[index]
        source.quote = quote if not source.cited else f"{source.quote} … {quote}"
        source.cited = True
    return ExtractiveAnswer(separator.join(parts), sources)

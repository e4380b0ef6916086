"""A knowledge base's topic words: the words most of its passages say ("Notre Dame" in one
about Notre Dame), which tell no sentence from another.

Every question about the topic names them and every sentence resembles a question that does,
so the evidence grade (``graph.grading``) and the sentences reranker (``rerank``) compare a
question's embedding with sentences without them.
"""

from __future__ import annotations

import math

from ragkit.lang.text import search_tokens


def topic_words(idf: dict[str, float], passages: int, share: float, min_passages: int) -> frozenset[str]:
    """The search tokens of ``idf`` that at least ``share`` of the knowledge base's ``passages``
    say (read back from their idf, ``lexical``'s BM25 one): its topic, which every sentence
    shares with a question about it. None below ``min_passages`` passages."""
    if passages < min_passages or share >= 1:
        return frozenset()
    frequent = share * passages
    ceiling = math.log(1 + (passages - frequent + 0.5) / (frequent + 0.5))
    return frozenset(token for token, value in idf.items() if value <= ceiling)


def without_topic(question: str, topic: frozenset[str]) -> str:
    """``question`` without its words whose search tokens are all ``topic`` words (the whole
    question when that would leave nothing to compare)."""
    if not topic:
        return question
    kept = [word for word in question.split() if not (set(search_tokens(word)) and set(search_tokens(word)) <= topic)]
    rest = " ".join(kept)
    return rest if set(search_tokens(rest)) else question

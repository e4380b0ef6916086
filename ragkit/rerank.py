"""Reranking the top of a hybrid search (setting ``RAGKIT_RERANKER``).

- ``sentences`` (offline, no new weights): each candidate passage is scored by the packaged
  model's similarity between the query and the passage's closest sentence (a passage's
  vector averages all its sentences; the answering one is often a single sentence), and
  that score's standard score is added to the fused one's. Measured on the shared English
  set (top 10 reranked): hit@1 0.825 -> 0.840, MRR@10 0.894 -> 0.903, at the cost of
  embedding the candidates' sentences at query time (about 0.6 s a question on this 2-core
  machine under load), so it is off by default.
- a directory: a local sentence-transformers ``CrossEncoder`` the user downloaded (for
  example a bge or ms-marco reranker); its scores replace the order of the top candidates.
  Nothing is ever downloaded: a directory that is not there is an error naming the setting.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from .errors import RagkitError
from .text import split_sentences

SENTENCE_WEIGHT = 0.5  # the sentence score's share beside the fused score (0.25-0.75 measured alike)


class RerankerError(RagkitError):
    """The configured reranker cannot be used (a missing or unreadable model directory)."""


def standard(values) -> np.ndarray:
    """Standard scores; all equal values are all 0."""
    array = np.asarray(values, dtype=np.float64)
    spread = array.std()
    return (array - array.mean()) / spread if spread > 1e-9 else np.zeros_like(array)


class SentenceReranker:
    """Query-to-closest-sentence similarity with the embedding model (see module docstring)."""

    def __init__(self, embedder):
        self._embedder = embedder

    def rerank(self, query: str, items: list[tuple[str, float]], texts: dict[str, str]) -> list[tuple[str, float]]:
        """``items`` (passage id, fused score) in their new order, with combined scores."""
        embedder = self._embedder()
        question = embedder.embed_query(query)
        closest = []
        for pid, _ in items:
            sentences = [span.text for span in split_sentences(texts.get(pid, ""))] or [texts.get(pid, "")]
            closest.append(float((embedder.embed_remembered(sentences) @ question).max()))
        combined = standard([score for _, score in items]) + SENTENCE_WEIGHT * standard(closest)
        order = np.argsort(-combined, kind="stable")
        return [(items[i][0], float(combined[i])) for i in order]


class CrossEncoderReranker:
    """A local sentence-transformers CrossEncoder directory, loaded once on first use."""

    def __init__(self, location: str):
        self.location = Path(location).expanduser()
        if not self.location.is_dir():
            raise RerankerError(f"RAGKIT_RERANKER: {self.location} is not a directory holding a CrossEncoder model "
                                "(download one yourself, e.g. a bge reranker, and name its folder; nothing is "
                                "downloaded at run time), or use 'sentences' or 'none'")
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._model is None:
                from sentence_transformers import CrossEncoder

                try:
                    self._model = CrossEncoder(str(self.location), device="cpu", local_files_only=True)
                except Exception as exc:
                    raise RerankerError(f"RAGKIT_RERANKER: cannot load the CrossEncoder in {self.location} "
                                        f"({type(exc).__name__}: {exc})") from None
            return self._model

    def rerank(self, query: str, items: list[tuple[str, float]], texts: dict[str, str]) -> list[tuple[str, float]]:
        """``items`` ordered by the cross-encoder's score of (query, passage)."""
        scores = self._load().predict([(query, texts.get(pid, "")) for pid, _ in items])
        order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
        return [(items[i][0], float(scores[i])) for i in order]


def make_reranker(setting: str, embedder):
    """The reranker named by ``setting`` ("none" -> None, "sentences", or a directory)."""
    if not setting or setting == "none":
        return None
    if setting == "sentences":
        return SentenceReranker(embedder)
    return CrossEncoderReranker(setting)

"""BM25 over the stored chunks, with a Chinese-aware tokenizer (jieba) and bm25s scoring.

The index is derived from the chunk store: it is rebuilt from it and never written to
independently. Tokenizing is the slow part, so tokens are cached on disk next to the
store and reused for chunks whose id is unchanged.
"""

from __future__ import annotations

import logging
import pickle
import threading
from pathlib import Path

import numpy as np

from .text import TOKENIZER_VERSION, search_tokens

log = logging.getLogger(__name__)
CACHE_FORMAT = (1, TOKENIZER_VERSION)  # tokens made by another tokenizer are not reused


class LexicalIndex:
    """BM25 over (chunk id, doc id, text) triples; scores for any token list."""

    def __init__(self, cache_path: Path | None = None):
        self.cache_path = cache_path
        self._lock = threading.RLock()
        self._tokens: dict[str, list[str]] = {}
        self.chunk_ids: list[str] = []
        self.doc_ids: np.ndarray = np.array([], dtype=object)
        self._bm25 = None
        self._load_cache()

    def __len__(self) -> int:
        return len(self.chunk_ids)

    def _load_cache(self) -> None:
        if not self.cache_path or not self.cache_path.exists():
            return
        try:
            with self.cache_path.open("rb") as handle:
                payload = pickle.load(handle)
            if payload.get("format") == CACHE_FORMAT:
                self._tokens = payload["tokens"]
        except Exception as exc:  # a broken cache only costs a re-tokenize
            log.warning("ignoring unreadable lexical cache %s: %s", self.cache_path, exc)

    def _save_cache(self) -> None:
        if not self.cache_path:
            return
        tmp = self.cache_path.with_suffix(".tmp")
        with tmp.open("wb") as handle:
            pickle.dump({"format": CACHE_FORMAT, "tokens": self._tokens}, handle)
        tmp.replace(self.cache_path)

    def rebuild(self, chunks: list[tuple[str, str, str]]) -> None:
        """Index exactly these (chunk_id, doc_id, text) triples, reusing cached tokens."""
        import bm25s

        with self._lock:
            tokens = {cid: self._tokens.get(cid) or search_tokens(text) for cid, _, text in chunks}
            changed = tokens.keys() != self._tokens.keys()
            self._tokens = tokens
            self.chunk_ids = [cid for cid, _, _ in chunks]
            self.doc_ids = np.array([doc for _, doc, _ in chunks], dtype=object)
            corpus = [tokens[cid] or ["\u2400"] for cid in self.chunk_ids]  # bm25s rejects empty docs
            if corpus:
                model = bm25s.BM25(k1=1.2, b=0.75)
                model.index(corpus, show_progress=False)
                self._bm25 = model
            else:
                self._bm25 = None
            if changed:
                self._save_cache()

    def scores(self, query: str, allowed_docs: set[str] | None = None) -> np.ndarray:
        """BM25 score of every indexed chunk (zeros when nothing in the query is searchable)."""
        with self._lock:
            result = np.zeros(len(self.chunk_ids), dtype=np.float32)
            if self._bm25 is None:
                return result
            vocab = self._bm25.vocab_dict
            known = [token for token in search_tokens(query) if token in vocab]
            if not known:
                return result
            result = np.asarray(self._bm25.get_scores(known), dtype=np.float32)
            if allowed_docs is not None:
                result = result * np.isin(self.doc_ids, list(allowed_docs))
            return result

    def search(self, query: str, k: int, allowed_docs: set[str] | None = None) -> list[tuple[str, float]]:
        """Top ``k`` (chunk id, score) with a positive score, best first."""
        scores = self.scores(query, allowed_docs)
        if not len(scores) or k <= 0:
            return []
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.chunk_ids[i], float(scores[i])) for i in top if scores[i] > 0]

    def idf(self, tokens: list[str]) -> dict[str, float]:
        """BM25-style inverse document frequency of each token over the indexed chunks."""
        with self._lock:
            total = len(self.chunk_ids)
            if self._bm25 is None or not total:
                return {token: 1.0 for token in tokens}
            vocab = self._bm25.vocab_dict
            indptr = self._bm25.scores["indptr"]
            weights = {}
            for token in tokens:
                token_id = vocab.get(token)
                frequency = int(indptr[token_id + 1] - indptr[token_id]) if token_id is not None else 0
                weights[token] = float(np.log(1 + (total - frequency + 0.5) / (frequency + 0.5)))
            return weights

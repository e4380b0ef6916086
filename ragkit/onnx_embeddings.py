"""The faster embedding backend (``RAGKIT_EMBEDDING_BACKEND=onnx-int8``).

On first use the sentence-transformers model is exported to ONNX, its attention and
layer-norm operations fused by onnxruntime's transformer optimizer, and its weights
quantized to int8 (per channel), all offline from the model on disk; the result is cached
under ``<data dir>/models/``. Encoding then needs only onnxruntime and tokenizers (no
PyTorch import), about twice as fast on a 2-core CPU, with vectors within a cosine of
0.98 of the original's. Vectors differ slightly, so the store records the backend in the
model's name, and switching backend asks for ``python -m ragkit reindex``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import numpy as np

from .embeddings import Embedder, EmbeddingError

log = logging.getLogger(__name__)
RECIPE = 1  # bump when the export changes: cached models of another recipe are rebuilt
BATCH = 32


def build(model_dir: Path, target: Path) -> Path:
    """Export, fuse and quantize the model in ``model_dir`` into ``target``; returns the
    quantized model's path. Only done once per data dir."""
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model
    from sentence_transformers import SentenceTransformer

    target.mkdir(parents=True, exist_ok=True)
    source = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    transformer = source[0].auto_model.eval()
    config = transformer.config

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
    plain, fused, quantized = target / "model.onnx", target / "model-fused.onnx", target / "model-int8.onnx"
    torch.onnx.export(LastHiddenState(transformer).eval(), (ids, torch.ones_like(ids), torch.zeros_like(ids)),
                      str(plain), input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17, dynamo=False)
    optimize_model(str(plain), model_type="bert", num_heads=config.num_attention_heads,
                   hidden_size=config.hidden_size).save_model_to_file(str(fused))
    quantize_dynamic(str(fused), str(quantized), weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    shutil.copy(model_dir / "tokenizer.json", target / "tokenizer.json")
    max_tokens = int(getattr(source, "max_seq_length", 256) or 256)
    (target / "recipe.json").write_text(json.dumps({"recipe": RECIPE, "dimension": config.hidden_size,
                                                    "max_tokens": max_tokens}))
    plain.unlink()
    fused.unlink()
    return quantized


class OnnxInt8Embedder(Embedder):
    """The model exported to ONNX and quantized to int8, run by onnxruntime (mean pooling,
    L2-normalised, as the packaged sentence-transformers model does)."""

    def __init__(self, name: str, model_dir: Path, cache_dir: Path):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        recipe = cache_dir / "recipe.json"
        if not recipe.exists() or json.loads(recipe.read_text()).get("recipe") != RECIPE:
            log.info("building the int8 ONNX embedding model in %s (once)", cache_dir)
            try:
                build(model_dir, cache_dir)
            except Exception as exc:
                raise EmbeddingError(f"cannot build the ONNX embedding model from {model_dir} "
                                     f"({type(exc).__name__}: {exc}); set RAGKIT_EMBEDDING_BACKEND=torch") from None
        details = json.loads(recipe.read_text())
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, os.cpu_count() or 1)
        self.session = ort.InferenceSession(str(cache_dir / "model-int8.onnx"), options,
                                            providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(cache_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(int(details["max_tokens"]))
        self.tokenizer.enable_padding()
        self.name = f"{name}+onnx-int8"
        self.dimension = int(details["dimension"])

    def _embed(self, texts: list[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # less padding per batch
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            part = order[start : start + BATCH]
            encoded = self.tokenizer.encode_batch([texts[i] for i in part])
            ids = np.asarray([e.ids for e in encoded], dtype=np.int64)
            mask = np.asarray([e.attention_mask for e in encoded], dtype=np.int64)
            hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask,
                                             "token_type_ids": np.zeros_like(ids)})[0]
            pooled = (hidden * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            vectors[part] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return vectors

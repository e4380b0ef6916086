"""The onnx-int8 embedding backend: built offline from the packaged model on first use,
cached in the data dir, close to the default model's vectors, and recorded under its own
name so a store never mixes the two."""

import numpy as np
import pytest

from ragkit.config import Settings
from ragkit.embeddings import configured_model_name, make_embedder
from ragkit.errors import EmbeddingModelMismatch
from ragkit.kb import KnowledgeBase

TEXTS = ["The lighthouse keeper logged every storm in the northern channel.",
         "Revenue in the third quarter was 4.2 million euros, up 18 percent.",
         "Entry tickets cost 12 euros; children enter free.", "茶园每天上午八点开放，下午五点关闭。"]


@pytest.fixture(scope="module")
def onnx_settings(tmp_path_factory):
    return Settings(data_dir=tmp_path_factory.mktemp("onnx"), embedding_backend="onnx-int8", _env_file=None)


def test_the_int8_model_is_built_once_and_its_vectors_match_the_default_model(onnx_settings, embedder):
    onnx = make_embedder(onnx_settings)
    assert list((onnx_settings.data_path / "models").glob("*/model-int8.onnx"))
    assert onnx.name == "all-MiniLM-L6-v2+onnx-int8-r4" == configured_model_name(onnx_settings)
    similarity = np.sum(onnx.embed_documents(TEXTS) * embedder.embed_documents(TEXTS), axis=1)
    assert similarity.min() > 0.97
    again = make_embedder(onnx_settings)  # from the cache, no second build
    assert np.allclose(again.embed_query(TEXTS[0]), onnx.embed_query(TEXTS[0]))


def test_a_store_built_with_one_backend_refuses_the_other(settings, embedder):
    KnowledgeBase(settings, embedder=embedder).ingest(b"Some text.", filename="a.txt")
    other = settings.model_copy(update={"embedding_backend": "onnx-int8"})
    with pytest.raises(EmbeddingModelMismatch, match="reindex"):
        KnowledgeBase(other)

"""The onnx-int8 embedding backend: built offline from the packaged model on first use,
cached in the data dir, close to the default model's vectors, and recorded under its own
name so a store never mixes the two.

The default backend, ``auto``, gives a new store onnx-int8 and lets an existing store keep
the backend its recorded model says: a store indexed on PyTorch's vectors opens and searches
as before, with no reindex asked."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO
from ragkit.config import Settings
from ragkit.errors import EmbeddingModelMismatch
from ragkit.models.embeddings import configured_model_name, embedding_backend, make_embedder
from ragkit.store.kb import KnowledgeBase

TEXTS = ["The lighthouse keeper logged every storm in the northern channel.",
         "Revenue in the third quarter was 4.2 million euros, up 18 percent.",
         "Entry tickets cost 12 euros; children enter free.", "茶园每天上午八点开放，下午五点关闭。"]
PLAIN, INT8 = "all-MiniLM-L6-v2", "all-MiniLM-L6-v2+onnx-int8-r4"
WALRUS = b"Walruses use their long tusks to haul themselves out of the icy water."


@pytest.fixture(scope="module")
def onnx_settings(tmp_path_factory):
    return Settings(data_dir=tmp_path_factory.mktemp("onnx"), embedding_backend="onnx-int8", _env_file=None)


@pytest.fixture(scope="module")
def int8(onnx_settings):
    """The int8 model, built once for this module."""
    return make_embedder(onnx_settings)


def test_the_int8_model_is_built_once_and_its_vectors_match_the_default_model(onnx_settings, int8, embedder):
    assert list((onnx_settings.data_path / "models").glob("*/model-int8.onnx"))
    assert int8.name == INT8 == configured_model_name(onnx_settings)
    similarity = np.sum(int8.embed_documents(TEXTS) * embedder.embed_documents(TEXTS), axis=1)
    assert similarity.min() > 0.97
    again = make_embedder(onnx_settings)  # from the cache, no second build
    assert np.allclose(again.embed_query(TEXTS[0]), int8.embed_query(TEXTS[0]))


def test_a_store_built_with_one_backend_refuses_the_other(settings, embedder):
    KnowledgeBase(settings, embedder=embedder).ingest(b"Some text.", filename="a.txt")
    other = settings.model_copy(update={"embedding_backend": "onnx-int8"})
    with pytest.raises(EmbeddingModelMismatch, match="reindex"):
        KnowledgeBase(other)


# ----- the default: auto ---------------------------------------------------------------


def with_models(settings, *folders):
    """``settings``, its data dir holding these built models (as a data dir that ran before
    has them): no export in the test."""
    for folder in folders:
        shutil.copytree(folder, settings.data_path / "models" / folder.name)
    return settings


@pytest.fixture
def defaults(tmp_path, onnx_settings, int8, embedder):
    """The default settings (no backend named) over an empty data dir."""
    built = [*(onnx_settings.data_path / "models").iterdir(), embedder._copy_dir]
    return with_models(Settings(data_dir=tmp_path / "data", embedding_backend="auto", _env_file=None), *built)


def stored_vector(kb, doc_id):
    passage = kb.passages(doc_id)[0]
    return kb.store.vectors([passage.id])[0][passage.id]


def test_the_default_is_int8_for_a_new_store_and_the_recorded_backend_for_an_existing_one():
    assert Settings.model_fields["embedding_backend"].default == "auto"
    auto, torch = (Settings(embedding_backend=b, _env_file=None) for b in ("auto", "torch"))
    assert embedding_backend(auto, None) == "onnx-int8"
    assert embedding_backend(auto, PLAIN) == "torch"
    assert embedding_backend(auto, INT8) == "onnx-int8"
    assert embedding_backend(auto, "all-MiniLM-L6-v2+onnx-int8-r3") == "onnx-int8"  # an older recipe: reindex
    assert embedding_backend(torch, INT8) == "torch"  # named: kept, and the store refuses it
    other = Settings(embedding_model="/models/bge-small", embedding_backend="auto", _env_file=None)
    assert embedding_backend(other, None) == "torch"  # int8 was measured on the packaged model only
    openai = Settings(embedding_model="openai:text-embedding-3-small", embedding_backend="auto", _env_file=None)
    assert configured_model_name(openai) == "openai:text-embedding-3-small"


def test_a_new_store_under_the_default_settings_records_and_stores_int8_vectors(defaults, int8):
    kb = KnowledgeBase(defaults)
    assert kb.catalog.get_meta("embedding_model") == INT8
    doc = kb.ingest(WALRUS, filename="walrus.txt").document
    assert kb.embedder.name == INT8
    assert np.abs(stored_vector(kb, doc.id) - int8.embed_documents([WALRUS.decode()])[0]).max() < 1e-4
    assert kb.search("tusks ivory", k=1)[0].doc_id == doc.id
    kb.close()
    reopened = KnowledgeBase(defaults)  # an int8 store opens under the default
    assert reopened.embedding_model_name == INT8 and reopened.search("tusks", k=1)[0].doc_id == doc.id
    reopened.close()


def test_a_float32_store_opens_under_the_default_without_reindex_and_keeps_pytorch_vectors(defaults, embedder):
    torch = defaults.model_copy(update={"embedding_backend": "torch"})
    kb = KnowledgeBase(torch)
    first = kb.ingest(WALRUS, filename="walrus.txt").document
    assert kb.catalog.get_meta("embedding_model") == PLAIN
    kb.close()

    reopened = KnowledgeBase(defaults)  # no EmbeddingModelMismatch
    assert reopened.settings.embedding_backend == "torch" and reopened.embedding_model_name == PLAIN
    hit = reopened.search("tusks ivory", k=1)[0]
    assert hit.doc_id == first.id and hit.dense_score is not None
    text = "Puffins nest in burrows on the cliffs of the northern islands."
    second = reopened.ingest(text.encode(), filename="puffins.txt").document
    assert reopened.embedder.name == PLAIN  # new passages join on PyTorch's vectors, never int8 ones
    assert np.abs(stored_vector(reopened, second.id) - embedder.embed_documents([text])[0]).max() < 1e-4
    assert reopened.catalog.get_meta("embedding_model") == PLAIN
    reopened.close()


def test_a_store_indexed_before_models_were_recorded_is_taken_for_pytorch(defaults):
    torch = defaults.model_copy(update={"embedding_backend": "torch"})
    kb = KnowledgeBase(torch)
    kb.ingest(WALRUS, filename="walrus.txt")
    with kb.catalog._engine.begin() as conn:  # as an older catalog: passages, no model name
        from sqlalchemy import text

        conn.execute(text("DELETE FROM meta WHERE key = 'embedding_model'"))
    kb.close()
    reopened = KnowledgeBase(defaults)
    assert reopened.embedding_model_name == PLAIN and reopened.catalog.get_meta("embedding_model") == PLAIN
    reopened.close()


def test_naming_torch_for_an_int8_store_still_refuses_and_says_how_to_go_on(defaults):
    KnowledgeBase(defaults).close()
    with pytest.raises(EmbeddingModelMismatch, match="RAGKIT_EMBEDDING_BACKEND=auto or run `python -m ragkit "
                                                     "reindex`") as refused:
        KnowledgeBase(defaults.model_copy(update={"embedding_backend": "torch"}))
    assert INT8 in str(refused.value) and "mixing them would give wrong results" in str(refused.value)


def test_reindex_moves_a_store_to_the_configured_backend(defaults, int8, embedder):
    torch = defaults.model_copy(update={"embedding_backend": "torch"})
    kb = KnowledgeBase(torch)
    doc = kb.ingest(WALRUS, filename="walrus.txt").document
    kb.close()

    env = {**os.environ, "RAGKIT_EMBEDDING_BACKEND": "onnx-int8"}
    result = subprocess.run([sys.executable, "-m", "ragkit", "--data-dir", str(defaults.data_path), "reindex"],
                            capture_output=True, text=True, cwd=REPO, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    assert f"re-embedded 1 passages with {INT8}" in result.stdout

    moved = KnowledgeBase(defaults)
    assert moved.catalog.get_meta("embedding_model") == INT8 and moved.embedding_model_name == INT8
    assert np.abs(stored_vector(moved, doc.id) - int8.embed_documents([WALRUS.decode()])[0]).max() < 1e-4
    assert moved.search("tusks ivory", k=1)[0].doc_id == doc.id
    moved.close()
    with pytest.raises(EmbeddingModelMismatch):
        KnowledgeBase(torch)

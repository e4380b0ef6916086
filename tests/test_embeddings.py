"""The torch embedding backend (a float32 store's; the suite runs on it, see conftest): texts
through a float32 ONNX copy of the model that gives PyTorch's own vectors, so a process
started after the first never imports PyTorch; a model whose copy would give other vectors
keeps PyTorch."""

import json
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

from ragkit.config import Settings
from ragkit.models.embeddings import SentenceTransformerEmbedder, make_embedder, packaged_minilm_path

QUESTIONS = ["Who was the last resident keeper of the lighthouse?", "它的续航怎么样？",
             "What is the size limit for uploads?"]
PASSAGES = [f"Passage {n}: the lighthouse keeper logged the storm of 18{n:02d}. " * (1 + n % 5) for n in range(20)] + [
    "灯塔的最后一位驻守看守人于1931年离开。门票价格为12欧元，六岁以下儿童免费。" * 12,  # past the token limit
    "Entry tickets cost 12 euros; children under six enter free. " * 40]

_SECOND_PROCESS = """
import json, sys
from ragkit.config import Settings
from ragkit.models.embeddings import make_embedder
embedder = make_embedder(Settings(data_dir=sys.argv[1], _env_file=None))
texts = json.loads(sys.argv[2])
print(json.dumps({"questions": embedder.embed_remembered(texts["questions"]).tolist(),
                  "passages": embedder.embed_documents(texts["passages"]).tolist(),
                  "torch_imported": "torch" in sys.modules,
                  "sentence_transformers_imported": "sentence_transformers" in sys.modules}))
"""


def test_a_copy_of_settings_with_another_data_dir_points_at_that_dir(tmp_path):
    first = Settings(data_dir=tmp_path / "one", _env_file=None)
    assert first.data_path == (tmp_path / "one").resolve()
    assert first.model_copy(update={"data_dir": tmp_path / "two"}).data_path == (tmp_path / "two").resolve()


def test_after_the_model_first_loads_a_new_process_embeds_questions_and_passages_without_pytorch(tmp_path, embedder):
    settings = Settings(data_dir=tmp_path / "data", _env_file=None)
    builder = make_embedder(settings)  # no copy yet: loads PyTorch and builds it
    exported_with = builder.model[0].auto_model.config._attn_implementation
    assert exported_with == embedder.model[0].auto_model.config._attn_implementation != "eager"  # set back
    recipe = json.loads(next((settings.data_path / "models").glob("*-onnx-fp32/recipe.json")).read_text())
    assert recipe["same_vectors"] is True and recipe["largest_difference"] < 1e-4

    texts = {"questions": QUESTIONS, "passages": PASSAGES}
    result = subprocess.run([sys.executable, "-c", _SECOND_PROCESS, str(settings.data_path), json.dumps(texts)],
                            capture_output=True, text=True, timeout=300, check=True)
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    assert measured["torch_imported"] is False and measured["sentence_transformers_imported"] is False
    for kind, sent in texts.items():
        with_pytorch = embedder.model.encode(sent, normalize_embeddings=True)
        assert np.abs(np.asarray(measured[kind]) - with_pytorch).max() < 1e-5, kind


@pytest.fixture
def cls_pooling_model(tmp_path):
    """The packaged model's weights with CLS pooling instead of mean pooling."""
    source = packaged_minilm_path()
    model = tmp_path / "cls-model"
    model.mkdir()
    for item in source.iterdir():
        if item.name != "1_Pooling":
            (model / item.name).symlink_to(item)
    pooling = json.loads((source / "1_Pooling" / "config.json").read_text())
    pooling.update(pooling_mode_cls_token=True, pooling_mode_mean_tokens=False)
    (model / "1_Pooling").mkdir()
    (model / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    return model


def test_a_model_whose_copy_gives_other_vectors_keeps_pytorch(tmp_path, cls_pooling_model):
    cache = tmp_path / "copy"
    embedder = SentenceTransformerEmbedder(str(cls_pooling_model), cache)
    assert json.loads((cache / "recipe.json").read_text())["same_vectors"] is False
    assert not (cache / "model.onnx").exists()
    recorded = (cache / "recipe.json").stat().st_mtime_ns
    reopened = SentenceTransformerEmbedder(str(cls_pooling_model), cache)
    assert (cache / "recipe.json").stat().st_mtime_ns == recorded  # the outcome is kept, not tried again
    expected = reopened.model.encode(QUESTIONS[:1], normalize_embeddings=True)[0]
    assert np.abs(embedder.embed_query(QUESTIONS[0]) - expected).max() < 1e-5
    passages = PASSAGES[-3:]
    expected_passages = reopened.model.encode(passages, normalize_embeddings=True)
    assert np.abs(embedder.embed_documents(passages) - expected_passages).max() < 1e-5


def test_a_float32_copy_cut_short_by_a_crash_is_built_again(tmp_path, embedder):
    settings = Settings(data_dir=tmp_path / "data", _env_file=None)
    make_embedder(settings)
    recipe = next((settings.data_path / "models").glob("*-onnx-fp32/recipe.json"))
    recipe.write_text('{"recipe": ')  # a write that never finished
    rebuilt = make_embedder(settings)
    assert json.loads(recipe.read_text())["same_vectors"] is True
    assert np.abs(rebuilt.embed_query(QUESTIONS[0]) - embedder.embed_query(QUESTIONS[0])).max() < 1e-5


def test_a_float32_copy_is_used_only_for_the_model_it_was_made_from(tmp_path, cls_pooling_model):
    cache = tmp_path / "copy"
    SentenceTransformerEmbedder(str(cls_pooling_model), cache)  # CLS pooling: recorded as not the same
    pooling = cls_pooling_model / "1_Pooling" / "config.json"
    settings = json.loads(pooling.read_text())
    settings.update(pooling_mode_cls_token=False, pooling_mode_mean_tokens=True)
    pooling.write_text(json.dumps(settings))  # the model changed on disk: mean pooling now
    changed = SentenceTransformerEmbedder(str(cls_pooling_model), cache)
    assert json.loads((cache / "recipe.json").read_text())["same_vectors"] is True
    assert changed._float32_copy is not None


class _MeetingSession:
    """Wraps an onnxruntime session: its first ``meet`` runs each wait until all of them
    have started (a barrier), so encoding only gets through when that many batches run at
    once; records the thread of every run."""

    def __init__(self, session, meet: int):
        self.session = session
        self.barrier = threading.Barrier(meet, timeout=60)
        self.threads: list[str] = []
        self._lock = threading.Lock()

    def run(self, *args, **kwargs):
        with self._lock:
            self.threads.append(threading.current_thread().name)
            waiting = len(self.threads) <= self.barrier.parties
        if waiting:
            self.barrier.wait()
        return self.session.run(*args, **kwargs)


def test_the_onnx_copy_encodes_as_many_batches_at_once_as_the_settings_give_workers(tmp_path, embedder):
    copy = tmp_path / "data" / "models" / embedder._copy_dir.name
    shutil.copytree(embedder._copy_dir, copy)  # the copy the fixture built: no export here
    encoder = make_embedder(Settings(data_dir=tmp_path / "data", embedding_workers=2, _env_file=None))._float32_copy
    assert encoder is not None and encoder.workers == 2
    encoder.session = _MeetingSession(encoder.session, meet=2)

    vectors = encoder.encode(PASSAGES)  # one batch at a time would wait at the barrier until it broke

    assert len(set(encoder.session.threads)) == 2
    assert all(name.startswith("ragkit-embed") for name in encoder.session.threads)
    with_pytorch = embedder.model.encode(PASSAGES, normalize_embeddings=True)
    assert np.abs(vectors - with_pytorch).max() < 1e-5


def test_a_few_texts_are_shared_out_so_that_every_worker_has_some(embedder):
    encoder = SentenceTransformerEmbedder(embedder.name, embedder._copy_dir, workers=2)._float32_copy
    encoder.session = _MeetingSession(encoder.session, meet=2)
    vectors = encoder.encode(QUESTIONS)  # 3 texts, fewer than one batch: split in two
    assert len(encoder.session.threads) == 2
    assert np.abs(vectors - embedder.model.encode(QUESTIONS, normalize_embeddings=True)).max() < 1e-5


def test_one_question_is_encoded_on_the_calling_thread(embedder):
    encoder = SentenceTransformerEmbedder(embedder.name, embedder._copy_dir, workers=2)._float32_copy
    encoder.session = _MeetingSession(encoder.session, meet=1)
    encoder.encode(QUESTIONS[:1])
    assert encoder.session.threads == [threading.current_thread().name]

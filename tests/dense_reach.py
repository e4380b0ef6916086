"""Measure dense reachability after an ingest with other processes opening the store.

    python tests/dense_reach.py [--trials 3] [--paragraphs 6000] [--readers 2] [--sample 600] [--kill-first] [--cli]

Each trial uses a fresh data dir. With ``--kill-first`` a writer ingesting one large file
is killed (-9) part-way through saving first. Then one process ingests a large file
(about 3,000 passages) while ``--readers`` processes open the store in a loop (as the app
and the CLI do side by side). Afterwards ``--sample`` of that file's passages are each
searched with their own vector straight through Chroma's index; a passage is unreachable
when it is not among the nearest 10 with similarity above 0.99. Prints one line per trial
and a total. By default it uses tests/store_worker.py (the hashing embedder, no model);
``--cli`` runs the issue's exact commands instead: ``python -m ragkit ingest`` (the real
model, default passage size) beside readers running ``python -m ragkit docs``.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
WORKER = HERE / "store_worker.py"
SMALL_CHUNKS = {"RAGKIT_CHUNK_TOKENS": "64", "RAGKIT_CHUNK_OVERLAP_TOKENS": "0"}


def long_text(paragraphs: int, topic: str) -> str:
    return "\n\n".join(f"{topic} paragraph {n} notes that the {topic} keeper logged storm number {n} "
                       f"at harbour {n % 37} in the year {1700 + n}." for n in range(paragraphs))


CLI = False  # set by --cli


def worker(data_dir: Path, *args: str, **popen) -> subprocess.Popen:
    if CLI:
        command = [sys.executable, "-m", "ragkit", "--data-dir", str(data_dir),
                   *(["docs"] if args[0] == "open" else list(args))]
        return subprocess.Popen(command, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, **popen)
    return subprocess.Popen([sys.executable, str(WORKER), str(data_dir), *args], cwd=REPO,
                            env={**os.environ, **SMALL_CHUNKS, "PYTHONPATH": str(REPO)}, **popen)


def chroma_rows(data_dir: Path) -> int:
    try:
        with sqlite3.connect(f"file:{data_dir / 'chroma' / 'chroma.sqlite3'}?mode=ro", uri=True, timeout=30) as conn:
            return conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
    except sqlite3.Error:
        return 0


def kill_a_writer(data_dir: Path, path: Path, rng: random.Random) -> None:
    """Start ingesting ``path`` and kill -9 the writer at a random moment of its save."""
    before = chroma_rows(data_dir)
    process = worker(data_dir, "ingest", str(path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while chroma_rows(data_dir) <= before and process.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(rng.uniform(0.0, 1.5))
    process.send_signal(signal.SIGKILL)
    process.wait()


def readers_loop(data_dir: Path, stop: threading.Event, opened: list[int]) -> None:
    while not stop.is_set():
        result = worker(data_dir, "open", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        _, err = result.communicate()
        opened.append(result.returncode)
        if result.returncode:
            print("reader failed:", err.strip().splitlines()[-1:], file=sys.stderr)


def unreachable(data_dir: Path, filename: str, sample: int, rng: random.Random) -> tuple[int, int, int]:
    """(unreachable, sampled, passages of the file) for the file's passages."""
    from ragkit.config import Settings
    from ragkit.models.embeddings import HashingEmbedder, make_embedder
    from ragkit.store.kb import KnowledgeBase

    if CLI:
        settings = Settings(data_dir=data_dir, _env_file=None)
        embedder = make_embedder(settings)
    else:
        settings = Settings(data_dir=data_dir, chunk_tokens=64, chunk_overlap_tokens=0, _env_file=None)
        embedder = HashingEmbedder()
    kb = KnowledgeBase(settings, embedder=embedder)
    doc = next(d for d in kb.documents() if d.filename == filename)
    passages = kb.passages(doc.id)
    chosen = rng.sample(passages, min(sample, len(passages)))
    vectors = embedder.embed_documents([p.text for p in chosen])
    missed = 0
    collection = kb.store._collection
    for start in range(0, len(chosen), 100):
        result = collection.query(query_embeddings=vectors[start:start + 100], n_results=10, include=["distances"])
        for passage, ids, distances in zip(chosen[start:start + 100], result["ids"], result["distances"]):
            near = {pid for pid, distance in zip(ids, distances) if 1 - distance > 0.99}
            missed += passage.id not in near
    kb.close()
    return missed, len(chosen), len(passages)


def trial(number: int, options, root: Path) -> tuple[int, int]:
    rng = random.Random(number)
    data_dir = root / f"trial{number}" / "data"
    inputs = root / f"trial{number}" / "in"
    inputs.mkdir(parents=True)
    big = inputs / "big.txt"
    big.write_text(long_text(options.paragraphs, "harbour"), encoding="utf-8")
    worker(data_dir, "open", stdout=subprocess.DEVNULL).wait()
    if options.kill_first:
        first = inputs / "first.txt"
        first.write_text(long_text(options.paragraphs, "lighthouse"), encoding="utf-8")
        kill_a_writer(data_dir, first, rng)
    stop, opened = threading.Event(), []
    readers = [threading.Thread(target=readers_loop, args=(data_dir, stop, opened)) for _ in range(options.readers)]
    for reader in readers:
        reader.start()
    started = time.time()
    writer = worker(data_dir, "ingest", str(big), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = writer.communicate()
    seconds = time.time() - started
    stop.set()
    for reader in readers:
        reader.join()
    if "result added big.txt" not in out and "added       big.txt" not in out:
        print(f"trial {number}: the ingest failed: {err.strip().splitlines()[-3:]}")
        return 0, 0
    missed, sampled, total = unreachable(data_dir, "big.txt", options.sample, rng)
    print(f"trial {number}: unreachable {missed} of {sampled} sampled ({total} passages; "
          f"ingest {seconds:.1f} s; {len(opened)} reader opens, {sum(1 for r in opened if r)} failed)", flush=True)
    return missed, sampled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--paragraphs", type=int, default=6000, help="6000 make about 3,000 passages")
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--sample", type=int, default=600)
    parser.add_argument("--kill-first", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the data dirs (their path is printed)")
    parser.add_argument("--cli", action="store_true", help="the real CLI and model (use --paragraphs 25000)")
    options = parser.parse_args()
    global CLI
    CLI = options.cli
    root = Path(tempfile.mkdtemp(prefix="dense-reach-"))
    totals = [trial(number, options, root) for number in range(1, options.trials + 1)]
    missed, sampled = sum(t[0] for t in totals), sum(t[1] for t in totals)
    print(f"total: unreachable {missed} of {sampled} sampled in {options.trials} trials"
          + (" (after a killed writer)" if options.kill_first else ""))
    if options.keep:
        print(f"data dirs under {root}")
    else:
        import shutil

        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

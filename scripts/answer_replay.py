"""Replay the offline answerer (``ragkit.answering.extractive``) on what ``eval --answers`` handed it.

``record``: the ``eval --answers`` setup of a shared set (every passage indexed, each question
asked through the chat graph in a new conversation), keeping what ``extractive_answer`` got for
each question (question, hits, idf, the follow-up as asked), the answer it gave, the gold answers,
and the vectors of every candidate sentence (embedded at query time, and pooled at ingest when
the store keeps them). ``score``: the answerer run again on the records with the code in the
tree, in seconds instead of minutes: answer_contains and answer_chars_mean overall and on the two
halves of ``SEEDS`` random splits by passage (a change should help on both halves).

    python scripts/answer_replay.py record ../shared/eval/squad_notre_dame.json /tmp/squad_answers.pkl
    python scripts/answer_replay.py score /tmp/squad_answers.pkl
    python scripts/answer_replay.py record-multihop ../shared/eval/multihop_synthetic.json /tmp/mh.pkl [default]
    python scripts/answer_replay.py score /tmp/mh.pkl     # English bridge answer_contains

The English answerer's weights trade these two sets against each other: see extractive.LATIN_WEIGHTS.
"""

from __future__ import annotations

import inspect
import pickle
import random
import statistics
import sys
import tempfile

import numpy as np

from ragkit.config import Settings

SEEDS = (1, 2, 3)


def _recorder(original, seen: list[dict]):
    """``original`` (the answerer) wrapped to append each call's inputs and answer to ``seen``."""

    def extractive_answer(question, hits, settings, embed=None, idf=None, asked=None, **more):
        answer = original(question, hits, settings, embed, idf, asked, **more)
        seen.append({"question": question, "hits": list(hits), "idf": dict(idf or {}), "asked": asked,
                     "answer": answer.text})
        return answer

    return extractive_answer


def _ask(engine, session: str, question: str) -> str:
    """The engine's answer, or "" for a question it refuses (the sets hold a few empty ones)."""
    from ragkit.errors import QuestionError

    try:
        return engine.ask(session, question).answer
    except QuestionError:
        return ""


def record(path: str, out: str) -> None:
    """Ask every question as ``eval --answers`` does, keeping the answerer's inputs."""
    from ragkit.answering.extractive import _candidates
    from ragkit.graph.nodes import answer as answering
    from ragkit_dev.eval import EvalBase, read_squad

    passages, questions = read_squad(path)
    seen: list[dict] = []
    original = answering.extractive_answer

    extractive_answer = _recorder(original, seen)
    answering.extractive_answer = extractive_answer
    rows = []
    with tempfile.TemporaryDirectory(prefix="ragkit-replay-") as tmp:
        base = EvalBase(Settings(), tmp)
        base.ingest(passages, list(range(len(passages))), lambda *a: None)
        engine = base.engine(always_answer=True)
        for number, item in enumerate(questions):
            seen.clear()
            rows.append({"question": item.question, "passage": item.passage_index, "gold": item.answers,
                         "final": _ask(engine, f"a{number}", item.question), "calls": list(seen)})
        _keep_vectors(base, rows, out, path, _candidates)


def record_multihop(path: str, out: str, mode: str = "default") -> None:
    """Ask every question of a HotpotQA-format set as ``eval --multihop`` does (``mode``), keeping
    the answerer's inputs like ``record``; ``score`` then counts English bridge answers
    (``eval``'s normalised containment) besides."""
    from ragkit.answering.extractive import _candidates
    from ragkit.graph.agentic import hops
    from ragkit.graph.nodes import answer as answering
    from ragkit.store.kb import IngestItem
    from ragkit_dev.eval import EvalBase, _filename, read_multihop

    documents, items = read_multihop(path)
    seen: list[dict] = []
    original = answering.extractive_answer

    extractive_answer = _recorder(original, seen)
    answering.extractive_answer = extractive_answer
    hops.extractive_answer = extractive_answer
    rows = []
    with tempfile.TemporaryDirectory(prefix="ragkit-replay-") as tmp:
        base = EvalBase(Settings(chat_mode=mode), tmp)
        base.kb.ingest_many([IngestItem.of(documents[t].encode("utf-8"), _filename(t)) for t in documents])
        engine = base.engine(always_answer=True)
        for number, item in enumerate(items):
            seen.clear()
            rows.append({"question": item.question, "passage": number, "gold": [item.answer], "kind": item.kind,
                         "lang": item.lang, "final": _ask(engine, f"m{number}", item.question), "calls": list(seen)})
        _keep_vectors(base, rows, out, path, _candidates)


def _keep_vectors(base, rows: list[dict], out: str, path: str, candidates) -> None:
    """Write ``rows`` with the vectors of every candidate sentence (embedded, and stored)."""
    texts = {c.text for row in rows for call in row["calls"] for c in candidates(call["hits"], call["question"])}
    texts |= {call["question"] for row in rows for call in row["calls"]}
    texts = sorted(texts)
    vectors = base.kb.embed_sentences(texts)
    ids = sorted({hit.id for row in rows for call in row["calls"] for hit in call["hits"]})
    pooled = base.kb.catalog.sentence_vectors(ids) if hasattr(base.kb.catalog, "sentence_vectors") else {}
    base.kb.close()
    with open(out, "wb") as handle:
        pickle.dump({"dataset": path, "rows": rows, "vectors": dict(zip(texts, vectors)), "pooled": pooled}, handle)
    print(f"{len(rows)} questions recorded to {out}")


def load(path: str) -> dict:
    """The records ``record`` wrote."""
    with open(path, "rb") as handle:
        return pickle.load(handle)


def answers(data: dict, settings: Settings | None = None, answerer=None) -> list[str]:
    """Each question's answer by the answerer in the tree (``answerer``: another one), with the
    vectors embedded at query time and the stored ones (pooled at ingest) as recorded."""
    from ragkit.answering.extractive import extractive_answer

    settings = settings or Settings()
    answerer = answerer or extractive_answer
    vectors, pooled = data["vectors"], data["pooled"]

    def embed(texts):
        return np.vstack([vectors[t] for t in texts])

    def stored(ids):
        return {i: pooled[i] for i in ids if i in pooled}

    out = []
    for row in data["rows"]:
        text = ""
        for call in row["calls"]:  # the last call is the one the turn kept
            more = {"sentence_vectors": stored} if "sentence_vectors" in inspect.signature(answerer).parameters else {}
            text = answerer(call["question"], call["hits"], settings, embed, call["idf"], call["asked"], **more).text
        out.append(text if row["calls"] else row["final"])
    return out


def keys(rows: list[dict], texts: list[str]) -> tuple[float, float]:
    """answer_contains and answer_chars_mean of ``texts``."""
    contains = sum(any(g in t for g in row["gold"]) for row, t in zip(rows, texts)) / max(len(rows), 1)
    return contains, statistics.fmean(len(t) for t in texts) if texts else 0.0


def halves(rows: list[dict], seed: int) -> tuple[list[int], list[int]]:
    """Question indexes split in two by passage, at random."""
    passages = sorted({row["passage"] for row in rows})
    random.Random(seed).shuffle(passages)
    first = set(passages[: len(passages) // 2])
    one = [i for i, row in enumerate(rows) if row["passage"] in first]
    return one, [i for i in range(len(rows)) if i not in set(one)]


def report(data: dict, texts: list[str], label: str = "") -> None:
    """Overall and split-half figures of ``texts``."""
    rows = data["rows"]
    contains, chars = keys(rows, texts)
    parts = []
    for seed in SEEDS:
        for part in halves(rows, seed):
            c, n = keys([rows[i] for i in part], [texts[i] for i in part])
            parts.append(f"{c:.3f}/{n:.0f}")
    print(f"{label:24s} contains {contains:.4f} chars {chars:6.1f} | halves " + " ".join(parts))


def bridge_contains(data: dict, texts: list[str]) -> float:
    """Share of the English bridge questions of a multihop record whose answer holds the gold
    one (``eval.normalise_answer`` on both sides, as ``eval --multihop``)."""
    from ragkit_dev.eval import normalise_answer

    bridge = [i for i, row in enumerate(data["rows"]) if row.get("kind") == "bridge" and row.get("lang") == "en"]
    said = [normalise_answer(data["rows"][i]["gold"][0]) in normalise_answer(texts[i]) for i in bridge]
    return sum(said) / max(len(said), 1)


def score(path: str) -> None:
    """The answerer in the tree on the records, against the recorded answers."""
    data = load(path)
    recorded, replayed = [row["final"] for row in data["rows"]], answers(data)
    if any("kind" in row for row in data["rows"]):
        print(f"en bridge answer_contains recorded {bridge_contains(data, recorded):.4f} "
              f"replayed {bridge_contains(data, replayed):.4f}")
        return
    report(data, recorded, "recorded")
    report(data, replayed, "replayed")


if __name__ == "__main__":
    if sys.argv[1] == "record":
        record(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "record-multihop":
        record_multihop(sys.argv[2], sys.argv[3], *sys.argv[4:5])
    else:
        score(sys.argv[2])

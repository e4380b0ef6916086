"""Quality harness over SQuAD-format QA files (``python -m ragkit eval PATH [--json]``).

A fresh knowledge base is built in a temporary data dir (never the user's); every
passage is ingested as its own document through the normal ingest path and every
question goes through the normal search path. A hit at k means a chunk of the
question's passage is among the first k results.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .config import Settings


@dataclass
class QAItem:
    """One question with the passage (document) it belongs to and its gold answers."""

    question: str
    passage_index: int
    answers: list[str]


def read_squad(path: str | Path) -> tuple[list[str], list[QAItem]]:
    """Passages and questions of a SQuAD-format file (empty questions are kept)."""
    payload = json.loads(Path(path).read_text(encoding="utf-8"))
    passages: list[str] = []
    items: list[QAItem] = []
    for article in payload["data"]:
        for paragraph in article["paragraphs"]:
            passages.append(paragraph["context"])
            for qa in paragraph.get("qas", []):
                answers = [a["text"] for a in qa.get("answers", []) if a.get("text")]
                items.append(QAItem(qa.get("question", ""), len(passages) - 1, answers))
    return passages, items


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def retrieval_metrics(ranked_passages: list[list[int]], gold: list[int]) -> dict:
    """hit@1/5/10 and MRR@10 from each question's ranked passage indexes."""
    total = max(len(gold), 1)
    hits = {1: 0, 5: 0, 10: 0}
    reciprocal = 0.0
    for ranking, target in zip(ranked_passages, gold):
        if target in ranking[:10]:
            rank = ranking.index(target) + 1
            reciprocal += 1.0 / rank
            for k in hits:
                if rank <= k:
                    hits[k] += 1
    return {
        "hit_at_1": round(hits[1] / total, 4),
        "hit_at_5": round(hits[5] / total, 4),
        "hit_at_10": round(hits[10] / total, 4),
        "mrr_at_10": round(reciprocal / total, 4),
    }


def run_eval(
    path: str | Path,
    settings: Settings | None = None,
    with_answers: bool = False,
    limit: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    embedder=None,
) -> dict:
    """Build a throwaway knowledge base from the file and measure retrieval (and answers)."""
    from .kb import IngestItem, KnowledgeBase

    passages, items = read_squad(path)
    if limit:
        items = items[:limit]
    report = progress or (lambda stage, done, total: None)
    with tempfile.TemporaryDirectory(prefix="ragkit-eval-") as tmp:
        base = settings or Settings()
        eval_settings = base.model_copy(update={"data_dir": Path(tmp), "chroma_url": None, "collection": "eval"})
        kb = KnowledgeBase(eval_settings, embedder=embedder)
        started = time.perf_counter()
        doc_to_passage: dict[str, int] = {}
        items = [IngestItem.of(passage.encode("utf-8"), f"passage-{index:05d}.txt",
                               progress=_counter(report, "ingest", len(passages)))
                 for index, passage in enumerate(passages)]
        for index, result in enumerate(kb.ingest_many(items)):
            if result.document is not None:
                doc_to_passage[result.document.id] = index
        ingest_seconds = time.perf_counter() - started
        rankings, latencies = [], []
        for number, item in enumerate(items):
            t0 = time.perf_counter()
            hits = kb.search(item.question, k=10)
            latencies.append((time.perf_counter() - t0) * 1000)
            ranking: list[int] = []
            for hit in hits:
                passage = doc_to_passage.get(hit.doc_id)
                if passage is not None and passage not in ranking:
                    ranking.append(passage)
            rankings.append(ranking)
            report("search", number + 1, len(items))
        summary = {
            "dataset": Path(path).name,
            "passages": len(passages),
            "questions": len(items),
            "chunks": kb.passage_count(),
            **retrieval_metrics(rankings, [item.passage_index for item in items]),
            "search_p50_ms": round(percentile(latencies, 0.5), 2),
            "search_p95_ms": round(percentile(latencies, 0.95), 2),
            "ingest_seconds": round(ingest_seconds, 2),
            "embedding_model": kb.embedder.name,
        }
        if with_answers:
            summary.update(answer_metrics(kb, items, report))
        kb.close()
    return summary


def _counter(report, stage: str, total: int):
    """A progress callback that counts finished files."""
    done = [0]

    def on_stage(name: str, fraction: float) -> None:
        if name == "done":
            done[0] += 1
            report(stage, done[0], total)

    return on_stage


def answer_metrics(kb, items: list[QAItem], report) -> dict:
    """answer_contains / answer_chars_mean / answer_p50_ms of the offline extractive answerer,
    on the same relevant hits the chat graph answers from."""
    from .extractive import extractive_answer
    from .graph.policy import answer_passages

    contains, lengths, latencies = 0, [], []
    for number, item in enumerate(items):
        t0 = time.perf_counter()
        hits = answer_passages(kb, item.question, kb.settings)
        answer = extractive_answer(item.question, hits, kb.settings, kb.embedder, kb.idf(item.question))
        latencies.append((time.perf_counter() - t0) * 1000)
        lengths.append(len(answer.text))
        if any(gold in answer.text for gold in item.answers):
            contains += 1
        report("answer", number + 1, len(items))
    return {
        "answer_contains": round(contains / max(len(items), 1), 4),
        "answer_chars_mean": round(statistics.fmean(lengths) if lengths else 0.0, 1),
        "answer_p50_ms": round(percentile(latencies, 0.5), 2),
    }

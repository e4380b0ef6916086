"""Record searches of a shared set with their candidates and signals, to replay reranking
variants in seconds, and compare two recordings question by question.

``record``: a fresh knowledge base of a shared set (as ``eval`` builds it, with the settings of
the environment); for every question, the fused candidates before reranking (``Retriever._fused``
at ``candidate_k``, exact matches first) with their passages, stored sentence vectors and both
retrievers' scores, the dense and BM25 lists, the question's vector, token vectors and word
weights, the passages the search pins, the documents the search itself ranks (``actual``), and
every passage's token vectors (the model's last hidden state, for late interaction). A replay
of the current reranker on the candidates gives the eval's figures. ``compare``: two recordings'
hit@1, hit@5 and MRR@10, the questions whose rank changed, and the change over split halves of
the questions (20 seeds x 2 halves): its least and largest.

    python scripts/rerank_replay.py record ../shared/eval/squad_notre_dame.json /tmp/new.pkl
    RAGKIT_DENSE_TOPICLESS=0 ... python scripts/rerank_replay.py record ... /tmp/old.pkl
    python scripts/rerank_replay.py compare /tmp/old.pkl /tmp/new.pkl
"""

from __future__ import annotations

import argparse
import pickle
import random
import statistics
import tempfile

from ragkit.config import Settings


def record(path: str, out: str) -> None:
    """Index the set and keep each question's candidates and signals (see module docstring)."""
    from ragkit.ingest.chunking import contextual_text
    from ragkit.lang.text import search_tokens
    from ragkit.retrieval.hybrid import exact_terms
    from ragkit_dev.eval import EvalBase, read_squad

    passages, questions = read_squad(path)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ragkit-replay-") as tmp:
        base = EvalBase(Settings(), tmp)  # the environment's RAGKIT_* settings
        base.ingest(passages, list(range(len(passages))), lambda *_: None)
        kb, retriever = base.kb, base.kb.retriever
        encoder = kb.embedder.encoder
        everything = {}
        for doc in kb.catalog.documents():
            for passage in kb.catalog.passages_of(doc.id):
                everything[passage.id] = passage
        stored = kb.catalog.sentence_vectors(list(everything))
        tokens = {}
        for pid, passage in everything.items():
            text = contextual_text(passage.text, passage.section)
            encoding = encoder.tokenizer.encode(text)
            hidden, _ = encoder._hidden([encoding.ids])
            tokens[pid] = (hidden[0], encoding.offsets, len(passage.section) + 1 if passage.section else 0)
        for item in questions:
            depth = retriever.settings.candidate_k
            fused, dense, lexical = retriever._fused(item.question, depth, None)
            exact = exact_terms(item.question)
            if exact.identifiers or exact.phrases:
                fused = retriever._exact_first(fused, exact, depth, None)
            encoding = encoder.tokenizer.encode(item.question)
            hidden, _ = encoder._hidden([encoding.ids])
            words = list(dict.fromkeys(search_tokens(item.question)))
            candidates = []
            for pid, score in fused[:20]:
                passage = everything[pid]
                candidates.append({"pid": pid, "doc": base.passage_of.get(passage.doc_id), "fused": score,
                                   "dense": dict(dense).get(pid), "lexical": dict(lexical).get(pid),
                                   "text": passage.text, "section": passage.section,
                                   "position": passage.position, "sentences": stored.get(pid)})
            pinned = retriever._exact_holding(fused[:retriever.settings.rerank_depth], exact) if exact.identifiers \
                or exact.phrases else set()
            actual = base.ranking(kb.search(item.question, k=10))
            rows.append({"item": item, "vector": retriever.query_vector(item.question), "pinned": pinned,
                         "actual": actual, "dense": dense, "lexical": lexical,
                         "query_tokens": (hidden[0], encoding.ids), "weights": kb.lexical.idf(words) if words else {},
                         "exact": bool(exact.identifiers or exact.phrases), "candidates": candidates})
        base.kb.close()
    with open(out, "wb") as handle:
        pickle.dump({"rows": rows, "tokens": tokens, "passages": passages}, handle)
    print(f"recorded {len(rows)} questions")


def metrics(rankings: list[list[int]], gold: list[int]) -> tuple[float, float, float]:
    """hit@1, hit@5 and MRR@10 of ranked document indexes."""
    from ragkit_dev.eval import retrieval_metrics

    found = retrieval_metrics(rankings, gold)
    return found["hit_at_1"], found["hit_at_5"], found["mrr_at_10"]


def doc_ranking(order: list[dict]) -> list[int]:
    """Document indexes of ranked candidates, each once."""
    ranked: list[int] = []
    for candidate in order:
        if candidate["doc"] not in ranked:
            ranked.append(candidate["doc"])
    return ranked


def halves(count: int, seeds: int = 10) -> list[list[int]]:
    """Question index halves: ``seeds`` shuffles, each giving both halves."""
    found = []
    for seed in range(seeds):
        order = list(range(count))
        random.Random(seed).shuffle(order)
        found += [sorted(order[: count // 2]), sorted(order[count // 2:])]
    return found


def compare(before: str, after: str, seeds: int = 20) -> None:
    """Print both recordings' figures, the questions whose rank moved and the split-half spread."""
    runs = []
    for path in (before, after):
        with open(path, "rb") as handle:
            rows = pickle.load(handle)["rows"]
        runs.append(([row["actual"] for row in rows], [row["item"].passage_index for row in rows], rows))
    for name, (rankings, gold, _) in zip((before, after), runs):
        print(name, "hit@1 %.4f hit@5 %.4f MRR@10 %.4f" % metrics(rankings, gold))
    (old, gold, rows), (new, _, _) = runs
    for number, (first, second, target) in enumerate(zip(old, new, gold)):
        ranks = [ranking.index(target) + 1 if target in ranking[:10] else None for ranking in (first, second)]
        if ranks[0] != ranks[1]:
            print(f"  #{number} {ranks[0]} -> {ranks[1]}: {rows[number]['item'].question}")
    gains = []
    for half in halves(len(gold), seeds):
        pick = lambda rankings: [rankings[i] for i in half]  # noqa: E731
        was, now = metrics(pick(old), pick(gold)), metrics(pick(new), pick(gold))
        gains.append((now[0] - was[0], now[2] - was[2]))
    print("split halves (%d): hit@1 change %.4f to %.4f (mean %.4f), MRR@10 change %.4f to %.4f (mean %.4f)" % (
        len(gains), min(g[0] for g in gains), max(g[0] for g in gains), statistics.mean(g[0] for g in gains),
        min(g[1] for g in gains), max(g[1] for g in gains), statistics.mean(g[1] for g in gains)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("path")
    rec.add_argument("out")
    versus = sub.add_parser("compare")
    versus.add_argument("before")
    versus.add_argument("after")
    args = parser.parse_args()
    if args.command == "record":
        record(args.path, args.out)
    else:
        compare(args.before, args.after)


if __name__ == "__main__":
    main()

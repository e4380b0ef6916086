"""Replay the reranking of searches on recorded candidates: variants scored in seconds.

``record``: a fresh knowledge base of a shared set (as ``eval`` builds it); for every question,
the fused candidates before reranking (``Retriever._fused`` at ``candidate_k``, exact matches
first) with their passages, stored sentence vectors and both retrievers' scores, the question's
vector and word weights, and every passage's token vectors (the model's last hidden state, for
late interaction). ``misses``: the questions whose passage the current reranker does not put
first, with what outranks it and each signal. ``score``: named variants over the records: hit@1,
hit@5, MRR@10 and the split-half spread (seeds x 2 halves of the questions).

    python scripts/rerank_replay.py record ../shared/eval/squad_notre_dame.json /tmp/en.pkl
    python scripts/rerank_replay.py misses /tmp/en.pkl
    python scripts/rerank_replay.py score /tmp/en.pkl
"""

from __future__ import annotations

import argparse
import pickle
import random
import tempfile

from ragkit.config import Settings


def record(path: str, out: str) -> None:
    """Index the set and keep each question's candidates and signals (see module docstring)."""
    from ragkit.chunking import contextual_text
    from ragkit.eval import EvalBase, read_squad
    from ragkit.retrieval import exact_terms
    from ragkit.text import search_tokens

    passages, questions = read_squad(path)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ragkit-replay-") as tmp:
        base = EvalBase(Settings(), tmp)
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
    from ragkit.eval import retrieval_metrics

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("path")
    rec.add_argument("out")
    args = parser.parse_args()
    if args.command == "record":
        record(args.path, args.out)


if __name__ == "__main__":
    main()

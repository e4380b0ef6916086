"""Speed and memory figures (``python -m ragkit bench``): printed, never asserted.

Builds a throwaway knowledge base of synthetic bilingual documents in a temporary
directory and measures model load, ingest throughput, search latency and peak memory.
"""

from __future__ import annotations

import random
import resource
import tempfile
import time
from pathlib import Path

from .config import Settings
from .eval import percentile

_EN_WORDS = (
    "retrieval index document passage answer question model vector chunk token search "
    "storage session history citation source page budget latency memory network server"
).split()
_ZH_WORDS = "检索 索引 文档 段落 答案 问题 模型 向量 分块 词元 搜索 存储 会话 历史 引用 来源 页面 预算 延迟 内存".split()


def synthetic_document(index: int, sentences: int = 40) -> str:
    """A deterministic pseudo-document mixing English and Chinese sentences."""
    rng = random.Random(index)
    lines = []
    for n in range(sentences):
        if n % 2:
            lines.append("".join(rng.choices(_ZH_WORDS, k=12)) + "。")
        else:
            lines.append(" ".join(rng.choices(_EN_WORDS, k=14)).capitalize() + f" item{index}.")
    return "\n".join(lines)


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_bench(settings: Settings, documents: int = 200, queries: int = 200) -> dict:
    """Measure a synthetic workload and return the figures."""
    from .kb import KnowledgeBase

    with tempfile.TemporaryDirectory(prefix="ragkit-bench-") as tmp:
        local = settings.model_copy(update={"data_dir": Path(tmp), "chroma_url": None, "collection": "bench"})
        t0 = time.perf_counter()
        kb = KnowledgeBase(local)
        kb.embedder.embed_query("warm up")  # startup includes loading the embedding model
        startup = time.perf_counter() - t0
        t0 = time.perf_counter()
        with kb.batch():
            for index in range(documents):
                kb.ingest(synthetic_document(index).encode(), filename=f"bench-{index}.txt")
        ingest = time.perf_counter() - t0
        chunks = kb.chunk_count()
        rng = random.Random(7)
        latencies = []
        for n in range(queries):
            words = rng.choices(_ZH_WORDS if n % 2 else _EN_WORDS, k=4)
            query = ("".join(words) if n % 2 else " ".join(words)) + "?"
            t1 = time.perf_counter()
            kb.search(query, k=5)
            latencies.append((time.perf_counter() - t1) * 1000)
        t0 = time.perf_counter()
        KnowledgeBase(local, embedder=kb.embedder)  # sweep + lexical index from the on-disk cache
        reopen = time.perf_counter() - t0
        kb.close()
    return {
        "documents": documents,
        "chunks": chunks,
        "startup_s": round(startup, 2),
        "ingest_docs_per_s": round(documents / ingest, 1),
        "ingest_chunks_per_s": round(chunks / ingest, 1),
        "reopen_s": round(reopen, 2),
        "search_p50_ms": round(percentile(latencies, 0.5), 2),
        "search_p95_ms": round(percentile(latencies, 0.95), 2),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }

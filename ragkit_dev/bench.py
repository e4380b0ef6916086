"""Speed and memory figures (``python -m ragkit bench [--quick] [--json]``): printed, never asserted.

Everything runs in a temporary data dir. What is measured, and how:

- ``encode_chunks_per_s_<kind>``: plain ``SentenceTransformer.encode`` of passages (PyTorch),
  the limit of the usual stack's ingest on this CPU; ``ingest_vs_encode_large`` (files of many
  passages) and ``ingest_vs_encode_small`` (many one-passage files, as a folder ingest) are
  full-path ingest throughputs over that limit, measured on the same passages, on the torch
  backend (an existing float32 store's; over 1: it embeds through its float32 ONNX copy, which
  is faster than PyTorch). A new store's default, ``onnx-int8``, is measured beside it.
- ``search_p50_ms_<n>`` / ``search_p95_ms_<n>`` (and ``search_filtered_*`` with a tag
  filter admitting a tenth of the documents) on bases of n passages. These bases are
  synthetic: generated bilingual texts, ingested through the normal path but with the
  model-free hashing embedder for their vectors (so building 100k passages takes minutes,
  not hours); queries are embedded by the real model.
- ``add_one_doc_s_<n>``: adding one 5-passage file (real model) until it is searchable.
- ``reopen_s_<n>``, ``peak_rss_mb_<n>``: a new process opening the largest base until its
  first answered search, and its peak memory (a serving process, not the builder).
- ``onnx_int8_speedup_passages`` / ``_questions``: the int8 ONNX backend's encoding rate (a
  new store's default) over the torch backend's (its float32 ONNX copy), on full-length
  passages embedded as ingest does and on questions embedded one at a time;
  ``onnx_int8_over_pytorch_passages``: the same passages' rate over plain PyTorch
  (``SentenceTransformer.encode``, the usual stack).
- ``extractive_answer_ms``: whole offline turns (rewrite, search, grade, quotes, record) on
  the samples, each question asked once.
- ``first_token_ms``: question to first streamed token against a local OpenAI-compatible
  server that answers at once.
- ``load_*``: concurrent chat sessions asking while a large file is indexed: answer
  latency percentiles and anything lost (turns, documents, vectors).
- ``ocr_engine_load_s``, ``ocr_page_s``, ``ocr_page_chars``: RapidOCR's first load, then one
  scanned A4 page (an image of 24 lines of text at 150 dpi, in a PDF) read through the loader;
  ``ocr_imported_without_scans``: whether a process that opens the service and loads a text
  file imports the OCR engine or OpenCV at all (it should not: no OCR need, no cost).
- ``url_fetch_extract_ms``: fetching a web page from a local server and extracting its main
  text (trafilatura already imported); ``url_ingest_s``: the whole ``ingest_url`` of it.

``bench --api`` (:func:`run_api_bench`, in ``api_load.py``) measures the HTTP API beside the page: the
Chat page's answer times in a real browser, idle and while 8 API clients ask without pause.

``bench --team`` (:func:`run_team_bench`) measures instead the same small workload in the
two setups side by side: ``ingest_chunks_per_s_<setup>`` (40 synthetic two-language files
of about ten passages, real model) and ``search_p50_ms_<setup>`` / ``search_p95_ms_<setup>``
(100 questions), ``local`` being SQLite and embedded Chroma in a temporary data dir and
``team`` the configured RAGKIT_DATABASE_URL and RAGKIT_CHROMA_URL (which must hold no
documents: the bench adds its own and deletes them).
"""

from __future__ import annotations

import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragkit.config import Settings
from ragkit_dev.api_load import run_api_bench
from ragkit_dev.eval import percentile

Report = Callable[[str], None]
__all__ = ["run_bench", "run_team_bench", "run_api_bench"]


@dataclass(frozen=True)
class Workload:
    """The sizes one bench run uses."""

    encode_passages: int
    large_files: int
    large_file_passages: int
    small_files: int
    bases: tuple[tuple[str, int], ...]  # (label, passages)
    searches: int
    chat_sessions: int
    chat_questions: int
    indexing_passages: int


FULL = Workload(256, 4, 150, 1000, (("10k", 10_000), ("100k", 100_000)), 200, 8, 3, 500)
QUICK = Workload(48, 2, 40, 60, (("1k", 1_000), ("3k", 3_000)), 30, 4, 2, 100)

_EN_WORDS = (
    "retrieval index document passage answer question model vector chunk token search "
    "storage session history citation source page budget latency memory network server"
).split()
_ZH_WORDS = ("检索 索引 文档 段落 答案 问题 模型 向量 分块 词元 "
             "搜索 存储 会话 历史 引用 来源 页面 预算 延迟 内存").split()
_SYLLABLES = "ka lo mi ne ru sa te vi zo pa qu ri do fe ga hu ji ke ly mo".split()
_HANZI = "山水风云花草木石江河湖海天地日月星光春夏秋冬东南西北金银铜铁茶米鱼鸟马牛羊城乡路桥门窗书画诗歌"


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


def _vocabulary(seed: int = 11) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    english = sorted({"".join(rng.choices(_SYLLABLES, k=rng.randint(2, 4))) for _ in range(6000)})
    chinese = sorted({"".join(rng.choices(_HANZI, k=2)) for _ in range(3000)})
    return english, chinese


def synthetic_passage(rng: random.Random, vocabulary: tuple[list[str], list[str]]) -> str:
    """One passage-sized paragraph (about 60-90 tokens) of English and Chinese pseudo-words,
    with a Zipf-like word distribution so common and rare words both occur."""
    english, chinese = vocabulary
    weights = [1.0 / (rank + 1) for rank in range(len(english))]
    words = rng.choices(english, weights=weights, k=24)
    hanzi = rng.choices(chinese, weights=weights[: len(chinese)], k=14)
    return " ".join(words).capitalize() + ". " + "".join(hanzi) + "。"


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MiB (VmHWM: unlike ru_maxrss, it does not
    carry over the peak of the process that started this one)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_bench(settings: Settings, quick: bool = False, report: Report | None = None) -> dict:
    """Measure the workload and return the figures."""
    from ragkit.models.embeddings import make_embedder

    say = report or (lambda message: None)
    workload = QUICK if quick else FULL
    figures: dict = {"workload": "quick" if quick else "full"}
    with tempfile.TemporaryDirectory(prefix="ragkit-bench-") as tmp:
        root = Path(tmp)
        local = settings.model_copy(update={"data_dir": root / "ingest", "chroma_url": None, "collection": "bench",
                                            "database_url": None,
                                            "embedding_backend": "torch"})  # the int8 backend is measured beside it
        started = time.perf_counter()
        embedder = make_embedder(local)
        embedder.embed_query("warm up")
        figures["model_load_s"] = round(time.perf_counter() - started, 2)
        say("ingest")
        figures.update(measure_ingest(local, embedder, workload, root))
        say("the onnx-int8 embedding backend")
        figures.update(measure_onnx(local, embedder, workload))
        say("OCR of a scanned page, a web page by URL")
        figures.update(measure_ocr_and_url(local.model_copy(update={"data_dir": root / "pages"}), embedder,
                                            scan_lines=8 if quick else 24))
        say("answers")
        figures.update(measure_answers(local.model_copy(update={"data_dir": root / "answers"}), embedder))
        say("concurrent chat while indexing")
        figures.update(measure_load(local.model_copy(update={"data_dir": root / "load"}), embedder, workload))
        for label, size in workload.bases:
            say(f"synthetic base of {size} passages")
            base = local.model_copy(update={"data_dir": root / f"base-{label}"})
            figures.update(measure_base(base, label, size, workload))
    return figures


def scanned_page_pdf(lines: int = 24) -> bytes:
    """An A4 page at 150 dpi holding only an image of English text (a scan)."""
    import io

    from PIL import Image, ImageDraw, ImageFont

    rng = random.Random(7)
    image = Image.new("RGB", (1240, 1754), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=30)
    for number in range(lines):
        words = " ".join(rng.choices(_EN_WORDS, k=8)).capitalize() + "."
        draw.text((110, 120 + number * 62), words, fill="black", font=font)
    out = io.BytesIO()
    image.save(out, "PDF", resolution=150)
    return out.getvalue()


def measure_ocr_and_url(settings: Settings, embedder, scan_lines: int = 24) -> dict:
    """OCR of one scanned A4 page of ``scan_lines`` lines (the engine's first load apart), whether a process that
    reads no scan imports the OCR engine at all, and a web page added by URL from a local
    server (fetch and main-text extraction apart from the whole ingest)."""
    import http.server

    from ragkit.ingest import load_bytes
    from ragkit.ingest.web import fetch_page
    from ragkit.store.kb import KnowledgeBase

    figures: dict = {}
    code = ("import sys, ragkit.app.service, ragkit.ingest; "
            "ragkit.ingest.load_bytes(b'plain words', 'a.txt'); "
            "print(int('rapidocr_onnxruntime' in sys.modules or 'cv2' in sys.modules))")
    probe = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    figures["ocr_imported_without_scans"] = probe.stdout.strip() == "1"
    scan = scanned_page_pdf(scan_lines)
    started = time.perf_counter()
    from ragkit.ingest.ocr import engine

    engine()
    figures["ocr_engine_load_s"] = round(time.perf_counter() - started, 2)
    timings = []
    for _ in range(2):
        started = time.perf_counter()
        loaded = load_bytes(scan, "scan.pdf")
        timings.append(time.perf_counter() - started)
    figures["ocr_page_s"] = round(min(timings), 2)
    figures["ocr_page_chars"] = loaded.char_count

    article = "<html><head><title>Bench page</title></head><body><nav>Home | About</nav><article>" + "".join(
        f"<p>{synthetic_document(n, 6)}</p>" for n in range(12)) + "</article><footer>Footer</footer></body></html>"

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            body = article.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    local = settings.model_copy(update={"url_allow_private": True})
    url = f"http://127.0.0.1:{server.server_address[1]}/article.html"
    try:
        fetch_page(url, local)  # trafilatura's import is a one-time cost
        started = time.perf_counter()
        fetch_page(url, local)
        figures["url_fetch_extract_ms"] = round((time.perf_counter() - started) * 1000, 1)
        kb = KnowledgeBase(local, embedder=embedder)
        started = time.perf_counter()
        result = kb.ingest_url(url)
        figures["url_ingest_s"] = round(time.perf_counter() - started, 2)
        figures["url_ingest_passages"] = result.document.chunks if result.document else 0
        kb.close()
    finally:
        server.shutdown()
        server.server_close()
    return figures


def encode_rate(embedder, texts: list[str]) -> float:
    """Passages per second of the bare model (PyTorch) on these texts: the usual stack's limit
    of ingest (an embedder without one, e.g. OpenAI's: its own path)."""
    model = getattr(embedder, "model", None)
    if model is None:
        return passage_rate(embedder, texts)
    started = time.perf_counter()
    model.encode(texts, batch_size=64, normalize_embeddings=True)
    return len(texts) / (time.perf_counter() - started)


def measure_ingest(settings: Settings, embedder, workload: Workload, root: Path) -> dict:
    """Full-path ingest throughput of large and of one-passage files, each over the bare
    model's throughput on the same passages (a sample of them, encoded first)."""
    from ragkit.ingest.chunking import chunk_pages
    from ragkit.store.kb import IngestItem, KnowledgeBase

    rng = random.Random(2)
    vocabulary = _vocabulary()
    large, small = root / "large-files", root / "small-files"
    large.mkdir()
    small.mkdir()
    for index in range(workload.large_files):
        paragraphs = [synthetic_passage(rng, vocabulary) for _ in range(workload.large_file_passages * 3)]
        (large / f"large-{index}.txt").write_text("\n\n".join(paragraphs), encoding="utf-8")
    for index in range(workload.small_files):
        (small / f"small-{index:04d}.txt").write_text(synthetic_passage(rng, vocabulary), encoding="utf-8")
    figures = {}
    for name, folder in (("large", large), ("small", small)):
        texts = [p.text for path in sorted(folder.iterdir())
                 for p in chunk_pages([path.read_text(encoding="utf-8")], settings.chunk_tokens,
                                      settings.chunk_overlap_tokens)][: workload.encode_passages]
        pytorch_rate = encode_rate(embedder, texts)
        figures[f"encode_chunks_per_s_{name}"] = round(pytorch_rate, 1)
        kb = KnowledgeBase(settings.model_copy(update={"data_dir": root / f"ingest-{name}"}), embedder=embedder)
        started = time.perf_counter()
        results = kb.ingest_many([IngestItem.of(path) for path in sorted(folder.iterdir())])
        seconds = time.perf_counter() - started
        passages = sum(r.document.chunks for r in results if r.document)
        figures[f"ingest_chunks_per_s_{name}"] = round(passages / seconds, 1)
        figures[f"ingest_vs_encode_{name}"] = round(passages / seconds / pytorch_rate, 3)
        kb.close()
    return figures


def measure_onnx(settings: Settings, embedder, workload: Workload) -> dict:
    """Encoding speed of the int8 ONNX backend over the torch one's float32 copy, on full-length passages
    (what ingest embeds) and on questions (what a search embeds); its one-time build, from
    the packaged model, is timed separately."""
    from ragkit.ingest.chunking import chunk_pages
    from ragkit.models.embeddings import make_embedder

    rng = random.Random(4)
    vocabulary = _vocabulary()
    document = "\n\n".join(synthetic_passage(rng, vocabulary) for _ in range(workload.encode_passages * 3))
    passages = [p.text for p in chunk_pages([document], settings.chunk_tokens,
                                            settings.chunk_overlap_tokens)][: workload.encode_passages]
    questions = ANSWER_QUESTIONS * 4
    started = time.perf_counter()
    onnx = make_embedder(settings.model_copy(update={"embedding_backend": "onnx-int8"}))
    built = time.perf_counter() - started
    onnx.embed_documents(passages[:4])
    figures = {"onnx_int8_build_s": round(built, 1)}
    rates = {"passages": (passage_rate(embedder, passages), passage_rate(onnx, passages)),
             "questions": (question_rate(embedder, questions), question_rate(onnx, questions))}
    for kind, (float32_rate, onnx_rate) in rates.items():
        figures[f"encode_{kind}_per_s_float32"] = round(float32_rate, 1)
        figures[f"encode_{kind}_per_s_onnx_int8"] = round(onnx_rate, 1)
        figures[f"onnx_int8_speedup_{kind}"] = round(onnx_rate / float32_rate, 2)
    figures["onnx_int8_over_pytorch_passages"] = round(rates["passages"][1] / encode_rate(embedder, passages), 2)
    return figures


def passage_rate(embedder, passages: list[str]) -> float:
    """Passages per second through the embedder's own path, as ingest embeds them."""
    started = time.perf_counter()
    embedder.embed_documents(passages)
    return len(passages) / (time.perf_counter() - started)


def question_rate(embedder, questions: list[str]) -> float:
    """Questions per second, each embedded alone as a search does (the torch backend's
    float32 ONNX copy, or the int8 model)."""
    started = time.perf_counter()
    for question in questions:
        embedder.embed_query(question)
    return len(questions) / (time.perf_counter() - started)


# Distinct questions, so no cache (query vectors, model prompts) flatters the figures.
ANSWER_QUESTIONS = [
    "Which file types does ragkit accept?", "What is the largest file ragkit accepts?",
    "How do tags and filters work?", "How are follow-up questions handled?", "What does the source panel show?",
    "How do I get generated answers?", "Can I rename a conversation?", "What does the statistics page show?",
    "How does search work?", "What should I do when a PDF is refused?",
    "ragkit 支持哪些文件类型？", "单个文件最大可以多大？", "标签有什么用？", "离线模式下答案是怎样生成的？",
    "对话可以导出吗？", "统计页面显示什么？", "检索是怎样工作的？", "上传失败时该怎么办？",
]


def measure_answers(settings: Settings, embedder) -> dict:
    """Whole offline turns (contextualize, search, grade, quote, record) and the time to the
    first streamed token of a generated answer, each question asked once in a new conversation."""
    from ragkit.app.engine import ChatEngine
    from ragkit.store.kb import IngestItem, KnowledgeBase
    from ragkit_dev.devserver import Reply, ScriptedOpenAIServer

    kb = KnowledgeBase(settings, embedder=embedder)
    kb.ingest_many([IngestItem.of(path) for path in sorted(settings.samples_dir.glob("*.md"))])
    offline = ChatEngine(settings.model_copy(update={"openai_api_key": None, "chat_models": ""}), kb)
    answer_ms = []
    for number, question in enumerate(ANSWER_QUESTIONS):
        started = time.perf_counter()
        offline.ask(f"offline{number}", question)
        answer_ms.append((time.perf_counter() - started) * 1000)
    first_token_ms = []
    with ScriptedOpenAIServer(lambda body: Reply("ragkit accepts PDF [1].", chunk_chars=4)) as server:
        llm_settings = settings.model_copy(update={"openai_api_key": "sk-bench", "openai_base_url": server.base_url,
                                                   "chat_model": "bench-model"})
        engine = ChatEngine(llm_settings, kb)
        for number, question in enumerate(ANSWER_QUESTIONS):
            started = time.perf_counter()
            for event in engine.stream(f"bench{number}", question):
                if event["type"] == "token":
                    first_token_ms.append((time.perf_counter() - started) * 1000)
                    break
    kb.close()
    return {
        "extractive_answer_ms": round(statistics.median(answer_ms), 1),
        "extractive_answer_p95_ms": round(percentile(answer_ms, 0.95), 1),
        "first_token_ms": round(statistics.median(first_token_ms), 1) if first_token_ms else None,
    }


def measure_load(settings: Settings, embedder, workload: Workload) -> dict:
    """Chat sessions asking at the same time while a large file is indexed; what was lost."""
    from ragkit.app.engine import ChatEngine
    from ragkit.store.kb import IngestItem, KnowledgeBase

    kb = KnowledgeBase(settings, embedder=embedder)
    kb.ingest_many([IngestItem.of(path) for path in sorted(settings.samples_dir.glob("*.md"))])
    engine = ChatEngine(settings, kb)
    rng = random.Random(3)
    vocabulary = _vocabulary()
    big = "\n\n".join(synthetic_passage(rng, vocabulary) for _ in range(workload.indexing_passages * 3))
    questions = ["Which file types does ragkit accept?", "What are its limits?", "ragkit 支持哪些文件类型？"]
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    indexing = threading.Thread(target=lambda: kb.ingest(big.encode(), filename="big-upload.txt"))

    def chat(session: int) -> None:
        for number in range(workload.chat_questions):
            started = time.perf_counter()
            try:
                engine.ask(f"load{session}", questions[(session + number) % len(questions)])
            except Exception as exc:  # counted as lost
                with lock:
                    failures.append(f"{type(exc).__name__}: {exc}")
                continue
            with lock:
                latencies.append((time.perf_counter() - started) * 1000)

    indexing.start()
    sessions = [threading.Thread(target=chat, args=(n,)) for n in range(workload.chat_sessions)]
    for thread in sessions:
        thread.start()
    for thread in sessions:
        thread.join()
    asked_while_indexing = indexing.is_alive()
    indexing.join()
    turns = sum(len(engine.history.turns(f"load{n}")) for n in range(workload.chat_sessions))
    expected = workload.chat_sessions * workload.chat_questions
    vectors = {stored.id for stored, _ in kb.store.scan()}
    lost_passages = len(kb.catalog.passage_ids() ^ vectors)
    indexed = any(doc.filename == "big-upload.txt" for doc in kb.documents())
    kb.close()
    return {
        "load_sessions": workload.chat_sessions,
        "load_answers": len(latencies),
        "load_answer_p50_ms": round(percentile(latencies, 0.5), 1),
        "load_answer_p95_ms": round(percentile(latencies, 0.95), 1),
        "load_answers_finished_before_indexing": asked_while_indexing,
        "load_lost": (expected - turns) + len(failures) + lost_passages + (0 if indexed else 1),
    }


def measure_base(settings: Settings, label: str, size: int, workload: Workload) -> dict:
    """Search latency, adding one file, reopening and memory on a synthetic base of ``size`` passages."""
    from ragkit.models.embeddings import make_embedder
    from ragkit.store.kb import KnowledgeBase
    from ragkit.types import SearchFilters

    build_synthetic_base(settings, size)
    # Queries use the real model, made for this data dir: as in any base it has indexed,
    # its float32 ONNX copy is cached there for the reopening process.
    embedder = make_embedder(settings)
    kb = KnowledgeBase(settings, embedder=embedder, check_model=False)
    rng = random.Random(5)
    vocabulary = _vocabulary()
    queries = []
    for n in range(workload.searches):
        english, chinese = vocabulary
        queries.append(" ".join(rng.choices(english[:2000], k=4)) + "?" if n % 2 else
                       "".join(rng.choices(chinese[:1000], k=4)) + "？")
    tagged = SearchFilters(tags=["team-a"])
    figures = {}
    for name, filters in (("search", None), ("search_filtered", tagged)):
        latencies = []
        for query in queries:
            started = time.perf_counter()
            kb.search(query, k=5, filters=filters)
            latencies.append((time.perf_counter() - started) * 1000)
        figures[f"{name}_p50_ms_{label}"] = round(percentile(latencies, 0.5), 2)
        figures[f"{name}_p95_ms_{label}"] = round(percentile(latencies, 0.95), 2)
    text = "\n\n".join(f"Benchmark addition paragraph {n}: the quokka number {n} smiles at visitors." for n in range(5))
    started = time.perf_counter()
    added = kb.ingest(text.encode(), filename="added.txt")
    found = kb.search("quokka smiles at visitors", k=1)
    figures[f"add_one_doc_s_{label}"] = round(time.perf_counter() - started, 3)
    figures[f"add_one_doc_found_{label}"] = bool(found and found[0].doc_id == added.document.id)
    kb.close()
    figures.update(measure_reopen(settings, label))
    return figures


def build_synthetic_base(settings: Settings, size: int, passages_per_doc: int = 5) -> None:
    """Ingest ``size`` generated passages (5 per document, every tenth document tagged
    "team-a") through the normal path, with the hashing embedder for their vectors."""
    from ragkit.models.embeddings import HashingEmbedder
    from ragkit.store.kb import IngestItem, KnowledgeBase

    kb = KnowledgeBase(settings, embedder=HashingEmbedder())
    rng = random.Random(size)
    vocabulary = _vocabulary()
    items = []
    for index in range(size // passages_per_doc):
        text = "\n\n".join(synthetic_passage(rng, vocabulary) for _ in range(passages_per_doc))
        tags = ["team-a"] if index % 10 == 0 else []
        items.append(IngestItem.of(text.encode(), f"synthetic-{index:06d}.txt", tags=tags))
        if len(items) == 2000:
            kb.ingest_many(items)
            items = []
    kb.ingest_many(items)
    kb.close()


_REOPEN = """
import time, json, sys
started = time.perf_counter()
from ragkit_dev.bench import peak_rss_mb
from ragkit.config import Settings
from ragkit.store.kb import KnowledgeBase
kb = KnowledgeBase(Settings(data_dir=sys.argv[1], collection="bench", _env_file=None), check_model=False)
hits = kb.search("storage latency index", k=5)
seconds = time.perf_counter() - started
for query in ["检索 模型", "session history budget", "山水 茶米"] * 5:
    kb.search(query, k=5)
print(json.dumps({"seconds": seconds, "hits": len(hits), "rss_mb": peak_rss_mb()}))
"""


def measure_reopen(settings: Settings, label: str) -> dict:
    """A new process opening the base until its first answered search, and its peak memory."""
    result = subprocess.run([sys.executable, "-c", _REOPEN, str(settings.data_path)], capture_output=True,
                            text=True, timeout=600)
    if result.returncode != 0:
        return {f"reopen_error_{label}": result.stderr.strip().splitlines()[-1:]}
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    return {f"reopen_s_{label}": round(measured["seconds"], 2), f"peak_rss_mb_{label}": round(measured["rss_mb"], 1)}


TEAM_FILES, TEAM_FILE_PASSAGES, TEAM_SEARCHES = 40, 10, 100


def run_team_bench(settings: Settings, report: Report | None = None) -> dict:
    """Ingest rate and search latency in a temporary local data dir and on the configured
    servers, with the same files and questions (see the module docstring)."""
    from ragkit.errors import SettingsError
    from ragkit.models.embeddings import make_embedder

    if not (settings.database_url and settings.chroma_url):
        raise SettingsError("bench --team needs RAGKIT_DATABASE_URL and RAGKIT_CHROMA_URL (a scratch database and "
                            "Chroma server: the bench adds its own documents and deletes them)")
    say = report or (lambda message: None)
    figures: dict = {}
    with tempfile.TemporaryDirectory(prefix="ragkit-bench-team-") as tmp:
        root = Path(tmp)
        local = settings.model_copy(update={"data_dir": root / "local", "chroma_url": None, "database_url": None,
                                            "collection": "bench"})
        team = settings.model_copy(update={"data_dir": root / "team"})
        embedder = make_embedder(local)
        embedder.embed_query("warm up")
        for label, setup in (("local", local), ("team", team)):
            say(f"the {label} setup")
            figures.update(_measure_setup(setup, embedder, label))
    return figures


def _measure_setup(settings: Settings, embedder, label: str) -> dict:
    from ragkit.errors import SettingsError
    from ragkit.store.kb import IngestItem, KnowledgeBase

    rng = random.Random(11)
    vocabulary = _vocabulary()
    files = [("\n\n".join(synthetic_passage(rng, vocabulary) for _ in range(TEAM_FILE_PASSAGES * 3)), f"team-{n}.txt")
             for n in range(TEAM_FILES)]
    english, chinese = vocabulary
    questions = [" ".join(rng.choices(english[:2000], k=4)) + "?" if n % 2 else
                 "".join(rng.choices(chinese[:1000], k=4)) + "？" for n in range(TEAM_SEARCHES)]
    kb = KnowledgeBase(settings, embedder=embedder)
    try:
        if kb.documents():
            raise SettingsError(f"bench --team: the {label} setup already holds documents; give it a scratch "
                                "database and Chroma server")
        started = time.perf_counter()
        results = kb.ingest_many([IngestItem.of(text.encode(), name) for text, name in files])
        seconds = time.perf_counter() - started
        passages = sum(r.document.chunks for r in results if r.document)
        latencies = []
        for question in questions:
            started = time.perf_counter()
            kb.search(question, k=5)
            latencies.append((time.perf_counter() - started) * 1000)
        kb.delete_many([doc.id for doc in kb.documents()])
    finally:
        kb.close()
    return {f"ingest_chunks_per_s_{label}": round(passages / seconds, 1),
            f"search_p50_ms_{label}": round(percentile(latencies, 0.5), 2),
            f"search_p95_ms_{label}": round(percentile(latencies, 0.95), 2)}

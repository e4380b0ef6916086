"""Quality harness over SQuAD-format QA files (``python -m ragkit eval PATH [--json]``).

A fresh knowledge base is built in a temporary data dir (never the user's); every
passage is ingested as its own document through the normal ingest path.

- default: every question through the normal search path; a hit at k means a passage
  of the question's document is among the first k results (``--answers`` also asks every
  question through the chat graph, answering even from evidence graded weak, and scores
  its answer);
- ``--unanswerable``: half the articles indexed, every question asked through the chat
  graph: does it answer what the documents hold and say "not found" for the rest?
- ``--dialogues FILE``: two-turn dialogues through the chat graph: does a follow-up
  ("what are its features?") find the same passage as its standalone form?
- ``--identifiers N``: N near-identical one-sentence passages, each holding a unique code
  (``zq1499x``); is the code's passage first when the code is asked alone and inside a
  sentence, also for passages whose vector was left out of the vector store?
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragkit.config import Settings

SPLIT_SEED = 2026


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


def articles_of(path: str | Path) -> list[list[int]]:
    """The passage indexes of each article, in file order."""
    payload = json.loads(Path(path).read_text(encoding="utf-8"))
    articles, index = [], 0
    for article in payload["data"]:
        articles.append(list(range(index, index + len(article["paragraphs"]))))
        index += len(article["paragraphs"])
    return articles


def unanswerable_split(articles: list[list[int]], seed: int = SPLIT_SEED) -> set[int]:
    """The passages kept when half the articles are removed (shuffled with a fixed seed);
    a one-article set is split by its paragraphs, which makes the removed ones hard
    negatives (same topic, different facts)."""
    units = articles if len(articles) > 1 else [[index] for index in articles[0]]
    order = list(range(len(units)))
    random.Random(seed).shuffle(order)
    return {index for unit in order[: (len(order) + 1) // 2] for index in units[unit]}


class EvalBase:
    """A throwaway knowledge base holding some passages of an eval set, one document each."""

    def __init__(self, settings: Settings | None, tmp: str, embedder=None):
        from ragkit.store.kb import KnowledgeBase

        base = settings or Settings()
        self.settings = base.model_copy(update={"data_dir": Path(tmp), "chroma_url": None, "collection": "eval"})
        self.kb = KnowledgeBase(self.settings, embedder=embedder)
        self.passage_of: dict[str, int] = {}

    def ingest(self, passages: list[str], indexes: list[int], report) -> float:
        """Add the passages with these indexes; returns the seconds it took."""
        from ragkit.store.kb import IngestItem

        started = time.perf_counter()
        items = [IngestItem.of(passages[i].encode("utf-8"), f"passage-{i:05d}.txt",
                               progress=_counter(report, "ingest", len(indexes))) for i in indexes]
        for index, result in zip(indexes, self.kb.ingest_many(items)):
            if result.document is not None:
                self.passage_of[result.document.id] = index
        return time.perf_counter() - started

    def ranking(self, hits) -> list[int]:
        """Passage indexes of the hits, best first, each once."""
        ranked: list[int] = []
        for hit in hits:
            passage = self.passage_of.get(hit.doc_id)
            if passage is not None and passage not in ranked:
                ranked.append(passage)
        return ranked

    def engine(self, always_answer: bool = False):
        """A chat engine over this knowledge base (its own sessions database)."""
        from ragkit.app.engine import ChatEngine

        return ChatEngine(self.settings, self.kb, always_answer=always_answer)


def run_eval(
    path: str | Path,
    settings: Settings | None = None,
    with_answers: bool = False,
    limit: int | None = None,
    compare_modes: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    embedder=None,
) -> dict:
    """Build a throwaway knowledge base from the file and measure retrieval (and answers;
    with ``compare_modes``, the answers of both answer modes, see :func:`mode_comparison`)."""
    passages, questions = read_squad(path)
    questions = questions[:limit] if limit else questions
    report = progress or (lambda stage, done, total: None)
    with tempfile.TemporaryDirectory(prefix="ragkit-eval-") as tmp:
        base = EvalBase(settings, tmp, embedder)
        ingest_seconds = base.ingest(passages, list(range(len(passages))), report)
        rankings, latencies = [], []
        for number, item in enumerate(questions):
            t0 = time.perf_counter()
            hits = base.kb.search(item.question, k=10)
            latencies.append((time.perf_counter() - t0) * 1000)
            rankings.append(base.ranking(hits))
            report("search", number + 1, len(questions))
        summary = {
            "dataset": Path(path).name,
            "passages": len(passages),
            "questions": len(questions),
            "chunks": base.kb.passage_count(),
            **retrieval_metrics(rankings, [item.passage_index for item in questions]),
            "search_p50_ms": round(percentile(latencies, 0.5), 2),
            "search_p95_ms": round(percentile(latencies, 0.95), 2),
            "ingest_seconds": round(ingest_seconds, 2),
            "embedding_model": base.kb.embedder.name,
        }
        if with_answers:
            measure = mode_comparison if compare_modes else answer_metrics
            summary.update(measure(base.engine(always_answer=True), questions, report))
        base.kb.close()
    return summary


def run_unanswerable(path: str | Path, settings: Settings | None = None, limit: int | None = None,
                     progress: Callable[[str, int, int], None] | None = None, embedder=None) -> dict:
    """Index half the set (see ``unanswerable_split``), ask every question through the chat
    graph, and count answers on kept passages and "not found" on removed ones."""
    passages, questions = read_squad(path)
    questions = [q for q in questions if q.question.strip()][:limit] if limit else \
        [q for q in questions if q.question.strip()]
    kept = unanswerable_split(articles_of(path))
    report = progress or (lambda stage, done, total: None)
    answered = abstained = answerable = contains = 0
    with tempfile.TemporaryDirectory(prefix="ragkit-eval-") as tmp:
        base = EvalBase(settings, tmp, embedder)
        base.ingest(passages, sorted(kept), report)
        engine = base.engine()
        for number, item in enumerate(questions):
            turn = engine.ask(f"u{number}", item.question)
            if item.passage_index in kept:
                answerable += 1
                if turn.found:
                    answered += 1
                    contains += any(gold in turn.answer for gold in item.answers)
            else:
                abstained += not turn.found
            report("ask", number + 1, len(questions))
        base.kb.close()
    unanswerable = len(questions) - answerable
    answer_rate = answered / max(answerable, 1)
    abstain_rate = abstained / max(unanswerable, 1)
    return {
        "dataset": Path(path).name, "questions": len(questions), "kept_passages": len(kept),
        "answerable": answerable, "unanswerable": unanswerable,
        "answer_rate_answerable": round(answer_rate, 4), "abstain_rate_unanswerable": round(abstain_rate, 4),
        "abstain_balanced": round((answer_rate + abstain_rate) / 2, 4),
        "answer_contains": round(contains / max(answered, 1), 4),
    }


def run_dialogues(path: str | Path, dialogues: str | Path, settings: Settings | None = None,
                  limit: int | None = None, progress: Callable[[str, int, int], None] | None = None,
                  embedder=None) -> dict:
    """Two-turn dialogues, each in a fresh session: is turn 2's passage in the top 5 when
    asked as a follow-up, and when its standalone form is asked alone?"""
    passages, _ = read_squad(path)
    payload = json.loads(Path(dialogues).read_text(encoding="utf-8"))
    items = payload["dialogues"][:limit] if limit else payload["dialogues"]
    report = progress or (lambda stage, done, total: None)
    hits: dict[tuple[str, str], list[bool]] = {}
    rewrite_ms = []
    with tempfile.TemporaryDirectory(prefix="ragkit-eval-") as tmp:
        base = EvalBase(settings, tmp, embedder)
        base.ingest(passages, list(range(len(passages))), report)
        engine = base.engine()
        for number, dialogue in enumerate(items):
            first, second = dialogue["turns"]
            engine.ask(f"d{number}", first["question"])
            follow = engine.ask(f"d{number}", second["question"])
            alone = engine.ask(f"s{number}", second.get("standalone") or second["question"])
            rewrite_ms.append(follow.timings.get("contextualize_ms", 0.0))
            target = second["passage_index"]
            for mode, turn in (("asked", follow), ("standalone", alone)):
                ranked = base.ranking(turn.sources or turn.closest)
                hits.setdefault((dialogue["kind"], mode), []).append(target in ranked[:5])
            report("dialogue", number + 1, len(items))
        base.kb.close()

    def rate(kind: str, mode: str) -> float:
        values = hits.get((kind, mode), [])
        return round(sum(values) / max(len(values), 1), 4)

    standalone = [v for (kind, mode), values in hits.items() if mode == "standalone" for v in values]
    return {
        "dataset": Path(dialogues).name, "dialogues": len(items),
        "follow_up_hit_at_5": rate("follow_up", "asked"), "switch_hit_at_5": rate("switch", "asked"),
        "standalone_hit_at_5": round(sum(standalone) / max(len(standalone), 1), 4),
        "follow_up_standalone_hit_at_5": rate("follow_up", "standalone"),
        "switch_standalone_hit_at_5": rate("switch", "standalone"),
        "rewrite_ms_p50": round(percentile(rewrite_ms, 0.5), 2),
    }


def _counter(report, stage: str, total: int):
    """A progress callback that counts finished files."""
    done = [0]

    def on_stage(name: str, fraction: float) -> None:
        if name == "done":
            done[0] += 1
            report(stage, done[0], total)

    return on_stage


def answer_metrics(engine, items: list[QAItem], report) -> dict:
    """answer_contains / answer_chars_mean / answer_p50_ms of the chat graph's answers, each
    question asked in a new conversation by an engine that answers whatever the grade says
    (``always_answer``): the answerer on every question, not the judge (``--unanswerable``
    measures that). A question the engine refuses (an empty one) counts as an empty answer."""
    asked = []
    for number, item in enumerate(items):
        asked.append(_ask_timed(engine, f"a{number}", item.question, None))
        report("answer", number + 1, len(items))
    return _answer_keys(items, asked)


def mode_comparison(engine, items: list[QAItem], report) -> dict:
    """The answer keys of both answer modes on the same questions in one process, each
    question asked in both modes one right after the other, the order alternating from one
    question to the next so that neither mode always pays for a cold cache or a busy moment.
    Ends with ``agentic_to_default_p50``: agentic's median latency over default's."""
    from ragkit.graph.state import (
        CHAT_MODES,  # here: importing the graph takes seconds, and the bench imports this module
    )

    asked: dict[str, list[tuple[str, float]]] = {mode: [] for mode in CHAT_MODES}
    for number, item in enumerate(items):
        order = CHAT_MODES if number % 2 == 0 else tuple(reversed(CHAT_MODES))
        for mode in order:
            asked[mode].append(_ask_timed(engine, f"{mode}-{number}", item.question, mode))
        report("answer", number + 1, len(items))
    summary = {f"{mode}_{key}": value for mode in CHAT_MODES
               for key, value in _answer_keys(items, asked[mode]).items()}
    default_p50, agentic_p50 = summary["default_answer_p50_ms"], summary["agentic_answer_p50_ms"]
    summary["agentic_to_default_p50"] = round(agentic_p50 / default_p50, 3) if default_p50 else None
    return summary


def _ask_timed(engine, session_id: str, question: str, mode: str | None) -> tuple[str, float]:
    """The answer to one question in a new conversation and the milliseconds it took."""
    from ragkit.errors import QuestionError

    started = time.perf_counter()
    try:
        answer = engine.ask(session_id, question, mode=mode).answer
    except QuestionError:
        answer = ""
    return answer, (time.perf_counter() - started) * 1000


def _answer_keys(items: list[QAItem], asked: list[tuple[str, float]]) -> dict:
    contains = sum(any(gold in answer for gold in item.answers) for item, (answer, _) in zip(items, asked))
    lengths = [len(answer) for answer, _ in asked]
    return {
        "answer_contains": round(contains / max(len(items), 1), 4),
        "answer_chars_mean": round(statistics.fmean(lengths) if lengths else 0.0, 1),
        "answer_p50_ms": round(percentile([ms for _, ms in asked], 0.5), 2),
    }


IDENTIFIER_SEED = 1499
IDENTIFIER_TEMPLATES = (
    "Part {code} is a replacement valve assembly stocked in the {place} warehouse.",
    "Part {code} is a replacement pump assembly stocked in the {place} warehouse.",
    "Part {code} is a spare valve assembly kept in the {place} depot.",
)
IDENTIFIER_PLACES = ("Lyon", "Leeds", "Porto", "Graz", "Turin", "Ghent", "Brno", "Cork")
# The last form names a warehouse at random (mostly not the part's): a detail remembered
# wrongly must not outweigh the exact code.
IDENTIFIER_QUESTIONS = ("Where is part {code} stocked?", "Which warehouse keeps the assembly {code}?",
                        "Is the valve with code {code} kept in {place}?")


def identifier_passages(count: int, seed: int = IDENTIFIER_SEED) -> list[tuple[str, str]]:
    """``count`` (code, passage) pairs: unique codes of two letters, four digits and a
    letter, each in a one-sentence passage that differs from the others only by a word or two."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    codes: dict[str, None] = {}
    while len(codes) < count:
        codes.setdefault("".join(rng.choices(letters, k=2)) + f"{rng.randrange(10000):04d}" + rng.choice(letters))
    return [(code, rng.choice(IDENTIFIER_TEMPLATES).format(code=code, place=rng.choice(IDENTIFIER_PLACES)))
            for code in codes]


def run_identifiers(count: int, settings: Settings | None = None, limit: int | None = None,
                    progress: Callable[[str, int, int], None] | None = None, embedder=None,
                    without_vector_share: float = 1 / 3) -> dict:
    """Top-1 share of each code's passage, the code asked alone and inside a sentence, over
    the passages that keep their vector and over those whose vector was deleted (a share of
    them, chosen with a fixed seed): these have no dense score at all."""
    pairs = identifier_passages(count)
    report = progress or (lambda stage, done, total: None)
    asked = pairs[:limit] if limit else pairs
    rng = random.Random(IDENTIFIER_SEED + 1)
    with tempfile.TemporaryDirectory(prefix="ragkit-eval-") as tmp:
        base = EvalBase(settings, tmp, embedder)
        ingest_seconds = base.ingest([text for _, text in pairs], list(range(len(pairs))), report)
        document_of = {index: doc_id for doc_id, index in base.passage_of.items()}
        without = {index for index in range(len(asked)) if rng.random() < without_vector_share}
        dropped = [passage.id for index in sorted(without) for passage in base.kb.passages(document_of[index])]
        base.kb.indexer.delete_vectors(dropped)
        firsts: dict[tuple[str, bool], list[bool]] = {}
        latencies = []
        for index, (code, _) in enumerate(asked):
            sentence = IDENTIFIER_QUESTIONS[index % len(IDENTIFIER_QUESTIONS)].format(
                code=code, place=IDENTIFIER_PLACES[index % len(IDENTIFIER_PLACES)])
            for form, query in (("alone", code), ("sentence", sentence)):
                started = time.perf_counter()
                ranked = base.ranking(base.kb.search(query, k=5))
                latencies.append((time.perf_counter() - started) * 1000)
                firsts.setdefault((form, index in without), []).append(bool(ranked) and ranked[0] == index)
            report("identifiers", index + 1, len(asked))
        base.kb.close()

    def share(form: str, no_vector: bool | None) -> float:
        values = [v for (f, missing), found in firsts.items() if f == form and no_vector in (None, missing)
                  for v in found]
        return round(sum(values) / max(len(values), 1), 4)

    return {
        "passages": count, "questions": len(asked), "without_vector": len(without),
        "top1_alone": share("alone", None), "top1_sentence": share("sentence", None),
        "top1_alone_with_vector": share("alone", False), "top1_sentence_with_vector": share("sentence", False),
        "top1_alone_without_vector": share("alone", True), "top1_sentence_without_vector": share("sentence", True),
        "search_p50_ms": round(percentile(latencies, 0.5), 2), "ingest_seconds": round(ingest_seconds, 2),
    }


@dataclass
class MultihopItem:
    """One question of a HotpotQA-format ("distractor") file."""

    id: str
    question: str
    answer: str
    kind: str  # bridge | comparison
    lang: str
    gold_titles: list[str]


def read_multihop(path: str | Path) -> tuple[dict[str, str], list[MultihopItem]]:
    """Every distinct title's document text (title line, then its sentences) and the items."""
    payload = json.loads(Path(path).read_text(encoding="utf-8"))
    documents: dict[str, str] = {}
    items = []
    for row in payload:
        for title, sentences in row["context"]:
            joiner = "" if row.get("lang") == "zh" else " "
            documents.setdefault(title, title + "\n" + joiner.join(s.strip() for s in sentences))
        gold = list(dict.fromkeys(title for title, _ in row["supporting_facts"]))
        items.append(MultihopItem(row["_id"], row["question"], row["answer"], row.get("type", "bridge"),
                                  row.get("lang", "en"), gold))
    return documents, items


def normalise_answer(text: str) -> str:
    """Lower case, no punctuation, articles or spaces: how a gold answer is looked for."""
    import re

    text = re.sub(r"\b(a|an|the)\b", " ", text.lower())
    return re.sub(r"[\W_]+", "", text)


YES = {"en": ("yes",), "zh": ("是",)}
NO = {"en": ("no",), "zh": ("否", "不是")}


def comparison_verdict(answer: str, lang: str) -> str | None:
    """The answer's decision on a comparison (its first words): a name, yes or no, or None
    when it only shows the two facts."""
    import re

    first = re.split(r"[.。:：,，\[]", answer.strip(), maxsplit=1)[0].strip()
    return first or None


def run_multihop(path: str | Path, settings: Settings | None = None, limit: int | None = None,
                 progress: Callable[[str, int, int], None] | None = None, embedder=None) -> dict:
    """Every question of a HotpotQA-format file through the chat graph (a fresh session
    each, the mode of ``settings.chat_mode``, answering whatever the grade says) over a
    corpus of every distinct title as one document. Evidence = the passages handed to the
    answerer (its sources)."""
    documents, items = read_multihop(path)
    items = items[:limit] if limit else items
    report = progress or (lambda stage, done, total: None)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ragkit-eval-") as tmp:
        from ragkit.store.kb import IngestItem

        base = EvalBase(settings, tmp, embedder)
        titles = list(documents)
        on_ingest = _counter(report, "ingest", len(titles))
        results = base.kb.ingest_many([IngestItem.of(documents[t].encode("utf-8"), _filename(t), progress=on_ingest)
                                       for t in titles])
        title_of = {r.document.id: t for t, r in zip(titles, results) if r.document is not None}
        engine = base.engine(always_answer=True)
        for number, item in enumerate(items):
            started = time.perf_counter()
            turn = engine.ask(f"m{number}", item.question)
            latency = (time.perf_counter() - started) * 1000
            evidence = [title_of.get(source.doc_id, source.title) for source in turn.sources]
            found = sum(title in evidence for title in item.gold_titles)
            rounds = sum(1 for step in turn.trace if step.step == "Searched" or step.step.startswith("Round "))
            rows.append({"item": item, "recall": found / len(item.gold_titles), "passages": len(turn.sources),
                         "contains": normalise_answer(item.answer) in normalise_answer(turn.answer),
                         "verdict": comparison_verdict(turn.answer, item.lang) if item.kind == "comparison" else None,
                         "rounds": rounds, "latency": latency})
            report("ask", number + 1, len(items))
        base.kb.close()
    summary = {"dataset": Path(path).name, "questions": len(rows), "documents": len(documents),
               "mode": (settings or Settings()).chat_mode}
    summary.update(_multihop_keys(rows))
    for lang in sorted({row["item"].lang for row in rows}):
        summary[lang] = _multihop_keys([row for row in rows if row["item"].lang == lang])
    return summary


def _filename(title: str) -> str:
    return title.replace("/", "∕").replace("\\", "∖") + ".txt"


def _multihop_keys(rows: list[dict]) -> dict:
    bridge = [row for row in rows if row["item"].kind == "bridge"]
    comparison = [row for row in rows if row["item"].kind == "comparison"]

    def right(row) -> bool | None:
        verdict = row["verdict"]
        gold = normalise_answer(row["item"].answer)
        if verdict is None:
            return None
        said = normalise_answer(verdict)
        decided = said in {normalise_answer(w) for w in (*YES["en"], *NO["en"], *YES["zh"], *NO["zh"])} or \
            any(normalise_answer(side) == said for side in row["item"].gold_titles)
        return (said == gold) if decided else None

    verdicts = [right(row) for row in comparison]
    decided = [v for v in verdicts if v is not None]
    return {
        "evidence_all_found": round(sum(row["recall"] == 1.0 for row in rows) / max(len(rows), 1), 4),
        "evidence_recall": round(statistics.fmean(row["recall"] for row in rows) if rows else 0.0, 4),
        "evidence_passages_mean": round(statistics.fmean(row["passages"] for row in rows) if rows else 0.0, 2),
        "answer_contains": round(sum(row["contains"] for row in bridge) / len(bridge), 4) if bridge else None,
        "comparison_correct": round(sum(decided) / len(comparison), 4) if decided else None,
        "rounds_mean": round(statistics.fmean(row["rounds"] for row in rows) if rows else 0.0, 2),
        "latency_p50_ms": round(percentile([row["latency"] for row in rows], 0.5), 1),
    }

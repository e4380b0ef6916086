"""Corpus and usage statistics for the stats page, as pandas DataFrames."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from ragkit.app.history import HistoryManager, SessionInfo
from ragkit.store.kb import KnowledgeBase


@dataclass
class Overview:
    """Headline numbers."""

    documents: int
    chunks: int
    tokens: int
    sessions: int
    questions: int
    median_latency_ms: float


def documents_frame(kb: KnowledgeBase, knowledge_bases: list[str] | None = None) -> pd.DataFrame:
    """One row per document (of these knowledge base ids, when given): title, type, pages,
    chunks, tokens, tags, version, added, who added it ("" without a login)."""
    rows = [
        {
            "id": d.id, "title": d.title, "file": d.filename, "type": d.doc_type, "pages": d.pages,
            "chunks": d.chunks, "tokens": d.tokens, "tags": ", ".join(d.tags), "version": d.version,
            "size_kb": round(d.size_bytes / 1024, 1), "added": pd.to_datetime(d.created_at, unit="s"),
            "updated": pd.to_datetime(d.updated_at, unit="s"), "added_by": d.added_by,
        }
        for d in kb.documents(knowledge_bases)
    ]
    columns = ["id", "title", "file", "type", "pages", "chunks", "tokens", "tags", "version", "size_kb", "added",
               "updated", "added_by"]
    return pd.DataFrame(rows, columns=columns)


OUTCOME_WORDS = {"extractive": "quoted from the documents", "llm": "written by a model",
                 "not_found": "not in the documents"}
"""How each kind of answer is named in charts (the stored mode is a code)."""


def documents_by(kb: KnowledgeBase, field: str, knowledge_bases: list[str] | None = None) -> pd.DataFrame:
    """Document counts per type ('type') or per tag ('tag'; untagged documents as '(none)'),
    of these knowledge base ids when given."""
    counts: dict[str, int] = {}
    for doc in kb.documents(knowledge_bases):
        keys = [doc.doc_type] if field == "type" else (doc.tags or ["(none)"])
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
    return pd.DataFrame(sorted(counts.items()), columns=[field, "documents"])


def turns_frame(history: HistoryManager, knowledge_base: str | None = None) -> pd.DataFrame:
    """One row per answered question: time, session, mode (and ``outcome`` in words),
    model, latency, tokens, scores; with ``knowledge_base``, only the questions that
    searched it (alone, with others, or every knowledge base).

    ``best_similarity`` is the cosine similarity of the question to its closest retrieved
    passage (the raw embedding score, comparable across questions); ``top_score`` is the
    fused relevance, which is 1.0 for the best passage of nearly every search."""
    rows = []
    for session_id, turn in history.all_turns():
        searched = (turn.filters or {}).get("knowledge_bases")
        if knowledge_base is not None and searched and knowledge_base not in searched:
            continue
        cited = [s.score for s in turn.sources if s.cited]
        similarities = [s.dense_score for s in (turn.sources or turn.closest) if s.dense_score is not None]
        rows.append({
            "session": session_id,
            "asked": pd.to_datetime(turn.created_at, unit="s"),
            "mode": turn.mode,
            "outcome": OUTCOME_WORDS.get(turn.mode, turn.mode.replace("_", " ")),
            "model": turn.model or "extractive",
            "latency_ms": turn.timings.get("total_ms", 0.0),
            "retrieve_ms": turn.timings.get("retrieve_ms", 0.0),
            "generate_ms": turn.timings.get("generate_ms", 0.0),
            "input_tokens": int(turn.usage.get("input_tokens", 0)),
            "output_tokens": int(turn.usage.get("output_tokens", 0)),
            "top_score": max((s.score for s in turn.sources), default=0.0),
            "cited_score": max(cited, default=0.0),
            "best_similarity": max(similarities) if similarities else float("nan"),
            "sources": len(turn.sources),
            "failed_over": bool(turn.error),
        })
    columns = ["session", "asked", "mode", "outcome", "model", "latency_ms", "retrieve_ms", "generate_ms",
               "input_tokens", "output_tokens", "top_score", "cited_score", "best_similarity", "sources",
               "failed_over"]
    return pd.DataFrame(rows, columns=columns)


def questions_over_time(turns: pd.DataFrame, freq: str = "D") -> pd.DataFrame:
    """Questions per period (day by default)."""
    if turns.empty:
        return pd.DataFrame(columns=["period", "questions"])
    grouped = turns.set_index("asked").resample(freq).size()
    return grouped.rename("questions").rename_axis("period").reset_index()


def questions_per_day(turns: pd.DataFrame, today: pd.Timestamp | None = None, min_days: int = 14) -> pd.DataFrame:
    """Questions on each day (in local time), days without questions included, from the
    first question (or ``min_days`` before ``today``, whichever is earlier) to today."""
    today = (today if today is not None else pd.Timestamp.now()).normalize()
    days = pd.Series(dtype="int64") if turns.empty else (
        turns["asked"].dt.tz_localize("UTC").dt.tz_convert(_local_zone()).dt.tz_localize(None)
        .dt.normalize().value_counts())
    start = min([today - pd.Timedelta(days=min_days - 1)] + ([days.index.min()] if len(days) else []))
    calendar = pd.date_range(start, max([today] + ([days.index.max()] if len(days) else [])), freq="D")
    counts = days.reindex(calendar, fill_value=0)
    return pd.DataFrame({"day": calendar, "questions": counts.to_numpy(dtype="int64")})


def _local_zone():
    return datetime.now().astimezone().tzinfo


def token_usage(turns: pd.DataFrame, labels: dict[str, str] | None = None) -> pd.DataFrame:
    """Input and output tokens per conversation and model; ``conversation`` is the label given
    in ``labels`` (session id -> label; the id when missing)."""
    columns = ["session", "conversation", "model", "input_tokens", "output_tokens"]
    if turns.empty:
        return pd.DataFrame(columns=columns)
    usage = turns.groupby(["session", "model"], as_index=False)[["input_tokens", "output_tokens"]].sum()
    usage["conversation"] = usage["session"].map(lambda session: (labels or {}).get(session, session))
    return usage[columns]


def overview(kb: KnowledgeBase, history: HistoryManager, knowledge_base: str | None = None) -> Overview:
    """Headline numbers for the top of the stats page (of one knowledge base, when given)."""
    docs = kb.documents([knowledge_base] if knowledge_base else None)
    turns = turns_frame(history, knowledge_base)
    return Overview(
        documents=len(docs),
        chunks=sum(d.chunks for d in docs),
        tokens=sum(d.tokens for d in docs),
        sessions=len(history.list_sessions()) if knowledge_base is None else int(turns["session"].nunique()),
        questions=len(turns),
        median_latency_ms=float(turns["latency_ms"].median()) if not turns.empty else 0.0,
    )


def conversation_labels(sessions: list[SessionInfo]) -> dict[str, str]:
    """A label per conversation that tells it apart: its title, plus its start time when
    another conversation has the same title (and a number when even that repeats)."""
    titles = {info.id: info.title.strip() or "Untitled conversation" for info in sessions}
    repeated = {title for title in titles.values() if list(titles.values()).count(title) > 1}
    labels: dict[str, str] = {}
    for info in sorted(sessions, key=lambda s: (s.created_at, s.id)):
        label = titles[info.id]
        if label in repeated:
            label = f"{label} · {datetime.fromtimestamp(info.created_at):%b %d %H:%M}"
        base, number = label, 2
        while label in labels.values():
            label, number = f"{base} ({number})", number + 1
        labels[info.id] = label
    return labels

"""Corpus and usage statistics for the stats page, as pandas DataFrames."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from .history import HistoryManager, SessionInfo
from .kb import KnowledgeBase


@dataclass
class Overview:
    """Headline numbers."""

    documents: int
    chunks: int
    tokens: int
    sessions: int
    questions: int
    median_latency_ms: float


def documents_frame(kb: KnowledgeBase) -> pd.DataFrame:
    """One row per document: title, type, pages, chunks, tokens, tags, version, added."""
    rows = [
        {
            "id": d.id, "title": d.title, "file": d.filename, "type": d.doc_type, "pages": d.pages,
            "chunks": d.chunks, "tokens": d.tokens, "tags": ", ".join(d.tags), "version": d.version,
            "size_kb": round(d.size_bytes / 1024, 1), "added": pd.to_datetime(d.created_at, unit="s"),
            "updated": pd.to_datetime(d.updated_at, unit="s"),
        }
        for d in kb.documents()
    ]
    columns = ["id", "title", "file", "type", "pages", "chunks", "tokens", "tags", "version", "size_kb", "added",
               "updated"]
    return pd.DataFrame(rows, columns=columns)


def documents_by(kb: KnowledgeBase, field: str) -> pd.DataFrame:
    """Document counts per type ('type') or per tag ('tag'; untagged documents as '(none)')."""
    counts: dict[str, int] = {}
    for doc in kb.documents():
        keys = [doc.doc_type] if field == "type" else (doc.tags or ["(none)"])
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
    return pd.DataFrame(sorted(counts.items()), columns=[field, "documents"])


# How each answer was made, in the words a chart legend shows (the stored mode is an identifier).
ANSWER_KINDS = {"extractive": "quoted from the documents", "llm": "written by a model",
                "not_found": "not in the documents"}


def turns_frame(history: HistoryManager) -> pd.DataFrame:
    """One row per answered question: time, session, mode (and ``answered``, the mode in
    words), model, latency, tokens, scores."""
    rows = []
    for session_id, turn in history.all_turns():
        cited = [s.score for s in turn.sources if s.cited]
        rows.append({
            "session": session_id,
            "asked": pd.to_datetime(turn.created_at, unit="s"),
            "mode": turn.mode,
            "answered": ANSWER_KINDS.get(turn.mode, turn.mode.replace("_", " ")),
            "model": turn.model or "extractive",
            "latency_ms": turn.timings.get("total_ms", 0.0),
            "retrieve_ms": turn.timings.get("retrieve_ms", 0.0),
            "generate_ms": turn.timings.get("generate_ms", 0.0),
            "input_tokens": int(turn.usage.get("input_tokens", 0)),
            "output_tokens": int(turn.usage.get("output_tokens", 0)),
            "top_score": max((s.score for s in turn.sources), default=0.0),
            "cited_score": max(cited, default=0.0),
            "sources": len(turn.sources),
            "failed_over": bool(turn.error),
        })
    columns = ["session", "asked", "mode", "answered", "model", "latency_ms", "retrieve_ms", "generate_ms",
               "input_tokens", "output_tokens", "top_score", "cited_score", "sources", "failed_over"]
    return pd.DataFrame(rows, columns=columns)


def questions_over_time(turns: pd.DataFrame, freq: str = "D") -> pd.DataFrame:
    """Questions per period (day by default)."""
    if turns.empty:
        return pd.DataFrame(columns=["period", "questions"])
    grouped = turns.set_index("asked").resample(freq).size()
    return grouped.rename("questions").rename_axis("period").reset_index()


def token_usage(turns: pd.DataFrame, labels: dict[str, str] | None = None) -> pd.DataFrame:
    """Input and output tokens per conversation and model; ``conversation`` is the label given
    in ``labels`` (session id -> label; the id when missing)."""
    columns = ["session", "conversation", "model", "input_tokens", "output_tokens"]
    if turns.empty:
        return pd.DataFrame(columns=columns)
    usage = turns.groupby(["session", "model"], as_index=False)[["input_tokens", "output_tokens"]].sum()
    usage["conversation"] = usage["session"].map(lambda session: (labels or {}).get(session, session))
    return usage[columns]


def overview(kb: KnowledgeBase, history: HistoryManager) -> Overview:
    """Headline numbers for the top of the stats page."""
    docs = kb.documents()
    turns = turns_frame(history)
    return Overview(
        documents=len(docs),
        chunks=sum(d.chunks for d in docs),
        tokens=sum(d.tokens for d in docs),
        sessions=len(history.list_sessions()),
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

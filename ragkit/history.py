"""Session-keyed conversation history in SQLite (``sessions.sqlite3`` in the data dir).

A turn is written once, whole, in one transaction, after its answer is complete, so a
failure mid-answer never leaves half a turn behind. The stored history is never
trimmed; only the slice handed to prompts is cut to a token budget.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from sqlalchemy import Connection, text

from .citations import Source
from .contextualize import Exchange
from .db import open_migrated, read, write
from .errors import DatabaseUnreadable, SessionError
from .render import escape_line, safe_answer_markdown
from .text import count_tokens

SESSION_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _sessions_and_turns(conn: Connection) -> None:
    """Version 1: sessions and their turns (adopted as is from a database the previous
    release made, which numbered its schema in SQLite's user_version)."""
    conn.execute(text(
        """CREATE TABLE IF NOT EXISTS sessions (
            id TEXT PRIMARY KEY, title TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL, updated_at REAL NOT NULL)"""))
    conn.execute(text(
        """CREATE TABLE IF NOT EXISTS turns (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            question TEXT NOT NULL, standalone_question TEXT NOT NULL, answer TEXT NOT NULL,
            mode TEXT NOT NULL, model TEXT NOT NULL DEFAULT '', sources TEXT NOT NULL DEFAULT '[]',
            timings TEXT NOT NULL DEFAULT '{}', usage TEXT NOT NULL DEFAULT '{}',
            error TEXT NOT NULL DEFAULT '', filters TEXT NOT NULL DEFAULT '{}',
            created_at REAL NOT NULL)"""))
    conn.execute(text("CREATE INDEX IF NOT EXISTS turns_session ON turns(session_id, id)"))


def _traces_and_model_choice(conn: Connection) -> None:
    """Version 2: how each answer was reached (trace), whether it was found (and the
    closest passages when not), and the model chosen per conversation."""
    conn.execute(text("ALTER TABLE turns ADD COLUMN found INTEGER NOT NULL DEFAULT 1"))
    conn.execute(text("ALTER TABLE turns ADD COLUMN closest TEXT NOT NULL DEFAULT '[]'"))
    conn.execute(text("ALTER TABLE turns ADD COLUMN trace TEXT NOT NULL DEFAULT '[]'"))
    conn.execute(text("ALTER TABLE sessions ADD COLUMN model TEXT"))


def _chat_mode_choice(conn: Connection) -> None:
    """Version 3: the answer mode chosen per conversation (default or agentic; NULL: the setting)."""
    conn.execute(text("ALTER TABLE sessions ADD COLUMN chat_mode TEXT"))


MIGRATIONS = [_sessions_and_turns, _traces_and_model_choice, _chat_mode_choice]


@dataclass(frozen=True)
class TraceStep:
    """One decision on the way to an answer, in words: ("Graded the evidence", "passage 1
    contains 80% of the question's key words: sufficient")."""

    step: str
    detail: str

    def to_dict(self) -> dict:
        """Plain dict for storage."""
        return {"step": self.step, "detail": self.detail}


@dataclass
class Turn:
    """One question and its answer, with everything needed to show and audit it."""

    question: str
    standalone_question: str
    answer: str
    mode: str  # "extractive", "llm" or "not_found"
    model: str = ""
    sources: list[Source] = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    usage: dict = field(default_factory=dict)
    error: str = ""
    filters: dict = field(default_factory=dict)
    created_at: float = field(default_factory=time.time)
    id: int | None = None
    found: bool = True  # False: the documents do not answer it; ``closest`` shows what came nearest
    closest: list[Source] = field(default_factory=list)
    trace: list[TraceStep] = field(default_factory=list)

    def to_dict(self) -> dict:
        """Plain dict (sources and trace as dicts) for JSON export."""
        data = asdict(self)
        data["sources"] = [source.to_dict() for source in self.sources]
        data["closest"] = [source.to_dict() for source in self.closest]
        data["trace"] = [step.to_dict() for step in self.trace]
        return data


@dataclass
class SessionInfo:
    """A session as listed: id, title, number of turns, times."""

    id: str
    title: str
    turns: int
    created_at: float
    updated_at: float


def validate_session_id(session_id: str) -> str:
    """Return the id if it is 1-64 letters, digits, '-' or '_'; raise SessionError otherwise."""
    if not isinstance(session_id, str) or not SESSION_ID_RE.fullmatch(session_id):
        raise SessionError(f"invalid session id {session_id!r}: use 1-64 letters, digits, '-' or '_'")
    return session_id


def new_session_id() -> str:
    """A fresh random session id."""
    return uuid.uuid4().hex[:10]


def auto_title(question: str, limit: int = 48) -> str:
    """A session title from its first question."""
    title = " ".join(question.split())
    return title if len(title) <= limit else title[: limit - 1] + "…"


class HistoryManager:
    """Sessions and their turns, persisted in SQLite, safe to share between threads."""

    def __init__(self, location: str | Path):
        self.location = str(location)
        try:
            self._engine = open_migrated(location, "sessions", MIGRATIONS)
        except DatabaseUnreadable as exc:
            raise SessionError(
                f"the sessions database {self.location} cannot be read ({exc}). Restore it from a backup, "
                "or move it aside to start with no conversations (documents are not affected)."
            ) from None

    def _query(self, sql: str, params: dict | None = None) -> list:
        with read(self._engine) as conn:
            return conn.execute(text(sql), params or {}).mappings().all()

    # ----- sessions ----------------------------------------------------------------

    def create_session(self, session_id: str | None = None, title: str = "") -> SessionInfo:
        """Create a session (random id unless given); an existing id is returned as is."""
        session_id = validate_session_id(session_id or new_session_id())
        stamp = time.time()
        with write(self._engine) as conn:
            conn.execute(
                text("INSERT INTO sessions(id, title, created_at, updated_at) VALUES (:id, :title, :t, :t) "
                     "ON CONFLICT(id) DO NOTHING"),
                {"id": session_id, "title": title, "t": stamp},
            )
        return self.session(session_id)

    def session(self, session_id: str) -> SessionInfo:
        """Info on one session; SessionError when it does not exist."""
        rows = self._query(
            "SELECT s.*, (SELECT COUNT(*) FROM turns t WHERE t.session_id = s.id) AS turns "
            "FROM sessions s WHERE s.id = :id",
            {"id": validate_session_id(session_id)},
        )
        if not rows:
            raise SessionError(f"no session {session_id!r}")
        return _info(rows[0])

    def exists(self, session_id: str) -> bool:
        """True when the session exists."""
        try:
            self.session(session_id)
            return True
        except SessionError:
            return False

    def list_sessions(self) -> list[SessionInfo]:
        """All sessions, most recently updated first."""
        rows = self._query(
            "SELECT s.*, (SELECT COUNT(*) FROM turns t WHERE t.session_id = s.id) AS turns "
            "FROM sessions s ORDER BY s.updated_at DESC, s.id"
        )
        return [_info(row) for row in rows]

    def rename(self, session_id: str, title: str) -> SessionInfo:
        """Give a session a new title."""
        self.session(session_id)
        with write(self._engine) as conn:
            conn.execute(text("UPDATE sessions SET title = :title WHERE id = :id"),
                         {"title": title.strip()[:120], "id": session_id})
        return self.session(session_id)

    def delete(self, session_id: str) -> None:
        """Delete a session and its turns; SessionError when it does not exist."""
        self.session(session_id)
        with write(self._engine) as conn:
            conn.execute(text("DELETE FROM turns WHERE session_id = :id"), {"id": session_id})
            conn.execute(text("DELETE FROM sessions WHERE id = :id"), {"id": session_id})

    def session_model(self, session_id: str) -> str | None:
        """The model chosen for this conversation (None: the default)."""
        rows = self._query("SELECT model FROM sessions WHERE id = :id", {"id": validate_session_id(session_id)})
        return rows[0]["model"] if rows else None

    def set_session_model(self, session_id: str, model_id: str) -> None:
        """Remember the model chosen for this conversation (creating it if needed)."""
        validate_session_id(session_id)
        stamp = time.time()
        with write(self._engine) as conn:
            conn.execute(text("INSERT INTO sessions(id, title, created_at, updated_at, model) VALUES "
                              "(:id, '', :t, :t, :m) ON CONFLICT(id) DO UPDATE SET model = :m"),
                         {"id": session_id, "t": stamp, "m": model_id})

    def session_mode(self, session_id: str) -> str | None:
        """The answer mode chosen for this conversation (None: the setting's)."""
        rows = self._query("SELECT chat_mode FROM sessions WHERE id = :id", {"id": validate_session_id(session_id)})
        return rows[0]["chat_mode"] if rows else None

    def set_session_mode(self, session_id: str, mode: str) -> None:
        """Remember the answer mode chosen for this conversation (creating it if needed)."""
        validate_session_id(session_id)
        if mode not in ("default", "agentic"):
            raise SessionError(f"unknown answer mode {mode!r}: default or agentic")
        with write(self._engine) as conn:
            conn.execute(text("INSERT INTO sessions(id, title, created_at, updated_at, chat_mode) VALUES "
                              "(:id, '', :t, :t, :m) ON CONFLICT(id) DO UPDATE SET chat_mode = :m"),
                         {"id": session_id, "t": time.time(), "m": mode})

    # ----- turns -------------------------------------------------------------------

    def turns(self, session_id: str) -> list[Turn]:
        """Every turn of a session, oldest first."""
        rows = self._query("SELECT * FROM turns WHERE session_id = :id ORDER BY id",
                           {"id": validate_session_id(session_id)})
        return [_turn(row) for row in rows]

    def all_turns(self) -> list[tuple[str, Turn]]:
        """(session id, turn) for every turn (for statistics)."""
        return [(row["session_id"], _turn(row)) for row in self._query("SELECT * FROM turns ORDER BY id")]

    def add_turn(self, session_id: str, turn: Turn) -> Turn:
        """Append a complete turn atomically; creates the session and its title if needed."""
        validate_session_id(session_id)
        with write(self._engine) as conn:
            conn.execute(
                text("INSERT INTO sessions(id, title, created_at, updated_at) VALUES (:id, '', :t, :t) "
                     "ON CONFLICT(id) DO NOTHING"),
                {"id": session_id, "t": turn.created_at},
            )
            result = conn.execute(
                text("INSERT INTO turns(session_id, question, standalone_question, answer, mode, model, sources, "
                     "timings, usage, error, filters, created_at, found, closest, trace) VALUES (:session, :question, "
                     ":standalone, :answer, :mode, :model, :sources, :timings, :usage, :error, :filters, :created, "
                     ":found, :closest, :trace)"),
                {
                    "session": session_id, "question": turn.question, "standalone": turn.standalone_question,
                    "answer": turn.answer, "mode": turn.mode, "model": turn.model,
                    "sources": json.dumps([s.to_dict() for s in turn.sources], ensure_ascii=False),
                    "timings": json.dumps(turn.timings), "usage": json.dumps(turn.usage), "error": turn.error,
                    "filters": json.dumps(turn.filters, ensure_ascii=False), "created": turn.created_at,
                    "found": int(turn.found),
                    "closest": json.dumps([s.to_dict() for s in turn.closest], ensure_ascii=False),
                    "trace": json.dumps([step.to_dict() for step in turn.trace], ensure_ascii=False),
                },
            )
            conn.execute(
                text("UPDATE sessions SET updated_at = :t, title = CASE WHEN title = '' THEN :title ELSE title END "
                     "WHERE id = :id"),
                {"t": turn.created_at, "title": auto_title(turn.question), "id": session_id},
            )
        turn.id = result.lastrowid
        return turn

    def recent_exchanges(self, session_id: str, max_turns: int, max_tokens: int) -> list[Exchange]:
        """The last turns that fit ``max_turns`` and ``max_tokens``, oldest first, as the
        graph sees them: standalone question, answer, and the passage it came from."""
        if not self.exists(session_id):
            return []
        picked: list[Exchange] = []
        used = 0
        for turn in reversed(self.turns(session_id)[-max_turns:] if max_turns else []):
            cost = count_tokens(turn.question) + count_tokens(turn.answer)
            if picked and used + cost > max_tokens:
                break
            evidence = (turn.sources or turn.closest)[0].text if (turn.sources or turn.closest) else ""
            picked.insert(0, Exchange(turn.standalone_question or turn.question, turn.answer, evidence))
            used += cost
        return picked

    # ----- export ------------------------------------------------------------------

    def export_json(self, session_id: str) -> str:
        """The whole session with sources as JSON (every string plain data, as stored)."""
        info = self.session(session_id)
        payload = {**asdict(info), "turns": [turn.to_dict() for turn in self.turns(session_id)]}
        return json.dumps(payload, ensure_ascii=False, indent=2)

    def export_markdown(self, session_id: str) -> str:
        """The whole session with sources as Markdown that is safe to open anywhere.

        All data (title, questions, answers, quotes, titles, file names) is escaped as in
        the app: no viewer can load an image, follow a link or run HTML from it.
        """
        info = self.session(session_id)
        turns = self.turns(session_id)
        heading = f"# {escape_line(info.title or info.id)}"
        lines = [heading, "", f"Session {escape_line(info.id)}, {len(turns)} turns.", ""]
        for number, turn in enumerate(turns, start=1):
            lines += _turn_markdown(number, turn)
        return "\n".join(lines)

    def close(self) -> None:
        """Release the database connections."""
        self._engine.dispose()


def _turn_markdown(number: int, turn: Turn) -> list[str]:
    """One turn of a Markdown export, every piece of data escaped."""
    when = datetime.fromtimestamp(turn.created_at).strftime("%Y-%m-%d %H:%M")
    by = f" by {escape_line(turn.model)}" if turn.model else ""
    lines = [f"## {number}. {escape_line(turn.question)}", ""]
    if turn.standalone_question and turn.standalone_question != turn.question:
        lines += [f"*Searched as:* {escape_line(turn.standalone_question)}", ""]
    lines += [safe_answer_markdown(turn.answer), "", f"*{escape_line(turn.mode)} answer{by}, {escape_line(when)}*", ""]
    for source in turn.sources:
        tag = "" if source.cited else " (also retrieved)"
        quote = " ".join(source.quote.split())[:300]
        lines.append(f"- \\[{source.n}\\] {escape_line(source.title)} ({escape_line(source.filename)}, "
                     f"p. {source.page}){tag}: “{escape_line(quote)}”")
    lines.append("")
    return lines


def _info(row) -> SessionInfo:
    return SessionInfo(row["id"], row["title"], row["turns"], row["created_at"], row["updated_at"])


def _turn(row) -> Turn:
    return Turn(
        question=row["question"],
        standalone_question=row["standalone_question"],
        answer=row["answer"],
        mode=row["mode"],
        model=row["model"],
        sources=[Source.from_dict(item) for item in json.loads(row["sources"])],
        timings=json.loads(row["timings"]),
        usage=json.loads(row["usage"]),
        error=row["error"],
        filters=json.loads(row["filters"]),
        created_at=row["created_at"],
        id=row["id"],
        found=bool(row["found"]),
        closest=[Source.from_dict(item) for item in json.loads(row["closest"])],
        trace=[TraceStep(**item) for item in json.loads(row["trace"])],
    )

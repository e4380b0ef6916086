"""Session-keyed conversation history in SQLite (``sessions.sqlite3`` in the data dir).

A turn is written once, whole, in one transaction, after its answer is complete, so a
failure mid-answer never leaves half a turn behind. The stored history is never
trimmed; only the slice handed to prompts is cut to a token budget.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from .citations import Source
from .sqlite import connect
from .text import count_tokens

SESSION_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SCHEMA_VERSION = 1
_MIGRATIONS = {
    1: [
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY, title TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL, updated_at REAL NOT NULL)""",
        """CREATE TABLE turns (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            question TEXT NOT NULL, standalone_question TEXT NOT NULL, answer TEXT NOT NULL,
            mode TEXT NOT NULL, model TEXT NOT NULL DEFAULT '', sources TEXT NOT NULL DEFAULT '[]',
            timings TEXT NOT NULL DEFAULT '{}', usage TEXT NOT NULL DEFAULT '{}',
            error TEXT NOT NULL DEFAULT '', filters TEXT NOT NULL DEFAULT '{}',
            created_at REAL NOT NULL)""",
        "CREATE INDEX turns_session ON turns(session_id, id)",
    ],
}


class SessionError(ValueError):
    """A bad session id or a session that does not exist."""


@dataclass
class Turn:
    """One question and its answer, with everything needed to show and audit it."""

    question: str
    standalone_question: str
    answer: str
    mode: str  # "extractive" or "llm"
    model: str = ""
    sources: list[Source] = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    usage: dict = field(default_factory=dict)
    error: str = ""
    filters: dict = field(default_factory=dict)
    created_at: float = field(default_factory=time.time)
    id: int | None = None

    def to_dict(self) -> dict:
        """Plain dict (sources as dicts) for JSON export."""
        data = asdict(self)
        data["sources"] = [source.to_dict() for source in self.sources]
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
    if not isinstance(session_id, str) or not SESSION_ID_RE.match(session_id):
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

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.RLock()
        self._conn = connect(path)
        self._migrate()

    def _migrate(self) -> None:
        with self._lock:
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            for target in range(version + 1, SCHEMA_VERSION + 1):
                self._conn.execute("BEGIN IMMEDIATE")
                for statement in _MIGRATIONS[target]:
                    self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version = {target}")
                self._conn.execute("COMMIT")

    def _query(self, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    # ----- sessions ----------------------------------------------------------------

    def create_session(self, session_id: str | None = None, title: str = "") -> SessionInfo:
        """Create a session (random id unless given); an existing id is returned as is."""
        session_id = validate_session_id(session_id or new_session_id())
        stamp = time.time()
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO sessions(id, title, created_at, updated_at) VALUES (?, ?, ?, ?)",
                (session_id, title, stamp, stamp),
            )
        return self.session(session_id)

    def session(self, session_id: str) -> SessionInfo:
        """Info on one session; SessionError when it does not exist."""
        rows = self._query(
            "SELECT s.*, (SELECT COUNT(*) FROM turns t WHERE t.session_id = s.id) AS turns "
            "FROM sessions s WHERE s.id = ?",
            (validate_session_id(session_id),),
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
        with self._lock:
            self._conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (title.strip()[:120], session_id))
        return self.session(session_id)

    def delete(self, session_id: str) -> None:
        """Delete a session and its turns; SessionError when it does not exist."""
        self.session(session_id)
        with self._lock:
            self._conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    # ----- turns -------------------------------------------------------------------

    def turns(self, session_id: str) -> list[Turn]:
        """Every turn of a session, oldest first."""
        rows = self._query("SELECT * FROM turns WHERE session_id = ? ORDER BY id", (validate_session_id(session_id),))
        return [_turn(row) for row in rows]

    def all_turns(self) -> list[tuple[str, Turn]]:
        """(session id, turn) for every turn (for statistics)."""
        return [(row["session_id"], _turn(row)) for row in self._query("SELECT * FROM turns ORDER BY id")]

    def add_turn(self, session_id: str, turn: Turn) -> Turn:
        """Append a complete turn atomically; creates the session and its title if needed."""
        validate_session_id(session_id)
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(
                    "INSERT OR IGNORE INTO sessions(id, title, created_at, updated_at) VALUES (?, '', ?, ?)",
                    (session_id, turn.created_at, turn.created_at),
                )
                cursor = self._conn.execute(
                    "INSERT INTO turns(session_id, question, standalone_question, answer, mode, model, "
                    "sources, timings, usage, error, filters, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        session_id, turn.question, turn.standalone_question, turn.answer, turn.mode, turn.model,
                        json.dumps([s.to_dict() for s in turn.sources], ensure_ascii=False),
                        json.dumps(turn.timings), json.dumps(turn.usage), turn.error,
                        json.dumps(turn.filters, ensure_ascii=False), turn.created_at,
                    ),
                )
                self._conn.execute(
                    "UPDATE sessions SET updated_at = ?, title = CASE WHEN title = '' THEN ? ELSE title END WHERE id = ?",
                    (turn.created_at, auto_title(turn.question), session_id),
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        turn.id = cursor.lastrowid
        return turn

    def recent_exchanges(self, session_id: str, max_turns: int, max_tokens: int) -> list[tuple[str, str]]:
        """The last (question, answer) pairs that fit ``max_turns`` and ``max_tokens``, oldest first."""
        if not self.exists(session_id):
            return []
        picked: list[tuple[str, str]] = []
        used = 0
        for turn in reversed(self.turns(session_id)[-max_turns:] if max_turns else []):
            cost = count_tokens(turn.question) + count_tokens(turn.answer)
            if picked and used + cost > max_tokens:
                break
            picked.insert(0, (turn.standalone_question or turn.question, turn.answer))
            used += cost
        return picked

    # ----- export ------------------------------------------------------------------

    def export_json(self, session_id: str) -> str:
        """The whole session with sources as JSON."""
        info = self.session(session_id)
        payload = {**asdict(info), "turns": [turn.to_dict() for turn in self.turns(session_id)]}
        return json.dumps(payload, ensure_ascii=False, indent=2)

    def export_markdown(self, session_id: str) -> str:
        """The whole session with sources as Markdown."""
        info = self.session(session_id)
        lines = [f"# {info.title or info.id}", "", f"Session `{info.id}`, {len(self.turns(session_id))} turns.", ""]
        for number, turn in enumerate(self.turns(session_id), start=1):
            when = datetime.fromtimestamp(turn.created_at).strftime("%Y-%m-%d %H:%M")
            lines += [f"## {number}. {turn.question}", ""]
            if turn.standalone_question and turn.standalone_question != turn.question:
                lines += [f"*Searched as:* {turn.standalone_question}", ""]
            lines += [turn.answer, "", f"*{turn.mode} answer{f' by {turn.model}' if turn.model else ''}, {when}*", ""]
            for source in turn.sources:
                tag = "" if source.cited else " (also retrieved)"
                quote = " ".join(source.quote.split())
                lines.append(f"- [{source.n}] {source.title} ({source.filename}, p. {source.page}){tag}: “{quote[:300]}”")
            lines.append("")
        return "\n".join(lines)

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._conn.close()


def _info(row: sqlite3.Row) -> SessionInfo:
    return SessionInfo(row["id"], row["title"], row["turns"], row["created_at"], row["updated_at"])


def _turn(row: sqlite3.Row) -> Turn:
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
    )

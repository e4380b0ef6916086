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
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import Connection, text

from ragkit.app.render import clip_words, readable_answer_markdown, readable_line
from ragkit.errors import DatabaseUnreadable, InputError, SessionError
from ragkit.lang.text import count_tokens
from ragkit.store.db import open_migrated, read, read_only_reason, write
from ragkit.types import Conversation, Exchange, Source, TraceStep, Turn

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


def _feedback_and_replaced_turns(conn: Connection) -> None:
    """Version 3: a reader's thumbs up or down (and comment) on each answer, turns replaced
    by a regenerated answer or an edited question (kept for the export), and the ids of
    deleted conversations (an old link to one opens a new conversation, not its id reused)."""
    conn.execute(text("CREATE TABLE deleted_sessions (id TEXT PRIMARY KEY, deleted_at REAL NOT NULL)"))
    conn.execute(text("ALTER TABLE turns ADD COLUMN feedback INTEGER"))
    conn.execute(text("ALTER TABLE turns ADD COLUMN feedback_comment TEXT NOT NULL DEFAULT ''"))
    conn.execute(text("ALTER TABLE turns ADD COLUMN feedback_at REAL"))
    conn.execute(text("ALTER TABLE turns ADD COLUMN replaced_by INTEGER"))


def _chat_mode_choice(conn: Connection) -> None:
    """Version 4: the answer mode chosen per conversation (default or agentic; NULL: the setting)."""
    conn.execute(text("ALTER TABLE sessions ADD COLUMN chat_mode TEXT"))


def _knowledge_base_choice(conn: Connection) -> None:
    """Version 5: the knowledge bases each conversation searches (NULL: every one)."""
    conn.execute(text("ALTER TABLE sessions ADD COLUMN knowledge_bases TEXT"))


def _conversation_memory(conn: Connection) -> None:
    """Version 6: each conversation's running summary of its older turns (JSON of
    ``memory.ConversationMemory``; NULL: none yet)."""
    conn.execute(text("ALTER TABLE sessions ADD COLUMN memory TEXT"))


def _owners(conn: Connection) -> None:
    """Version 7: the person (e-mail) who started each conversation, with a login that knows
    people (NULL: started without one)."""
    conn.execute(text("ALTER TABLE sessions ADD COLUMN owner TEXT"))
    conn.execute(text("CREATE INDEX sessions_owner ON sessions(owner, updated_at)"))


MIGRATIONS = [_sessions_and_turns, _traces_and_model_choice, _feedback_and_replaced_turns,
              _chat_mode_choice, _knowledge_base_choice, _conversation_memory, _owners]
THUMBS_UP, THUMBS_DOWN = 1, 0  # as st.feedback("thumbs") numbers them
MAX_COMMENT_CHARS = 2000
LIVE = "replaced_by IS NULL"






@dataclass(frozen=True)
class FeedbackCounts:
    """How readers rated the answers: thumbs up, thumbs down, and how many left a comment."""

    up: int
    down: int
    comments: int


@dataclass(frozen=True)
class SessionMatch:
    """A conversation found by :meth:`HistoryManager.search`, with where the words are."""

    info: "SessionInfo"
    snippet: str  # the first place the words stand (a question or answer, clipped), or ""
    in_title: bool


@dataclass
class SessionInfo:
    """A session as listed: id, title, number of turns, times."""

    id: str
    title: str
    turns: int
    created_at: float
    updated_at: float
    owner: str | None = None  # who started it, with a login that knows people


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
            self._engine = open_migrated(location, "sessions", MIGRATIONS, own_table="sessions")
        except DatabaseUnreadable as exc:
            raise SessionError(
                f"the sessions database {self.location} cannot be read ({exc}). Restore it from a backup, "
                "or move it aside to start with no conversations (documents are not affected)."
            ) from None

    @property
    def read_only(self) -> str:
        """Why conversations cannot be saved here ("" when they can): they can still be read."""
        return read_only_reason(self._engine)

    def _query(self, sql: str, params: dict | None = None) -> list:
        with read(self._engine) as conn:
            return conn.execute(text(sql), params or {}).mappings().all()

    # ----- sessions ----------------------------------------------------------------

    def create_session(self, session_id: str | None = None, title: str = "", owner: str | None = None) -> SessionInfo:
        """Create a session (random id unless given) belonging to ``owner`` (an e-mail; None
        without a login that knows people); an existing id is returned as is, and
        SessionError when it belongs to someone else."""
        session_id = validate_session_id(session_id or new_session_id())
        stamp = time.time()
        with write(self._engine) as conn:
            conn.execute(
                text("INSERT INTO sessions(id, title, created_at, updated_at, owner) VALUES (:id, :title, :t, :t, "
                     ":owner) ON CONFLICT(id) DO NOTHING"),
                {"id": session_id, "title": title, "t": stamp, "owner": owner},
            )
        if not self.may_open(session_id, owner):
            raise SessionError(f"no session {session_id!r}")  # someone else's: not even its existence is told
        return self.session(session_id)

    def may_open(self, session_id: str, person: str | None) -> bool:
        """Whether ``person`` may see and continue this conversation: always without a login
        that knows people (``person`` None); else only their own (a new id is theirs to start)."""
        if person is None:
            return True
        rows = self._query("SELECT owner FROM sessions WHERE id = :id", {"id": validate_session_id(session_id)})
        return not rows or rows[0]["owner"] == person

    def session(self, session_id: str) -> SessionInfo:
        """Info on one session; SessionError when it does not exist."""
        rows = self._query(
            f"SELECT s.*, (SELECT COUNT(*) FROM turns t WHERE t.session_id = s.id AND {LIVE}) AS turns "
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

    def list_sessions(self, owner: str | None = None) -> list[SessionInfo]:
        """All sessions (only ``owner``'s, when given), most recently updated first."""
        mine = "WHERE s.owner = :owner " if owner is not None else ""
        rows = self._query(
            f"SELECT s.*, (SELECT COUNT(*) FROM turns t WHERE t.session_id = s.id AND {LIVE}) AS turns "
            f"FROM sessions s {mine}ORDER BY s.updated_at DESC, s.id", {"owner": owner}
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
        """Delete a session and its turns; SessionError when it does not exist. The id is
        remembered as deleted (see :meth:`was_deleted`) until a turn is added under it again."""
        self.session(session_id)
        with write(self._engine) as conn:
            conn.execute(text("DELETE FROM turns WHERE session_id = :id"), {"id": session_id})
            conn.execute(text("DELETE FROM sessions WHERE id = :id"), {"id": session_id})
            conn.execute(text("INSERT INTO deleted_sessions(id, deleted_at) VALUES (:id, :t) "
                              "ON CONFLICT(id) DO UPDATE SET deleted_at = :t"), {"id": session_id, "t": time.time()})

    def was_deleted(self, session_id: str) -> bool:
        """True when this conversation was deleted and nothing was asked under its id since:
        the app then opens a new conversation for a link (or a tab) that still names it."""
        rows = self._query("SELECT 1 FROM deleted_sessions d WHERE d.id = :id AND NOT EXISTS "
                           "(SELECT 1 FROM sessions s WHERE s.id = d.id)", {"id": validate_session_id(session_id)})
        return bool(rows)

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

    def session_knowledge_bases(self, session_id: str) -> list[str] | None:
        """The knowledge base ids chosen for this conversation (None: not chosen, every one)."""
        rows = self._query("SELECT knowledge_bases FROM sessions WHERE id = :id",
                           {"id": validate_session_id(session_id)})
        return json.loads(rows[0]["knowledge_bases"]) if rows and rows[0]["knowledge_bases"] else None

    def set_session_knowledge_bases(self, session_id: str, kb_ids: list[str] | None) -> None:
        """Remember the knowledge bases this conversation searches (None or []: every one),
        creating the conversation if needed."""
        validate_session_id(session_id)
        value = json.dumps(list(kb_ids)) if kb_ids else None
        stamp = time.time()
        with write(self._engine) as conn:
            conn.execute(text("INSERT INTO sessions(id, title, created_at, updated_at, knowledge_bases) VALUES "
                              "(:id, '', :t, :t, :k) ON CONFLICT(id) DO UPDATE SET knowledge_bases = :k"),
                         {"id": session_id, "t": stamp, "k": value})

    def session_memory(self, session_id: str) -> dict | None:
        """The conversation's running summary as stored (``memory.ConversationMemory.to_dict``), or None."""
        rows = self._query("SELECT memory FROM sessions WHERE id = :id", {"id": validate_session_id(session_id)})
        return json.loads(rows[0]["memory"]) if rows and rows[0]["memory"] else None

    def set_session_memory(self, session_id: str, memory: dict) -> None:
        """Keep the conversation's running summary (an existing conversation only)."""
        validate_session_id(session_id)
        with write(self._engine) as conn:
            conn.execute(text("UPDATE sessions SET memory = :m WHERE id = :id"),
                         {"id": session_id, "m": json.dumps(memory, ensure_ascii=False)})

    # ----- turns -------------------------------------------------------------------

    def turns(self, session_id: str, include_replaced: bool = False) -> list[Turn]:
        """The conversation's turns, oldest first; with ``include_replaced`` also the turns
        a regenerated answer or an edited question replaced (as the export shows them)."""
        live = "" if include_replaced else f" AND {LIVE}"
        rows = self._query(f"SELECT * FROM turns WHERE session_id = :id{live} ORDER BY id",
                           {"id": validate_session_id(session_id)})
        return [_turn(row) for row in rows]

    def last_turn(self, session_id: str) -> Turn:
        """The conversation's latest turn (the one regenerate and edit replace); SessionError
        when it has none."""
        rows = self._query(f"SELECT * FROM turns WHERE session_id = :id AND {LIVE} ORDER BY id DESC LIMIT 1",
                           {"id": validate_session_id(session_id)})
        if not rows:
            raise SessionError(f"conversation {session_id!r} has no question to answer again")
        return _turn(rows[0])

    def all_turns(self) -> list[tuple[str, Turn]]:
        """(session id, turn) for every turn shown in a conversation (for statistics)."""
        return [(row["session_id"], _turn(row)) for row in self._query(f"SELECT * FROM turns WHERE {LIVE} ORDER BY id")]

    def replace_turn(self, session_id: str, old_id: int, new_id: int) -> None:
        """Mark turn ``old_id`` as replaced by ``new_id`` (a regenerated answer or an edited
        question, asked in the same conversation): it leaves the conversation and the
        prompts' history but stays in the export. SessionError when either turn is not in
        the conversation or ``old_id`` was replaced already."""
        validate_session_id(session_id)
        with write(self._engine) as conn:
            found = conn.execute(
                text("SELECT id, replaced_by, question FROM turns WHERE session_id = :s AND id IN (:a, :b)"),
                {"s": session_id, "a": old_id, "b": new_id}).mappings().all()
            rows = {row["id"]: row for row in found}
            if old_id == new_id or set(rows) != {old_id, new_id}:
                raise SessionError(f"turns {old_id} and {new_id} are not both in conversation {session_id!r}")
            if rows[old_id]["replaced_by"] is not None:
                raise SessionError(f"turn {old_id} was already replaced by turn {rows[old_id]['replaced_by']}")
            conn.execute(text("UPDATE turns SET replaced_by = :b WHERE id = :a"), {"a": old_id, "b": new_id})
            # A title made from an edited first question follows the edit (one the user gave stays).
            conn.execute(
                text(f"UPDATE sessions SET title = :new WHERE id = :s AND title = :old AND NOT EXISTS "
                     f"(SELECT 1 FROM turns WHERE session_id = :s AND id < :a AND {LIVE})"),
                {"s": session_id, "a": old_id, "old": auto_title(rows[old_id]["question"]),
                 "new": auto_title(rows[new_id]["question"])})

    def set_feedback(self, session_id: str, turn_id: int, rating: int | None, comment: str = "") -> Turn:
        """Record a reader's rating of one answer (THUMBS_UP, THUMBS_DOWN, or None to take
        it back) and an optional comment (trimmed, at most MAX_COMMENT_CHARS); returns the
        turn as stored. InputError for another rating, SessionError for a turn that is not
        in the conversation."""
        validate_session_id(session_id)
        if rating not in (THUMBS_UP, THUMBS_DOWN, None):
            raise InputError(f"feedback is thumbs up ({THUMBS_UP}) or down ({THUMBS_DOWN}), not {rating!r}")
        comment = (comment or "").strip()
        if len(comment) > MAX_COMMENT_CHARS:
            raise InputError(f"the comment is {len(comment)} characters long; the limit is {MAX_COMMENT_CHARS}")
        if rating is None:
            comment = ""
        with write(self._engine) as conn:
            updated = conn.execute(
                text("UPDATE turns SET feedback = :rating, feedback_comment = :comment, feedback_at = :t "
                     "WHERE id = :id AND session_id = :session"),
                {"rating": rating, "comment": comment, "t": None if rating is None else time.time(), "id": turn_id,
                 "session": session_id})
            if updated.rowcount != 1:
                raise SessionError(f"conversation {session_id!r} has no turn {turn_id}")
        return self.turn(session_id, turn_id)

    def turn(self, session_id: str, turn_id: int) -> Turn:
        """One turn of a conversation (replaced or not); SessionError when it is not there."""
        rows = self._query("SELECT * FROM turns WHERE id = :id AND session_id = :session",
                           {"id": turn_id, "session": validate_session_id(session_id)})
        if not rows:
            raise SessionError(f"conversation {session_id!r} has no turn {turn_id}")
        return _turn(rows[0])

    def feedback_counts(self) -> FeedbackCounts:
        """Thumbs up and down over every answer ever rated (a replaced answer's rating
        counts too: it is often why it was regenerated), and how many carry a comment."""
        rows = self._query("SELECT feedback, COUNT(*) AS n, "
                           "SUM(CASE WHEN feedback_comment <> '' THEN 1 ELSE 0 END) AS comments "
                           "FROM turns WHERE feedback IS NOT NULL GROUP BY feedback")
        counts = {row["feedback"]: (row["n"], row["comments"] or 0) for row in rows}
        up, down = counts.get(THUMBS_UP, (0, 0)), counts.get(THUMBS_DOWN, (0, 0))
        return FeedbackCounts(up=up[0], down=down[0], comments=up[1] + down[1])

    def feedback_comments(self, limit: int = 5, owner: str | None = None) -> list[tuple[str, Turn]]:
        """The latest rated answers that carry a comment, newest first: (session id, turn);
        with ``owner``, only those in that person's conversations."""
        mine = " AND session_id IN (SELECT id FROM sessions WHERE owner = :owner)" if owner is not None else ""
        rows = self._query("SELECT * FROM turns WHERE feedback IS NOT NULL AND feedback_comment != ''"  # noqa: S608
                           f"{mine} ORDER BY feedback_at DESC, id DESC LIMIT :n", {"n": limit, "owner": owner})
        return [(row["session_id"], _turn(row)) for row in rows]

    def search(self, query: str, limit: int = 50, owner: str | None = None) -> list[SessionMatch]:
        """Conversations whose title, questions or answers hold every word of ``query``
        (case and accents as typed are folded by ``str.casefold``; Chinese matches as a
        substring), most recently used first, each with a snippet where the words stand.

        Matching is done in Python over the live turns' text (portable to any database and
        right for every script); a few thousand conversations take well under a second.
        With ``owner``, only that person's conversations are searched."""
        words = [word.casefold() for word in query.split()]
        if not words:
            return []
        texts: dict[str, list[str]] = {}
        for row in self._query(f"SELECT session_id, question, answer FROM turns WHERE {LIVE} ORDER BY id"):
            texts.setdefault(row["session_id"], []).extend((row["question"], row["answer"]))
        matches = []
        for info in self.list_sessions(owner):
            title = info.title.casefold()
            parts = texts.get(info.id, [])
            folded = [part.casefold() for part in parts]
            if not all(word in title or any(word in part for part in folded) for word in words):
                continue
            snippet = next((_snippet(part, folded_part, words) for part, folded_part in zip(parts, folded)
                            if any(word in folded_part for word in words)), "")
            matches.append(SessionMatch(info, snippet, any(word in title for word in words)))
            if len(matches) >= limit:
                break
        return matches

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
                     ":found, :closest, :trace) RETURNING id"),
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
            turn.id = result.scalar_one()
            conn.execute(
                text("UPDATE sessions SET updated_at = :t, title = CASE WHEN title = '' THEN :title ELSE title END "
                     "WHERE id = :id"),
                {"t": turn.created_at, "title": auto_title(turn.question), "id": session_id},
            )
            conn.execute(text("DELETE FROM deleted_sessions WHERE id = :id"), {"id": session_id})
        return turn

    def conversation(self, session_id: str) -> Conversation | None:
        """The conversation's choices and live turns in one read (None: it was never started)."""
        validate_session_id(session_id)
        with read(self._engine) as conn:
            rows = conn.execute(text("SELECT model, chat_mode, knowledge_bases, memory FROM sessions WHERE id = :id"),
                                {"id": session_id}).mappings().all()
            if not rows:
                return None
            turns = conn.execute(text(f"SELECT * FROM turns WHERE session_id = :id AND {LIVE} ORDER BY id"),
                                 {"id": session_id}).mappings().all()
        row = rows[0]
        return Conversation(session_id, row["model"], row["chat_mode"],
                            json.loads(row["knowledge_bases"]) if row["knowledge_bases"] else None,
                            json.loads(row["memory"]) if row["memory"] else None, [_turn(t) for t in turns])

    def recent_exchanges(self, session_id: str, max_turns: int, max_tokens: int,
                         before: int | None = None) -> list[Exchange]:
        """``recent_exchanges`` of the conversation's turns (none for one never started)."""
        conversation = self.conversation(session_id)
        return recent_exchanges(conversation.turns, max_turns, max_tokens, before) if conversation else []

    # ----- export ------------------------------------------------------------------

    def export_json(self, session_id: str) -> str:
        """The whole session with sources, feedback and replaced turns (``replaced_by`` set)
        as JSON (every string plain data, as stored)."""
        info = self.session(session_id)
        turns = self.turns(session_id, include_replaced=True)
        payload = {**asdict(info), "turns": [turn.to_dict() for turn in turns]}
        return json.dumps(payload, ensure_ascii=False, indent=2)

    def export_markdown(self, session_id: str) -> str:
        """The whole session with sources, feedback and the answers that were replaced, as
        Markdown that reads as typed and is safe to open anywhere.

        All data (title, questions, answers, quotes, titles, file names) is escaped where a
        viewer would read it as syntax (``render.readable_line``): no viewer can load an
        image, follow a link or run HTML from it.
        """
        info = self.session(session_id)
        turns = self.turns(session_id, include_replaced=True)
        live = sum(turn.live for turn in turns)
        lines = [f"# {readable_line(info.title or info.id)}", "",
                 f"Conversation {readable_line(info.id)}, {plural_turns(live)}.", ""]
        number = 0
        by_id = {turn.id: turn for turn in turns}
        for turn in turns:
            if turn.live:
                number += 1
            lines += _turn_markdown(number + (0 if turn.live else 1), turn, by_id.get(turn.replaced_by))
        return "\n".join(lines)

    def close(self) -> None:
        """Release the database connections."""
        self._engine.dispose()


def recent_exchanges(turns: list[Turn], max_turns: int, max_tokens: int, before: int | None = None) -> list[Exchange]:
    """The last of ``turns`` that fit ``max_turns`` and ``max_tokens``, oldest first, as the
    graph sees them: standalone question, answer, and the passage it came from. With
    ``before`` (a turn id), only the turns asked before that one (a turn being replaced
    is not its own history)."""
    earlier = [turn for turn in turns if before is None or turn.id < before]
    exchanges = [Exchange(turn.standalone_question or turn.question, turn.answer,
                          (turn.sources or turn.closest)[0].text if (turn.sources or turn.closest) else "")
                 for turn in earlier[-max_turns:]] if max_turns else []
    return within_budget(exchanges, max_turns, max_tokens)


def within_budget(exchanges: list[Exchange], max_turns: int, max_tokens: int) -> list[Exchange]:
    """The last of ``exchanges`` (oldest first) that fit ``max_turns`` and ``max_tokens`` (the
    question's and answer's tokens; the newest always, however long), oldest first."""
    picked: list[Exchange] = []
    used = 0
    for exchange in reversed(exchanges[-max_turns:] if max_turns else []):
        cost = count_tokens(exchange.question) + count_tokens(exchange.answer)
        if picked and used + cost > max_tokens:
            break
        picked.insert(0, exchange)
        used += cost
    return picked


def plural_turns(count: int) -> str:
    """'1 question', '3 questions'."""
    return f"{count} question{'' if count == 1 else 's'}"


def _turn_markdown(number: int, turn: Turn, replacement: Turn | None) -> list[str]:
    """One turn of a Markdown export, every piece of data escaped where it would be syntax."""
    when = datetime.fromtimestamp(turn.created_at).strftime("%Y-%m-%d %H:%M")
    by = f" by {readable_line(turn.model)}" if turn.model else ""
    lines = [f"## {number}. {readable_line(turn.question)}", ""]
    if not turn.live:
        how = ("regenerated" if replacement is not None and replacement.question == turn.question
               else "asked again with an edited question")
        lines += [f"*Replaced: this answer was {how} below.*", ""]
    if turn.standalone_question and turn.standalone_question != turn.question:
        lines += [f"*Searched as:* {readable_line(turn.standalone_question)}", ""]
    mode = {"llm": "generated answer", "extractive": "extractive answer", "not_found": "not found in the documents"}
    lines += [readable_answer_markdown(turn.answer), "",
              f"*{mode.get(turn.mode, readable_line(turn.mode))}{by}, {when}*", ""]
    if turn.feedback is not None:
        rating = "👍 helpful" if turn.feedback == THUMBS_UP else "👎 not helpful"
        comment = f": “{readable_line(turn.feedback_comment)}”" if turn.feedback_comment else ""
        lines += [f"*Feedback:* {rating}{comment}", ""]
    for source in turn.sources:
        tag = "" if source.cited else " (also retrieved)"
        where = (f"web: {readable_line(source.url)}" if source.web
                 else f"{readable_line(source.filename)}, p. {source.page}"
                 + (f", {readable_line(source.section_trail)}" if source.section_trail else ""))
        lines.append(f"- \\[{source.n}\\] {readable_line(source.title)} ({where}){tag}: "
                     f"“{readable_line(clip_words(source.quote, QUOTE_CHARS))}”")
    lines.append("")
    return lines


QUOTE_CHARS = 300  # a source's quote in the export


def _info(row) -> SessionInfo:
    return SessionInfo(row["id"], row["title"], row["turns"], row["created_at"], row["updated_at"], row["owner"])


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
        feedback=row["feedback"],
        feedback_comment=row["feedback_comment"],
        replaced_by=row["replaced_by"],
    )


def _snippet(text: str, folded: str, words: list[str], width: int = 90) -> str:
    """About ``width`` characters of ``text`` around the first of ``words`` it holds."""
    flat = " ".join(text.split())
    at = min((folded.find(word) for word in words if word in folded), default=0)
    at = len(" ".join(text[:at].split()))  # the same place in the text on one line
    start = max(0, at - width // 3)
    if start:
        space = flat.find(" ", start, at)
        start = space + 1 if space != -1 else start
    piece = clip_words(flat[start:], width)
    return ("…" if start else "") + piece

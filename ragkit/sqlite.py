"""The one way ragkit opens its SQLite databases (registry, sessions)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def connect(path: Path) -> sqlite3.Connection:
    """A connection shareable between threads (callers hold a lock), in autocommit mode
    so transactions are explicit, with named rows, WAL journaling and foreign keys on."""
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn

"""The one database layer: engines, transactions and numbered migrations (SQLAlchemy Core).

Both the document catalog and the sessions store use it. SQLite files in the data dir
are the default; the same code takes any SQLAlchemy URL.

    engine = open_database(path)
    apply_migrations(engine, "catalog", CATALOG_MIGRATIONS)
    with write(engine) as conn: ...   # one atomic write (BEGIN IMMEDIATE on SQLite)
    with read(engine) as conn: ...    # a consistent snapshot for several SELECTs

A migration is a numbered function of a connection; the versions applied are kept per
schema name in ``schema_migrations``, so each runs exactly once, in order, in its own
transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.exc import DatabaseError as SQLAlchemyDatabaseError
from sqlalchemy.pool import NullPool

from .errors import DatabaseUnreadable

Migration = Callable[[Connection], None]
BUSY_TIMEOUT_S = 30.0  # another process holding the write lock (a long ingest commit)


def open_database(location: str | Path) -> Engine:
    """An engine for a SQLite file path (WAL, foreign keys, busy timeout) or any URL."""
    if isinstance(location, Path) or "://" not in str(location):
        engine = create_engine(
            f"sqlite:///{Path(location)}",
            connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_S},
            poolclass=NullPool if str(location) == ":memory:" else None,
        )
        _configure_sqlite(engine)
    else:
        engine = create_engine(str(location), pool_pre_ping=True)
    return engine


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record) -> None:
        dbapi_connection.isolation_level = None  # transactions are begun by us, below
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A writer takes the write lock up front: a deferred transaction that upgrades
        # later can fail with "database is locked" instead of waiting its turn.
        immediate = conn.get_execution_options().get("ragkit_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


@contextmanager
def write(engine: Engine) -> Iterator[Connection]:
    """One atomic write transaction (commits at the end, rolls back on any error)."""
    with _explained(engine):
        with engine.connect() as conn:
            conn = conn.execution_options(ragkit_write=True)
            with conn.begin():
                yield conn


@contextmanager
def read(engine: Engine) -> Iterator[Connection]:
    """A read transaction: every SELECT inside sees the same snapshot."""
    with _explained(engine):
        with engine.connect() as conn:
            with conn.begin():
                yield conn


@contextmanager
def _explained(engine: Engine) -> Iterator[None]:
    try:
        yield
    except SQLAlchemyDatabaseError as exc:
        original = getattr(exc, "orig", exc)
        if isinstance(original, sqlite3.DatabaseError) and not isinstance(original, sqlite3.OperationalError):
            raise DatabaseUnreadable(f"{engine.url.database}: {original}") from None
        if isinstance(original, sqlite3.OperationalError) and "not a database" in str(original):
            raise DatabaseUnreadable(f"{engine.url.database}: {original}") from None
        raise


def open_migrated(location: str | Path, schema: str, migrations: list[Migration]) -> Engine:
    """An engine for ``location`` with ``schema``'s migrations applied; DatabaseUnreadable
    when the file is not a database the callers can explain in their own words."""
    engine = open_database(location)
    apply_migrations(engine, schema, migrations)
    return engine


def apply_migrations(engine: Engine, schema: str, migrations: list[Migration]) -> int:
    """Run the migrations of ``schema`` not yet applied (numbered from 1); returns the version."""
    with write(engine) as conn:
        conn.execute(text(
            "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, version INTEGER NOT NULL)"
        ))
        row = conn.execute(text("SELECT version FROM schema_migrations WHERE name = :n"), {"n": schema}).first()
    version = row[0] if row else 0
    for number, migration in enumerate(migrations, start=1):
        if number <= version:
            continue
        with write(engine) as conn:
            migration(conn)
            conn.execute(
                text("INSERT INTO schema_migrations(name, version) VALUES (:n, :v) "
                     "ON CONFLICT(name) DO UPDATE SET version = :v"),
                {"n": schema, "v": number},
            )
        version = number
    return version

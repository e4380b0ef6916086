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

A file path is never pasted into a URL (a ``?`` or ``#`` in a folder name would cut it
short and put the database elsewhere). A file in a folder that cannot be written (a
read-only mount, no permission) is opened read-only: reads work, and every write
raises :class:`ReadOnlyDataDir` naming the folder and the cause.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import URL, Connection, Engine, create_engine, event, text
from sqlalchemy.exc import DatabaseError as SQLAlchemyDatabaseError
from sqlalchemy.pool import NullPool

from .errors import DatabaseUnreadable, ReadOnlyDataDir, StorageFull

Migration = Callable[[Connection], None]
BUSY_TIMEOUT_S = 30.0  # another process holding the write lock (a long ingest commit)


def open_database(location: str | Path) -> Engine:
    """An engine for a SQLite file path (WAL, foreign keys, busy timeout) or any URL; a
    file whose folder cannot be written is opened read-only (see the module docstring)."""
    if isinstance(location, Path) or "://" not in str(location):
        if str(location) == ":memory:":
            engine = create_engine(URL.create("sqlite", database=":memory:"), poolclass=NullPool,
                                   connect_args={"check_same_thread": False})
            _configure_sqlite(engine)
            return engine
        path = Path(location).absolute()
        problem = write_problem(path)
        if problem:
            engine = create_engine("sqlite://", creator=lambda: _read_only_connection(path))
            engine.ragkit_read_only = f"the folder {path.parent} cannot be written ({problem})"
            engine.ragkit_path = str(path)
            _configure_sqlite(engine, wal=False)
            return engine
        engine = create_engine(URL.create("sqlite", database=str(path)),
                               connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_S})
        _configure_sqlite(engine)
    else:
        engine = create_engine(str(location), pool_pre_ping=True)
    return engine


def write_problem(path: Path) -> str:
    """Why the database file ``path`` (and its folder, where SQLite keeps its journal)
    cannot be written, in the system's words; "" when it can."""
    folder = path.parent
    if not folder.is_dir():
        return ""  # the caller's own error says what is wrong
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
        if path.exists():
            os.close(os.open(path, os.O_RDWR))
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return ""


def database_name(engine: Engine) -> str:
    """The database's file (or URL) for messages."""
    return getattr(engine, "ragkit_path", "") or str(engine.url.database or engine.url)


def read_only_reason(engine: Engine) -> str:
    """Why the engine's database is read-only ("" when it is not)."""
    return getattr(engine, "ragkit_read_only", "")


def _read_only_connection(path: Path) -> sqlite3.Connection:
    # immutable: nobody can write here, so SQLite needs no lock or shared-memory file (which
    # it could not create in this folder).
    uri = f"file:{quote(str(path))}?mode=ro&immutable=1"
    return sqlite3.connect(uri, uri=True, check_same_thread=False)


def _configure_sqlite(engine: Engine, wal: bool = True) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record) -> None:
        dbapi_connection.isolation_level = None  # transactions are begun by us, below
        cursor = dbapi_connection.cursor()
        if wal:
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
    """One atomic write transaction (commits at the end, rolls back on any error);
    ReadOnlyDataDir at once when the database cannot be written."""
    reason = read_only_reason(engine)
    if reason:
        raise ReadOnlyDataDir(f"cannot save the change: {reason}. Reading still works.")
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
            raise DatabaseUnreadable(f"{database_name(engine)}: {original}") from None
        if isinstance(original, sqlite3.OperationalError) and "not a database" in str(original):
            raise DatabaseUnreadable(f"{database_name(engine)}: {original}") from None
        if isinstance(original, sqlite3.OperationalError) and "readonly database" in str(original):
            raise ReadOnlyDataDir(f"cannot save the change to {database_name(engine)}: {original}") from None
        if isinstance(original, sqlite3.OperationalError) and "disk is full" in str(original):
            name = database_name(engine)
            try:
                free = f"{shutil.disk_usage(Path(name).parent).free / 1e6:.1f} MB free"
            except OSError:
                free = "no space left"
            raise StorageFull(f"cannot save the change to {name}: the disk is full ({free}); nothing of it "
                              "was kept. Free some space and try again.") from None
        raise


def open_migrated(location: str | Path, schema: str, migrations: list[Migration],
                  own_table: str | None = None) -> Engine:
    """An engine for ``location`` with ``schema``'s migrations applied; DatabaseUnreadable
    when the file is not a database the callers can explain in their own words. With
    ``own_table`` (a table every version of the schema has), an existing file that was
    emptied (0 bytes) or holds another database is such a file too: opening it would
    silently start over."""
    engine = open_database(location)
    if own_table and "://" not in str(location) and str(location) != ":memory:":
        _check_ours(engine, Path(location), schema, own_table)
    if read_only_reason(engine):
        _check_current(engine, schema, migrations)
    else:
        apply_migrations(engine, schema, migrations)
    return engine


def _check_ours(engine: Engine, path: Path, schema: str, own_table: str) -> None:
    if not path.exists():
        return
    if path.stat().st_size == 0 and not Path(f"{path}-wal").exists():
        raise DatabaseUnreadable(f"{path.absolute()}: the file is empty (0 bytes)")
    with read(engine) as conn:
        tables = {row[0] for row in conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'"))}
        if "schema_migrations" in tables and conn.execute(
                text("SELECT 1 FROM schema_migrations WHERE name = :n"), {"n": schema}).first():
            return
    if tables and own_table not in tables:
        shown = ", ".join(sorted(tables)[:5])
        raise DatabaseUnreadable(f"{path.absolute()}: it holds another database (tables {shown})")


def _check_current(engine: Engine, schema: str, migrations: list[Migration]) -> None:
    """A read-only database must already be at the current schema version."""
    with read(engine) as conn:
        try:
            row = conn.execute(text("SELECT version FROM schema_migrations WHERE name = :n"), {"n": schema}).first()
        except SQLAlchemyDatabaseError:
            row = None
    if (row[0] if row else 0) < len(migrations):
        raise ReadOnlyDataDir(f"{database_name(engine)} needs an upgrade this version makes on "
                              f"opening, but {read_only_reason(engine)}. Open it once with write access.")


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

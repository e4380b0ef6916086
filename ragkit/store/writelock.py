"""The write lock: one process at a time changes the stores.

A thread lock plus an exclusive ``flock`` on ``write.lock`` in the data dir, so writers in
other processes (a CLI ingest beside the app) wait their turn too. With
``RAGKIT_DATABASE_URL`` (replicas on several machines share the stores) the second part
is a PostgreSQL session-level advisory lock instead (:class:`DatabaseWriteLock`): every
replica sees it, and the server lets go of it when the holder's connection ends (a
killed replica, a machine gone), so it is never left behind. Besides writing, two
things happen only under it (see ``vectors``): an embedded Chroma client's first read,
which applies what writers left in Chroma's log and may save the index files, and the
sweep of what dead writers left behind — holding the lock proves that no other writer
is at work.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ragkit.config import Settings
from ragkit.errors import DatabaseUnreachable
from ragkit.store.db import CONNECT_TIMEOUT_S, unreachable_message

WRITER_LOCK_KEY = 0x72616777  # "ragw": the advisory lock of the writers of one database
LOCK_POLL_S = 0.1  # how often a waiting writer asks again for a busy database lock


def write_lock_for(settings: Settings) -> "WriteLock":
    """The write lock of these settings' stores: through the database when it is a server,
    else the data dir's lock file."""
    if settings.database_url:
        return DatabaseWriteLock(settings.database_url)
    return WriteLock(settings.data_path / "write.lock")


class WriteLock:
    """Re-entrant within a thread; ``hold(wait=False)`` gives up at once when busy."""

    def __init__(self, path: Path):
        self.path = path
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._owner: int | None = None
        self._fd: int | None = None

    @property
    def held_here(self) -> bool:
        """True when the calling thread holds the lock."""
        return self._owner == threading.get_ident() and self._depth > 0

    @contextmanager
    def hold(self, wait: bool = True, timeout: float | None = None) -> Iterator[bool]:
        """Hold the lock for the block; with ``wait=False`` yield False at once if it is
        busy, with a ``timeout`` (seconds) yield False when it stays busy that long."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._thread_lock.acquire(blocking=wait, timeout=-1 if timeout is None or not wait else timeout):
            yield False
            return
        try:
            if self._depth == 0:
                if not self._acquire(wait, deadline):
                    yield False
                    return
                self._owner = threading.get_ident()
            self._depth += 1
            try:
                yield True
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._owner = None
                    self._release()
        finally:
            self._thread_lock.release()

    def _acquire(self, wait: bool, deadline: float | None) -> bool:
        """Take the other processes' side of the lock; False when it stays busy."""
        fd = self._open()
        if fd is not None and not _flock(fd, wait, deadline):
            os.close(fd)
            return False
        self._fd = fd
        return True

    def _release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def _open(self) -> int | None:
        """The lock file's descriptor; None in a data dir nobody can write (then nobody
        writes, and there is nothing to wait for)."""
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise
        try:
            return os.open(self.path, os.O_RDONLY)  # flock needs no write access
        except OSError:
            return None


def _flock(fd: int, wait: bool, deadline: float | None) -> bool:
    """Take the exclusive file lock: blocking, at once, or polling until ``deadline``."""
    if wait and deadline is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return True
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if not wait or time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


class DatabaseWriteLock(WriteLock):
    """The write lock of replicas sharing one PostgreSQL database: a session-level advisory
    lock held on a connection of its own for as long as the lock is held."""

    def __init__(self, url: str):
        from sqlalchemy import create_engine
        from sqlalchemy.pool import NullPool


        super().__init__(Path(os.devnull))  # no lock file: the database holds the lock
        self._engine = create_engine(url, poolclass=NullPool, connect_args={"connect_timeout": CONNECT_TIMEOUT_S})
        self._connection = None

    def _acquire(self, wait: bool, deadline: float | None) -> bool:
        from sqlalchemy import text
        from sqlalchemy.exc import DBAPIError


        connection = None
        try:
            connection = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            while not connection.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": WRITER_LOCK_KEY}).scalar():
                if not wait or (deadline is not None and time.monotonic() >= deadline):
                    connection.close()
                    return False
                time.sleep(LOCK_POLL_S)
        except DBAPIError as exc:
            if connection is not None:
                connection.invalidate()  # never back to a pool: it may be half-dead
            raise DatabaseUnreachable(unreachable_message(self._engine, exc.orig)) from None
        self._connection = connection
        return True

    def _release(self) -> None:
        from sqlalchemy.exc import DBAPIError

        connection, self._connection = self._connection, None
        if connection is None:
            return
        try:
            connection.close()  # the session ends, and with it the lock
        except DBAPIError:
            pass  # a connection already lost holds no lock either

"""The data dir's write lock: one process at a time changes the stores.

A thread lock plus an exclusive ``flock`` on ``write.lock`` in the data dir, so writers in
other processes (a CLI ingest beside the app) wait their turn too. Besides writing, two
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
                fd = self._open()
                if fd is not None and not _flock(fd, wait, deadline):
                    os.close(fd)
                    yield False
                    return
                self._fd = fd
                self._owner = threading.get_ident()
            self._depth += 1
            try:
                yield True
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._owner = None
                    if self._fd is not None:
                        fcntl.flock(self._fd, fcntl.LOCK_UN)
                        os.close(self._fd)
                        self._fd = None
        finally:
            self._thread_lock.release()

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

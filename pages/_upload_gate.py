"""Streamlit's upload endpoint takes files only from sessions that have passed the login.

Streamlit serves ``PUT /_stcore/upload_file/<session id>/<file id>`` for its file
widgets, in the server process, before any script of ours runs: it checks the XSRF
token (which ``/_stcore/health`` hands to anyone) and that the session id belongs to an
open websocket, then keeps the file's bytes in memory until the session ends. So a
visitor who never logged in could open a websocket, learn its session id and fill the
server's memory (the issue's 28 uploads of 45 MB: 405 MB -> 1,670 MB).

This module closes that door from inside the app process. Each script run records
whether its session is let in (``pages._access.access_gate`` calls :func:`record`), and
:func:`install` wraps two points of Streamlit's server, once per process:

- ``Runtime.is_active_session``, which the upload route asks before it reads the request
  body: a session that has not passed the login is not an active session for uploads,
  so the PUT is answered 400 before a byte of the file is read;
- ``uploaded_file_mgr.add_file``, where the route keeps a file: one for a session not let
  in is refused with 403 and dropped (in case a later Streamlit stops asking the first).

A session id only reaches a client when a script run of its session starts, and the entry
script installs the gate first thing, so no upload can come before it. Files already kept
for sessions not let in are dropped when the gate is installed and when a session logs out.
``tests/test_faults_app.py`` checks that both points are still where this expects them and
attacks a real server.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)

_lock = threading.Lock()
_granted: set[str] = set()
_installed = False
_PRUNE_AT = 1000  # granted sessions remembered before those no longer open are forgotten


class UploadGateUnavailable(RuntimeError):
    """Streamlit no longer has the points this gate wraps: uploads cannot be restricted."""


def record(session_id: str | None, let_in: bool) -> None:
    """Remember whether this session passed the login (called on every script run)."""
    if not session_id:
        return
    with _lock:
        if let_in:
            _granted.add(session_id)
            if len(_granted) > _PRUNE_AT:
                _prune()
            return
        was_granted = session_id in _granted
        _granted.discard(session_id)
    if was_granted:  # logged out: the files it uploaded go too
        manager = _upload_manager()
        if manager is not None:
            manager.remove_session_files(session_id)


def allowed(session_id: str) -> bool:
    """True when this session passed the login."""
    with _lock:
        return session_id in _granted


def install() -> bool:
    """Wrap the running server's upload checks, once per process. False when no server
    runs in this process (AppTest, bare mode); UploadGateUnavailable when Streamlit's
    upload route no longer goes through the points this gate wraps."""
    global _installed
    if _installed:
        return True
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return False
    runtime = Runtime.instance()
    with _lock:
        if _installed:
            return True
        manager = getattr(runtime, "uploaded_file_mgr", None)
        is_active = getattr(runtime, "is_active_session", None)
        add_file = getattr(manager, "add_file", None)
        if not callable(is_active) or not callable(add_file) or not hasattr(manager, "remove_session_files"):
            raise UploadGateUnavailable(
                "this Streamlit version's upload route has no Runtime.is_active_session / "
                "uploaded_file_mgr.add_file to wrap; uploads cannot be kept from visitors who have not logged in"
            )
        runtime.is_active_session = _gated_is_active(is_active)
        manager.add_file = _gated_add_file(add_file)
        _installed = True
    _drop_files_not_allowed(manager)
    log.info("upload gate installed: uploads only from sessions that passed the login")
    return True


def try_install() -> bool:
    """:func:`install`, logging instead of raising when Streamlit's points are gone (the
    login then refuses to open the app, see ``pages._access``)."""
    try:
        return install()
    except UploadGateUnavailable as exc:
        log.error("%s", exc)
        return False


def _gated_is_active(is_active):
    def is_active_session(session_id: str) -> bool:
        return allowed(session_id) and is_active(session_id)

    return is_active_session


def _gated_add_file(add_file):
    def add_file_if_allowed(session_id: str, file) -> None:
        if not allowed(session_id):
            from starlette.exceptions import HTTPException

            log.warning("refused an upload for session %s, which has not logged in", session_id[:8])
            raise HTTPException(status_code=403, detail="Log in first.")
        add_file(session_id, file)

    return add_file_if_allowed


def _upload_manager():
    from streamlit.runtime import Runtime

    return Runtime.instance().uploaded_file_mgr if Runtime.exists() else None


def _drop_files_not_allowed(manager) -> None:
    storage = getattr(manager, "file_storage", None)  # MemoryUploadedFileManager's; absent elsewhere
    for session_id in list(storage or {}):
        if not allowed(session_id):
            manager.remove_session_files(session_id)


def _prune() -> None:
    """Forget granted sessions the server no longer has open (called under the lock)."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return
    runtime = Runtime.instance()
    is_active = type(runtime).is_active_session  # the unwrapped method
    for session_id in [sid for sid in _granted if not is_active(runtime, sid)]:
        _granted.discard(session_id)

"""The shared RagService, built once per process on a background thread (the embedding model
takes seconds to load): the pages and the viewer wait on the same future."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import streamlit as st

from ragkit import DatabaseUnreachable, RagService, load_settings

_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragkit-loader")


@st.cache_resource(show_spinner=False)
def service_future() -> Future:
    """Start building the service once per process."""
    return _EXECUTOR.submit(lambda: RagService(load_settings()))


def start_loading() -> None:
    """Kick off the background load (call early in the entry script)."""
    service_future()


def shared_service() -> RagService:
    """The process's service, for callers outside a page run (the HTTP API's routes): the same
    one the pages use, built once, waited for (RagkitError when it cannot be built). A database
    that did not answer is asked again, as the pages' "Try again" does."""
    future = service_future()
    if future.done() and isinstance(future.exception(), DatabaseUnreachable):
        service_future.clear()
        future = service_future()
    return future.result()

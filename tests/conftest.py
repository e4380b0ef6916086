"""Shared fixtures: one embedding model per test run, a fresh data dir per test."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
for leaked in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGKIT_CHAT_MODEL"):
    os.environ.pop(leaked, None)  # tests decide for themselves whether a model is configured
# The suite runs on the torch backend, subprocesses included: its expectations were set on
# PyTorch's vectors, and the fixture's one float32 copy is copied where a replica needs it.
# The default (``auto``: int8 for a new store) is the subject of tests/test_onnx_backend.py,
# which asks for it by name.
os.environ["RAGKIT_EMBEDDING_BACKEND"] = "torch"

REPO = Path(__file__).resolve().parents[1]


def add_old_document(path: Path) -> None:
    """Put one document ('old1') with one passage ('Old passage.') into the catalog at
    ``path``, as a catalog of an earlier schema held it (for migration tests)."""
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO documents (id, filename, title, doc_type, content_hash, version, tags, size_bytes, "
                     "pages, chunks, tokens, created_at, updated_at, source, title_from) VALUES "
                     "('old1', 'a.md', 'A', 'md', 'ab12', 1, '[]', 3, 1, 1, 4, 0, 0, 'a.md', 'file')")
        conn.execute("INSERT INTO passages (id, doc_id, version, position, page, start_char, end_char, tokens, "
                     "text, terms) VALUES ('old1-v1-0', 'old1', 1, 0, 1, 0, 12, 4, 'Old passage.', 'old passage')")


def environment_without_settings() -> dict[str, str]:
    """This process's environment without any model or ragkit setting but the suite's
    embedding backend: a CLI run that builds a store the app then opens must record the
    backend the app is started with."""
    return {key: value for key, value in os.environ.items()
            if not key.startswith(("OPENAI_", "RAGKIT_")) or key == "RAGKIT_EMBEDDING_BACKEND"}
FIXTURES = Path(__file__).parent / "fixtures"
SHARED_EVAL = REPO.parent / "shared" / "eval"


@pytest.fixture(scope="session")
def embedder(tmp_path_factory):
    """The packaged MiniLM model on the torch backend, loaded once (offline); its float32 ONNX
    copy is built in a directory of this run, not in the working directory's data dir."""
    from ragkit.config import Settings
    from ragkit.models.embeddings import make_embedder

    return make_embedder(Settings(data_dir=tmp_path_factory.mktemp("embedder"), _env_file=None))


@pytest.fixture
def settings(tmp_path):
    """Settings pointing at an empty data dir, no model endpoint configured."""
    from ragkit.config import Settings

    return Settings(data_dir=tmp_path / "data", _env_file=None)


@pytest.fixture
def kb(settings, embedder):
    """A fresh knowledge base on a real Chroma store in a temp dir."""
    from ragkit.store.kb import KnowledgeBase

    knowledge_base = KnowledgeBase(settings, embedder=embedder)
    yield knowledge_base
    knowledge_base.close()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_http(url: str, timeout_s: float) -> bool:
    """Poll ``url`` until it answers 2xx or the time is up; True when it answered."""
    import time
    import urllib.request

    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except OSError:
            time.sleep(0.5)
    return False


@contextlib.contextmanager
def serve(command: list[str], health_url: str, timeout_s: float, what: str, **popen_args):
    """Run a server process until the block ends; fail the test if it never answers."""
    process = subprocess.Popen(command, **popen_args)
    try:
        if not wait_for_http(health_url, timeout_s):
            pytest.fail(f"{what} did not answer at {health_url} within {timeout_s:.0f} s")
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item, so fixtures can tell a failed test."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="session")
def postgres_cluster():
    """One throwaway PostgreSQL cluster for the whole run (see ``tests/servers.py``)."""
    from servers import start_postgres

    cluster = start_postgres()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def chroma_server():
    """One ``chroma run`` server for the whole run (see ``tests/servers.py``)."""
    from servers import start_chroma

    server = start_chroma()
    yield server
    server.stop()


@pytest.fixture
def database_url(postgres_cluster):
    """The URL of a new, empty PostgreSQL database of this test's own."""
    return postgres_cluster.new_database()


@pytest.fixture
def team_settings(tmp_path, database_url, chroma_server):
    """Settings of one replica of a team deployment: the catalog and conversations in this
    test's PostgreSQL database, vectors in a collection of its own on the Chroma server."""
    import uuid

    from ragkit.config import Settings

    return Settings(data_dir=tmp_path / "replica-a", database_url=database_url, chroma_url=chroma_server.url,
                    collection=f"t{uuid.uuid4().hex[:12]}", _env_file=None)

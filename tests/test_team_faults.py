"""A team deployment's servers going away and coming back: the Chroma server
(RAGKIT_CHROMA_URL) stopped mid-session and restarted, the PostgreSQL server
(RAGKIT_DATABASE_URL) restarted. Each failure is named with its address, loses nothing,
and is over once the server answers again, without reopening anything.
"""

from __future__ import annotations

import uuid

import pytest

from ragkit.app.history import HistoryManager
from ragkit.config import Settings
from ragkit.errors import DatabaseUnreachable
from ragkit.models.embeddings import HashingEmbedder
from ragkit.store.kb import KnowledgeBase
from ragkit.types import Turn
from servers import ChromaServer, start_chroma


@pytest.fixture
def own_chroma():
    """A Chroma server of this test's own (it is stopped and started again)."""
    server = start_chroma()
    yield server
    server.stop()


def restart(server: ChromaServer) -> None:
    server.process = None
    server.start()  # same port, same data folder


def test_a_chroma_server_stopped_mid_session_is_named_and_recovered_without_a_restart(
        own_chroma, database_url, tmp_path):
    settings = Settings(data_dir=tmp_path / "a", chroma_url=own_chroma.url, database_url=database_url,
                        collection=f"t{uuid.uuid4().hex[:12]}", _env_file=None)
    kb = KnowledgeBase(settings, embedder=HashingEmbedder())
    kept = kb.ingest(b"The heron keeper logged the storm at the north harbour.", filename="heron.txt").document
    own_chroma.stop(keep_files=True)

    hits = kb.search("heron storm harbour", k=1)  # keyword search still answers
    assert [hit.doc_id for hit in hits] == [kept.id] and hits[0].dense_rank is None
    [note] = kb.health
    assert f"Chroma server (RAGKIT_CHROMA_URL) at {own_chroma.url} cannot be reached" in note
    refused = kb.ingest(b"Foxes cross the mill bridge at night.", filename="fox.txt")
    assert refused.status == "refused" and own_chroma.url in refused.message and "Nothing of" in refused.message
    opened_meanwhile = KnowledgeBase(settings.model_copy(update={"data_dir": tmp_path / "b"}),
                                     embedder=HashingEmbedder())
    assert own_chroma.url in opened_meanwhile.health[0]

    restart(own_chroma)
    assert kb.search("heron storm harbour", k=1)[0].dense_rank == 1 and kb.health == []
    assert kb.ingest(b"Foxes cross the mill bridge at night.", filename="fox.txt").status == "added"
    fox = opened_meanwhile.search("foxes mill bridge", k=1)
    assert fox[0].filename == "fox.txt" and fox[0].dense_rank == 1 and opened_meanwhile.health == []
    kb.close()
    opened_meanwhile.close()


def test_a_restarted_database_is_named_while_down_and_used_again_once_up(postgres_cluster, tmp_path):
    url = postgres_cluster.new_database()
    settings = Settings(data_dir=tmp_path / "a", database_url=url, _env_file=None)
    history = HistoryManager(settings.sessions_location)
    history.add_turn("chat", Turn(question="Before?", standalone_question="Before?", answer="Yes.", mode="extractive"))
    postgres_cluster.stop_server()
    try:
        with pytest.raises(DatabaseUnreachable) as raised:
            history.add_turn("chat", Turn(question="During?", standalone_question="During?", answer="No.",
                                          mode="extractive"))
        assert "RAGKIT_DATABASE_URL" in str(raised.value) and f"127.0.0.1:{postgres_cluster.port}" in str(raised.value)
    finally:
        postgres_cluster.start_server()
    history.add_turn("chat", Turn(question="After?", standalone_question="After?", answer="Yes.", mode="extractive"))
    assert [turn.question for turn in history.turns("chat")] == ["Before?", "After?"]


def test_the_app_names_an_unreachable_database_and_opens_once_it_is_back(postgres_cluster, tmp_path, monkeypatch):
    import streamlit as st

    from conftest import REPO
    from test_app_access import app_test

    monkeypatch.setenv("RAGKIT_DATA_DIR", str(tmp_path / "appdata"))
    monkeypatch.setenv("RAGKIT_DATABASE_URL", postgres_cluster.new_database())
    monkeypatch.chdir(REPO)
    monkeypatch.syspath_prepend(str(REPO))
    st.cache_resource.clear()
    postgres_cluster.stop_server()
    try:
        down = app_test().run()
        assert not down.exception
        [error] = down.error
        assert "RAGKIT_DATABASE_URL" in error.value and str(postgres_cluster.port) in error.value
        assert "Try again" in [button.label for button in down.button]
    finally:
        postgres_cluster.start_server()
    back = app_test().run()  # the same server process (the cache survives): no restart
    assert not back.exception and not back.error
    assert [t.value for t in back.title] == ["Chat with your documents"]
    st.cache_resource.clear()

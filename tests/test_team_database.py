"""RAGKIT_DATABASE_URL: the catalog and the conversations in a real PostgreSQL database.

A throwaway cluster is started once per run (tests/servers.py); each test gets a database
of its own. Unset, everything stays in SQLite files in the data dir (the rest of the suite).
"""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import text

from ragkit.app.history import HistoryManager
from ragkit.config import Settings, load_settings
from ragkit.errors import DatabaseUnreachable, SettingsError
from ragkit.models.embeddings import HashingEmbedder
from ragkit.store.catalog import Catalog
from ragkit.store.db import open_database, read
from ragkit.store.kb import KnowledgeBase
from ragkit.types import Turn


def test_the_database_url_must_be_postgresql_and_its_password_is_never_echoed(tmp_path):
    with pytest.raises(SettingsError, match="RAGKIT_DATABASE_URL") as raised:
        load_settings(data_dir=tmp_path, database_url="mysql://me:hunter2@db/kb", _env_file=None)
    assert "hunter2" not in str(raised.value) and "me:***@db" in str(raised.value)
    settings = load_settings(data_dir=tmp_path, database_url="postgresql://me@db:5432/kb", _env_file=None)
    assert settings.catalog_location == settings.sessions_location == "postgresql+psycopg://me@db:5432/kb"
    unset = load_settings(data_dir=tmp_path, database_url="  ", _env_file=None)
    assert unset.catalog_location == tmp_path.resolve() / "registry.sqlite3"
    assert unset.sessions_location == tmp_path.resolve() / "sessions.sqlite3"


def test_documents_and_conversations_live_in_the_database_not_the_data_dir(tmp_path, database_url):
    settings = Settings(data_dir=tmp_path / "data", database_url=database_url, chunk_tokens=64,
                        chunk_overlap_tokens=0, _env_file=None)
    kb = KnowledgeBase(settings, embedder=HashingEmbedder())
    doc = kb.ingest(b"The Zephyr-9 pump moves 40 litres a minute.", filename="pump.txt", tags=["plant"]).document
    kb.update_metadata(doc.id, title="Pump sheet")
    history = HistoryManager(settings.sessions_location)
    first = history.add_turn("team-chat", Turn(question="How fast is the pump?", standalone_question="pump speed",
                                               answer="40 litres a minute [1]", mode="extractive", found=False))
    second = history.add_turn("team-chat", Turn(question="And the other?", standalone_question="other pump",
                                                answer="Not found.", mode="not_found"))
    kb.close()
    assert not (tmp_path / "data" / "registry.sqlite3").exists()
    assert not (tmp_path / "data" / "sessions.sqlite3").exists()

    reopened = KnowledgeBase(settings, embedder=HashingEmbedder())  # as another process would
    assert [(d.title, d.tags) for d in reopened.documents()] == [("Pump sheet", ["plant"])]
    assert reopened.search("Zephyr-9", k=1)[0].doc_id == doc.id
    assert reopened.catalog.sample_passage_ids(4) == [p.id for p in reopened.passages(doc.id)][:4]
    turns = HistoryManager(settings.sessions_location).turns("team-chat")
    assert [t.id for t in turns] == [first.id, second.id] and second.id > first.id
    assert turns[0].found is False and turns[0].created_at == pytest.approx(first.created_at, abs=1e-3)
    reopened.close()


def test_replicas_opening_a_new_database_at_once_apply_each_migration_once(database_url):
    errors: list[BaseException] = []

    def open_both() -> None:
        try:
            Catalog(Settings(database_url=database_url, _env_file=None).catalog_location).close()
            HistoryManager(Settings(database_url=database_url, _env_file=None).sessions_location)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    openers = [threading.Thread(target=open_both) for _ in range(4)]
    for opener in openers:
        opener.start()
    for opener in openers:
        opener.join()
    assert errors == []
    engine = open_database(Settings(database_url=database_url, _env_file=None).database_url)
    with read(engine) as conn:
        versions = dict(conn.execute(text("SELECT name, version FROM schema_migrations")).all())
    engine.dispose()
    from ragkit.app import history
    from ragkit.store import catalog

    assert versions == {"catalog": len(catalog.MIGRATIONS), "sessions": len(history.MIGRATIONS)}


def test_concurrent_revision_bumps_are_all_counted(database_url):
    location = Settings(database_url=database_url, _env_file=None).catalog_location
    catalog = Catalog(location)
    before = catalog.revision

    def rename_ten_times(n: int) -> None:
        own = Catalog(location)
        base = own.create_knowledge_base(f"base {n}")
        for round_ in range(10):
            own.rename_knowledge_base(base.id, f"base {n}.{round_}")
        own.close()

    workers = [threading.Thread(target=rename_ten_times, args=(n,)) for n in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert catalog.revision == before + 3 * 11
    catalog.close()


def test_an_unreachable_database_is_named_without_its_password(tmp_path):
    from servers import free_port

    url = f"postgresql://ragkit:s3cret@127.0.0.1:{free_port()}/kb"
    settings = Settings(data_dir=tmp_path / "data", database_url=url, _env_file=None)
    started = time.monotonic()
    with pytest.raises(DatabaseUnreachable) as raised:
        HistoryManager(settings.sessions_location)
    message = str(raised.value)
    assert "RAGKIT_DATABASE_URL" in message and f"127.0.0.1:{url.split(':')[-1]}" in message
    assert "s3cret" not in message and "no restart" in message
    assert time.monotonic() - started < 30

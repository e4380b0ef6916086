"""People: with a login that knows them (OIDC), each conversation is its starter's, and
RAGKIT_EDITORS says who may add, edit and delete documents; the library refuses the
others too, and the catalog records who added, changed and deleted what. Without a login
(person None) everything is as before."""

from __future__ import annotations

import pytest

from ragkit.app.history import HistoryManager
from ragkit.config import Settings
from ragkit.errors import NotAllowed, SessionError
from ragkit.models.embeddings import HashingEmbedder
from ragkit.store.kb import KnowledgeBase
from ragkit.store.people import may_edit
from ragkit.types import Turn

EDITORS = "ana@team.example, @docs.example, writers.example"


def test_editors_are_named_by_address_or_domain():
    settings = Settings(editors=EDITORS, _env_file=None)
    assert may_edit(settings, "ana@team.example") and may_edit(settings, "ANA@Team.Example")
    assert may_edit(settings, "bo@docs.example") and may_edit(settings, "cy@writers.example")
    assert not may_edit(settings, "bo@team.example") and not may_edit(settings, "eve@evil-docs.example")
    assert may_edit(settings, None)  # no identity (no login, or the shared password): everyone may
    assert may_edit(Settings(_env_file=None), "anyone@anywhere.example")  # no list: everyone may


@pytest.fixture
def team_kb(tmp_path):
    kb = KnowledgeBase(Settings(data_dir=tmp_path / "data", editors=EDITORS, _env_file=None),
                       embedder=HashingEmbedder())
    yield kb
    kb.close()


def test_a_viewer_can_search_but_the_library_refuses_their_changes(team_kb):
    doc = team_kb.ingest(b"The ferry leaves at nine from pier four.", filename="ferry.txt",
                         person="ana@team.example").document
    viewer = "vic@team.example"
    with pytest.raises(NotAllowed, match="vic@team.example may ask questions but not add files.*RAGKIT_EDITORS"):
        team_kb.ingest(b"Another file.", filename="other.txt", person=viewer)
    with pytest.raises(NotAllowed):
        team_kb.delete(doc.id, person=viewer)
    with pytest.raises(NotAllowed):
        team_kb.update_metadata(doc.id, title="Mine now", person=viewer)
    with pytest.raises(NotAllowed):
        team_kb.create_knowledge_base("Viewer's", person=viewer)
    assert [(d.title, d.added_by) for d in team_kb.documents()] == [("ferry", "ana@team.example")]
    assert team_kb.search("ferry pier", k=1)[0].doc_id == doc.id


def test_the_catalog_records_who_added_changed_and_deleted_each_document(team_kb):
    doc = team_kb.ingest(b"The ferry leaves at nine.", filename="ferry.txt", person="ana@team.example").document
    team_kb.update_metadata(doc.id, tags=["travel"], person="bo@docs.example")
    edited = team_kb.document(doc.id)
    assert (edited.added_by, edited.changed_by) == ("ana@team.example", "bo@docs.example")
    newer = team_kb.ingest(b"The ferry leaves at ten.", filename="ferry.txt", person="cy@writers.example").document
    assert (newer.version, newer.added_by, newer.changed_by) == (2, "ana@team.example", "cy@writers.example")
    team_kb.delete(doc.id, person="bo@docs.example")
    [removal] = team_kb.removals()
    assert (removal.title, removal.removed_by) == ("ferry", "bo@docs.example") and removal.removed_at > 0


def test_each_person_sees_and_continues_only_their_own_conversations(tmp_path):
    history = HistoryManager(tmp_path / "sessions.sqlite3")
    history.create_session("ana-chat", owner="ana@team.example")
    history.add_turn("ana-chat", Turn(question="Ferry times?", standalone_question="Ferry times?",
                                      answer="Nine.", mode="extractive"))
    history.create_session("bo-chat", owner="bo@team.example")
    history.add_turn("bo-chat", Turn(question="Ferry prices?", standalone_question="Ferry prices?",
                                     answer="Ten euros.", mode="extractive"))
    assert [s.id for s in history.list_sessions(owner="ana@team.example")] == ["ana-chat"]
    assert [m.info.id for m in history.search("ferry", owner="bo@team.example")] == ["bo-chat"]
    assert history.may_open("ana-chat", "ana@team.example") and not history.may_open("ana-chat", "bo@team.example")
    assert history.may_open("brand-new", "bo@team.example")  # a new id is the asker's to start
    with pytest.raises(SessionError, match="no session 'ana-chat'"):
        history.create_session("ana-chat", owner="bo@team.example")  # a shared link opens nothing of it
    assert history.may_open("ana-chat", None)  # without a login: as before, every conversation
    assert {s.id for s in history.list_sessions()} == {"ana-chat", "bo-chat"}

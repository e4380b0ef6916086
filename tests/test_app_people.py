"""People in the app (OIDC login, through Streamlit's test hook for st.user): each sees only
their own conversations, a link to someone else's opens nothing of it, and only the
editors of RAGKIT_EDITORS get the upload zone and the delete buttons."""

from __future__ import annotations

import pytest
import streamlit as st

from conftest import REPO
from test_app_access import app_test, everything

ANA, BO = "ana@team.example", "bo@team.example"
ANA_QUESTION, BO_QUESTION = "When does the ferry to Vardø leave?", "What does the lighthouse keeper log?"
AUTH = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "x" * 32, "client_id": "ragkit",
        "client_secret": "s", "server_metadata_url": "https://id.example.com/.well-known/openid-configuration"}


@pytest.fixture
def team_data(tmp_path, monkeypatch):
    """A data dir with one conversation of Ana's and one of Bo's; Ana is the one editor."""
    from ragkit.app.history import HistoryManager
    from ragkit.config import Settings
    from ragkit.types import Turn

    data = tmp_path / "appdata"
    history = HistoryManager(Settings(data_dir=data, _env_file=None).sessions_location)
    for session_id, owner, question in (("ana-chat", ANA, ANA_QUESTION), ("bo-chat", BO, BO_QUESTION)):
        history.create_session(session_id, owner=owner)
        history.add_turn(session_id, Turn(question, question, "At nine [1].", "extractive"))
    monkeypatch.setenv("RAGKIT_DATA_DIR", str(data))
    monkeypatch.setenv("RAGKIT_EDITORS", ANA)
    monkeypatch.chdir(REPO)
    monkeypatch.syspath_prepend(str(REPO))
    st.cache_resource.clear()
    yield data
    st.cache_resource.clear()


def logged_in(person: str, page: str | None = None, session: str | None = None):
    at = app_test()
    at.secrets["auth"] = AUTH
    at.user = {"is_logged_in": True, "email": person}
    if session:
        at.query_params["session"] = session
    if page:
        at.switch_page(page)
    return at.run()


def test_each_person_lists_only_their_own_conversations(team_data):
    ana = logged_in(ANA)
    assert not ana.exception
    labels = " ".join(b.label for b in ana.sidebar.button)
    assert "ferry to Vardø" in labels and "lighthouse keeper" not in labels


def test_a_link_to_someone_elses_conversation_opens_nothing_of_it(team_data):
    ana = logged_in(ANA, session="bo-chat")
    assert not ana.exception
    assert "lighthouse keeper" not in everything(ana)
    assert ana.session_state["session_id"] != "bo-chat"
    own = logged_in(ANA, session="ana-chat")
    assert "ferry to Vardø" in everything(own)


def test_a_viewer_gets_no_upload_zone_or_delete_button_and_an_editor_does(team_data):
    bo = logged_in(BO, page="pages/documents.py")
    assert not bo.exception
    shown = everything(bo)
    assert "Add documents" not in shown and "Add the page" not in shown and "Rename" not in shown
    assert any("only editors (RAGKIT_EDITORS)" in info.value for info in bo.info)
    ana = logged_in(ANA, page="pages/documents.py")
    assert not ana.exception and "Add documents" in everything(ana)


def test_stats_quote_only_the_persons_own_feedback(team_data, embedder):
    from ragkit.app.history import HistoryManager
    from ragkit.config import Settings
    from ragkit.store.kb import KnowledgeBase

    settings = Settings(data_dir=team_data, _env_file=None)
    kb = KnowledgeBase(settings, embedder=embedder)  # the charts need a document
    kb.ingest(b"The ferry to Vardo leaves at nine.", filename="ferry.txt")
    kb.close()
    history = HistoryManager(settings.sessions_location)
    history.set_feedback("ana-chat", history.turns("ana-chat")[0].id, 1, "Exactly the timetable")
    bo = logged_in(BO, page="pages/stats.py")
    assert not bo.exception
    assert "Exactly the timetable" not in everything(bo) and "ferry to Vardø" not in everything(bo)
    ana = logged_in(ANA, page="pages/stats.py")
    assert "Exactly the timetable" in everything(ana)


def documents_page_of(person: str):
    """The Documents page as ``person`` sees it: its table's columns (by their headers), its rows."""
    import json

    at = logged_in(person, page="pages/documents.py")
    assert not at.exception
    [table] = at.dataframe
    headers = {name: config.get("label", name) for name, config in json.loads(table.proto.columns).items()}
    return at, [headers.get(name, name) for name in table.proto.column_order], table.value


def test_the_documents_table_names_who_added_each_document(team_data, embedder):
    from ragkit.config import Settings
    from ragkit.store.kb import KnowledgeBase

    kb = KnowledgeBase(Settings(data_dir=team_data, _env_file=None), embedder=embedder)
    kb.ingest(b"The lighthouse keeper logs the fog bell at dawn.", filename="keeper.txt")  # before logins
    _, before, _ = documents_page_of(BO)
    assert before == ["Title", "File", "Passages", "Tags", "Added"]  # nobody logged in added anything yet

    kb.ingest(b"The ferry to Vardo leaves at nine.", filename="ferry.txt", person=ANA)
    kb.close()
    bo, headers, rows = documents_page_of(BO)  # a viewer sees who added what, too
    assert headers == ["Title", "File", "Passages", "Tags", "Added by", "Added"]
    assert dict(zip(rows["file"], rows["added_by"])) == {"ferry.txt": ANA, "keeper.txt": ""}

    search = next(box for box in bo.text_input if box.placeholder.startswith("title, file name"))
    found = search.input("ana@team").run()
    assert not found.exception
    assert list(found.dataframe[0].value["file"]) == ["ferry.txt"]  # the search box finds a person's documents


def test_recently_deleted_lists_each_deletion_with_who_and_when(team_data, embedder):
    from datetime import datetime

    from ragkit.config import Settings
    from ragkit.store.kb import KnowledgeBase

    kb = KnowledgeBase(Settings(data_dir=team_data, _env_file=None), embedder=embedder)
    kept = kb.ingest(b"The lighthouse keeper logs the fog bell at dawn.", filename="keeper.txt").document
    ferry = kb.ingest(b"The ferry to Vardo leaves at nine.", filename="ferry.txt", person=ANA).document
    tide = kb.ingest(b"The tide tables are pinned by the harbour office door.", filename="tide.txt").document
    kb.delete(ferry.id, person=ANA)
    kb.delete(tide.id)  # without a login: no one to name
    [ferry_gone, tide_gone] = sorted(kb.removals(10), key=lambda removal: removal.title != ferry.title)
    kb.close()

    def when(removal) -> str:
        return datetime.fromtimestamp(removal.removed_at).strftime("%Y-%m-%d %H:%M")

    bo, _, rows = documents_page_of(BO)
    [deleted] = [box for box in bo.expander if box.label.startswith("Recently deleted")]
    assert deleted.label == "Recently deleted (2)"
    # as read: escape_line puts an invisible word joiner after "@" so that Markdown makes no mail link
    assert sorted(caption.value.replace("\u2060", "") for caption in deleted.caption) == sorted([
        f"{ferry.title} — deleted by {ANA}, {when(ferry_gone)}",
        f"{tide.title} — deleted, {when(tide_gone)}",
    ])
    assert list(rows["file"]) == ["keeper.txt"] and kept.title not in [c.value for c in deleted.caption]

"""Two replicas of the app (two Streamlit processes with data dirs of their own) sharing one
PostgreSQL database and one Chroma server, in a real headless Chromium: a document uploaded
through one is listed by the other after a reload, and a question asked there is answered
from it, with its citation.

Needs Chromium (see browser_helpers), PostgreSQL and ``chroma run`` (see tests/servers.py);
each is skipped without them outside CI and fails in CI.
"""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import expect

from browser_helpers import (  # noqa: F401 (fixtures)
    ask,
    browser,
    go,
    page,
    require_chromium,
    shot,
    start_app,
    table_row_of,
    upload,
    wait_ingested,
)
from conftest import FIXTURES

pytestmark = pytest.mark.browser
require_chromium()


@pytest.fixture(scope="module")
def shared_servers(postgres_cluster, chroma_server) -> dict[str, str]:
    """The settings both replicas share: a database and a collection of this module's own."""
    return {"RAGKIT_DATABASE_URL": postgres_cluster.new_database(), "RAGKIT_CHROMA_URL": chroma_server.url,
            "RAGKIT_COLLECTION": f"t{uuid.uuid4().hex[:12]}"}


@pytest.fixture(scope="module")
def replica_a(tmp_path_factory, shared_servers):
    yield from start_app(tmp_path_factory, **shared_servers)


@pytest.fixture(scope="module")
def replica_b(tmp_path_factory, shared_servers):
    yield from start_app(tmp_path_factory, **shared_servers)


@pytest.mark.slow
def test_a_document_uploaded_through_one_replica_is_found_through_the_other(replica_a, replica_b, page):
    page.goto(replica_b)  # B is open before anything is added
    page.get_by_placeholder("Ask a question about your documents").wait_for()
    go(page, "Documents")
    expect(page.get_by_text("No documents in Default yet.")).to_be_visible()

    in_a = page.context.new_page()
    in_a.set_default_timeout(120_000)  # as the page fixture's tab: a replica's first page loads the model
    in_a.goto(replica_a)
    in_a.get_by_placeholder("Ask a question about your documents").wait_for()
    go(in_a, "Documents")
    upload(in_a, FIXTURES / "report_en.pdf")
    wait_ingested(in_a, "report_en.pdf")

    page.reload()  # B, unrestarted, lists it
    page.get_by_role("heading", name="Documents", exact=True).wait_for()
    table_row_of(page, "report_en.pdf")
    expect(page.get_by_text("Default · 1 document")).to_be_visible()
    expect(page.get_by_text("No documents in Default yet.")).to_have_count(0)
    shot(page, "team-replica-b-documents")

    go(page, "Chat")
    ask(page, "Who founded Aurora Analytics?")
    answer = page.get_by_test_id("stChatMessage").last
    expect(answer).to_contain_text("Marta Silva")
    expect(answer).to_contain_text("report_en.pdf · page 1")  # cited from the document A added
    expect(answer).not_to_contain_text("I could not find this in your documents.")
    shot(page, "team-replica-b-answer")

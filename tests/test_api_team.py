"""The HTTP API in team mode: two replicas of the app over one PostgreSQL database and one
Chroma server; a document added through one replica's API is answered through the other's,
and a conversation kept with a session id is the same on both."""

from __future__ import annotations

import uuid

import openai
import pytest

from api_helpers import ORION, api_app, upload

KEY = "team-api-key-0123456789"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_two_replicas_serve_one_knowledge_base_through_the_api(tmp_path, database_url, chroma_server):
    shared = {"RAGKIT_DATABASE_URL": database_url, "RAGKIT_CHROMA_URL": chroma_server.url,
              "RAGKIT_COLLECTION": f"t{uuid.uuid4().hex[:12]}", "RAGKIT_API_KEYS": f"{KEY}:*"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with api_app(tmp_path / "a", **shared) as first, api_app(tmp_path / "b", **shared) as second:
        added = upload(first, KEY, ("orion.md", ORION.encode()))
        assert [r["status"] for r in added.json()["data"]] == ["added"], added.text

        other = openai.OpenAI(base_url=second.v1, api_key=KEY, max_retries=0, timeout=120)
        answer = other.chat.completions.create(model="ragkit", extra_body={"session_id": "team-1"},
                                               messages=[{"role": "user", "content": "Who built the Orion Bridge?"}])
        assert "Mara Lind" in answer.choices[0].message.content
        assert answer.model_extra["sources"][0]["filename"] == "orion.md"

        one = openai.OpenAI(base_url=first.v1, api_key=KEY, max_retries=0, timeout=120)
        follow_up = one.chat.completions.create(model="ragkit", extra_body={"session_id": "team-1"},
                                                messages=[{"role": "user", "content": "How long is it?"}])
        assert "412 metres" in follow_up.choices[0].message.content  # the session's turns, from the database

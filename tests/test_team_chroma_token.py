"""A Chroma server with token auth (RAGKIT_CHROMA_TOKEN): the right token opens the shared
vector store; a missing or wrong one is named as such, in the library and on the command
line, with what to do, and never as a traceback. The token itself is never printed.

The server is a real ``chroma run`` behind nginx checking the token (``chroma run`` has no
auth of its own; see ``tests/servers.py``), started once for this module.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import uuid

import pytest

from conftest import REPO
from ragkit.config import Settings, load_settings
from ragkit.errors import RagkitError, SettingsError, VectorStoreRefused
from ragkit.models.embeddings import HashingEmbedder
from ragkit.store.kb import KnowledgeBase
from servers import start_chroma, start_token_proxy

TOKEN = "team-token.7f3a_9c!"
WRONG = "not-the-token.42"
FACT = b"The lighthouse keeper on Skerry Point logs the fog bell at dawn."


@pytest.fixture(scope="module")
def token_server():
    """A Chroma server that asks for ``TOKEN``."""
    server = start_chroma()
    try:
        proxy = start_token_proxy(server.url, TOKEN)
    except BaseException:
        server.stop()
        raise
    yield proxy
    proxy.stop()
    server.stop()


@pytest.fixture
def deployment(token_server, database_url) -> dict:
    """The settings every replica of this test shares (its own database and collection)."""
    return {"chroma_url": token_server.url, "database_url": database_url,
            "collection": f"t{uuid.uuid4().hex[:12]}", "_env_file": None}


def open_kb(deployment: dict, data_dir, token: str | None) -> KnowledgeBase:
    return KnowledgeBase(Settings(data_dir=data_dir, chroma_token=token, **deployment), embedder=HashingEmbedder())


# ----- the setting -------------------------------------------------------------------------


def test_a_token_is_checked_and_kept_out_of_every_printout():
    settings = load_settings(chroma_url="http://chroma.example.com:8000", chroma_token=TOKEN, _env_file=None)
    assert settings.chroma_token.get_secret_value() == TOKEN
    assert TOKEN not in repr(settings) and TOKEN not in str(settings.model_dump())

    with pytest.raises(SettingsError, match="RAGKIT_CHROMA_TOKEN: .*ASCII letters, digits and punctuation") as bad:
        load_settings(chroma_url="http://chroma.example.com:8000", chroma_token="two words", _env_file=None)
    assert "two words" not in str(bad.value)
    with pytest.raises(SettingsError, match="RAGKIT_CHROMA_TOKEN is set but RAGKIT_CHROMA_URL is not"):
        load_settings(chroma_token=TOKEN, _env_file=None)
    assert load_settings(chroma_url="http://chroma.example.com:8000", chroma_token="  ",
                         _env_file=None).chroma_token is None


# ----- against the server --------------------------------------------------------------------


def test_the_right_token_opens_the_shared_store(deployment, tmp_path):
    writer = open_kb(deployment, tmp_path / "a", TOKEN)
    added = writer.ingest(FACT, filename="skerry.txt")
    assert added.status == "added" and writer.health == []
    reader = open_kb(deployment, tmp_path / "b", TOKEN)
    [hit] = reader.search("lighthouse fog bell", k=1)
    assert hit.doc_id == added.document.id and hit.dense_rank == 1  # found through the server's vectors
    assert reader.health == []
    writer.close()
    reader.close()


@pytest.mark.parametrize(("token", "why"), [
    (None, "it asks for a token and RAGKIT_CHROMA_TOKEN is not set"),
    (WRONG, "it does not accept the token in RAGKIT_CHROMA_TOKEN"),
])
def test_a_missing_or_wrong_token_is_named_and_changes_nothing(deployment, tmp_path, caplog, token, why):
    writer = open_kb(deployment, tmp_path / "a", TOKEN)
    kept = writer.ingest(FACT, filename="skerry.txt").document
    caplog.set_level(logging.DEBUG)

    refused_kb = open_kb(deployment, tmp_path / "b", token)
    refusal = f"the Chroma server (RAGKIT_CHROMA_URL) at {deployment['chroma_url']} refused access: {why}"
    [note] = refused_kb.health
    assert note.startswith(refusal) and "keyword search only" in note and "cannot be reached" not in note
    [hit] = refused_kb.search("lighthouse fog bell", k=1)  # the shared catalog still answers by keywords
    assert hit.doc_id == kept.id and hit.dense_rank is None
    with pytest.raises(VectorStoreRefused) as raised:
        refused_kb.store.refresh()
    assert isinstance(raised.value, RagkitError) and str(raised.value).startswith(refusal)

    result = refused_kb.ingest(b"Seals rest on the Skerry Point slipway at low tide.", filename="seals.txt")
    assert result.status == "refused" and refusal in result.message
    assert "Nothing of this file was kept" in result.message
    assert [doc.filename for doc in writer.documents()] == ["skerry.txt"]  # nothing half-added

    everything_said = " ".join([*refused_kb.health, result.message, caplog.text])
    assert TOKEN not in everything_said and WRONG not in everything_said
    writer.close()
    refused_kb.close()


def test_the_command_line_names_a_refused_token_without_a_traceback(deployment, tmp_path, embedder):
    env = {**os.environ, "RAGKIT_CHROMA_URL": deployment["chroma_url"], "RAGKIT_CHROMA_TOKEN": WRONG,
           "RAGKIT_DATABASE_URL": deployment["database_url"], "RAGKIT_COLLECTION": deployment["collection"]}
    data_dir = tmp_path / "replica"
    models = getattr(embedder, "_copy_dir", None)
    if models is not None and models.is_dir():  # the model's ONNX copy, as a replica that ran before has it
        shutil.copytree(models, data_dir / "models" / models.name)
    note = tmp_path / "seals.txt"
    note.write_text("Seals rest on the Skerry Point slipway at low tide.", encoding="utf-8")

    done = subprocess.run([sys.executable, "-m", "ragkit", "--data-dir", str(data_dir), "ingest", str(note)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "refused access: it does not accept the token in RAGKIT_CHROMA_TOKEN" in done.stderr  # the warning
    assert "! refused" in done.stdout and "Nothing of this file was kept" in done.stdout
    assert "Traceback" not in said and WRONG not in said

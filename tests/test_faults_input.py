"""Faults a user meets on the way in (issue 15): hostile folders and names, absurd
arguments, files that cost far more memory than their size, and text that is garbage or
only partly decodable.

Everything here is real: folders with real symbolic links, the command line run as a
separate process on a real data dir (and the real embedding model), files generated to
the sizes a user could hand over. Memory is measured in a fresh interpreter (peak RSS
growth while the one call runs); work that must be linear is counted, not timed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from ragkit.errors import InputError
from ragkit.folders import collect_files
from ragkit.render import escape_markdown, terminal_json, terminal_safe
from ragkit.tags import MAX_TAGS, checked_tags, normalize_tags
from work_counting import count_operations

ESC = "\x1b"


def run_cli(data_dir: Path, *args, timeout: int = 300) -> subprocess.CompletedProcess:
    """``python -m ragkit --data-dir DATA ARGS`` as a user runs it."""
    command = [sys.executable, "-m", "ragkit", "--data-dir", str(data_dir), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=timeout)


# --- 1. symbolic links in a folder -------------------------------------------------------


@pytest.fixture(scope="module")
def hostile_folder(tmp_path_factory) -> Path:
    """A folder a user might be handed: one real note, links out of it (a file and a
    folder), a link to a file inside it, a dangling link, and hostile file names."""
    root = tmp_path_factory.mktemp("handed-over")
    secret = root / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:root:/root:/bin/bash keeper of the outside secret\n", encoding="utf-8")
    folder = root / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("The lighthouse lamp is lit at dusk by the keeper.\n", encoding="utf-8")
    (folder / "passwd.txt").symlink_to(secret)
    (folder / "outside-link").symlink_to(secret.parent, target_is_directory=True)
    (folder / "alias.txt").symlink_to("notes.txt")
    (folder / "dangling.txt").symlink_to("gone.txt")
    (folder / "sub" / "lamp.md").write_text("# Lamp\n\nThe lamp burns whale oil in winter.\n", encoding="utf-8")
    (folder / "sub" / f"evil{ESC}[2Jname\n+ added       forged.txt").write_text("Forged line test file about tides.\n")
    (folder / "sub" / "右\u202egnp.txt").write_text("Bidirectional override name about fog horns.\n")
    (folder / "茶园笔记.txt").write_text("茶园每天早上八点开门。\n", encoding="utf-8")
    (folder / os.fsdecode(b"latin1-caf\xe9.txt")).write_text("not UTF-8 name\n")
    return folder


def test_a_folder_walk_skips_every_link_and_names_it(hostile_folder):
    selection = collect_files([hostile_folder])

    names = sorted(path.name for path in selection.files)
    assert names == sorted(["notes.txt", "lamp.md", f"evil{ESC}[2Jname\n+ added       forged.txt",
                            "右\u202egnp.txt", "茶园笔记.txt"])
    skipped = {path.name: reason for path, reason in ((s.path, s.reason) for s in selection.skipped)}
    assert skipped["passwd.txt"].startswith("a symbolic link to a file outside the folder")
    assert "never followed" in skipped["passwd.txt"] and "secret.txt" in skipped["passwd.txt"]
    assert skipped["outside-link"].startswith("a symbolic link to a folder outside the folder")
    assert skipped["alias.txt"] == ("a symbolic link to a file inside the folder, docs/notes.txt "
                                    "(taken under its own name): links are not followed")
    assert "does not exist" in skipped["dangling.txt"]
    assert skipped[os.fsdecode(b"latin1-caf\xe9.txt")] == "the name is not valid UTF-8 text: rename it to add it"
    for item in selection.skipped:
        assert item.message.startswith(str(hostile_folder)), item.message


def test_a_file_named_on_the_command_line_is_taken_even_when_it_is_a_link(hostile_folder):
    """Naming a path is the user's explicit choice (as with cat or cp)."""
    link = hostile_folder / "passwd.txt"
    assert collect_files([link]).files == [link]
    linked_folder = hostile_folder / "outside-link"
    assert [path.name for path in collect_files([linked_folder]).files] == ["secret.txt"]


def test_links_in_a_folder_inside_the_folder_to_a_folder_are_reported(tmp_path):
    folder = tmp_path / "docs"
    (folder / "real").mkdir(parents=True)
    (folder / "real" / "a.txt").write_text("alpha")
    (folder / "again").symlink_to("real", target_is_directory=True)
    (folder / "loop").symlink_to(".", target_is_directory=True)
    selection = collect_files([folder])
    assert [path.name for path in selection.files] == ["a.txt"]
    reasons = {s.path.name: s.reason for s in selection.skipped}
    assert reasons["again"] == "a symbolic link to a folder inside the folder, docs/real: links are not followed"
    assert reasons["loop"] == "a symbolic link to a folder inside the folder, docs: links are not followed"


@pytest.fixture(scope="module")
def ingested(hostile_folder, tmp_path_factory):
    """The hostile folder ingested by the command line (one process, the real model)."""
    data_dir = tmp_path_factory.mktemp("cli-data")
    return data_dir, run_cli(data_dir, "ingest", hostile_folder)


def test_ingesting_the_folder_skips_links_with_a_message_and_keeps_the_secret_out(ingested, hostile_folder):
    data_dir, result = ingested
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"- skipped     {hostile_folder}/passwd.txt: a symbolic link to a file outside the folder" in result.stdout
    assert any(line.startswith(f"- skipped     {hostile_folder}/outside-link: a symbolic link to a folder")
               for line in lines)
    assert sum(line.startswith("+ added") for line in lines) == 5

    search = run_cli(data_dir, "search", "root bin bash", "--json")
    assert search.returncode == 0, search.stderr
    assert all("secret" not in hit["text"] and "/bin/bash" not in hit["text"] for hit in json.loads(search.stdout))
    assert "secret.txt" not in run_cli(data_dir, "docs", "--json").stdout


# --- 10. names print inert ----------------------------------------------------------------


def assert_inert(output: str) -> None:
    assert ESC not in output and "\u202e" not in output and "\r" not in output
    for line in output.splitlines():
        assert not line.startswith("+ added       forged.txt"), "a file name forged an output line"


def test_hostile_names_print_as_visible_codes_in_every_command(ingested):
    data_dir, result = ingested
    assert_inert(result.stdout + result.stderr)
    assert "evil\\x1b[2Jname\\n+ added       forged.txt: added" in result.stdout
    assert "右\\u202egnp.txt: added" in result.stdout
    assert "茶园笔记.txt: added" in result.stdout, "Chinese stays as it is"
    assert "latin1-caf\\xe9.txt: the name is not valid UTF-8 text" in result.stdout

    docs = run_cli(data_dir, "docs")
    assert docs.returncode == 0 and len(docs.stdout.splitlines()) == 1 + 5, docs.stdout
    assert_inert(docs.stdout)
    assert "evil\\x1b[2Jname\\n+ a" in docs.stdout and "茶园笔记" in docs.stdout

    search = run_cli(data_dir, "search", "forged line tides", "-k", "2")
    assert search.returncode == 0, search.stderr
    assert_inert(search.stdout)
    assert "(evil\\x1b[2Jname\\n+ added       forged.txt, p.1)" in search.stdout

    as_json = run_cli(data_dir, "docs", "--json")
    assert_inert(as_json.stdout)
    filenames = {doc["filename"] for doc in json.loads(as_json.stdout)}
    assert f"evil{ESC}[2Jname\n+ added       forged.txt" in filenames, "JSON keeps the data, escaped"

    forged = next(doc for doc in json.loads(as_json.stdout) if doc["filename"].startswith("evil"))
    deleted = run_cli(data_dir, "delete", forged["id"])
    assert deleted.returncode == 0 and "(evil\\x1b[2Jname\\n+ added       forged.txt)" in deleted.stdout
    assert_inert(deleted.stdout)


def test_terminal_safe_shows_controls_and_keeps_scripts():
    assert terminal_safe(f"a{ESC}[2Jb\nc\td\r") == "a\\x1b[2Jb\\nc\\td\\r"
    assert terminal_safe("\x85\x9b\x7f\u2028\u202e\u2066") == "\\x85\\x9b\\x7f\\u2028\\u202e\\u2066"
    assert terminal_safe(os.fsdecode(b"caf\xe9")) == "caf\\xe9"
    kept = "茶园笔记 · Ελληνικά · עברית · नमस्ते · 👩‍💻 · پی‌اچ‌دی"  # joiners inside scripts and emoji stay
    assert terminal_safe(kept) == kept
    assert terminal_safe(f"line one\nline{ESC} two", keep_newlines=True) == "line one\nline\\x1b two"
    value = {"name": f"x{ESC}\x9b\u202e\udcff中\n"}
    shown = terminal_json(value)
    assert json.loads(shown) == value and ESC not in shown and "\u202e" not in shown and "中" in shown


# --- 12. tags ------------------------------------------------------------------------------


def test_normalizing_tags_is_linear():
    def tags(n: int) -> list[str]:
        return [",".join(f"t{i}" for i in range(n))]

    small = count_operations(normalize_tags, tags(20_000))
    large = count_operations(normalize_tags, tags(80_000))
    assert large < 4.5 * small, (small, large)  # a list's `in` made this 16x
    assert normalize_tags([" a, b ,a", "c,,b", "a"]) == ["a", "b", "c"]


def test_two_hundred_thousand_tags_are_refused_with_a_limit_and_a_reason(kb, tmp_path):
    note = tmp_path / "note.txt"
    note.write_text("Tide tables for the harbour.", encoding="utf-8")
    doc = kb.ingest(note).document
    many = [",".join(f"tag{i}" for i in range(200_000))]

    with pytest.raises(InputError, match=rf"^200,000 tags given; a document can have at most {MAX_TAGS}: "):
        kb.update_metadata(doc.id, tags=many)
    with pytest.raises(InputError, match="at most 100"):
        kb.ingest(note, tags=many)
    assert kb.document(doc.id).tags == []
    assert len(checked_tags([",".join(f"tag{i}" for i in range(MAX_TAGS))])) == MAX_TAGS
    with pytest.raises(InputError, match="tags can be at most 100 characters long"):
        checked_tags(["x" * 101])
    assert kb.update_metadata(doc.id, tags=["tides", " harbour ", "tides"]).tags == ["tides", "harbour"]


def test_the_command_line_refuses_too_many_tags_with_a_message(ingested):
    """As many tags as one command-line argument can hold (the kernel caps one at 128 KB)."""
    data_dir, _ = ingested
    doc_id = json.loads(run_cli(data_dir, "docs", "--json").stdout)[0]["id"]
    refused = run_cli(data_dir, "tag", doc_id, "--tags", ",".join(f"t{i}" for i in range(15_000)))
    assert refused.returncode == 1
    assert refused.stderr == f"error: 15,000 tags given; a document can have at most {MAX_TAGS}: " \
                             "use a few broad tags (tags are labels to filter by, not data)\n"
    accepted = run_cli(data_dir, "tag", doc_id, "--tags", "lamp, keeper ,lamp")
    assert accepted.returncode == 0 and accepted.stdout.strip().endswith("tags=lamp,keeper")


def test_the_documents_page_refuses_too_many_tags_and_keeps_the_old_ones(tmp_path, monkeypatch):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("RAGKIT_DATA_DIR", str(tmp_path / "appdata"))
    monkeypatch.chdir(REPO)
    monkeypatch.syspath_prepend(str(REPO))
    st.cache_resource.clear()
    try:
        at = AppTest.from_file(str(REPO / "streamlit_app.py"), default_timeout=120).run()
        at.switch_page("pages/documents.py").run()
        from pages._widgets import _service_future

        service = _service_future().result()
        job = service.uploads.submit("tides.txt", b"Tide tables for the harbour.", ["harbour"])
        assert service.uploads.wait([job.id], timeout_s=120) and job.result.ok
        at.session_state["selected-document"] = job.result.document.id
        at.run()
        next(t for t in at.text_input if t.label == "Tags").input(",".join(f"t{i}" for i in range(150)))
        next(b for b in at.button if b.label == "Save").click().run()

        assert not at.exception
        assert [e.value for e in at.error] == [escape_markdown(
            "150 tags given; a document can have at most 100: use a few broad tags (tags are labels to filter by, "
            "not data)")]
        assert service.kb.document(job.result.document.id).tags == ["harbour"]
    finally:
        st.cache_resource.clear()


# --- 13. -k ---------------------------------------------------------------------------------


def test_search_k_is_bounded_with_a_clear_message(tmp_path):
    for k in ("1" + "0" * 30, "1001"):
        result = run_cli(tmp_path / "data", "search", "lamp", "-k", k)
        assert result.returncode == 2
        assert f"argument -k: must be at most 1000, not {int(k)}: ask for fewer passages" in result.stderr
    huge = run_cli(tmp_path / "data", "search", "lamp", "-k", "9" * 5000)
    assert huge.returncode == 2 and "is not a whole number" in huge.stderr and len(huge.stderr) < 400

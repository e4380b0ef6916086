"""The command line, run as a user would: separate processes sharing a data dir."""

import json
import subprocess
import sys

import pytest

from conftest import FIXTURES, REPO


def run(data_dir, *args):
    env_args = [sys.executable, "-m", "ragkit", "--data-dir", str(data_dir), *map(str, args)]
    return subprocess.run(env_args, capture_output=True, text=True, cwd=REPO, timeout=180)


def folder_of(folder, *names):
    """``folder`` holding copies of these fixture files."""
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / name).write_bytes((FIXTURES / name).read_bytes())
    return folder


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A data dir holding the English report and the Chinese tea garden PDF, tagged demo and 2026."""
    data = tmp_path_factory.mktemp("cli-data")
    folder = folder_of(tmp_path_factory.mktemp("cli-docs"), "report_en.pdf", "tea_garden_zh.pdf")
    ingested = run(data, "ingest", folder, "--tags", "demo,2026")
    assert ingested.returncode == 0, ingested.stderr
    return data


def test_ingest_directory_with_tags_and_refusals(tmp_path):
    folder = folder_of(tmp_path / "docs", "report_en.pdf", "tea_garden_zh.pdf", "corrupt.pdf")
    result = run(tmp_path / "data", "ingest", folder, "--tags", "demo,2026")
    assert result.returncode == 1
    assert "+ added       report_en.pdf" in result.stdout
    assert "! refused     corrupt.pdf: not a readable PDF" in result.stdout
    assert "error: 1 of 3 files refused" in result.stderr


def test_docs_search_ask_sessions_delete(data_dir):
    listed = json.loads(run(data_dir, "docs", "--json").stdout)
    assert {d["filename"] for d in listed} >= {"report_en.pdf", "tea_garden_zh.pdf"}
    assert all(d["tags"] == ["demo", "2026"] for d in listed)

    search = run(data_dir, "search", "门票价格", "-k", "2")
    assert search.returncode == 0 and "tea_garden_zh.pdf, p.2" in search.stdout

    first = run(data_dir, "ask", "Who founded Aurora Analytics?", "--session", "demo")
    assert first.returncode == 0, first.stderr
    assert "Marta Silva" in first.stdout and "extractive answer" in first.stdout
    follow = run(data_dir, "ask", "Where does it plan to open an office?", "--session", "demo")
    assert "searched as:" in follow.stdout and "Osaka" in follow.stdout

    sessions = run(data_dir, "sessions")
    assert "demo" in sessions.stdout and "2 turns" in sessions.stdout
    shown = run(data_dir, "sessions", "show", "demo")
    assert "## 2. Where does it plan to open an office?" in shown.stdout and "report_en.pdf" in shown.stdout
    assert run(data_dir, "sessions", "delete", "demo").returncode == 0
    assert "demo" not in run(data_dir, "sessions").stdout

    report = next(d for d in listed if d["filename"] == "report_en.pdf")
    assert run(data_dir, "delete", report["id"]).returncode == 0
    missing = run(data_dir, "delete", report["id"])
    assert missing.returncode == 1 and "no document with id" in missing.stderr


def test_bad_input_gives_one_line_reasons(data_dir):
    punct = run(data_dir, "ask", "？？？", "--session", "x")
    assert punct.returncode == 1 and "only punctuation" in punct.stderr
    bad_session = run(data_dir, "ask", "hello", "--session", "no spaces allowed")
    assert bad_session.returncode == 1 and "invalid session id" in bad_session.stderr
    bad_setting = subprocess.run([sys.executable, "-m", "ragkit", "docs"], capture_output=True, text=True, cwd=REPO,
                                 env={**__import__("os").environ, "RAGKIT_TOP_K": "zero"}, timeout=60)
    assert bad_setting.returncode == 1 and "RAGKIT_TOP_K" in bad_setting.stderr
    assert len(bad_setting.stderr.strip().splitlines()) == 1


def test_odd_arguments_are_refused_with_reasons(data_dir):
    for k in ("0", "-1", "two"):
        result = run(data_dir, "search", "revenue", "-k", k)
        assert result.returncode == 2 and "-k" in result.stderr
    newline_session = run(data_dir, "ask", "hello", "--session", "x\n")
    assert newline_session.returncode == 1 and "invalid session id" in newline_session.stderr
    undecodable = subprocess.run([sys.executable, "-m", "ragkit", "--data-dir", str(data_dir), "ask", b"caf\xe9 ?"],
                                 capture_output=True, text=True, cwd=REPO, timeout=120)
    assert undecodable.returncode == 2 and "not valid UTF-8" in undecodable.stderr
    assert "Traceback" not in undecodable.stderr and "TypeError" not in undecodable.stderr
    both_and_one = run(data_dir, "eval", "squad.json", "--compare-modes", "--mode", "agentic")
    assert both_and_one.returncode == 1 and "--compare-modes" in both_and_one.stderr


def test_ask_explains_how_it_answered_and_says_when_nothing_was_found(data_dir):
    traced = run(data_dir, "ask", "What is the population of Quarnova?", "--session", "t", "--trace")
    assert traced.returncode == 0, traced.stderr
    assert "I could not find this in your documents." in traced.stdout
    assert "closest matches (not used as sources):" in traced.stdout
    assert "how this was answered:" in traced.stdout and "Graded the evidence" in traced.stdout
    assert "Not found" in traced.stdout


def test_a_model_must_be_named_in_full_and_be_configured(tmp_path):
    abbreviated = run(tmp_path, "ask", "Who founded Aurora?", "--mod", "extractive")
    assert abbreviated.returncode == 2 and "unrecognized arguments: --mod" in abbreviated.stderr
    not_a_mode = run(tmp_path, "ask", "Who founded Aurora?", "--mode", "extractive")
    assert not_a_mode.returncode == 2 and "invalid choice: 'extractive'" in not_a_mode.stderr
    unknown = run(tmp_path, "ask", "Who founded Aurora?", "--model", "no-such-model", "--session", "m")
    assert unknown.returncode == 1
    assert "no model 'no-such-model' is configured; the known ones are: extractive" in unknown.stderr
    assert unknown.stdout == "" and "no sessions yet" in run(tmp_path, "sessions").stdout


def test_replace_last_and_search_sessions(tmp_path):
    assert run(tmp_path, "ask", "Who founded Aurora in Lisbonn?", "--session", "edit").returncode == 0
    edited = run(tmp_path, "ask", "Who founded Aurora?", "--session", "edit", "--replace-last")
    assert edited.returncode == 0, edited.stderr
    assert "no conversation holds" in run(tmp_path, "sessions", "search", "lisbonn").stdout
    found = run(tmp_path, "sessions", "search", "aurora")
    assert found.stdout.startswith("edit ") and "1 turns" in run(tmp_path, "sessions").stdout
    exported = run(tmp_path, "sessions", "export", "edit").stdout
    assert "Lisbonn" in exported and "asked again with an edited question" in exported

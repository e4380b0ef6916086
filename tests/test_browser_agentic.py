"""Agentic mode in the app, in a real headless Chromium: the conversation is switched to
agentic in the sidebar ("Answer mode"), a two-hop question is asked, and the answer cites
both documents (the one naming the designer, the one saying where he was born)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from playwright.sync_api import expect

from browser_helpers import ask, browser, page, require_chromium, start_app  # noqa: F401 (fixtures)
from conftest import REPO, environment_without_settings

pytestmark = pytest.mark.browser
require_chromium()

FILES = {
    "ada.txt": "Ada Lovelace wrote an algorithm for the Analytical Engine, a machine designed by Charles Babbage.",
    "babbage.txt": "Charles Babbage was born in London in 1791.",
    "difference.txt": "The Difference Engine was an automatic mechanical calculator designed to tabulate polynomial "
                      "functions.",
}


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """The app over a data dir holding the issue's three one-line files (added with the CLI)."""
    files = tmp_path_factory.mktemp("lovelace-files")
    for name, text in FILES.items():
        (files / name).write_text(text, encoding="utf-8")
    data = tmp_path_factory.mktemp("lovelace-data")
    env = environment_without_settings()
    subprocess.run([sys.executable, "-m", "ragkit", "--data-dir", str(data), "ingest", *map(str, files.iterdir())],
                   cwd=REPO, env=env, check=True, capture_output=True, timeout=900)
    yield from start_app(tmp_path_factory, RAGKIT_DATA_DIR=str(data))


@pytest.mark.slow
def test_a_two_hop_question_in_agentic_mode_cites_both_documents(app_url, page):
    page.goto(app_url)
    page.get_by_placeholder("Ask a question about your documents").wait_for()
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_test_id("stSelectbox").filter(has_text="Answer mode").click()
    page.get_by_role("option", name=re.compile("^Agentic")).click()
    expect(page.get_by_role("option")).to_have_count(0)  # the list closed on the choice

    ask(page, "Where was the designer of the machine Ada Lovelace wrote an algorithm for born?")
    answer = page.get_by_test_id("stChatMessage").last
    # the default mode answers from the first document only; agentic follows the hop to the second
    expect(answer).to_contain_text("born in London", timeout=180_000)  # the first answer loads the model
    expect(answer).to_contain_text("designed by Charles Babbage")
    sources = answer.get_by_test_id("stExpander").filter(has_text="Sources")
    expect(sources).to_contain_text(re.compile(r"Sources — 2 cited"))
    sources.click()
    expect(sources).to_contain_text("ada.txt")
    expect(sources).to_contain_text("babbage.txt")

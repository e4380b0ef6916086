"""Who can reach the app: loopback only by default, and a login before any data when shared.

The address test starts the real app (`streamlit run`, the repository's
.streamlit/config.toml, no --server.address) and knocks on the machine's own network
address. The login tests drive streamlit_app.py with Streamlit's AppTest.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time

import pytest
import streamlit as st
from streamlit.proto.TextInput_pb2 import TextInput
from streamlit.testing.v1 import AppTest

from conftest import REPO, free_port, serve

TIMEOUT = 120
PASSWORD = "correct horse battery staple"
SECRET_QUESTION = "Where is the lighthouse of Vardø kept?"
SECRET_FILE = "lighthouse_keeper_notes.md"


# ----- network address ---------------------------------------------------------------


def non_loopback_ipv4() -> str | None:
    """An IPv4 address of this machine other than 127.x, or None when it has none."""
    found: set[str] = set()
    with contextlib.suppress(OSError):
        found.update(socket.gethostbyname_ex(socket.gethostname())[2])
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # picks the outgoing interface; UDP connect sends nothing
        found.add(probe.getsockname()[0])
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        listing = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, timeout=10).stdout
        found.update(re.findall(r"inet (\d+\.\d+\.\d+\.\d+)/", listing))
    return next((ip for ip in sorted(found) if not ip.startswith("127.") and ip != "0.0.0.0"), None)


def answers(host: str, port: int) -> bool:
    """True when a TCP connection to host:port is accepted, False when it is refused."""
    try:
        with socket.create_connection((host, port), timeout=5):
            return True
    except ConnectionRefusedError:
        return False


@contextlib.contextmanager
def running_app(tmp_path, *flags: str):
    """`streamlit run streamlit_app.py` from the repository with only the given extra flags."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMLIT_", "OPENAI_"))}
    env["RAGKIT_DATA_DIR"] = str(tmp_path / "data")
    command = [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.headless", "true",
               "--server.port", str(port), *flags]
    log = tmp_path / f"streamlit-{port}.log"
    with open(log, "w") as out, serve(command, f"http://127.0.0.1:{port}/_stcore/health", 90, "the app",
                                      cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT):
        yield port, log


def printed_urls(log) -> str:
    """The URL lines the app prints at start (waits until they are there)."""
    deadline = time.time() + 30
    while "URL:" not in log.read_text() and time.time() < deadline:
        time.sleep(0.2)
    return "\n".join(line for line in log.read_text().splitlines() if "URL:" in line)


def test_by_default_the_app_listens_on_loopback_only(tmp_path):
    address = non_loopback_ipv4()
    with running_app(tmp_path) as (port, log):
        assert answers("127.0.0.1", port)
        assert "Network URL" not in printed_urls(log)
        if address is None:
            pytest.skip("this machine has no non-loopback IPv4 address to knock on")
        assert not answers(address, port), f"the app must refuse connections on {address}"


def test_the_network_check_sees_an_app_that_listens_everywhere(tmp_path):
    """Control: the same knock reaches an app that was told to listen on every interface."""
    address = non_loopback_ipv4()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address to knock on")
    with running_app(tmp_path, "--server.address", "0.0.0.0") as (port, _):
        assert answers(address, port)


# ----- login -------------------------------------------------------------------------


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A data dir holding one conversation, the app's environment pointing at it."""
    from ragkit.app.history import HistoryManager
    from ragkit.types import Turn

    data = tmp_path / "appdata"
    data.mkdir()
    history = HistoryManager(data / "sessions.sqlite3")
    history.add_turn("secret1", Turn(SECRET_QUESTION, SECRET_QUESTION, "In the north [1].", "extractive"))
    history.close()
    monkeypatch.setenv("RAGKIT_DATA_DIR", str(data))
    monkeypatch.chdir(REPO)
    monkeypatch.syspath_prepend(str(REPO))
    st.cache_resource.clear()  # one service per data dir
    yield data
    st.cache_resource.clear()


def app_test() -> AppTest:
    """streamlit_app.py under AppTest (not yet run)."""
    return AppTest.from_file(str(REPO / "streamlit_app.py"), default_timeout=TIMEOUT)


def everything(at) -> str:
    """Every element the app sent, main area and sidebar, as protobuf text."""
    def walk(node):
        yield node
        for child in getattr(node, "children", {}).values():
            yield from walk(child)

    return "\n".join(str(getattr(node, "proto", "")) for root in (at.main, at.sidebar) for node in walk(root))


def assert_only_a_login(at, *, error: str | None = None) -> None:
    assert not at.exception
    assert [t.label for t in at.text_input] == ["Password"] and at.text_input[0].proto.type == TextInput.PASSWORD
    assert [b.label for b in at.button] == ["Log in"]
    assert [e.value for e in at.error] == ([error] if error else [])
    assert not at.sidebar.children and not at.chat_input and not at.expander
    shown = everything(at)
    for secret in ("lighthouse", "Vard", "secret1", "Chat with your documents", "Answer mode", "Documents"):
        assert secret not in shown, f"{secret!r} is visible before login"


def log_in(at, password: str) -> None:
    at.text_input[0].input(password)
    at.button[0].click().run()


def test_with_a_password_nothing_shows_until_the_right_one_is_typed(data_dir, monkeypatch):
    monkeypatch.setenv("RAGKIT_APP_PASSWORD", PASSWORD)
    at = app_test().run()
    assert_only_a_login(at)

    log_in(at, PASSWORD.upper())
    assert_only_a_login(at, error="Wrong password.")
    log_in(at, "")
    assert_only_a_login(at, error="Wrong password.")

    log_in(at, PASSWORD)
    assert not at.exception
    assert [t.value for t in at.title] == ["Chat with your documents"]
    labels = [b.label for b in at.sidebar.button]
    assert any("lighthouse of Vardø" in label for label in labels), "the conversations are listed"
    assert "Log out" in labels  # clicking it is tested in the browser (AppTest keeps the login page's hash)


def test_a_new_visitor_sees_no_document_or_conversation(data_dir, monkeypatch):
    monkeypatch.setenv("RAGKIT_APP_PASSWORD", PASSWORD)
    owner = app_test().run()
    log_in(owner, PASSWORD)
    owner.chat_input[0].upload(SECRET_FILE, b"# Lighthouse keeper notes\n\nThe lamp is lit at dusk.\n").run()
    from pages._service import service_future  # the upload is indexed by the app's queue: wait for it

    assert service_future().result().uploads.wait(owner.session_state["ingest-jobs"], timeout_s=120)
    owner.run()
    assert any(f"{SECRET_FILE}\\: added" in s.value for s in owner.success)

    visitor = app_test().run()
    assert_only_a_login(visitor)


def test_a_blank_password_setting_means_no_login(data_dir, monkeypatch):
    monkeypatch.setenv("RAGKIT_APP_PASSWORD", "  ")
    at = app_test().run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Chat with your documents"]
    assert "Log out" not in [b.label for b in at.sidebar.button]


def test_with_oidc_configured_the_provider_login_comes_first(data_dir):
    at = app_test()
    at.secrets["auth"] = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "x" * 32,
                          "client_id": "ragkit", "client_secret": "s",
                          "server_metadata_url": "https://id.example.com/.well-known/openid-configuration"}
    at.user = {"is_logged_in": False}
    at.run()
    assert not at.exception
    assert [b.label for b in at.button] == ["Log in"] and not at.text_input
    assert not at.sidebar.children and "lighthouse" not in everything(at)

    at.user = {"is_logged_in": True, "email": "keeper@example.com"}
    at.run()
    assert [t.value for t in at.title] == ["Chat with your documents"]
    assert "Log out" in [b.label for b in at.sidebar.button]


def test_opening_a_page_url_first_still_leads_to_the_login(data_dir, monkeypatch):
    """Before the entry script ran once, Streamlit runs pages/<name>.py alone for its URL."""
    monkeypatch.setenv("RAGKIT_APP_PASSWORD", PASSWORD)
    for page in ("pages/documents.py", "pages/chat.py", "pages/stats.py"):
        at = app_test()
        at.switch_page(page)
        at.run()
        assert_only_a_login(at)

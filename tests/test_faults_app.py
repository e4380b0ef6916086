"""The login holds at the server (issue 15, item 2): a real `streamlit run` server with
RAGKIT_APP_PASSWORD set, attacked by raw HTTP and websocket clients
(tests/streamlit_client.py) from several loopback addresses, as the issue describes:
the XSRF token from /_stcore/health, a websocket for a session id, PUTs of tens of MB
to /_stcore/upload_file/<session>/... before logging in, and password guesses.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO, free_port, serve
from ragkit.app.access import FIRST_WAIT_S, MAX_WAIT_S, LoginThrottle

PASSWORD = "correct horse battery staple"
MB = 1024 * 1024


# --- the points the upload gate wraps ------------------------------------------------------


def test_streamlits_upload_route_still_goes_through_the_points_the_gate_wraps():
    """If this fails, Streamlit moved its upload handling: pages/_upload_gate.py must be
    adapted before the app may be shared with a password (it refuses to open meanwhile)."""
    from streamlit.runtime import Runtime
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
    from streamlit.web.server import server
    from streamlit.web.server.starlette import starlette_routes

    source = inspect.getsource(starlette_routes.create_upload_routes)
    asks = source.index("if not runtime.is_active_session(session_id):")
    assert asks < source.index("await limited_request.form()"), "the session is checked before the body is read"
    assert "upload_mgr.add_file(" in source and "{session_id}" in starlette_routes._ROUTE_UPLOAD_FILE
    assert "MemoryUploadedFileManager(UPLOAD_FILE_ENDPOINT)" in inspect.getsource(server.Server.__init__)
    assert callable(Runtime.is_active_session)
    for name in ("add_file", "remove_session_files"):
        assert callable(getattr(MemoryUploadedFileManager, name))
    assert isinstance(MemoryUploadedFileManager("/x").file_storage, dict)


# --- a real server ---------------------------------------------------------------------------


@contextlib.contextmanager
def password_app(tmp_path: Path, **settings: str):
    """`streamlit run streamlit_app.py` with a password, as a user would start it."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMLIT_", "OPENAI_", "RAGKIT_"))}
    env.update({"RAGKIT_DATA_DIR": str(tmp_path / "data"), "RAGKIT_APP_PASSWORD": PASSWORD, **settings})
    command = [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.headless", "true",
               "--server.port", str(port)]
    with open(tmp_path / "streamlit.log", "w") as log, serve(command, f"http://127.0.0.1:{port}/_stcore/health",
                                                            90, "the app", cwd=REPO, env=env, stdout=log,
                                                            stderr=subprocess.STDOUT) as process:
        yield port, process


def rss_mb(pid: int) -> float:
    """Resident memory of a process, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.fixture
def client_factory():
    from streamlit_client import RawClient

    clients = []

    def make(port: int, source: str = "127.0.0.1") -> RawClient:
        client = RawClient(port, source)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_before_login_no_upload_is_kept_and_the_server_memory_stays_flat(tmp_path, client_factory):
    with password_app(tmp_path) as (port, server):
        attacker = client_factory(port, "127.0.0.2")
        screen = attacker.run()
        assert list(screen.text_inputs) == ["Password"] and attacker.session_id
        payload = os.urandom(40 * MB)
        assert attacker.upload(b"warm up") != 204
        before = rss_mb(server.pid)

        answers = [attacker.upload(payload, f"big{n}.txt") for n in range(20)]

        after = rss_mb(server.pid)
        print(f"server RSS {before:.0f} MB -> {after:.0f} MB after 20 refused uploads of 40 MB: {set(answers)}")
        assert all(answer in (400, 403) or str(answer).startswith("closed") for answer in answers), answers
        assert after - before < 100, (before, after)  # 800 MB if they were kept

        owner = client_factory(port, "127.0.0.3")
        assert not owner.log_in(PASSWORD).errors
        assert owner.upload(b"The lamp is lit at dusk.\n", "notes.txt") == 204, "a logged-in session uploads"
        assert attacker.upload(b"still outside") in (400, 403), "another session's login lets no one else in"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_password_guesses_slow_down_per_address_and_for_the_server(tmp_path, client_factory):
    with password_app(tmp_path, RAGKIT_LOGIN_FREE_GUESSES="3", RAGKIT_LOGIN_GUESSES_PER_HOUR="10") as (port, _):
        guesser = client_factory(port, "127.0.0.2")
        assert [guesser.log_in(f"guess {n}").errors for n in range(3)] == [["Wrong password."]] * 3
        wrong, refusals = 3, []
        while wrong < 6:  # three past the free ones: the address then waits 16 s after each wrong guess
            errors = guesser.log_in(f"guess {wrong}").errors
            if errors == ["Wrong password."]:
                wrong += 1
            else:  # not even checked: try again until the address's turn comes
                refusals.append(errors[0])
                time.sleep(0.5)
        assert refusals, "guesses past the free ones are held up"
        assert all(r.startswith("Too many wrong passwords from your address: wait ") for r in refusals), refusals
        right_too_soon = guesser.log_in(PASSWORD)
        assert right_too_soon.errors and right_too_soon.errors[0].startswith(
            "Too many wrong passwords from your address: wait "), "inside the wait even the right one is not checked"

        owner = client_factory(port, "127.0.0.3")
        assert owner.log_in(PASSWORD).errors == [], "another address is not held up"

        server_refusal, addresses = [], iter(range(10, 40))
        while not server_refusal:
            visitor = client_factory(port, f"127.0.0.{next(addresses)}")
            assert visitor.log_in("first try").errors == ["Wrong password."], "a first guess is always checked"
            second = visitor.log_in("second try").errors
            if second != ["Wrong password."]:
                server_refusal = second
        assert server_refusal[0].startswith("Too many wrong passwords on this server: wait "), server_refusal

        latecomer = client_factory(port, "127.0.0.99")
        assert latecomer.log_in(PASSWORD).errors == [], "the right password from a fresh address gets in"


# --- the throttle's rules, on a clock of our own ---------------------------------------------


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_client_waits_twice_as_long_after_each_wrong_guess_past_its_free_ones():
    clock = Clock()
    throttle = LoginThrottle(free_guesses=3, guesses_per_hour=1000, clock=clock)
    wrong = lambda: False  # noqa: E731
    assert [throttle.attempt("a", wrong).checked for _ in range(3)] == [True] * 3
    refused = throttle.attempt("a", lambda: True)
    assert not refused.granted and not refused.checked and refused.wait_s == FIRST_WAIT_S
    assert refused.reason == "Too many wrong passwords from your address: wait 2 s and try again."
    waits = []
    for _ in range(10):
        held = throttle.attempt("a", wrong)
        assert not held.checked
        waits.append(held.wait_s)
        clock.now += held.wait_s
        assert throttle.attempt("a", wrong).checked
    assert waits[:5] == [2, 4, 8, 16, 32] and waits[-1] == MAX_WAIT_S
    assert throttle.attempt("b", lambda: True).granted, "other addresses are not held up"
    clock.now += MAX_WAIT_S
    assert throttle.attempt("a", lambda: True).granted
    assert throttle.attempt("a", wrong).checked, "the right password clears the count"


def test_the_server_allows_so_many_wrong_guesses_an_hour_from_addresses_that_failed_before():
    clock = Clock()
    throttle = LoginThrottle(free_guesses=3, guesses_per_hour=5, clock=clock)
    wrong = lambda: False  # noqa: E731
    for n in range(5):
        assert throttle.attempt(f"10.0.0.{n}", wrong).checked  # first guesses do not count
        assert throttle.attempt(f"10.0.0.{n}", wrong).checked
        clock.now += 60
    refused = throttle.attempt("10.0.0.9", wrong)
    assert refused.checked, "an address without a wrong guess is always checked"
    held = throttle.attempt("10.0.0.9", lambda: True)
    assert not held.checked and held.reason == "Too many wrong passwords on this server: wait 55 min and try again."
    assert throttle.attempt("10.0.0.50", lambda: True).granted, "the legitimate user from a clean address gets in"
    clock.now += 3600 - 5 * 60
    assert throttle.attempt("10.0.0.9", lambda: True).granted, "a slot frees when the oldest guess is an hour old"


def test_guesses_sent_in_parallel_are_counted_one_by_one():
    throttle = LoginThrottle(free_guesses=3, guesses_per_hour=1000)
    checked = []
    barrier = threading.Barrier(50)

    def guess():
        barrier.wait()
        checked.append(throttle.attempt("a", lambda: False).checked)

    threads = [threading.Thread(target=guess) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert checked.count(True) == 3 and checked.count(False) == 47

"""Password guesses, slowed down per client and for the whole server (no Streamlit here).

The app has one password (``RAGKIT_APP_PASSWORD``), so guessing it is the attack to slow:

- **per client** (an address): its first ``free_guesses`` wrong guesses are answered at
  once; after that each further guess must wait twice as long as the one before (2 s,
  4 s, 8 s ... at most 5 minutes) since its last wrong guess. A guess sent earlier is
  not checked at all: it is answered with how long to wait.
- **for the server**: at most ``guesses_per_hour`` wrong guesses in any hour from clients
  that have already guessed wrong, whatever their number of addresses. Past that, such
  clients wait until the oldest wrong guess of the hour ages out.

The legitimate user still gets in: a client without a wrong guess in the last hour is
always checked, whatever others are doing, so the right password typed from one's own
address is accepted at once even during an attack; after a typo the user waits seconds
(their own count), or, when an attack from many addresses has used the server's hourly
allowance, until it frees a slot. The right password clears the client's count.
Counters live in the app's memory: restarting the app clears them.

Everything is decided under one lock with the check itself, so guesses sent in parallel
are counted one by one.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

FIRST_WAIT_S = 2.0
"""Wait after the first wrong guess past a client's free ones; it doubles with each one."""
MAX_WAIT_S = 300.0
"""Longest wait one client is made to keep between guesses."""
FORGET_AFTER_S = 3600.0
"""A client's wrong guesses are forgotten this long after its last one."""
MAX_CLIENTS = 100_000
"""Clients remembered at most (the least recently seen are forgotten first)."""


@dataclass(frozen=True)
class LoginAttempt:
    """What became of one login attempt."""

    granted: bool
    checked: bool
    """False when the password was not even compared (the client must wait)."""
    wait_s: float = 0.0
    reason: str = ""
    """For the user: why they must wait (empty when the guess was checked)."""


@dataclass
class _Client:
    failures: int = 0
    last_failure: float = 0.0


class LoginThrottle:
    """Per-client and server-wide limits on wrong password guesses (see the module doc)."""

    def __init__(self, free_guesses: int = 3, guesses_per_hour: int = 100,
                 clock: Callable[[], float] = time.monotonic):
        self.free_guesses = free_guesses
        self.guesses_per_hour = guesses_per_hour
        self._clock = clock
        self._lock = threading.Lock()
        self._clients: OrderedDict[str, _Client] = OrderedDict()
        self._recent: deque[float] = deque()  # times of wrong guesses by clients that had failed before

    def attempt(self, client: str, check: Callable[[], bool]) -> LoginAttempt:
        """Run ``check`` (the password comparison) if ``client`` may guess now."""
        with self._lock:
            now = self._clock()
            state = self._client(client, now)
            own_wait = self._own_wait(state, now)
            if own_wait > 0:
                return LoginAttempt(False, False, own_wait, f"Too many wrong passwords from your address: "
                                                            f"wait {_duration(own_wait)} and try again.")
            server_wait = self._server_wait(now) if state.failures else 0.0
            if server_wait > 0:
                return LoginAttempt(False, False, server_wait, "Too many wrong passwords on this server: wait "
                                                               f"{_duration(server_wait)} and try again.")
            if check():
                self._clients.pop(client, None)
                return LoginAttempt(True, True)
            if state.failures:
                self._recent.append(now)
            state.failures += 1
            state.last_failure = now
            return LoginAttempt(False, True)

    def _client(self, client: str, now: float) -> _Client:
        state = self._clients.get(client)
        if state is None or now - state.last_failure > FORGET_AFTER_S:
            state = _Client()
            self._clients[client] = state
        self._clients.move_to_end(client)
        while len(self._clients) > MAX_CLIENTS:
            self._clients.popitem(last=False)
        return state

    def _own_wait(self, state: _Client, now: float) -> float:
        beyond = state.failures - self.free_guesses
        if beyond < 0:
            return 0.0
        return min(FIRST_WAIT_S * 2 ** beyond, MAX_WAIT_S) - (now - state.last_failure)

    def _server_wait(self, now: float) -> float:
        while self._recent and now - self._recent[0] >= 3600:
            self._recent.popleft()
        if len(self._recent) < self.guesses_per_hour:
            return 0.0
        return self._recent[0] + 3600 - now


def _duration(seconds: float) -> str:
    seconds = max(1, round(seconds))
    if seconds < 120:
        return f"{seconds} s"
    return f"{round(seconds / 60)} min"

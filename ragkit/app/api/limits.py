"""The HTTP API's limits: request bodies read only up to a size, requests per key per minute,
and questions answered a few at a time on their own threads.

- Bodies: a ``Content-Length`` over the limit is refused (413) before a byte of the body is
  read; a body without one (chunked) is read until it passes the limit, then refused.
- Rate: a token bucket per key (and per client address for wrong keys): a burst of
  ``per_minute`` requests, then one every 60/N seconds; a refusal says when to come back
  (``Retry-After``).
- Turns: API questions run on a pool of ``api_concurrent_turns`` threads of their own, never
  on the server's event loop (which also serves the page) nor on the page's script threads;
  past ``api_max_waiting_turns`` waiting, 503 with ``Retry-After``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ragkit.errors import ApiError

Receive = Callable[[], Awaitable[dict]]
MAX_BUCKETS = 10_000  # identities remembered before full buckets are forgotten


def too_large(limit: int, what: str, setting: str) -> ApiError:
    """413: the body is over ``limit`` bytes."""
    return ApiError(413, f"The {what} is larger than {_size(limit)} ({setting}).", "invalid_request_error",
                    "request_too_large")


def _size(count: int) -> str:
    return f"{count / 1024 / 1024:g} MB" if count >= 1024 * 1024 else f"{count / 1024:g} KiB"


def declared_length(headers, limit: int, what: str, setting: str) -> int | None:
    """The request's ``Content-Length`` (None without one); 413 when it is over ``limit``, 400
    when it is not a number."""
    value = headers.get("content-length")
    if value is None:
        return None
    try:
        length = int(value)
    except ValueError:
        raise ApiError(400, "Content-Length is not a number.") from None
    if length < 0:
        raise ApiError(400, "Content-Length is negative.")
    if length > limit:
        raise too_large(limit, what, setting)
    return length


def limited_receive(receive: Receive, limit: int, what: str, setting: str) -> Receive:
    """``receive`` that raises 413 once the body has passed ``limit`` bytes."""
    seen = 0

    async def receive_within_limit() -> dict:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise too_large(limit, what, setting)
        return message

    return receive_within_limit


async def read_body(request, limit: int, what: str = "request body",
                    setting: str = "RAGKIT_API_MAX_BODY_KB") -> bytes:
    """The whole body, refused (413) as soon as it is known to be over ``limit`` bytes."""
    declared_length(request.headers, limit, what, setting)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise too_large(limit, what, setting)
    return bytes(body)


class RateLimiter:
    """Token buckets by identity: ``per_minute`` requests at once, refilled at per_minute/60 a
    second. ``per_minute`` 0: no limit."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic):
        self.per_minute = per_minute
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # identity -> (tokens, when)
        self._lock = threading.Lock()

    def _level(self, identity: str, now: float) -> float:
        tokens, when = self._buckets.get(identity, (float(self.per_minute), now))
        return min(float(self.per_minute), tokens + (now - when) * self.per_minute / 60.0)

    def take(self, identity: str, what: str = "this API key") -> None:
        """Count one request; ApiError 429 with ``Retry-After`` when the bucket is empty."""
        if not self.per_minute:
            return
        with self._lock:
            now = self._clock()
            tokens = self._level(identity, now)
            if tokens < 1.0:
                wait = math.ceil((1.0 - tokens) * 60.0 / self.per_minute)
                raise ApiError(429, f"Rate limit reached for {what}: {self.per_minute} requests a minute "
                               f"(RAGKIT_API_RATE_LIMIT_PER_MINUTE). Try again in {wait} s.", "rate_limit_error",
                               "rate_limit_exceeded", headers={"Retry-After": str(wait)})
            self._buckets[identity] = (tokens - 1.0, now)
            if len(self._buckets) > MAX_BUCKETS:
                self._forget_full(now)

    def check(self, identity: str, what: str) -> None:
        """429 when ``identity``'s bucket is empty, without counting a request."""
        if not self.per_minute:
            return
        with self._lock:
            tokens = self._level(identity, self._clock())
        if tokens < 1.0:
            wait = math.ceil((1.0 - tokens) * 60.0 / self.per_minute)
            raise ApiError(429, f"Too many requests with wrong API keys from {what}. Try again in {wait} s.",
                           "rate_limit_error", "rate_limit_exceeded", headers={"Retry-After": str(wait)})

    def _forget_full(self, now: float) -> None:
        for identity in [i for i in self._buckets if self._level(i, now) >= self.per_minute]:
            del self._buckets[identity]


class TurnPool:
    """A few threads that answer API questions; a bounded number may wait for them."""

    def __init__(self, workers: int, max_waiting: int):
        self.workers, self.max_waiting = workers, max_waiting
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ragkit-api-turn")
        self._pending = 0
        self._lock = threading.Lock()

    @property
    def pending(self) -> int:
        """Questions running or waiting."""
        return self._pending

    def submit(self, work: Callable[[], Any]) -> Future:
        """Run ``work`` on an answerer; ApiError 503 (``Retry-After``) when too many wait already."""
        with self._lock:
            if self._pending >= self.workers + self.max_waiting:
                raise ApiError(503, f"The server is busy: {self._pending} questions are being answered or wait "
                               "(RAGKIT_API_MAX_WAITING_TURNS). Try again shortly.", "server_error", "overloaded",
                               headers={"Retry-After": "5"})
            self._pending += 1
        try:
            future = self._executor.submit(work)
        except BaseException:
            self._done()
            raise
        future.add_done_callback(lambda _: self._done())
        return future

    def _done(self) -> None:
        with self._lock:
            self._pending -= 1

"""API keys (``RAGKIT_API_KEYS``): who may call the HTTP API, and which knowledge bases each
key may use.

A key is checked in constant time: the presented secret's SHA-256 is compared with every
configured key's (``hmac.compare_digest``), all of them, whatever matches, so neither the
time taken nor an early exit tells how much of a guess was right. Secrets are kept only as
digests here; a key is named in logs and messages by its place in the setting ("key 2"),
never by its secret.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from ragkit.config import Settings, parse_api_keys
from ragkit.errors import ApiError
from ragkit.types import KnowledgeBaseInfo

BEARER = "bearer "


@dataclass(frozen=True)
class ApiKey:
    """One configured key: its label ("key 2"), and the knowledge bases it may use by name or
    id (None: every one, now and later)."""

    label: str
    scope: tuple[str, ...] | None
    digest: bytes

    def allowed(self, bases: list[KnowledgeBaseInfo]) -> list[KnowledgeBaseInfo]:
        """The knowledge bases of ``bases`` this key may use, in their order. A name matches
        whatever its case and spacing (as the page's names do), an id exactly; a knowledge base
        renamed away from the name a key gives is no longer this key's."""
        if self.scope is None:
            return list(bases)
        names = {" ".join(name.split()).lower() for name in self.scope}
        return [base for base in bases if base.id in self.scope or " ".join(base.name.split()).lower() in names]


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


class KeyRing:
    """The configured keys, as digests."""

    def __init__(self, settings: Settings):
        text = settings.api_keys.get_secret_value() if settings.api_keys is not None else ""
        self.keys = [ApiKey(f"key {number}", scope, _digest(secret))
                     for number, (secret, scope) in enumerate(parse_api_keys(text) if text else [], start=1)]

    @property
    def enabled(self) -> bool:
        """True when at least one key is configured (the API answers)."""
        return bool(self.keys)

    def authenticate(self, authorization: str | None) -> ApiKey:
        """The key an ``Authorization: Bearer <secret>`` header presents; ApiError 401 for a
        missing or malformed header or a secret that is no key (the message never repeats it)."""
        header = (authorization or "").strip()
        if not header:
            raise ApiError(401, "No API key: send 'Authorization: Bearer <key>' with a key of RAGKIT_API_KEYS.",
                           "authentication_error", "missing_api_key")
        if not header.lower().startswith(BEARER) or not header[len(BEARER):].strip():
            raise ApiError(401, "The Authorization header must read 'Bearer <key>'.", "authentication_error",
                           "invalid_api_key")
        presented = _digest(header[len(BEARER):].strip())
        found = None
        for key in self.keys:  # every key is compared, whichever matches
            if hmac.compare_digest(presented, key.digest):
                found = key
        if found is None:
            raise ApiError(401, "Incorrect API key: it is not one of RAGKIT_API_KEYS.", "authentication_error",
                           "invalid_api_key")
        return found

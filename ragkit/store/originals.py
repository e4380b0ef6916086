"""The original files, kept by content: ``originals/ab/abcdef…`` (the SHA-256 of the bytes).

A document's record already names its bytes (``content_hash``), so the same file in two
knowledge bases, or two versions that went back to the same bytes, is kept once. A file
is written before the version that needs it becomes current, and removed only when no
document in any knowledge base has those bytes any more (``discard_unused``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

from ragkit.errors import InputError

log = logging.getLogger(__name__)


class OriginalStore:
    """Files by SHA-256 under one folder (created on first write)."""

    def __init__(self, root: Path):
        self.root = root

    def path(self, digest: str) -> Path:
        """Where the file with this hash is (or would be) kept."""
        if len(digest) < 8 or not all(char in "0123456789abcdef" for char in digest):
            raise InputError(f"not a SHA-256 hex digest: {digest!r}")
        return self.root / digest[:2] / digest

    def has(self, digest: str) -> bool:
        """True when the file with this hash is kept."""
        return self.path(digest).is_file()

    def put(self, data: bytes, digest: str | None = None) -> str:
        """Keep ``data`` (once: a file already kept is not written again); returns its hash.
        Written to a temporary file and renamed, so a crash never leaves half a file."""
        digest = digest or hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if target.is_file():
            return digest
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".incoming-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return digest

    def read(self, digest: str) -> bytes | None:
        """The kept bytes, or None when they are not kept (a document added before originals
        were kept, or the folder was cleaned by hand)."""
        try:
            return self.path(digest).read_bytes()
        except (OSError, ValueError):
            return None

    def discard(self, digest: str) -> None:
        """Remove the file with this hash (callers check that no document needs it)."""
        try:
            self.path(digest).unlink(missing_ok=True)
        except (OSError, ValueError) as exc:  # only costs disk space
            log.warning("could not remove the original %s: %s", digest, exc)

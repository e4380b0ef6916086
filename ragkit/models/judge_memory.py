"""Which models can give structured replies (rewrites, grades), remembered across processes.

A small model asked for JSON often times out or replies with something else; asking it
again at every CLI call and every app start wastes the user's time. ``JudgeMemory`` keeps,
per model and base URL, how many structured calls in a row were unusable, in a JSON file
in the data directory; after ``GIVE_UP_AFTER`` of them the model is not asked again until
the entry expires (``RAGKIT_JUDGE_MEMORY_HOURS``), so a model that is upgraded or a server
that was only busy is tried again one day. A usable reply clears the count.

It also keeps which response format a server accepts: a server that refuses the JSON-schema
format (llama.cpp's Python server answers 500) is, once refused, asked in JSON mode at once
(``json_format`` / ``record_json_format``), with the same expiry.

``RAGKIT_MODEL_JUDGE`` overrides it: ``off`` never asks a model for structured replies
(the offline rewrite and grade are used), ``on`` always asks (at most once per turn),
``auto`` (the default) asks unless the model was found unusable.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)
GIVE_UP_AFTER = 2  # unusable structured replies in a row before a model is no longer asked
FILE_NAME = "model_usability.json"
FORMATS = "response_formats"  # the file's entry naming, per model, the JSON format its server takes
JSON_SCHEMA, JSON_OBJECT = "json_schema", "json_object"


class JudgeMemory:
    """Unusable structured replies per model, kept in ``path`` (see the module's docstring)."""

    def __init__(self, path: Path, expiry_s: float):
        self.path = path
        self.expiry_s = expiry_s
        self._lock = threading.Lock()

    @staticmethod
    def key(model: str, base_url: str) -> str:
        """The entry's key: the model and where it is served."""
        return f"{model}@{(base_url or 'https://api.openai.com/v1').rstrip('/')}"

    def usable(self, model: str, base_url: str) -> bool:
        """False while the model's last ``GIVE_UP_AFTER`` structured replies were unusable
        and that is more recent than the expiry."""
        entry = self._read().get(self.key(model, base_url))
        if not isinstance(entry, dict):
            return True
        fresh = time.time() - float(entry.get("since", 0)) < self.expiry_s
        return not (fresh and int(entry.get("failures", 0)) >= GIVE_UP_AFTER)

    def failures(self, model: str, base_url: str) -> int:
        """Unusable structured replies in a row (0 once expired)."""
        entry = self._read().get(self.key(model, base_url))
        entry = entry if isinstance(entry, dict) else {}
        if time.time() - float(entry.get("since", 0)) >= self.expiry_s:
            return 0
        return int(entry.get("failures", 0))

    def record(self, model: str, base_url: str, usable: bool, why: str = "") -> None:
        """Remember one structured reply: usable clears the count, unusable adds to it."""
        with self._lock:
            data = self._read()
            key = self.key(model, base_url)
            if usable:
                if key not in data:
                    return
                data.pop(key)
            else:
                failures = self.failures(model, base_url) + 1
                data[key] = {"failures": failures, "since": time.time(), "why": why[:200]}
            self._write(data)

    def json_format(self, model: str, base_url: str) -> str:
        """The response format to ask this model for first: JSON_OBJECT when its server
        refused JSON_SCHEMA (within the expiry), else JSON_SCHEMA."""
        formats = self._read().get(FORMATS)
        entry = formats.get(self.key(model, base_url)) if isinstance(formats, dict) else None
        if isinstance(entry, dict) and time.time() - float(entry.get("since", 0)) < self.expiry_s:
            return JSON_OBJECT if entry.get("format") == JSON_OBJECT else JSON_SCHEMA
        return JSON_SCHEMA

    def record_json_format(self, model: str, base_url: str, accepted: str) -> None:
        """Remember the response format the model's server accepted (JSON_SCHEMA forgets a refusal)."""
        with self._lock:
            data = self._read()
            formats = data.get(FORMATS) if isinstance(data.get(FORMATS), dict) else {}
            key = self.key(model, base_url)
            if accepted == JSON_SCHEMA:
                if key not in formats:
                    return
                formats.pop(key)
            else:
                formats[key] = {"format": accepted, "since": time.time()}
            data[FORMATS] = formats
            self._write(data)

    def _read(self) -> dict:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict) -> None:
        """Replace the file atomically (another process may read it at the same time)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".usability-")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=1)
            os.replace(temporary, self.path)
        except OSError as exc:  # a read-only data directory only costs the memory
            log.warning("could not remember model usability in %s: %s", self.path, exc)

"""The HTTP API's tests' shared pieces: the real app (``streamlit run streamlit_app.py`` on a
free loopback port, its own data dir) with API keys, and small HTTP helpers."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from conftest import REPO, free_port, serve

ORION = ("# The Orion Bridge\n\nThe Orion Bridge was completed in 1932 by the engineer Mara Lind. It spans the "
         "Vessel river and is 412 metres long. Its last inspection took place in 2019.\n")


@dataclass
class RunningApp:
    """A started app: where it answers and where its data lives."""

    url: str
    port: int
    data_dir: Path
    log: Path

    @property
    def v1(self) -> str:
        return self.url + "/v1"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


@contextlib.contextmanager
def api_app(tmp_path: Path, **settings: str):
    """`streamlit run streamlit_app.py` with these RAGKIT_* (and OPENAI_*) variables."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMLIT_", "OPENAI_", "RAGKIT_"))}
    env["RAGKIT_EMBEDDING_BACKEND"] = os.environ.get("RAGKIT_EMBEDDING_BACKEND", "torch")
    data = tmp_path / "data"
    env.update({"RAGKIT_DATA_DIR": str(data), **settings})
    command = [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.headless", "true",
               "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false"]
    log = tmp_path / "streamlit.log"
    with open(log, "w") as out, serve(command, f"http://127.0.0.1:{port}/_stcore/health", 90, "the app", cwd=REPO,
                                      env=env, stdout=out, stderr=subprocess.STDOUT):
        yield RunningApp(f"http://127.0.0.1:{port}", port, data, log)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def upload(app: RunningApp, key: str, *files: tuple[str, bytes], **fields: str) -> httpx.Response:
    """POST /api/documents with these files (name, bytes) and form fields."""
    return httpx.post(app.url + "/api/documents", headers=bearer(key), timeout=300, data=fields,
                      files=[("file", (name, data)) for name, data in files])


def wait_until(condition, timeout_s: float = 30.0, what: str = "the condition") -> None:
    """Poll ``condition`` until it is true; fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {timeout_s:.0f} s")


def error_of(response: httpx.Response) -> dict:
    """The OpenAI-style error object of a refused request (its shape checked)."""
    body = response.json()
    assert set(body) == {"error"} and {"message", "type", "param", "code"} <= set(body["error"]), body
    return body["error"]

"""End-to-end check of the HTTP API with Open WebUI, a chat client nobody here wrote.

Not part of the suite: Open WebUI is a 7 GB install (torch and its own RAG stack). Once:

    python -m venv /tmp/owui && /tmp/owui/bin/pip install open-webui==0.12.4

then, offline from there on:

    python scripts/open_webui_check.py --open-webui /tmp/owui/bin/open-webui

It starts ragkit (`streamlit run streamlit_app.py`, a temporary data dir, RAGKIT_API_KEYS, the
page behind a password), adds a document through `POST /api/documents`, starts Open WebUI
pointed at ragkit's /v1 (OPENAI_API_BASE_URL, OPENAI_API_KEY; its own login and update checks
off), and drives Open WebUI's page in headless Chromium: the model list shows ragkit's
knowledge bases by name, a question gets the cited fact and a follow-up ("How long is it?")
is answered from the history Open WebUI sends. Screenshots go to the --out folder.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KEY = "open-webui-check-key-0123"
ORION = ("# The Orion Bridge\n\nThe Orion Bridge was completed in 1932 by the engineer Mara Lind. It spans the "
         "Vessel river and is 412 metres long. Its last inspection took place in 2019.\n")
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url: str, timeout_s: float) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"nothing answered at {url} within {timeout_s:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--open-webui", default="/tmp/owui/bin/open-webui", help="the open-webui command")
    parser.add_argument("--out", default="open-webui-check", help="folder for the screenshots")
    args = parser.parse_args()
    import httpx
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    out.mkdir(exist_ok=True)
    ragkit_port, webui_port = free_port(), free_port()
    with tempfile.TemporaryDirectory(prefix="owui-check-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAGKIT_", "STREAMLIT_"))}
        ragkit = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.headless", "true",
             "--server.address", "127.0.0.1", "--server.port", str(ragkit_port)], cwd=REPO,
            env={**env, "RAGKIT_DATA_DIR": f"{tmp}/ragkit", "RAGKIT_API_KEYS": f"{KEY}:*",
                 "RAGKIT_APP_PASSWORD": "the page's own", "HF_HUB_OFFLINE": "1"},
            stdout=open(f"{tmp}/ragkit.log", "w"), stderr=subprocess.STDOUT)
        webui = None
        try:
            wait_for(f"http://127.0.0.1:{ragkit_port}/_stcore/health", 120)
            added = httpx.post(f"http://127.0.0.1:{ragkit_port}/api/documents", timeout=300,
                               headers={"Authorization": f"Bearer {KEY}"},
                               files=[("file", ("orion.md", ORION.encode()))]).json()
            print("ragkit:", added["data"][0]["message"])
            webui = subprocess.Popen(
                [args.open_webui, "serve", "--host", "127.0.0.1", "--port", str(webui_port)], cwd=tmp,
                env={**env, "DATA_DIR": f"{tmp}/webui", "WEBUI_AUTH": "False", "OFFLINE_MODE": "true",
                     "HF_HUB_OFFLINE": "1", "ENABLE_OLLAMA_API": "false", "ENABLE_VERSION_UPDATE_CHECK": "false",
                     "OPENAI_API_BASE_URL": f"http://127.0.0.1:{ragkit_port}/v1", "OPENAI_API_KEY": KEY,
                     "RAG_EMBEDDING_MODEL_AUTO_UPDATE": "false", "ANONYMIZED_TELEMETRY": "false",
                     "SCARF_NO_ANALYTICS": "true", "DO_NOT_TRACK": "true"},
                stdout=open(f"{tmp}/webui.log", "w"), stderr=subprocess.STDOUT)
            wait_for(f"http://127.0.0.1:{webui_port}/health", 300)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=BROWSER_ARGS)
                page = browser.new_page(viewport={"width": 1300, "height": 900})
                page.goto(f"http://127.0.0.1:{webui_port}/", timeout=120_000)
                page.get_by_text("All knowledge bases of this key").first.wait_for(timeout=120_000)
                go = page.get_by_role("button", name=re.compile("Let's Go", re.I))
                if go.count():
                    go.first.click()
                page.keyboard.press("Escape")
                for question, fact in (("Who built the Orion Bridge?", "Mara Lind"), ("How long is it?", "412 metres")):
                    box = page.locator("#chat-input")
                    box.click()
                    box.type(question)
                    page.keyboard.press("Enter")
                    page.get_by_text(fact).first.wait_for(timeout=120_000)
                    print(f"Open WebUI: {question!r} -> {fact!r} shown")
                page.wait_for_timeout(3000)
                page.screenshot(path=str(out / "open-webui-chat.png"))
                browser.close()
            print(f"passed; screenshot in {out / 'open-webui-chat.png'}")
            return 0
        finally:
            for process in (webui, ragkit):
                if process is not None:
                    process.terminate()
                    try:
                        process.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        process.kill()


if __name__ == "__main__":
    sys.exit(main())

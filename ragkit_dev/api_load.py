"""``python -m ragkit bench --api``: does the HTTP API leave the page alone? Printed, never asserted.

The real app (``streamlit run streamlit_app.py`` on a free loopback port, a temporary data dir,
RAGKIT_API_KEYS set) is given a few short documents through ``POST /api/documents``; then a
headless Chromium (Debian's ``/usr/bin/chromium`` driven by Playwright, as the browser tests
do) asks the Chat page questions, one after the other, and times each from Enter to the
cited fact on the screen:

- ``api_page_idle_ms_p50`` / ``_max``: with nothing else going on;
- ``api_page_loaded_ms_p50`` / ``_max``: while ``clients`` API clients (the official ``openai``
  package, half of them streaming) ask question after question without pause;
- ``api_page_slowdown_p50``: loaded p50 over idle p50 (the issue asks for at most 2);
- ``api_answers``, ``api_answer_p50_ms`` / ``_p95_ms``, ``api_errors``: what the API clients got
  meanwhile (an answer waits its turn for one of RAGKIT_API_CONCURRENT_TURNS answerers).
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from ragkit_dev.eval import percentile

REPO = Path(__file__).resolve().parents[1]
KEY = "bench-api-key-0123456789"
CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
FIRST = ["Aldric", "Brenna", "Corvin", "Delphine", "Eskil", "Fenna", "Garrick", "Hollis", "Isolde", "Jory",
         "Kestrel", "Liora", "Marek", "Nerys", "Osric", "Pella"]
LAST = ["Varga", "Quill", "Ostrander", "Maelstrom", "Thorne", "Ashdown", "Bellweather", "Crane", "Dunmore",
        "Everly", "Fairchild", "Greaves", "Holloway", "Iverson", "Jessup", "Kilbride"]
PLACES = ["Tamsk", "Orlev", "Veyra", "Kandor", "Lusk", "Marrow", "Nyth", "Ostra", "Pell", "Quorn", "Rask",
          "Sable", "Tarn", "Umber", "Vale", "Wick"]
Report = Callable[[str], None]


def fact_documents() -> list[tuple[str, str, str, str]]:
    """(file name, text, question, answer) for invented towers, one a document."""
    rng = random.Random(35)
    out = []
    for number, place in enumerate(PLACES):
        person = f"{FIRST[number]} {LAST[(number * 7) % len(LAST)]}"
        year, height = rng.randint(1850, 1990), rng.randint(40, 300)
        text = (f"# The {place} Tower\n\nThe {place} Tower was designed by the architect {person} in {year}. "
                f"It stands on the old market square of {place} and is {height} metres tall. Visitors climb "
                f"its {height * 3} steps to a gallery that looks over the river.\n")
        out.append((f"{place.lower()}_tower.md", text, f"Who designed the {place} Tower?", person))
    return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(url: str, timeout_s: float) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"the app did not answer at {url} within {timeout_s:.0f} s")


def _upload(base: str, docs) -> None:
    """Every document through the API (which also waits for the service to load)."""
    import httpx

    files = [("file", (name, text.encode(), "text/markdown")) for name, text, _, _ in docs]
    response = httpx.post(f"{base}/api/documents", files=files, headers={"Authorization": f"Bearer {KEY}"},
                          timeout=600)
    response.raise_for_status()
    refused = [r for r in response.json()["data"] if r["status"] == "refused"]
    if refused:
        raise RuntimeError(f"the bench's documents were refused: {refused}")


def _page_answer_ms(page, question: str, answer: str) -> float:
    """Ask on the Chat page; milliseconds until the answer shows the fact."""
    box = page.get_by_placeholder("Ask a question about your documents")
    box.wait_for()
    started = time.perf_counter()
    box.fill(question)
    box.press("Enter")
    page.get_by_test_id("stChatMessage").filter(has_text=answer).last.wait_for(timeout=180_000)
    return (time.perf_counter() - started) * 1000


def run_api_bench(clients: int = 8, page_questions: int = 6, turns: int | None = None,
                  report: Report | None = None) -> dict:
    """The figures of the module docstring."""
    import openai
    from playwright.sync_api import sync_playwright

    say = report or (lambda stage: None)
    if not Path(CHROMIUM).exists():
        raise RuntimeError(f"bench --api drives Chromium at {CHROMIUM} (apt-get install chromium)")
    docs = fact_documents()
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="ragkit-api-bench-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "STREAMLIT_"))}
        env.update({"RAGKIT_DATA_DIR": str(Path(tmp) / "data"), "RAGKIT_API_KEYS": f"{KEY}:*",
                    "RAGKIT_API_RATE_LIMIT_PER_MINUTE": "0", "HF_HUB_OFFLINE": "1"})
        if turns:
            env["RAGKIT_API_CONCURRENT_TURNS"] = str(turns)
        command = [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.headless", "true",
                   "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats",
                   "false"]
        say("starting the app")
        with open(Path(tmp) / "app.log", "w") as log:
            app = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                _wait_for(base + "/_stcore/health", 120)
                say(f"adding {len(docs)} documents through /api/documents")
                _upload(base, docs)
                return _measure(base, docs, clients, page_questions, say, openai, sync_playwright) | {
                    "api_concurrent_turns": turns or "default"}
            finally:
                app.terminate()
                try:
                    app.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    app.kill()


def _measure(base, docs, clients, page_questions, say, openai, sync_playwright) -> dict:
    api_latencies: list[float] = []
    api_errors: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def api_client(number: int) -> None:
        client = openai.OpenAI(base_url=base + "/v1", api_key=KEY, max_retries=0, timeout=300)
        rng = random.Random(number)
        while not stop.is_set():
            _, _, question, answer = rng.choice(docs)
            started = time.perf_counter()
            try:
                if number % 2:
                    text = "".join(chunk.choices[0].delta.content or "" for chunk in client.chat.completions.create(
                        model="ragkit", messages=[{"role": "user", "content": question}], stream=True)
                        if chunk.choices)
                else:
                    text = client.chat.completions.create(
                        model="ragkit", messages=[{"role": "user", "content": question}]).choices[0].message.content
                if answer not in text:
                    raise ValueError(f"{question!r} answered {text!r}")
            except Exception as exc:  # counted, the bench goes on
                with lock:
                    api_errors.append(f"{type(exc).__name__}: {exc}")
                continue
            with lock:
                api_latencies.append((time.perf_counter() - started) * 1000)

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(base)
        say("the page, idle")
        _page_answer_ms(page, docs[0][2], docs[0][3])  # warm up (the first answer loads the grader's parts)
        idle = [_page_answer_ms(page, q, a) for _, _, q, a in docs[1:1 + page_questions]]
        say(f"the page, with {clients} API clients asking")
        threads = [threading.Thread(target=api_client, args=(n,), daemon=True) for n in range(clients)]
        for thread in threads:
            thread.start()
        deadline = time.time() + 120
        while len(api_latencies) < clients and time.time() < deadline:  # every client under way
            time.sleep(0.2)
        loaded = [_page_answer_ms(page, q, a) for _, _, q, a in docs[1 + page_questions:1 + 2 * page_questions]]
        stop.set()
        for thread in threads:
            thread.join(timeout=300)
        browser.close()
    idle_p50, loaded_p50 = percentile(idle, 0.5), percentile(loaded, 0.5)
    return {
        "api_clients": clients,
        "api_page_idle_ms_p50": round(idle_p50),
        "api_page_idle_ms_max": round(max(idle)),
        "api_page_loaded_ms_p50": round(loaded_p50),
        "api_page_loaded_ms_max": round(max(loaded)),
        "api_page_slowdown_p50": round(loaded_p50 / idle_p50, 2),
        "api_answers": len(api_latencies),
        "api_answer_p50_ms": round(percentile(api_latencies, 0.5)) if api_latencies else None,
        "api_answer_p95_ms": round(percentile(api_latencies, 0.95)) if api_latencies else None,
        "api_errors": len(api_errors),
        "api_first_error": api_errors[0][:200] if api_errors else "",
    }

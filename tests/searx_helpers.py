"""A SearxNG stand-in for tests: a real HTTP server on 127.0.0.1 speaking its JSON API."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

MONGOLIA = [
    {"title": "Mongolia - Wikipedia", "url": "https://en.wikipedia.org/wiki/Mongolia",
     "content": "Ulaanbaatar is the capital of Mongolia and its largest city."},
    {"title": "Travel guide", "url": "https://travel.example/mongolia",
     "content": "The steppe covers much of the country."},
]


class SearxServer:
    """A SearxNG stand-in on 127.0.0.1: answers ``/search`` with ``results`` as JSON (or
    ``body`` as it is, after ``delay_s``); every query is kept in ``queries``."""

    def __init__(self, results=(), body: bytes | None = None, status: int = 200, delay_s: float = 0.0):
        self.results, self.body, self.status, self.delay_s = list(results), body, status, delay_s
        self.queries: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                url = urlparse(self.path)
                outer.queries.append({key: values[0] for key, values in parse_qs(url.query).items()} |
                                     {"path": url.path})
                if outer.delay_s:
                    time.sleep(outer.delay_s)
                data = outer.body if outer.body is not None else json.dumps(
                    {"query": "", "results": outer.results}).encode()
                try:
                    self.send_response(outer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address
        return f"http://{host}:{port}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

"""Throwaway database and vector servers for the team-deployment tests.

``PostgresCluster``: a real PostgreSQL cluster (``initdb`` in a temp dir, a free port on
127.0.0.1, its unix socket in the same temp dir), trust authentication for the user
``ragkit``, fsync off (a test's data need not survive a power cut). PostgreSQL refuses to
run as root, so as root the cluster belongs to ``nobody`` and its programs run through
``runuser``. ``ChromaServer``: ``chroma run`` (the chromadb package's own server) on a
free port with its data in a temp dir. ``TokenProxy``: nginx in front of a Chroma server,
letting through only requests that carry ``Authorization: Bearer <token>`` (and the
heartbeat). ``chroma run`` (Chroma 1.x's Rust server) has no auth of its own: with
``CHROMA_SERVER_AUTHN_*`` set it still answers every request without a token, and Chroma's
docs put a token-checking proxy in front of it, as a team deployment does.

Both are started once per test session (see ``conftest``); each test takes a database or
a collection of its own. Outside CI a missing server skips the test with the reason; in CI
(``CI=true``) it fails it.
"""

from __future__ import annotations

import glob
import grp
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

START_TIMEOUT_S = 60.0


def unavailable(reason: str) -> None:
    """Skip (fail in CI) a test whose server cannot be had."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must run the team-deployment tests)")
    pytest.skip(reason)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def postgres_bin_dir() -> Path | None:
    """The newest installed PostgreSQL server's bin directory (Debian keeps it off PATH)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class PostgresCluster:
    """A PostgreSQL cluster of its own, until ``stop``."""

    def __init__(self, bin_dir: Path):
        self.bin_dir = bin_dir
        self.folder = Path(tempfile.mkdtemp(prefix="ragkit-pg-"))  # not under pytest's 0700 tmp: see run_as
        self.port = free_port()
        self._owner = _unprivileged_user() if os.geteuid() == 0 else None
        if self._owner:
            os.chown(self.folder, self._owner.pw_uid, self._owner.pw_gid)

    def start(self) -> None:
        """initdb and start; RuntimeError with the server's log when it does not come up."""
        data = self.folder / "data"
        self._run("initdb", "-D", str(data), "-A", "trust", "-U", "ragkit", "-E", "UTF8", "--no-sync")
        self._start(data)

    def _start(self, data: Path) -> None:
        options = (f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self._run("pg_ctl", "-D", str(data), "-o", options, "-l", str(self.folder / "server.log"),
                  "-w", "-t", str(int(START_TIMEOUT_S)), "start")

    def url(self, database: str = "postgres") -> str:
        """The ``postgresql://`` URL of one database of the cluster."""
        return f"postgresql://ragkit@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """Create an empty database; returns its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        """Stop the server at once and delete its files."""
        try:
            self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")
        except RuntimeError:
            pass
        shutil.rmtree(self.folder, ignore_errors=True)

    def restart(self) -> None:
        """Stop and start the server again (same data, same port)."""
        self.stop_server()
        self._start(self.folder / "data")

    def start_server(self) -> None:
        """Start the server again after ``stop_server``."""
        self._start(self.folder / "data")

    def stop_server(self) -> None:
        """Stop the server, keeping its files (``restart`` brings it back)."""
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop")

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin_dir / program), *args]
        if self._owner:
            command = ["runuser", "-u", self._owner.pw_name, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=START_TIMEOUT_S, cwd=self.folder)
        if done.returncode != 0:
            log = self.folder / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{program} failed ({done.returncode}): {done.stderr.strip()[-2000:]} {tail}")


def _unprivileged_user() -> pwd.struct_passwd:
    """The account PostgreSQL runs as when the tests run as root: ``nobody`` (every Debian has it)."""
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        raise RuntimeError("running as root and there is no user 'nobody' to run PostgreSQL as") from None


def start_postgres() -> PostgresCluster:
    """A started cluster; ``unavailable`` when the binaries are missing or it fails to start."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        unavailable("PostgreSQL is not installed (no initdb; Debian package postgresql)")
    if os.geteuid() == 0 and not shutil.which("runuser"):
        unavailable("running as root and runuser is missing, so PostgreSQL cannot start")
    cluster = PostgresCluster(bin_dir)
    try:
        cluster.start()
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        cluster.stop()
        unavailable(f"the throwaway PostgreSQL cluster did not start: {exc}")
    return cluster


class ChromaServer:
    """``chroma run`` on a free port, until ``stop``."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="ragkit-chroma-"))
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """The server's http:// address."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start the server and wait until it answers; RuntimeError with its log when it does not."""
        chroma = shutil.which("chroma")
        if chroma is None:
            raise RuntimeError("the chroma command (package chromadb) is not on PATH")
        log = open(self.folder / "server.log", "ab")  # noqa: SIM115 - the server writes it until stop
        self.process = subprocess.Popen(
            [chroma, "run", "--path", str(self.folder / "data"), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=2):
                    return
            except OSError:
                time.sleep(0.2)
        self.stop(keep_files=True)
        tail = (self.folder / "server.log").read_text(errors="replace")[-2000:]
        shutil.rmtree(self.folder, ignore_errors=True)
        raise RuntimeError(f"chroma run did not answer on {self.url}: {tail}")

    def stop(self, keep_files: bool = False) -> None:
        """Stop the server (and delete its data unless ``keep_files``)."""
        stop_process_group(self.process)
        if not keep_files:
            shutil.rmtree(self.folder, ignore_errors=True)


def stop_process_group(process: subprocess.Popen | None) -> None:
    """Stop a server started in its own session and its children: SIGTERM, then SIGKILL after 20 s."""
    if process is not None and process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def start_chroma() -> ChromaServer:
    """A started Chroma server; ``unavailable`` when it cannot start."""
    server = ChromaServer()
    try:
        server.start()
    except RuntimeError as exc:
        unavailable(str(exc))
    return server


NGINX_CONF = """daemon off;
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log;
{user}
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_max_body_size 0;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location = /api/v2/heartbeat {{ proxy_pass {upstream}; }}
        location / {{
            if ($http_authorization != "Bearer {token}") {{ return 403 "RBAC: access denied"; }}
            proxy_pass {upstream};
            proxy_http_version 1.1;
            proxy_read_timeout 300s;
        }}
    }}
}}
"""


class TokenProxy:
    """nginx on a free port passing to ``upstream`` only the requests that carry ``token``, until ``stop``."""

    def __init__(self, upstream: str, token: str):
        if not all(ch.isalnum() or ch in "-._~!" for ch in token):
            raise ValueError("the test proxy writes the token into nginx's configuration: letters, digits, -._~! only")
        self.folder = Path(tempfile.mkdtemp(prefix="ragkit-nginx-"))
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        user = ""
        if os.geteuid() == 0:  # nginx's workers drop to this user; they write its temp folders
            owner = _unprivileged_user()
            user = f"user {owner.pw_name} {grp.getgrgid(owner.pw_gid).gr_name};"
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
        (self.folder / "nginx.conf").write_text(NGINX_CONF.format(
            folder=self.folder, user=user, port=self.port, upstream=upstream, token=token))

    @property
    def url(self) -> str:
        """The proxy's http:// address (what RAGKIT_CHROMA_URL names)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start nginx and wait until the heartbeat passes through; RuntimeError with its log when not."""
        nginx = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.path.exists(p)), None)
        if nginx is None:
            raise RuntimeError("nginx is not installed (Debian package nginx-light)")
        log = open(self.folder / "server.log", "ab")  # noqa: SIM115 - nginx writes it until stop
        self.process = subprocess.Popen([nginx, "-p", str(self.folder), "-c", str(self.folder / "nginx.conf"),
                                         "-e", str(self.folder / "error.log")],
                                        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=2):
                    return
            except OSError:
                time.sleep(0.2)
        tail = "".join((self.folder / name).read_text(errors="replace")[-1000:]
                       for name in ("server.log", "error.log") if (self.folder / name).exists())
        self.stop()
        raise RuntimeError(f"nginx did not pass the heartbeat on {self.url}: {tail}")

    def stop(self) -> None:
        """Stop nginx and delete its files."""
        stop_process_group(self.process)
        shutil.rmtree(self.folder, ignore_errors=True)


def start_token_proxy(upstream: str, token: str) -> TokenProxy:
    """A started ``TokenProxy``; ``unavailable`` when nginx is missing or does not start."""
    proxy = TokenProxy(upstream, token)
    try:
        proxy.start()
    except RuntimeError as exc:
        unavailable(str(exc))
    return proxy

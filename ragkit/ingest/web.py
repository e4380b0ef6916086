"""Web pages by address: fetched within limits, their main text taken by trafilatura.

Only ``http`` and ``https``. The host's addresses are resolved first and every one must be
public (not loopback, private, link-local, shared or reserved) unless
``RAGKIT_URL_ALLOW_PRIVATE`` says an intranet may be read; the connection then goes to
the address that was checked (a second lookup cannot swap in another), and each redirect
is checked the same way. The whole fetch has one deadline (``RAGKIT_URL_TIMEOUT_S``) and
a size limit (``RAGKIT_URL_MAX_MB``), both enforced while reading.

HTML pages give their main text (navigation, footers and ads left out; the whole visible
text when trafilatura finds no main part); plain text is read as text; a PDF is read as a
PDF. trafilatura is imported on the first page fetched.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from ragkit.errors import LoaderError
from ragkit.ingest.converters.html import load_html
from ragkit.ingest.decoding import decode_text_file
from ragkit.ingest.document import LoadedDocument, content_hash, normalize_text
from ragkit.ingest.loading import load_bytes

MAX_REDIRECTS = 5
USER_AGENT = "ragkit (+https://github.com/; fetches one page a user asked for)"
HTML_TYPES = ("text/html", "application/xhtml+xml")


@dataclass
class FetchedPage:
    """The body of a page and what the server said it is."""

    url: str  # after redirects
    content_type: str
    charset: str | None
    body: bytes


def check_address(url: str, allow_private: bool) -> tuple[str, str, int, list[str]]:
    """(scheme, host, port, addresses to connect to) of a URL that may be fetched, or
    LoaderError saying why not."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        shown = f"{scheme}:" if scheme else "no scheme"
        raise LoaderError(f"{url}: only http:// and https:// addresses can be added ({shown} given)")
    host = parts.hostname
    if not host:
        raise LoaderError(f"{url}: the address names no host")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise LoaderError(f"{url}: the address has an invalid port") from None
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise LoaderError(f"{url}: the host {host} cannot be found ({exc}): check the address") from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not allow_private:
        for address in addresses:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
            if ip.version == 6 and ip.ipv4_mapped:
                ip = ip.ipv4_mapped
            if not ip.is_global:
                raise LoaderError(
                    f"{url}: {host} is a {_kind(ip)} address ({address}); pages on this machine or a private "
                    "network are not fetched unless RAGKIT_URL_ALLOW_PRIVATE=true"
                )
    return scheme, host, port, addresses


def _kind(ip) -> str:
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_private:
        return "private"
    return "reserved"


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection to an address checked beforehand (not a second DNS lookup)."""

    def __init__(self, host: str, port: int, address: str, timeout: float):
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        """Connect to the checked address."""
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """An HTTPS connection to a checked address, verifying the certificate for the host name."""

    def __init__(self, host: str, port: int, address: str, timeout: float):
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address

    def connect(self) -> None:
        """Connect to the checked address; TLS with the host's name (SNI, certificate)."""
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def fetch(url: str, timeout_s: float, max_bytes: int, allow_private: bool) -> FetchedPage:
    """GET ``url`` (following up to MAX_REDIRECTS redirects, each checked), within one
    deadline and a size limit; LoaderError with the reason otherwise."""
    deadline = time.monotonic() + timeout_s
    current = url.strip()
    for _ in range(MAX_REDIRECTS + 1):
        scheme, host, port, addresses = check_address(current, allow_private)
        parts = urlsplit(current)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection_type = _PinnedHTTPSConnection if scheme == "https" else _PinnedHTTPConnection
        connection = connection_type(host, port, addresses[0], _left(deadline, url, timeout_s))
        try:
            connection.request("GET", path, headers={"User-Agent": USER_AGENT, "Accept": "text/html, */*;q=0.5",
                                                     "Accept-Encoding": "identity"})
            response = connection.getresponse()
            if response.status in (301, 302, 303, 307, 308) and response.getheader("Location"):
                current = urljoin(current, response.getheader("Location"))
                continue
            if response.status >= 400:
                raise LoaderError(f"{url}: the server answered {response.status} {response.reason}")
            body = _read_limited(response, deadline, max_bytes, url, timeout_s)
            content_type = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
            return FetchedPage(current, content_type, _charset(response.getheader("Content-Type") or ""), body)
        except (TimeoutError, socket.timeout):
            raise LoaderError(f"{url}: no complete answer within {timeout_s:g} s (RAGKIT_URL_TIMEOUT_S)") from None
        except ssl.SSLError as exc:
            raise LoaderError(f"{url}: the secure connection failed ({exc.reason or exc})") from None
        except (OSError, http.client.HTTPException) as exc:
            raise LoaderError(f"{url}: the page could not be fetched ({type(exc).__name__}: {exc})") from None
        finally:
            connection.close()
    raise LoaderError(f"{url}: more than {MAX_REDIRECTS} redirects")


def _left(deadline: float, url: str, timeout_s: float) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise LoaderError(f"{url}: no complete answer within {timeout_s:g} s (RAGKIT_URL_TIMEOUT_S)")
    return remaining


def _read_limited(response, deadline: float, max_bytes: int, url: str, timeout_s: float) -> bytes:
    """The body, read in pieces, each wait bounded by what is left of the deadline (the
    response reads from a file over the socket: CPython's SocketIO keeps it as ``_sock``)."""
    sock = getattr(getattr(response.fp, "raw", None), "_sock", None)
    declared = response.getheader("Content-Length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise _too_large(url, max_bytes)
    chunks, size = [], 0
    while True:
        remaining = _left(deadline, url, timeout_s)
        if response.isclosed():  # the whole body was read
            return b"".join(chunks)
        if sock is not None:
            sock.settimeout(remaining)
        chunk = response.read(64 * 1024)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise _too_large(url, max_bytes)
        chunks.append(chunk)


def _too_large(url: str, max_bytes: int) -> LoaderError:
    return LoaderError(f"{url}: the page is larger than {max_bytes / 1024 / 1024:g} MB (RAGKIT_URL_MAX_MB)")


def _charset(content_type: str) -> str | None:
    for part in content_type.split(";")[1:]:
        key, _, value = part.strip().partition("=")
        if key.lower() == "charset" and value:
            return value.strip("\"' ").lower()
    return None


def fetch_page(url: str, settings):
    """A web page as a LoadedDocument (``doc_type`` "web", ``filename`` the address), or
    LoaderError saying why it cannot be added."""
    page = fetch(url, settings.url_timeout_s, int(settings.url_max_mb * 1024 * 1024), settings.url_allow_private)
    if not page.body:
        raise LoaderError(f"{url}: the page is empty")
    address = url.strip()
    limits = {"max_bytes": int(settings.url_max_mb * 1024 * 1024), "max_unpacked_bytes": settings.max_unpacked_bytes}
    if page.content_type == "application/pdf":
        loaded = load_bytes(page.body, _name_in(page.url, "page.pdf"), **limits)
    elif page.content_type in ("text/plain", "text/markdown"):
        loaded = load_bytes(page.body, _name_in(page.url, "page.txt", ".txt"), **limits)
    elif page.content_type in HTML_TYPES or not page.content_type:
        text, title, notes = main_text(page.body, page.charset, address)
        loaded = LoadedDocument(filename=address, doc_type="web", title=title or _title_from(page.url),
                                pages=[text], size_bytes=len(page.body), content_hash=content_hash(page.body),
                                notes=notes, raw=page.body)
    else:
        raise LoaderError(f"{url}: not a web page or a document that can be read ({page.content_type})")
    loaded.filename = address
    if loaded.doc_type != "web":
        loaded.notes.append(f"fetched as {loaded.doc_type.upper()}")
    return loaded


def main_text(body: bytes, charset: str | None, address: str) -> tuple[str, str | None, list[str]]:
    """(main text, title, notes) of an HTML page: trafilatura's main part, else the whole
    visible text."""
    import trafilatura


    notes: list[str] = []
    try:
        html = body.decode(charset) if charset else decode_text_file(body, address, notes)
    except (LookupError, UnicodeDecodeError):
        html = decode_text_file(body, address, notes)
    text = trafilatura.extract(html, output_format="markdown", include_tables=True, include_links=False,
                               include_images=False, include_comments=False, favor_recall=True)
    metadata = trafilatura.extract_metadata(html)
    title = " ".join((metadata.title or "").split())[:120] if metadata is not None and metadata.title else None
    if not text or not text.strip():
        pages, own_title = load_html(body, "page.html", notes)
        text, title = pages[0], title or own_title
        notes.append("no main text found: the whole page was read")
    text = normalize_text(text)
    if not text.strip():
        raise LoaderError(f"{address}: the page holds no readable text")
    return text, title, notes


def _name_in(url: str, fallback: str, suffix: str = "") -> str:
    name = urlsplit(url).path.rsplit("/", 1)[-1] or fallback
    return name if not suffix or name.lower().endswith(suffix) else name + suffix


def _title_from(url: str) -> str:
    parts = urlsplit(url)
    return (parts.hostname or url) + (parts.path if parts.path not in ("", "/") else "")

"""Web search through a self-hosted SearxNG instance's JSON API, for agentic mode's last
resort when the knowledge base does not answer a question (``graph/web.py``).

    GET {RAGKIT_WEB_SEARCH_URL}/search?q=...&format=json
    → {"results": [{"title": ..., "url": ..., "content": ...}, ...]}

Web text is untrusted: titles and snippets are reduced to plain text (no markup survives,
``citations.strip_html``), clipped, and a result whose address is not http(s) is dropped.
Results are never stored in the knowledge base. Every failure is a ``WebSearchFailed``
whose message says what went wrong.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import urlparse

from ragkit.config import Settings
from ragkit.errors import WebSearchFailed
from ragkit.lang.text import strip_html

MAX_RESPONSE_BYTES = 2_000_000
TITLE_CHARS = 200
SNIPPET_CHARS = 1200
_SCRIPT_OR_STYLE = re.compile(r"(?is)<(script|style)\b.*?(?:</\1\s*>|$)")  # their content is not text


@dataclass(frozen=True)
class WebResult:
    """One web search result, as plain text."""

    title: str
    url: str
    content: str


def search_web(settings: Settings, query: str) -> list[WebResult]:
    """The provider's best results for ``query`` (at most ``RAGKIT_WEB_SEARCH_RESULTS``);
    WebSearchFailed when it is not configured, unreachable, too slow, or does not answer
    with its JSON API."""
    import httpx

    base = (settings.web_search_url or "").rstrip("/")
    if not base:
        raise WebSearchFailed("web search is not configured (RAGKIT_WEB_SEARCH_URL)")
    where = urlparse(base).netloc or base
    try:
        with httpx.Client(timeout=settings.web_search_timeout_s, follow_redirects=True) as client:
            response = client.get(f"{base}/search", params={"q": query, "format": "json"},
                                  headers={"Accept": "application/json"})
    except httpx.TimeoutException:
        raise WebSearchFailed(f"the web search at {where} sent nothing in "
                              f"{settings.web_search_timeout_s:.0f} s (RAGKIT_WEB_SEARCH_TIMEOUT_S)") from None
    except httpx.HTTPError as exc:
        raise WebSearchFailed(f"the web search at {where} is unreachable ({type(exc).__name__})") from None
    if response.status_code != 200:
        hint = "; SearxNG answers JSON only with 'json' in its search.formats setting" \
            if response.status_code == 403 else ""
        raise WebSearchFailed(f"the web search at {where} refused the query ({response.status_code}){hint}")
    if len(response.content) > MAX_RESPONSE_BYTES:
        raise WebSearchFailed(f"the web search at {where} sent more than {MAX_RESPONSE_BYTES // 1_000_000} MB")
    try:
        payload = json.loads(response.content)
    except ValueError:
        raise WebSearchFailed(f"the web search at {where} did not answer with JSON "
                              "(is RAGKIT_WEB_SEARCH_URL a SearxNG instance?)") from None
    items = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(items, list):
        raise WebSearchFailed(f"the web search at {where} answered JSON without a list of results")
    return parse_results(items)[: settings.web_search_results]


def parse_results(items: list) -> list[WebResult]:
    """The usable results: an http(s) address and some text, as plain clipped text; the
    same address once."""
    results, seen = [], set()
    for item in items:
        if not isinstance(item, dict):
            continue
        url = str(item.get("url") or "").strip()
        if urlparse(url).scheme not in ("http", "https") or url in seen:
            continue
        title = _plain(item.get("title"), TITLE_CHARS) or url
        content = _plain(item.get("content"), SNIPPET_CHARS)
        if not content:
            continue
        seen.add(url)
        results.append(WebResult(title, url, content))
    return results


def _plain(value, limit: int) -> str:
    text = " ".join(strip_html(_SCRIPT_OR_STYLE.sub(" ", str(value or ""))).split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + "…"

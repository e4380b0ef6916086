"""The HTTP API's routes: thin Starlette endpoints over the same RagService the pages use.

    routes = ApiServer(get_service).routes()   # streamlit_app.py: st.App(..., routes=routes)

Every endpoint goes through :meth:`ApiServer._serve`: the API is off (403 naming
RAGKIT_API_KEYS) until keys are configured; then a key is required (401), counted against
its rate limit (429), and the knowledge bases it may use bound everything it sees. Work
that blocks (the service's first load, listing, searching, indexing) runs on threads, never
on the event loop that also serves the page; questions run on the API's own answerers
(``limits.TurnPool``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ragkit.app.api import chat as chat_api
from ragkit.app.api import openapi
from ragkit.app.api.keys import ApiKey, KeyRing
from ragkit.app.api.limits import RateLimiter, TurnPool, declared_length, limited_receive, read_body
from ragkit.app.service import RagService
from ragkit.config import Settings, load_settings
from ragkit.errors import (
    ApiError,
    DatabaseUnreachable,
    InputError,
    KnowledgeBaseError,
    NotAllowed,
    RagkitError,
    ReadOnlyDataDir,
    SettingsError,
    StorageFull,
    TurnCancelled,
)
from ragkit.store.tags import checked_tags
from ragkit.types import KnowledgeBaseInfo, SearchFilters

log = logging.getLogger(__name__)
ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
ALL_MODEL = "ragkit"  # the model that searches every knowledge base the key may use
KB_PREFIX = "kb-"
KEEPALIVE_S = 10.0  # an SSE comment this often while a question waits or a model thinks
UPLOAD_WAIT_S = 3600.0
API_SESSION_PREFIX = "api-"
OFF_MESSAGE = ("The HTTP API is off: set RAGKIT_API_KEYS (for example 'RAGKIT_API_KEYS=<a secret of 16+ characters>:*')"
               " and restart the app. See docs/api.md.")


def model_ids(base: KnowledgeBaseInfo | None) -> tuple[str, str]:
    """The default and agentic model ids of a knowledge base (None: every one the key may use)."""
    plain = ALL_MODEL if base is None else KB_PREFIX + base.id
    return plain, plain + ":agentic"


def api_error(exc: BaseException) -> ApiError:
    """Any failure as the API answers it (OpenAI's error shapes); a bug is logged, not shown."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, NotAllowed):
        return ApiError(403, str(exc), "permission_error")
    if isinstance(exc, InputError):
        return ApiError(400, str(exc), "invalid_request_error")
    if isinstance(exc, (DatabaseUnreachable, ReadOnlyDataDir, StorageFull, KnowledgeBaseError)):
        return ApiError(503, str(exc), "server_error", "unavailable", headers={"Retry-After": "10"})
    if isinstance(exc, SettingsError):
        return ApiError(500, f"ragkit is misconfigured: {exc}", "server_error", "misconfigured")
    if isinstance(exc, RagkitError):
        return ApiError(500, str(exc), "server_error")
    log.error("HTTP API request failed", exc_info=exc)
    return ApiError(500, "The server failed on this request; the details are in its log.", "server_error")


def file_name(sent: str | None) -> str:
    """The name an uploaded file is kept under: the last part of what the client sent (a
    browser sends a name, a script may send a path, either separator)."""
    name = (sent or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    return name if name not in ("", ".", "..") else "upload"


def error_response(exc: ApiError) -> JSONResponse:
    """The error object with its status and headers."""
    return JSONResponse(exc.to_dict(), status_code=exc.status, headers=exc.headers)


class EventStream:
    """An ASGI response that sends ``chunks`` as Server-Sent Events and calls ``on_close``
    however it ends (finished, or the client gone: a failed send)."""

    media_type = "text/event-stream; charset=utf-8"

    def __init__(self, chunks: AsyncIterator[bytes], on_close: Callable[[], None]):
        self.chunks, self.on_close = chunks, on_close

    async def __call__(self, scope, receive, send) -> None:
        headers = [(b"content-type", self.media_type.encode()), (b"cache-control", b"no-cache"),
                   (b"x-accel-buffering", b"no")]
        try:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            async for chunk in self.chunks:
                if chunk:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:  # the client went away (uvicorn's ClientDisconnected)
            pass
        finally:
            self.on_close()
            await self.chunks.aclose()


async def watch_disconnect(request: Request, gone: Callable[[], None]) -> None:
    """Call ``gone`` when the client hangs up (the body must have been read already)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            gone()
            return


class ApiServer:
    """The API over a lazily loaded RagService (``service`` blocks until it is ready)."""

    def __init__(self, service: Callable[[], RagService], settings: Callable[[], Settings] = load_settings):
        self._service = service
        self._load_settings = settings
        self._ready: tuple[Settings, KeyRing, RateLimiter, RateLimiter, TurnPool] | None = None
        self._lock = threading.Lock()
        self._io = ThreadPoolExecutor(max_workers=8, thread_name_prefix="ragkit-api-io")

    # ----- plumbing ----------------------------------------------------------------------

    def _parts(self) -> tuple[Settings, KeyRing, RateLimiter, RateLimiter, TurnPool]:
        with self._lock:
            if self._ready is None:
                settings = self._load_settings()
                per_minute = settings.api_rate_limit_per_minute
                self._ready = (settings, KeyRing(settings), RateLimiter(per_minute),
                               RateLimiter(min(per_minute, 20) if per_minute else 20),
                               TurnPool(settings.api_concurrent_turns, settings.api_max_waiting_turns))
            return self._ready

    @property
    def settings(self) -> Settings:
        """The settings the API runs with (read once, at its first request)."""
        return self._parts()[0]

    async def _blocking(self, work: Callable, *args):
        return await asyncio.get_running_loop().run_in_executor(self._io, work, *args)

    async def _rag(self) -> RagService:
        return await self._blocking(self._service)

    def _authenticate(self, request: Request) -> ApiKey:
        settings, keys, limiter, wrong_keys, _ = self._parts()
        if not keys.enabled:
            raise ApiError(403, OFF_MESSAGE, "permission_error", "api_disabled")
        address = request.client.host if request.client else "unknown"
        wrong_keys.check(address, "this address")
        try:
            key = keys.authenticate(request.headers.get("authorization"))
        except ApiError:
            wrong_keys.take(address, "this address")
            raise
        limiter.take(key.label)
        return key

    def _endpoint(self, handlers: dict[str, Callable[[Request, ApiKey], Awaitable[Response]]], auth: bool = True):
        async def endpoint(request: Request):
            method = "GET" if request.method == "HEAD" else request.method
            try:
                handler = handlers.get(method)
                if handler is None:
                    raise ApiError(405, f"{request.method} is not served at {request.url.path}; use "
                                   f"{' or '.join(handlers)}.", "invalid_request_error", "method_not_allowed",
                                   headers={"Allow": ", ".join(handlers)})
                key = self._authenticate(request) if auth else None
                return await handler(request, key)
            except Exception as exc:  # every failure answers as an error object
                return error_response(api_error(exc))

        return endpoint

    def routes(self) -> list[BaseRoute]:
        """The /v1 and /api routes, for ``st.App(routes=...)``."""
        def route(path: str, auth: bool = True, **handlers) -> Route:
            return Route(path, self._endpoint(handlers, auth), methods=ALL_METHODS)

        async def not_found(request: Request, key) -> Response:
            raise ApiError(404, f"Nothing is served at {request.method} {request.url.path}; see /api/openapi.json.",
                           "invalid_request_error", "unknown_url")

        unknown = {method: not_found for method in ALL_METHODS if method != "HEAD"}
        return [
            route("/v1/models", GET=self.list_models),
            route("/v1/models/{model_id:path}", GET=self.get_model),
            route("/v1/chat/completions", POST=self.chat_completions),
            route("/api/openapi.json", auth=False, GET=self.openapi),
            route("/api/knowledge-bases", GET=self.list_knowledge_bases),
            route("/api/documents", GET=self.list_documents, POST=self.upload_documents),
            route("/api/documents/{doc_id}", GET=self.get_document, DELETE=self.delete_document),
            route("/api/search", GET=self.search, POST=self.search),
            route("/v1", **unknown), route("/v1/{rest:path}", **unknown),
            route("/api", **unknown), route("/api/{rest:path}", **unknown),
        ]

    # ----- knowledge bases and models ------------------------------------------------------

    async def _allowed(self, key: ApiKey, service: RagService | None = None) -> list[KnowledgeBaseInfo]:
        service = service or await self._rag()
        return key.allowed(await self._blocking(service.kb.knowledge_bases))

    def _resolve_model(self, model: str, allowed: list[KnowledgeBaseInfo]) -> tuple[list[KnowledgeBaseInfo], str]:
        """The knowledge bases and answer mode a model id stands for; 404 for one this key may not use."""
        base, _, mode = model.partition(":")
        if mode not in ("", *chat_api.MODES):
            base = ""  # not one of ours
        chosen = allowed if base == ALL_MODEL else [b for b in allowed if KB_PREFIX + b.id == base]
        if not chosen:
            raise ApiError(404, f"The model {model!r} does not exist or this key may not use it; GET /v1/models "
                           "lists the ones it may.", "invalid_request_error", "model_not_found", "model")
        return chosen, mode or "default"

    @staticmethod
    def _model_objects(allowed: list[KnowledgeBaseInfo]) -> list[dict]:
        models = []
        for base in [None, *allowed] if allowed else []:
            bases = allowed if base is None else [base]
            name = "All knowledge bases of this key" if base is None else base.name
            for mode, model_id in zip(chat_api.MODES, model_ids(base)):
                models.append({
                    "id": model_id, "object": "model", "owned_by": "ragkit",
                    "created": int(min(b.created_at for b in bases)),
                    "name": name if mode == "default" else f"{name} (agentic)", "mode": mode,
                    "knowledge_bases": [{"id": b.id, "name": b.name, "documents": b.documents} for b in bases],
                })
        return models

    async def list_models(self, request: Request, key: ApiKey) -> Response:
        return JSONResponse({"object": "list", "data": self._model_objects(await self._allowed(key))})

    async def get_model(self, request: Request, key: ApiKey) -> Response:
        wanted = request.path_params["model_id"]
        found = [m for m in self._model_objects(await self._allowed(key)) if m["id"] == wanted]
        if not found:
            self._resolve_model(wanted, [])  # raises 404
        return JSONResponse(found[0])

    async def list_knowledge_bases(self, request: Request, key: ApiKey) -> Response:
        allowed = await self._allowed(key)
        return JSONResponse({"object": "list", "data": [
            {**base.to_dict(), "object": "knowledge_base", "models": list(model_ids(base))} for base in allowed]})

    async def openapi(self, request: Request, key) -> Response:
        return JSONResponse(openapi.description())

    # ----- chat --------------------------------------------------------------------------

    @staticmethod
    def _bases_of_documents(service: RagService) -> dict[str, dict]:
        names = {base.id: base.name for base in service.kb.knowledge_bases()}
        return {doc.id: {"id": doc.kb_id, "name": names.get(doc.kb_id, "")} for doc in service.kb.documents()}

    @staticmethod
    def _check_session(service: RagService, session_id: str, allowed: list[KnowledgeBaseInfo], everything: bool):
        """A key limited to some knowledge bases may continue only a conversation that never
        searched beyond them (its earlier answers are history); 404 otherwise, as for none."""
        history = service.history
        if everything or not history.exists(session_id):
            return
        ids = {base.id for base in allowed}
        chosen = history.session_knowledge_bases(session_id)
        searched = [turn.filters.get("knowledge_bases") for turn in history.turns(session_id, include_replaced=True)]
        if not chosen or not set(chosen) <= ids or any(not kb_ids or not set(kb_ids) <= ids for kb_ids in searched):
            raise ApiError(404, f"No conversation {session_id!r} this key may continue.", "invalid_request_error",
                           "session_not_found", "session_id")

    async def chat_completions(self, request: Request, key: ApiKey) -> Response:
        settings = self.settings
        body = await read_body(request, settings.api_max_body_kb * 1024)
        ask = chat_api.read_request(chat_api.parse_json(body), request.headers.get(chat_api.SESSION_HEADER),
                                    settings.api_max_messages)
        service = await self._rag()
        allowed = await self._allowed(key, service)
        bases, mode = self._resolve_model(ask.model, allowed)
        kb_ids = [base.id for base in bases]
        filters = SearchFilters(knowledge_bases=kb_ids, **{k: v for k, v in ask.filters.items() if v})
        if ask.session_id:
            await self._blocking(self._check_session, service, ask.session_id, allowed, key.scope is None)
        session_id = ask.session_id or API_SESSION_PREFIX + uuid.uuid4().hex
        # With a session whose turns are stored and messages that hold only the question, the stored turns are the
        # history; otherwise the messages' earlier turns are.
        history = ask.history if (ask.history or not ask.session_id) else None
        cancel = threading.Event()
        loop = asyncio.get_running_loop()
        events: asyncio.Queue = asyncio.Queue()

        def put(item) -> None:
            loop.call_soon_threadsafe(events.put_nowait, item)

        def answer() -> None:
            if cancel.is_set():  # the client left while the question waited
                put(("end", TurnCancelled("the client went away")))
                return
            try:
                turn = None
                stream = service.engine.stream(session_id, ask.question, filters, mode=mode, history=history,
                                               record=ask.session_id is not None, cancel=cancel)
                try:
                    for event in stream:
                        if event["type"] == "done":
                            turn = event["turn"]
                        else:
                            put(("event", event))
                finally:
                    stream.close()
                if ask.session_id and turn is not None and turn.id is not None:
                    self._remember_choices(service, ask.session_id, kb_ids, allowed, mode)
                put(("end", (turn, self._bases_of_documents(service))))
            except BaseException as exc:  # handed to the request, which answers it as an error
                put(("end", exc))

        self._parts()[4].submit(answer)  # 503 when too many wait
        watcher = asyncio.create_task(watch_disconnect(request, lambda: (cancel.set(), put(("gone", None)))))
        if not ask.stream:
            try:
                while True:
                    kind, payload = await events.get()
                    if kind == "gone":
                        raise TurnCancelled("the client went away")
                    if kind == "end":
                        break
                if isinstance(payload, BaseException):
                    raise payload
                turn, doc_bases = payload
                return JSONResponse(chat_api.completion(ask, turn, doc_bases))
            finally:
                cancel.set()
                watcher.cancel()
        writer = chat_api.ChunkWriter(ask)

        async def chunks() -> AsyncIterator[bytes]:
            yield writer.start()
            while True:
                try:
                    kind, payload = await asyncio.wait_for(events.get(), KEEPALIVE_S)
                except asyncio.TimeoutError:
                    yield b": waiting\n\n"
                    continue
                if kind == "gone":
                    return
                if kind == "event":
                    yield writer.event(payload)
                    continue
                if isinstance(payload, BaseException):
                    yield writer.error(api_error(payload))
                    return
                turn, doc_bases = payload
                yield writer.finish(turn, doc_bases)
                return

        def closed() -> None:
            cancel.set()
            watcher.cancel()

        return EventStream(chunks(), closed)

    @staticmethod
    def _remember_choices(service: RagService, session_id: str, kb_ids: list[str],
                          allowed: list[KnowledgeBaseInfo], mode: str) -> None:
        """A conversation the API was asked to keep searches, on the page too, what it searched."""
        history = service.history
        if history.session_knowledge_bases(session_id) is None and set(kb_ids) != {b.id for b in
                                                                                   service.kb.knowledge_bases()}:
            history.set_session_knowledge_bases(session_id, kb_ids)
        if mode != "default" and history.session_mode(session_id) != mode:
            history.set_session_mode(session_id, mode)

    # ----- documents and search ------------------------------------------------------------

    def _scope(self, allowed: list[KnowledgeBaseInfo], wanted: list[str] | None) -> list[KnowledgeBaseInfo]:
        """The allowed knowledge bases named in ``wanted`` (by name or id; None or []: all of them);
        404 for one the key may not use (the same whether or not it exists)."""
        if not wanted:
            return allowed
        chosen = []
        for name in wanted:
            folded = " ".join(str(name).split()).lower()
            match = next((b for b in allowed if b.id == name or b.name.lower() == folded), None)
            if match is None:
                raise ApiError(404, f"No knowledge base {name!r} this key may use; GET /api/knowledge-bases lists "
                               "them.", "invalid_request_error", "knowledge_base_not_found", "knowledge_base")
            chosen.append(match)
        return chosen

    @staticmethod
    def _document_dict(doc, names: dict[str, str]) -> dict:
        return {**doc.to_dict(), "object": "document", "knowledge_base": {"id": doc.kb_id, "name": names[doc.kb_id]}}

    async def list_documents(self, request: Request, key: ApiKey) -> Response:
        service = await self._rag()
        bases = self._scope(await self._allowed(key, service), request.query_params.getlist("knowledge_base"))
        names = {base.id: base.name for base in bases}
        documents = await self._blocking(service.kb.documents, list(names))
        return JSONResponse({"object": "list", "data": [self._document_dict(doc, names) for doc in documents]})

    async def _own_document(self, service: RagService, key: ApiKey, doc_id: str):
        allowed = await self._allowed(key, service)
        names = {base.id: base.name for base in allowed}
        doc = await self._blocking(service.kb.document, doc_id)
        if doc is None or doc.kb_id not in names:
            raise ApiError(404, f"No document {doc_id!r} this key may use.", "invalid_request_error",
                           "document_not_found", "doc_id")
        return doc, names

    async def get_document(self, request: Request, key: ApiKey) -> Response:
        service = await self._rag()
        doc, names = await self._own_document(service, key, request.path_params["doc_id"])
        return JSONResponse(self._document_dict(doc, names))

    async def delete_document(self, request: Request, key: ApiKey) -> Response:
        service = await self._rag()
        doc, names = await self._own_document(service, key, request.path_params["doc_id"])
        try:
            deleted = await self._blocking(service.kb.delete, doc.id)
        except KeyError:  # deleted meanwhile
            raise ApiError(404, f"No document {doc.id!r} this key may use.", "invalid_request_error",
                           "document_not_found", "doc_id") from None
        return JSONResponse({"id": deleted.id, "object": "document", "deleted": True,
                             "document": self._document_dict(deleted, names)})

    async def upload_documents(self, request: Request, key: ApiKey) -> Response:
        """Files in a multipart form (any field name), each read, split and indexed by the
        upload queue the Documents page uses: the same loaders, limits and per-file results."""
        settings = self.settings
        limit = int(settings.api_max_upload_mb * 1024 * 1024)
        if not request.headers.get("content-type", "").lower().startswith("multipart/form-data"):
            raise ApiError(415, "Send the files as multipart/form-data (curl -F file=@report.pdf).",
                           "invalid_request_error", "unsupported_media_type")
        declared_length(request.headers, limit, "upload", "RAGKIT_API_MAX_UPLOAD_MB")
        limited = Request(request.scope, limited_receive(request.receive, limit, "upload", "RAGKIT_API_MAX_UPLOAD_MB"))
        try:
            form = await limited.form(max_files=1000, max_fields=100, max_part_size=1024 * 1024)
        except ApiError:
            raise
        except Exception as exc:  # python-multipart's and Starlette's parse errors alike
            raise ApiError(400, f"The multipart form could not be read: {exc}", "invalid_request_error") from None
        try:
            uploads = [value for _, value in form.multi_items() if not isinstance(value, str)]
            fields = {name: value for name, value in form.multi_items() if isinstance(value, str)}
            if not uploads:
                raise ApiError(400, "The form holds no file: send each as a file part (-F file=@name).",
                               "invalid_request_error", "no_file", "file")
            try:
                tags = checked_tags([fields.get("tags", "")])
            except InputError as exc:
                raise ApiError(400, str(exc), "invalid_request_error", param="tags") from None
            service = await self._rag()
            allowed = await self._allowed(key, service)
            wanted = fields.get("knowledge_base", "").strip()
            if wanted:
                base = self._scope(allowed, [wanted])[0]
            else:
                default = await self._blocking(service.kb.default_knowledge_base)
                base = next((b for b in allowed if b.id == default.id), allowed[0] if len(allowed) == 1 else None)
                if base is None:  # the default one, else the key's only one
                    raise ApiError(400, "Name the knowledge base to add to (form field 'knowledge_base'): this key "
                                   "may not use the default one.", "invalid_request_error", param="knowledge_base")
            files = [(file_name(upload.filename), await upload.read(), tags) for upload in uploads]
        finally:
            await form.close()
        jobs = service.uploads.submit_many(files, base.id)
        ids = [job.id for job in jobs]
        await self._blocking(service.uploads.wait, ids, UPLOAD_WAIT_S)
        results = []
        for job in service.uploads.jobs(ids):
            result = job.result.to_dict() if job.result else {"filename": job.filename, "status": "waiting",
                                                              "message": "still being indexed", "document": None}
            result["knowledge_base"] = {"id": base.id, "name": base.name}
            results.append(result)
        service.uploads.forget(ids)
        return JSONResponse({"object": "list", "data": results})

    async def search(self, request: Request, key: ApiKey) -> Response:
        settings = self.settings
        if request.method == "POST":
            data = chat_api.parse_json(await read_body(request, settings.api_max_body_kb * 1024))
        else:
            params = request.query_params
            data = {"query": params.get("q") or params.get("query"), "k": params.get("k"),
                    "knowledge_bases": params.getlist("knowledge_base") or None,
                    "tags": params.getlist("tag") or None}
        query = data.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ApiError(400, "'query' is required: the words to search for.", "invalid_request_error", param="query")
        if len(query) > 4000:
            raise ApiError(400, f"'query' is {len(query)} characters long; the limit is 4000.",
                           "invalid_request_error", param="query")
        try:
            k = int(data.get("k") or settings.top_k)
        except (TypeError, ValueError):
            raise ApiError(400, "'k' must be a whole number.", "invalid_request_error", param="k") from None
        if not 1 <= k <= 100:
            raise ApiError(400, "'k' must be between 1 and 100.", "invalid_request_error", param="k")
        lists = {}
        for name in ("knowledge_bases", "tags", "doc_types", "doc_ids"):
            value = data.get(name)
            if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
                raise ApiError(400, f"'{name}' must be a list of strings.", "invalid_request_error", param=name)
            lists[name] = value or None
        service = await self._rag()
        bases = self._scope(await self._allowed(key, service), lists.pop("knowledge_bases"))
        if not bases:
            return JSONResponse({"object": "list", "query": query, "data": []})
        names = {base.id: base.name for base in bases}
        filters = SearchFilters(knowledge_bases=list(names), **lists)
        hits = await self._blocking(service.kb.search, query.strip(), k, filters)
        kb_of = {doc.id: doc.kb_id for doc in await self._blocking(service.kb.documents, list(names))}
        data = [{**hit.to_dict(), "object": "search_result",
                 "knowledge_base": {"id": kb_of.get(hit.doc_id, ""), "name": names.get(kb_of.get(hit.doc_id, ""), "")}}
                for hit in hits]
        return JSONResponse({"object": "list", "query": query, "data": data})


def api_routes(service: Callable[[], RagService], settings: Callable[[], Settings] = load_settings) -> list[BaseRoute]:
    """The API's routes over ``service`` (a function returning the process's RagService, which
    it may take a while to load): what ``streamlit_app.py`` hands to ``st.App``."""
    return ApiServer(service, settings).routes()


__all__ = ["ApiServer", "api_routes", "EventStream"]

"""The OpenAPI 3.1 description of the HTTP API, served at ``/api/openapi.json`` (docs/api.md
is the manual)."""

from __future__ import annotations

from ragkit import __version__


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


ERRORS = {
    "400": _json(_ref("Error"), "Malformed JSON, a bad field, an empty or too long question"),
    "401": _json(_ref("Error"), "No API key, or not one of RAGKIT_API_KEYS"),
    "403": _json(_ref("Error"), "The API is off (RAGKIT_API_KEYS unset)"),
    "404": _json(_ref("Error"), "Unknown model, knowledge base, document or session (or one this key may not use)"),
    "413": _json(_ref("Error"), "Body over RAGKIT_API_MAX_BODY_KB (uploads: RAGKIT_API_MAX_UPLOAD_MB)"),
    "429": _json(_ref("Error"), "Over RAGKIT_API_RATE_LIMIT_PER_MINUTE; see the Retry-After header"),
    "503": _json(_ref("Error"), "Too many questions waiting, or the store is unavailable; see Retry-After"),
}


def _list(item: str) -> dict:
    return {"type": "object", "required": ["object", "data"],
            "properties": {"object": {"const": "list"}, "data": {"type": "array", "items": _ref(item)}}}


SCHEMAS = {
    "Error": {"type": "object", "required": ["error"], "properties": {"error": {
        "type": "object", "required": ["message", "type"],
        "properties": {"message": {"type": "string"}, "type": {"type": "string"},
                       "param": {"type": ["string", "null"]}, "code": {"type": ["string", "null"]}}}}},
    "KnowledgeBaseRef": {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"},
                                                           "documents": {"type": "integer"}}},
    "Model": {"type": "object", "required": ["id", "object", "created", "owned_by"], "properties": {
        "id": {"type": "string", "description": "'ragkit' (every knowledge base of the key) or 'kb-<knowledge base "
               "id>', optionally ':agentic'; stable across renames"},
        "object": {"const": "model"}, "created": {"type": "integer"}, "owned_by": {"const": "ragkit"},
        "name": {"type": "string"}, "mode": {"enum": ["default", "agentic"]},
        "knowledge_bases": {"type": "array", "items": _ref("KnowledgeBaseRef")}}},
    "Message": {"type": "object", "required": ["role"], "properties": {
        "role": {"enum": ["system", "developer", "user", "assistant"]},
        "content": {"oneOf": [{"type": "string"}, {"type": "array", "items": {
            "type": "object", "properties": {"type": {"const": "text"}, "text": {"type": "string"}}}}]}}},
    "ChatRequest": {"type": "object", "required": ["model", "messages"], "properties": {
        "model": {"type": "string"},
        "messages": {"type": "array", "items": _ref("Message"), "description": "the conversation: the last is the "
                     "question, earlier user/assistant pairs its history; system messages are not used"},
        "stream": {"type": "boolean", "default": False},
        "stream_options": {"type": "object", "properties": {"include_usage": {"type": "boolean"}}},
        "session_id": {"type": "string", "description": "keep the conversation under this id (also the "
                       "X-Ragkit-Session header): it shows in the page's sidebar; without it nothing is stored"},
        "filters": {"type": "object", "properties": {k: {"type": "array", "items": {"type": "string"}}
                                                     for k in ("tags", "doc_types", "doc_ids")}}},
        "additionalProperties": True},
    "Source": {"type": "object", "properties": {
        "n": {"type": "integer", "description": "the [n] marker that cites it"}, "title": {"type": "string"},
        "filename": {"type": "string"}, "page": {"type": "integer"}, "text": {"type": "string"},
        "quote": {"type": "string"}, "score": {"type": "number"}, "cited": {"type": "boolean"},
        "doc_id": {"type": "string"}, "chunk_id": {"type": "string"}, "section": {"type": "string"},
        "url": {"type": "string"}, "knowledge_base": _ref("KnowledgeBaseRef")}},
    "Ragkit": {"type": "object", "properties": {
        "found": {"type": "boolean", "description": "false: the documents do not answer it (a normal answer)"},
        "answer": {"type": "string"}, "standalone_question": {"type": "string"},
        "mode": {"enum": ["extractive", "llm", "not_found", "direct"]}, "answered_by": {"type": "string"},
        "closest": {"type": "array", "items": _ref("Source")}, "session_id": {"type": ["string", "null"]},
        "turn_id": {"type": ["integer", "null"]}, "trace": {"type": "array"}, "timings": {"type": "object"}}},
    "Usage": {"type": "object", "properties": {k: {"type": "integer"} for k in
                                               ("prompt_tokens", "completion_tokens", "total_tokens")}},
    "ChatCompletion": {"type": "object", "properties": {
        "id": {"type": "string"}, "object": {"const": "chat.completion"}, "created": {"type": "integer"},
        "model": {"type": "string"},
        "choices": {"type": "array", "items": {"type": "object", "properties": {
            "index": {"type": "integer"}, "finish_reason": {"type": "string"},
            "message": {"type": "object", "properties": {"role": {"const": "assistant"},
                                                         "content": {"type": "string"}}}}}},
        "usage": _ref("Usage"), "sources": {"type": "array", "items": _ref("Source")}, "ragkit": _ref("Ragkit")}},
    "Document": {"type": "object", "properties": {
        "id": {"type": "string"}, "object": {"const": "document"}, "title": {"type": "string"},
        "filename": {"type": "string"}, "doc_type": {"type": "string"}, "version": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}}, "pages": {"type": "integer"},
        "chunks": {"type": "integer"}, "size_bytes": {"type": "integer"}, "created_at": {"type": "number"},
        "updated_at": {"type": "number"}, "knowledge_base": _ref("KnowledgeBaseRef")}},
    "UploadResult": {"type": "object", "properties": {
        "filename": {"type": "string"}, "status": {"enum": ["added", "new_version", "unchanged", "refused"]},
        "message": {"type": "string"}, "document": {"oneOf": [_ref("Document"), {"type": "null"}]},
        "knowledge_base": _ref("KnowledgeBaseRef")}},
    "SearchRequest": {"type": "object", "required": ["query"], "properties": {
        "query": {"type": "string"}, "k": {"type": "integer", "minimum": 1, "maximum": 100},
        **{k: {"type": "array", "items": {"type": "string"}} for k in ("knowledge_bases", "tags", "doc_types",
                                                                        "doc_ids")}}},
    "SearchResult": {"type": "object", "properties": {
        "id": {"type": "string"}, "doc_id": {"type": "string"}, "title": {"type": "string"},
        "filename": {"type": "string"}, "page": {"type": "integer"}, "section": {"type": "string"},
        "text": {"type": "string"}, "score": {"type": "number"}, "knowledge_base": _ref("KnowledgeBaseRef")}},
}


def description() -> dict:
    """The whole OpenAPI document."""
    secured = [{"bearer": []}]
    return {
        "openapi": "3.1.0",
        "info": {"title": "ragkit HTTP API", "version": __version__, "description": (
            "OpenAI-compatible chat over ragkit's knowledge bases (/v1) and ragkit's own documents and search "
            "(/api), served by `streamlit run streamlit_app.py` on the app's port once RAGKIT_API_KEYS is set. "
            "Answers cite their sources with [n] markers; `sources` lists them. See docs/api.md.")},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}, "schemas": SCHEMAS},
        "security": secured,
        "paths": {
            "/v1/models": {"get": {"summary": "The models this key may use: one per knowledge base (and agentic "
                                   "variants), plus 'ragkit' for all of them",
                                   "responses": {"200": _json(_list("Model"), "The models"), **ERRORS}}},
            "/v1/models/{model_id}": {"get": {
                "summary": "One model", "parameters": [{"name": "model_id", "in": "path", "required": True,
                                                        "schema": {"type": "string"}}],
                "responses": {"200": _json(_ref("Model"), "The model"), **ERRORS}}},
            "/v1/chat/completions": {"post": {
                "summary": "Answer the conversation's last question from the model's knowledge bases",
                "parameters": [{"name": "X-Ragkit-Session", "in": "header", "required": False,
                                "schema": {"type": "string"}, "description": "as the body's session_id"}],
                "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("ChatRequest")}}},
                "responses": {"200": {"description": "The answer; with stream: Server-Sent Events of "
                                      "chat.completion.chunk objects, the last with finish_reason, sources and "
                                      "ragkit, then [DONE]", "content": {
                                          "application/json": {"schema": _ref("ChatCompletion")},
                                          "text/event-stream": {"schema": {"type": "string"}}}}, **ERRORS}}},
            "/api/knowledge-bases": {"get": {"summary": "The knowledge bases this key may use",
                                             "responses": {"200": _json(_list("KnowledgeBaseRef"), "They"),
                                                           **ERRORS}}},
            "/api/documents": {
                "get": {"summary": "The documents of the key's knowledge bases",
                        "parameters": [{"name": "knowledge_base", "in": "query", "required": False,
                                        "schema": {"type": "string"}, "description": "name or id; repeatable"}],
                        "responses": {"200": _json(_list("Document"), "The documents"), **ERRORS}},
                "post": {"summary": "Add files (the Documents page's loaders, limits and per-file results)",
                         "requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
                             "type": "object", "properties": {
                                 "file": {"type": "array", "items": {"type": "string", "format": "binary"}},
                                 "knowledge_base": {"type": "string"}, "tags": {"type": "string"}}}}}},
                         "responses": {"200": _json(_list("UploadResult"), "One result per file"), **ERRORS}}},
            "/api/documents/{doc_id}": {
                "parameters": [{"name": "doc_id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "get": {"summary": "One document", "responses": {"200": _json(_ref("Document"), "It"), **ERRORS}},
                "delete": {"summary": "Delete a document and its passages",
                           "responses": {"200": _json({"type": "object", "properties": {
                               "id": {"type": "string"}, "deleted": {"const": True},
                               "document": _ref("Document")}}, "Deleted"), **ERRORS}}},
            "/api/search": {
                "post": {"summary": "The passages that best match a query",
                         "requestBody": {"required": True,
                                         "content": {"application/json": {"schema": _ref("SearchRequest")}}},
                         "responses": {"200": _json(_list("SearchResult"), "Best first"), **ERRORS}},
                "get": {"summary": "The same, with ?q=...&k=...&knowledge_base=...",
                        "parameters": [{"name": n, "in": "query", "required": n == "q", "schema": {"type": "string"}}
                                       for n in ("q", "k", "knowledge_base", "tag")],
                        "responses": {"200": _json(_list("SearchResult"), "Best first"), **ERRORS}}},
            "/api/openapi.json": {"get": {"summary": "This description", "security": [],
                                          "responses": {"200": {"description": "OpenAPI 3.1"}}}},
        },
    }

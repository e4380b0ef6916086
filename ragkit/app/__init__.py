"""What the pages compose: the service, the chat engine, conversations, background jobs,
logins, statistics, the source viewer and safe rendering (no Streamlit here).

Pages import only ``ragkit`` and ``ragkit.app``; this module's ``__all__`` is what they use.
"""

from ragkit.lazy import exports

_EXPORTS = {
    **{name: "ragkit.app.render" for name in (
        "escape_line", "escape_markdown", "safe_answer_markdown", "readable_answer_markdown", "readable_line",
        "clip_words", "terminal_safe", "terminal_json", "terminal_json_text")},
    **{name: "ragkit.app.viewer" for name in (
        "quote_pieces", "render_pdf_page", "text_context", "page_text", "page_count", "RenderedPage", "TextContext")},
    **{name: "ragkit.app.stats" for name in (
        "Overview", "conversation_labels", "documents_by", "documents_frame", "overview", "questions_per_day",
        "questions_over_time", "token_usage", "turns_frame")},
    "LoginThrottle": "ragkit.app.access",
    "LoginAttempt": "ragkit.app.access",
    "IngestJob": "ragkit.app.jobs",
    "IngestQueue": "ragkit.app.jobs",
    "RagService": "ragkit.app.service",
    "api_routes": "ragkit.app.api",
    "ChatEngine": "ragkit.app.engine",
    "HistoryManager": "ragkit.app.history",
    "SessionInfo": "ragkit.app.history",
    "SessionMatch": "ragkit.app.history",
    "new_session_id": "ragkit.app.history",
    "validate_session_id": "ragkit.app.history",
    # what the source panel shows of a passage: the answering span, the match's strength in words
    "answer_spans": "ragkit.answering.marks",
    "match_strength": "ragkit.answering.citations",
    "MatchStrength": "ragkit.answering.citations",
    "match_spans": "ragkit.lang.text",
    "is_cjk_text": "ragkit.lang.text",
    "plural": "ragkit.lang.text",
    "section_trail": "ragkit.types",
    "allowed_documents": "ragkit.retrieval.hybrid",
    "may_edit": "ragkit.store.people",
    "checked_tags": "ragkit.store.tags",
    "collect_files": "ragkit.ingest.folders",
    "supported_suffixes": "ragkit.ingest.registry",
    "upload_types_label": "ragkit.ingest.registry",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = exports(__name__, _EXPORTS)

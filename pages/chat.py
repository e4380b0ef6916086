"""Chat page: conversations in the sidebar, streamed cited answers, files dropped into the input."""

import streamlit as st

from pages._access import require_access
from pages._widgets import STATUS_ICON, get_service, render_turn
from ragkit.chat import QuestionError, check_question
from ragkit.history import SessionError, new_session_id, validate_session_id
from ragkit.loaders import SUPPORTED_TYPES
from ragkit.render import escape_line, escape_markdown, safe_answer_markdown
from ragkit.retrieval import SearchFilters

require_access()
st.title("Chat with your documents")
service = get_service()


def current_session_id() -> str:
    """The session in the URL (or the last one used in this tab); a new one otherwise."""
    session_id = st.query_params.get("session") or st.session_state.get("session_id", "")
    try:
        validate_session_id(session_id)
    except SessionError:
        session_id = new_session_id()
    st.query_params["session"] = session_id
    st.session_state["session_id"] = session_id
    return session_id


def switch_to(session_id: str) -> None:
    st.query_params["session"] = session_id
    st.session_state["session_id"] = session_id


session_id = current_session_id()
history = service.history

with st.sidebar:
    st.markdown("#### Conversations")
    st.button("New conversation", icon=":material/add:", width="stretch", on_click=switch_to, args=(new_session_id(),))
    sessions = history.list_sessions()
    if not any(info.id == session_id for info in sessions):
        st.button("New conversation (current)", icon=":material/chat_bubble:", key="current-new", width="stretch", disabled=True)
    for info in sessions[:40]:
        is_current = info.id == session_id
        st.button(
            escape_line(info.title or info.id),  # a button label renders Markdown, images included
            key=f"session-{info.id}",
            width="stretch",
            type="primary" if is_current else "secondary",
            on_click=switch_to,
            args=(info.id,),
            help=f"{info.turns} questions · id {info.id}",
        )
    if history.exists(session_id):
        info = history.session(session_id)
        rename_col, delete_col = st.columns(2)
        with rename_col.popover("Rename", icon=":material/edit:", width="stretch"):
            new_title = st.text_input("Title", value=info.title, key="rename-title")
            if st.button("Save title", key="rename-save"):
                history.rename(session_id, new_title or info.title)
                st.rerun()
        with delete_col.popover("Delete", icon=":material/delete:", width="stretch"):
            st.write("Delete this conversation and all its answers?")
            if st.button("Yes, delete", type="primary", key="delete-session"):
                history.delete(session_id)
                switch_to(new_session_id())
                st.rerun()
        export_md, export_json = st.columns(2)
        export_md.download_button(
            ".md", data=history.export_markdown(session_id), file_name=f"ragkit-{session_id}.md",
            mime="text/markdown", icon=":material/download:", width="stretch",
        )
        export_json.download_button(
            ".json", data=history.export_json(session_id), file_name=f"ragkit-{session_id}.json",
            mime="application/json", icon=":material/download:", width="stretch",
        )

    documents = service.kb.documents()
    st.markdown("#### Search only in…")
    titles = {doc.id: f"{doc.title} ({doc.filename})" for doc in documents}  # options are plain text, not Markdown
    chosen_docs = st.multiselect("Documents", options=list(titles), format_func=titles.get,
                                 key=f"filter-docs-{session_id}", placeholder="all documents")
    chosen_tags = st.multiselect("Tags", options=service.kb.tags(), key=f"filter-tags-{session_id}",
                                 placeholder="all tags")

filters = SearchFilters(doc_ids=chosen_docs or None, tags=chosen_tags or None)

if not documents:
    st.info(
        "**Your knowledge base is empty.** Add your own files on the **Documents** page, drop them into "
        "the chat box below, or start with the bundled user guide (English and 中文).",
        icon=":material/inbox:",
    )
    if st.button("Load the sample documents", icon=":material/auto_stories:", type="primary"):
        bar = st.progress(0.0, text="Loading samples…")
        results = service.load_samples(lambda stage, fraction: bar.progress(min(fraction, 1.0), text=escape_line(stage)))
        bar.empty()
        st.session_state["sample-results"] = [r.message for r in results]
        st.rerun()
    st.page_link("pages/documents.py", label="Go to Documents", icon=":material/description:")

for message in st.session_state.pop("sample-results", []):
    st.success(escape_markdown(message), icon=":material/check_circle:")
for status, message in st.session_state.pop("upload-results", []):
    (st.error if status == "refused" else st.success)(f"{STATUS_ICON[status]} {escape_markdown(message)}")

turns = history.turns(session_id)
if documents and not turns:
    st.markdown(
        "Ask anything about your documents, in English or 中文. Follow-up questions such as "
        "*“what are its main features?”* are understood in context. Each answer lists the passages it used."
    )
for index, turn in enumerate(turns):
    render_turn(turn, latest=index == len(turns) - 1)

prompt = st.chat_input(
    "Ask a question about your documents… / 输入你的问题…",
    accept_file="multiple",
    file_type=sorted(ext.lstrip(".") for ext in SUPPORTED_TYPES),
)

if prompt:
    uploads = prompt.files or []
    for number, upload in enumerate(uploads, start=1):
        bar = st.progress(0.0, text=f"Adding {escape_line(upload.name)} ({number}/{len(uploads)})…")
        result = service.ingest_upload(
            upload.name, upload.getvalue(),
            progress=lambda stage, fraction, name=escape_line(upload.name), bar=bar: bar.progress(
                min(fraction, 1.0), text=f"{name}: {escape_line(stage)}"),
        )
        bar.empty()
        st.session_state.setdefault("upload-results", []).append((result.status, result.message))
    question = prompt.text or ""
    if question.strip():
        try:
            check_question(question)
        except QuestionError as exc:
            st.warning(escape_markdown(str(exc)), icon=":material/edit_note:")
            st.stop()
        with st.chat_message("user"):
            st.markdown(escape_markdown(question))
        with st.chat_message("assistant"):
            status = st.empty()
            answer_area = st.empty()
            text = ""
            try:
                for event in service.engine.stream(session_id, question, filters):
                    if event["type"] == "token":
                        text += event["text"]
                        answer_area.markdown(safe_answer_markdown(text) + " ▌")
                    elif event["type"] == "status" and event.get("standalone_question"):
                        status.caption(f":material/search: Searching for: {escape_line(event['standalone_question'])}")
                    elif event["type"] == "reset":
                        text = ""
                        status.warning(f"The model failed ({escape_line(str(event['error']))}); answering from the documents instead.")
            except QuestionError as exc:
                st.warning(escape_markdown(str(exc)), icon=":material/edit_note:")
                st.stop()
            except Exception as exc:  # never a traceback in the page
                st.error(f"Sorry, the question could not be answered: {escape_markdown(str(exc))}", icon=":material/error:")
                st.stop()
        st.rerun()
    elif prompt.files:
        st.rerun()

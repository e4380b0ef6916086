"""Chat page: conversations in the sidebar, streamed cited answers, files dropped into the input."""

import streamlit as st

from pages._access import require_access
from pages._widgets import (
    UPLOAD_TYPES,
    dismiss_results,
    get_service,
    indexing_running,
    queue_samples,
    render_closest,
    render_indexing,
    render_source_panel,
    render_turn,
    track_jobs,
)
from ragkit.errors import QuestionError, RagkitError
from ragkit.graph.events import ChatEvent
from ragkit.history import SessionError, new_session_id, validate_session_id
from ragkit.kb import plural
from ragkit.llm import chat_models
from ragkit.render import escape_line, escape_markdown, safe_answer_markdown
from ragkit.retrieval import SearchFilters, allowed_documents
from ragkit.stats import conversation_labels

PENDING = "pending-question"  # a question sent with files: answered once the files are indexed

require_access()
st.title("Chat with your documents")
service = get_service()
history = service.history


def current_session_id() -> str:
    """The conversation to show: one just picked in the sidebar, else the one in the URL (or the
    last one used in this tab), else a new one. The URL always names it, so a reload reopens it."""
    session_id = (st.session_state.pop("switch-to", None) or st.query_params.get("session")
                  or st.session_state.get("session_id", ""))
    try:
        validate_session_id(session_id)
    except SessionError:
        session_id = new_session_id()
    if st.query_params.get("session") != session_id:
        st.query_params["session"] = session_id  # in the script run: a change made in a callback never reaches the URL
    st.session_state["session_id"] = session_id
    return session_id


def switch_to(session_id: str) -> None:
    """Button callback: show ``session_id`` from this run on."""
    st.session_state["switch-to"] = session_id


def start_new_conversation() -> None:
    switch_to(new_session_id())


def rename_conversation(session_id: str) -> None:
    title = st.session_state.get(f"rename-title-{session_id}", "")
    if title.strip():
        history.rename(session_id, title)
    # A fresh key closes the popover even when the user saved before the run that opened it had finished.
    st.session_state["rename-round"] = st.session_state.get("rename-round", 0) + 1


def delete_conversation(session_id: str) -> None:
    history.delete(session_id)
    start_new_conversation()


def choose_model(session_id: str) -> None:
    history.set_session_model(session_id, st.session_state[f"model-{session_id}"])


def choose_mode(session_id: str) -> None:
    history.set_session_mode(session_id, st.session_state[f"mode-{session_id}"])


def clear_filters(session_id: str) -> None:
    st.session_state[f"filter-docs-{session_id}"] = []
    st.session_state[f"filter-tags-{session_id}"] = []


session_id = current_session_id()

with st.sidebar:
    st.markdown("#### Conversations")
    st.button("New conversation", icon=":material/add:", width="stretch", on_click=start_new_conversation)
    sessions = history.list_sessions()
    labels = conversation_labels(sessions)
    if not any(info.id == session_id for info in sessions):
        st.button("New conversation (current)", icon=":material/chat_bubble:", key="current-new", width="stretch",
                  disabled=True)
    for info in sessions[:40]:
        st.button(
            escape_line(labels[info.id]),  # a button label renders Markdown, images included
            key=f"session-{info.id}",
            width="stretch",
            type="primary" if info.id == session_id else "secondary",
            on_click=switch_to,
            args=(info.id,),
            help=f"{plural(info.turns, 'question')} · id {info.id}",
        )
    if history.exists(session_id):
        info = history.session(session_id)
        rename_col, delete_col = st.columns(2)
        rename_key = f"rename-{session_id}-{st.session_state.get('rename-round', 0)}"
        with rename_col.popover("Rename", icon=":material/edit:", width="stretch", key=rename_key):
            with st.form(f"rename-form-{session_id}", border=False):
                st.text_input("Title", value=info.title, key=f"rename-title-{session_id}")
                st.form_submit_button("Save title", on_click=rename_conversation, args=(session_id,))
        with delete_col.popover("Delete", icon=":material/delete:", width="stretch"):
            st.write("Delete this conversation and all its answers?")
            st.button("Yes, delete", type="primary", key="delete-session", on_click=delete_conversation,
                      args=(session_id,))
        export_md, export_json = st.columns(2)
        export_md.download_button(
            ".md", data=history.export_markdown(session_id), file_name=f"ragkit-{session_id}.md",
            mime="text/markdown", icon=":material/download:", width="stretch",
        )
        export_json.download_button(
            ".json", data=history.export_json(session_id), file_name=f"ragkit-{session_id}.json",
            mime="application/json", icon=":material/download:", width="stretch",
        )

    choices = chat_models(service.settings)
    if len(choices) > 1:  # a model is configured: each conversation picks its own (remembered)
        ids = [choice.id for choice in choices]
        current = service.engine.model_for(session_id).id
        st.selectbox("Answer with", ids, index=ids.index(current) if current in ids else 0,
                     format_func={choice.id: choice.label for choice in choices}.get, key=f"model-{session_id}",
                     on_change=choose_model, args=(session_id,), help="Remembered for this conversation")

    modes = {"default": "Default: one search", "agentic": "Agentic: plans, follows hops, compares"}
    current_mode = service.engine.mode_for(session_id)
    st.selectbox("Answer mode", list(modes), index=list(modes).index(current_mode), format_func=modes.get,
                 key=f"mode-{session_id}", on_change=choose_mode, args=(session_id,),
                 help="Remembered for this conversation; new ones start in RAGKIT_CHAT_MODE")

    documents = service.kb.documents()
    st.markdown("#### Search only in…")
    titles = {doc.id: f"{doc.title} ({doc.filename})" for doc in documents}  # options are plain text, not Markdown
    chosen_docs = st.multiselect("Documents", options=list(titles), format_func=titles.get,
                                 key=f"filter-docs-{session_id}", placeholder="all documents")
    chosen_tags = st.multiselect("Tags", options=service.kb.tags(), key=f"filter-tags-{session_id}",
                                 placeholder="all tags")

filters = SearchFilters(doc_ids=chosen_docs or None, tags=chosen_tags or None)
indexing = indexing_running(service)

if not documents and not indexing:
    st.info(
        "**Your knowledge base is empty.** Add your own files on the **Documents** page, drop them into "
        "the chat box below, or start with the bundled user guide (English and 中文).",
        icon=":material/inbox:",
    )
    st.button("Load the sample documents", icon=":material/auto_stories:", type="primary",
              on_click=queue_samples, args=(service,))
    st.page_link("pages/documents.py", label="Go to Documents", icon=":material/description:")

turns = history.turns(session_id)
if documents and not turns:
    st.markdown(
        "Ask anything about your documents, in English or 中文. Follow-up questions such as "
        "*“what are its main features?”* are understood in context. Each answer lists the passages it used."
    )
for index, turn in enumerate(turns):
    render_turn(turn, latest=index == len(turns) - 1)

render_indexing(service)


def show_event(event: ChatEvent, areas: dict) -> None:
    """Draw one event of the engine's stream (``ragkit/graph/events.py``) in the answer bubble."""
    kind = event["type"]
    if kind == "token":
        areas["text"] += event["text"]
        areas["answer"].markdown(safe_answer_markdown(areas["text"]) + " ▌")
    elif kind == "standalone":
        areas["searched_as"] = event["question"]
        areas["status"].caption(f":material/search: Searching for: {escape_line(areas['searched_as'])}")
    elif kind == "status":
        areas["status"].caption(f":material/pending: {escape_line(event['text'])}")
    elif kind == "sources":
        with areas["sources"].container():
            if event["found"]:
                render_source_panel(event["sources"], areas["question"], areas.get("searched_as", ""))
            else:
                render_closest(event["sources"], areas.get("searched_as") or areas["question"])
    elif kind == "reset":
        areas["text"] = ""
        areas["answer"].empty()
        areas["status"].warning(f"The model failed ({escape_line(str(event['error']))}); "
                                "answering from the documents instead.", icon=":material/warning:")


def answer(question: str) -> None:
    """Stream the engine's answer to ``question``, then show the conversation as recorded.

    The engine checks the question; a QuestionError is shown as a hint, in place of the question."""
    asked = st.empty()
    with asked.container():
        with st.chat_message("user"):
            st.markdown(escape_markdown(question))
        with st.chat_message("assistant"):
            areas = {"status": st.empty(), "answer": st.empty(), "sources": st.empty(), "text": "",
                     "question": question}
    try:
        for event in service.engine.stream(session_id, question, filters):
            show_event(event, areas)
    except QuestionError as exc:
        asked.empty()
        st.warning(escape_markdown(str(exc)), icon=":material/edit_note:")
        return
    except RagkitError as exc:  # the engine turns any failure into one of ours, said in words
        st.error(f"Sorry, the question could not be answered: {escape_markdown(str(exc))}", icon=":material/error:")
        return
    st.rerun()


pending = st.session_state.get(PENDING)
if pending and pending[0] != session_id:
    pending = None  # the user moved to another conversation meanwhile: ask there when they come back
elif pending and indexing:
    with st.chat_message("user"):
        st.markdown(escape_markdown(pending[1]))
    with st.chat_message("assistant"):
        st.caption(":material/hourglass_top: Answering once your files are indexed…")
elif pending:
    del st.session_state[PENDING]
    answer(pending[1])

allowed = allowed_documents(filters, documents)
if allowed is not None:
    with st.container(horizontal=True, vertical_alignment="center", gap="small", key="filter-note"):
        st.caption(f":material/filter_alt: Searching {len(allowed)} of {plural(len(documents), 'document')} ·",
                   width="content")
        st.button("clear", type="tertiary", key="clear-filters", on_click=clear_filters, args=(session_id,))

prompt = st.chat_input(
    "Ask a question about your documents… / 输入你的问题…",
    accept_file="multiple",
    file_type=UPLOAD_TYPES,
)

if prompt:
    dismiss_results()  # the last uploads' results make way for the new message
    files = prompt.files or []
    if files:
        track_jobs(service.uploads.submit_many([(upload.name, upload.getvalue(), []) for upload in files]))
    question = prompt.text or ""
    if files and question.strip():
        st.session_state[PENDING] = (session_id, question)
        st.rerun()
    elif files:
        st.rerun()
    else:
        answer(question)

"""Chat page: conversations in the sidebar (searchable), streamed cited answers, files dropped
into the input, and what can be done with an answer: copy, regenerate, edit the question and
send it again, thumbs up or down with a comment."""

import streamlit as st

from pages._access import current_person, may_edit_documents, require_access
from pages._browser import copy_button, scroll_to_last_answer, source_text_style
from pages._widgets import (
    UPLOAD_TYPES,
    dismiss_results,
    get_service,
    highlight_markdown,
    indexing_running,
    queue_samples,
    render_closest,
    render_indexing,
    render_source_panel,
    render_turn,
    track_jobs,
)
from ragkit import (
    ChatEvent,
    QuestionError,
    RagkitError,
    SearchFilters,
    SessionError,
    SessionInfo,
    Turn,
    chat_models,
    new_session_id,
    validate_session_id,
)
from ragkit.app import (
    allowed_documents,
    conversation_labels,
    escape_line,
    escape_markdown,
    plural,
    safe_answer_markdown,
)

PENDING = "pending-question"  # a question sent with files: answered once the files are indexed
REDO = "redo-last"  # ("regenerate" | "edit", session id, turn id, question): answer the last turn again
EDITING = "editing-turn"  # (session id, turn id) whose question is being edited
EDIT_ERROR = "edit-error"  # why an edited question cannot be sent
SCROLL = "scroll-to-answer"  # the run after an answer finished: bring its end into view
NOTICE = "conversation-notice"  # said once at the top of the page
SEARCH = "conversation-search"

require_access(__file__)
st.title("Chat with your documents")
source_text_style()
service = get_service()
history = service.history
person = current_person()  # with a login that knows people, each sees and continues only their own conversations


def current_session_id() -> str:
    """The conversation to show: one just picked in the sidebar, else the one in the URL (or the
    last one used in this tab), else a new one. The URL always names it, so a reload reopens it.
    A conversation deleted meanwhile (an old link, another tab, the Back button) is never
    reopened under its id: a new one starts, and the page says so. A link to someone else's
    conversation opens a new one and tells nothing of it."""
    session_id = (st.session_state.pop("switch-to", None) or st.query_params.get("session")
                  or st.session_state.get("session_id", ""))
    try:
        validate_session_id(session_id)
        if history.was_deleted(session_id):
            st.session_state[NOTICE] = "That conversation was deleted; this is a new one."
            session_id = ""
        elif not history.may_open(session_id, person):
            session_id = ""
    except SessionError:
        session_id = ""
    session_id = session_id or new_session_id()
    if st.query_params.get("session") != session_id:
        st.query_params["session"] = session_id  # in the script run: a change made in a callback never reaches the URL
    st.session_state["session_id"] = session_id
    return session_id


def switch_to(session_id: str) -> None:
    """Button callback: show ``session_id`` from this run on."""
    st.session_state["switch-to"] = session_id
    st.session_state.pop(EDITING, None)


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


def choose_knowledge_bases(session_id: str) -> None:
    """Remember the knowledge bases this conversation searches (and start the next new one with them)."""
    chosen = st.session_state[f"kbs-{session_id}"]
    history.set_session_knowledge_bases(session_id, chosen)
    st.session_state["last-kbs"] = chosen


def choose_mode(session_id: str) -> None:
    history.set_session_mode(session_id, st.session_state[f"mode-{session_id}"])


def clear_filters(session_id: str) -> None:
    st.session_state[f"filter-docs-{session_id}"] = []
    st.session_state[f"filter-tags-{session_id}"] = []


# ----- answer actions (callbacks run before the page, so the page shows their outcome) -------


def regenerate(session_id: str, turn: Turn) -> None:
    st.session_state[REDO] = ("regenerate", session_id, turn.id, turn.question)


def start_editing(session_id: str, turn: Turn) -> None:
    st.session_state[EDITING] = (session_id, turn.id)
    st.session_state[f"edit-text-{turn.id}"] = turn.question
    st.session_state.pop(EDIT_ERROR, None)


def cancel_editing() -> None:
    st.session_state.pop(EDITING, None)
    st.session_state.pop(EDIT_ERROR, None)


def send_edit(session_id: str, turn: Turn) -> None:
    """Send the edited question (the engine checks it: see reopen_editor)."""
    typed = st.session_state.get(f"edit-text-{turn.id}", "")
    cancel_editing()
    st.session_state[REDO] = ("edit", session_id, turn.id, typed)


def reopen_editor(session_id: str, turn_id: int, typed: str, reason: str) -> None:
    """An edited question the engine refused goes back into its editor, with the reason
    (nothing was replaced)."""
    st.session_state[EDITING] = (session_id, turn_id)
    st.session_state[f"edit-text-{turn_id}"] = typed
    st.session_state[EDIT_ERROR] = reason


def save_rating(session_id: str, turn: Turn) -> None:
    rating = st.session_state.get(f"feedback-{turn.id}")
    history.set_feedback(session_id, turn.id, rating, turn.feedback_comment if rating is not None else "")


def save_comment(session_id: str, turn: Turn) -> None:
    comment = st.session_state.get(f"comment-{turn.id}", "")
    try:
        history.set_feedback(session_id, turn.id, st.session_state.get(f"feedback-{turn.id}", turn.feedback), comment)
    except RagkitError as exc:
        st.toast(escape_markdown(str(exc)), icon=":material/error:")
        return
    st.toast("Thanks, your comment is saved with this answer.", icon=":material/check:")
    st.session_state["comment-round"] = st.session_state.get("comment-round", 0) + 1  # closes the popover


session_id = current_session_id()


def conversation_button(info: SessionInfo, label: str) -> None:
    """One conversation in the sidebar list (the current one highlighted)."""
    st.button(
        escape_line(label),  # a button label renders Markdown, images included
        key=f"session-{info.id}",
        width="stretch",
        type="primary" if info.id == session_id else "secondary",
        on_click=switch_to,
        args=(info.id,),
        help=f"{plural(info.turns, 'question')} · id {info.id}",
    )


with st.sidebar:
    st.markdown("#### Conversations")
    st.button("New conversation", icon=":material/add:", width="stretch", on_click=start_new_conversation)
    query = st.text_input("Search conversations", key=SEARCH, placeholder="Search conversations",
                          icon=":material/search:", label_visibility="collapsed", live=True,
                          help="Titles, questions and answers holding every word you type")
    sessions = history.list_sessions(owner=person)
    labels = conversation_labels(sessions)
    if query.strip():
        matches = history.search(query, owner=person)
        st.caption(f"{plural(len(matches), 'conversation')} with “{escape_line(query.strip())}”"
                   if matches else "No conversation holds all of these words.")
        for match in matches[:40]:
            conversation_button(match.info, labels[match.info.id])
            if match.snippet:
                st.caption(highlight_markdown(match.snippet, query))
    else:
        if not any(info.id == session_id for info in sessions):
            st.button("New conversation (current)", icon=":material/chat_bubble:", key="current-new", width="stretch",
                      disabled=True)
        for info in sessions[:40]:
            conversation_button(info, labels[info.id])
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
            help="The conversation with its sources, feedback and replaced answers, as Markdown",
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

    bases = {base.id: base.name for base in service.kb.knowledge_bases()}
    if f"kbs-{session_id}" not in st.session_state:  # its own choice, else the last one made in this tab
        remembered = service.engine.knowledge_bases_for(session_id)
        if remembered is None and not history.exists(session_id):
            remembered = [kb_id for kb_id in st.session_state.get("last-kbs") or [] if kb_id in bases] or None
            if remembered:
                history.set_session_knowledge_bases(session_id, remembered)
        st.session_state[f"kbs-{session_id}"] = remembered or []

    modes = {"default": "Default: one search", "agentic": "Agentic: plans, follows hops, compares"}
    current_mode = service.engine.mode_for(session_id)
    st.selectbox("Answer mode", list(modes), index=list(modes).index(current_mode), format_func=modes.get,
                 key=f"mode-{session_id}", on_change=choose_mode, args=(session_id,),
                 help="Remembered for this conversation; new ones start in RAGKIT_CHAT_MODE")

    st.markdown("#### Search only in…")
    chosen_kbs = st.multiselect("Knowledge bases", options=list(bases), format_func=bases.get,
                                key=f"kbs-{session_id}", placeholder="all knowledge bases",
                                on_change=choose_knowledge_bases, args=(session_id,),
                                help="Remembered for this conversation")
    chosen_kbs = [kb_id for kb_id in chosen_kbs if kb_id in bases]
    documents = service.kb.documents(chosen_kbs or None)
    titles = {doc.id: f"{doc.title} ({doc.filename})" for doc in documents}  # options are plain text, not Markdown
    chosen_docs = st.multiselect("Documents", options=list(titles), format_func=titles.get,
                                 key=f"filter-docs-{session_id}", placeholder="all documents")
    chosen_tags = st.multiselect("Tags", options=service.kb.tags(chosen_kbs or None), key=f"filter-tags-{session_id}",
                                 placeholder="all tags")

filters = SearchFilters(doc_ids=chosen_docs or None, tags=chosen_tags or None, knowledge_bases=chosen_kbs or None)
indexing = indexing_running(service)

if notice := st.session_state.pop(NOTICE, None):
    st.info(notice, icon=":material/info:")

if not documents and not indexing:
    st.info(
        "**Your knowledge base is empty.** Add your own files on the **Documents** page, drop them into "
        "the chat box below, or start with the bundled user guide (English and 中文).",
        icon=":material/inbox:",
    )
    st.button("Load the sample documents", icon=":material/auto_stories:", type="primary",
              on_click=queue_samples, args=(service,))
    st.page_link("pages/documents.py", label="Go to Documents", icon=":material/description:",
                 query_params={"session": session_id})

turns = history.turns(session_id)
redo = st.session_state.pop(REDO, None)
if redo and not (redo[1] == session_id and turns and turns[-1].id == redo[2]):
    redo = None  # pressed on an answer that is no longer the last one (another tab answered meanwhile)
editing = st.session_state.get(EDITING)
editing_id = editing[1] if editing and editing[0] == session_id else None

if documents and not turns:
    st.markdown(
        "Ask anything about your documents, in English or 中文. Follow-up questions such as "
        "*“what are its main features?”* are understood in context. Each answer lists the passages it used."
    )

def answer_actions(turn: Turn, latest: bool) -> None:
    """Under an answer: copy, regenerate and edit (the last answer only), thumbs up or down
    and, once rated, a comment."""
    with st.container(horizontal=True, gap="small", vertical_alignment="center", key=f"actions-{turn.id}"):
        copy_button(turn.as_text())
        if latest:
            st.button("Regenerate", icon=":material/refresh:", type="tertiary", key=f"regenerate-{turn.id}",
                      on_click=regenerate, args=(session_id, turn), help="Answer the same question again")
            st.button("Edit question", icon=":material/edit:", type="tertiary", key=f"edit-{turn.id}",
                      on_click=start_editing, args=(session_id, turn), disabled=editing_id == turn.id,
                      help="Change the question and send it again; the new answer replaces this one")
        st.feedback("thumbs", key=f"feedback-{turn.id}", default=turn.feedback, on_change=save_rating,
                    args=(session_id, turn))
        if turn.feedback is not None:
            label = "Edit comment" if turn.feedback_comment else "Add a comment"
            popover_key = f"comment-popover-{turn.id}-{st.session_state.get('comment-round', 0)}"
            with st.popover(label, icon=":material/comment:", type="tertiary", key=popover_key):
                with st.form(f"comment-form-{turn.id}", border=False):
                    st.text_area("What was good or wrong about this answer?", value=turn.feedback_comment,
                                 key=f"comment-{turn.id}", max_chars=2000)
                    st.form_submit_button("Save comment", on_click=save_comment, args=(session_id, turn))
    if turn.feedback_comment:
        st.caption(f":material/comment: Your comment: {escape_line(turn.feedback_comment)}")


def question_editor(turn: Turn) -> None:
    """The last question in an editor: Send answers it again in place of its answer."""
    with st.form(f"edit-form-{turn.id}", border=False):
        st.text_area("Edit your question", key=f"edit-text-{turn.id}", max_chars=4000)
        if error := st.session_state.get(EDIT_ERROR):
            st.warning(escape_markdown(error), icon=":material/edit_note:")
        with st.container(horizontal=True, gap="small"):
            st.form_submit_button("Send", icon=":material/send:", type="primary", on_click=send_edit,
                                  args=(session_id, turn))
            st.form_submit_button("Cancel", on_click=cancel_editing)


shown = turns[:-1] if redo else turns
for index, turn in enumerate(shown):
    latest = index == len(turns) - 1
    render_turn(turn, latest=latest, actions=lambda turn, latest=latest: answer_actions(turn, latest),
                question=question_editor if latest and turn.id == editing_id else None)

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
        then = f"asking {escape_line(event['then'])}" if event.get("then") else "answering from the documents"
        areas["status"].warning(f"The model failed ({escape_line(str(event['error']))}); {then} instead.",
                                icon=":material/warning:")


def answer(question: str, how: str = "ask", turn_id: int | None = None) -> None:
    """Stream the engine's answer to ``question``, then show the conversation as recorded.

    ``how``: "ask" a new question, "regenerate" the last answer, or "edit" (the last question,
    replaced by ``question``; ``turn_id`` is the last turn's). The engine checks the question;
    a QuestionError is shown as a hint, in place of the question (an edited one goes back into
    its editor)."""
    asked = st.empty()
    with asked.container():
        with st.chat_message("user"):
            st.markdown(escape_markdown(question))
        with st.chat_message("assistant"):
            areas = {"status": st.empty(), "answer": st.empty(), "sources": st.empty(), "text": "",
                     "question": question}
    if person is not None:
        history.create_session(session_id, owner=person)  # theirs from the first question on
    if how == "regenerate":
        events = service.engine.stream_regenerate(session_id, filters)
    else:
        events = service.engine.stream(session_id, question, filters, replace_last=how == "edit")
    try:
        for event in events:
            show_event(event, areas)
    except QuestionError as exc:
        if how == "edit":
            reopen_editor(session_id, turn_id, question, str(exc))
            st.rerun()
        asked.empty()
        st.warning(escape_markdown(str(exc)), icon=":material/edit_note:")
        return
    except RagkitError as exc:  # the engine turns any failure into one of ours, said in words
        st.error(f"Sorry, the question could not be answered: {escape_markdown(str(exc))}", icon=":material/error:")
        return
    st.session_state[SCROLL] = True
    st.rerun()


if redo:
    answer(redo[3], redo[0], redo[2])

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

allowed = allowed_documents(filters, documents) if filters.narrows() else None
if allowed is not None:
    with st.container(horizontal=True, vertical_alignment="center", gap="small", key="filter-note"):
        st.caption(f":material/filter_alt: Searching {len(allowed)} of {plural(len(documents), 'document')} ·",
                   width="content")
        st.button("clear", type="tertiary", key="clear-filters", on_click=clear_filters, args=(session_id,))

# One language, so the hint fits a phone's width (390 px): the browser's language decides.
chinese = (st.context.locale or "").lower().startswith("zh")
prompt = st.chat_input(
    "输入关于文档的问题…" if chinese else "Ask a question about your documents…",
    accept_file="multiple" if may_edit_documents() else False,
    file_type=UPLOAD_TYPES,
)

if st.session_state.pop(SCROLL, False):
    scroll_to_last_answer()  # the page was drawn anew with the finished answer (and its sources) at the end

if prompt:
    dismiss_results()  # the last uploads' results make way for the new message
    cancel_editing()
    files = getattr(prompt, "files", None) or []  # a plain string when files are not accepted (viewers)
    if files:
        track_jobs(service.uploads.submit_many([(upload.name, upload.getvalue(), []) for upload in files],
                                               person=person))
    question = (prompt if isinstance(prompt, str) else prompt.text) or ""
    if files and question.strip():
        st.session_state[PENDING] = (session_id, question)
        st.rerun()
    elif files:
        st.rerun()
    else:
        answer(question)

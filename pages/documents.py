"""Documents page: the knowledge bases, drag-and-drop upload and web pages with per-file
progress, the document table (one or many rows selected), details, viewer and bulk actions.

The selection is remembered by document ids, never by rows: saving re-sorts nothing (the
table is ordered by when each document was added) and the table's selection is set from
the ids on every run, so the panels and their buttons always belong to the documents the
user picked.
"""

from datetime import datetime

import streamlit as st

from pages._access import current_person, may_edit_documents, require_access
from pages._kb import keep_session_in_url, knowledge_base_actions, knowledge_base_picker
from pages._viewer import download_original, open_viewer
from pages._widgets import (
    UPLOAD_TYPES_LABEL,
    get_service,
    indexing_running,
    queue_samples,
    quote_markdown,
    render_indexing,
    track_jobs,
)
from ragkit import RagkitError
from ragkit.app import checked_tags, documents_frame, escape_line, escape_markdown, plural, section_trail

SELECTED, TABLE, TABLE_IDS = "selected-documents", "documents-table", "documents-table-ids"

require_access(__file__)
keep_session_in_url()
st.title("Documents")
service = get_service()
kb = service.kb
person = current_person()  # None without a login that knows people
editor = may_edit_documents()  # RAGKIT_EDITORS; the library checks it again

picker_col, actions_col = st.columns([2, 3], vertical_alignment="bottom")
with picker_col:
    kb_id = knowledge_base_picker(kb)
base = kb.knowledge_base(kb_id)
if editor:
    with actions_col:
        knowledge_base_actions(kb, base)

def new_tags() -> list[str] | None:
    """The tags typed for new files, or None (and an error shown) when they cannot be used."""
    try:
        return checked_tags([upload_tags])
    except RagkitError as exc:
        st.error(f"{escape_markdown(str(exc))}. The files wait in the drop zone.", icon=":material/sell:")
        return None


if editor:  # the others see no upload zone (and the library refuses them anyway)
    st.markdown(f"Drop {UPLOAD_TYPES_LABEL} files, or add a web page by its address. Each is read, split into passages "
                f"and indexed in the background, into **{escape_markdown(base.name)}**.")
    upload_col, tag_col = st.columns([3, 1])
    with tag_col:
        upload_tags = st.text_input("Tags for new files", placeholder="e.g. finance, 2026",
                                    help="Comma-separated. Tags can be changed later.")
    with upload_col:
        # No type filter: Streamlit's own would drop an unsupported file with a message that flashes
        # for half a second; the library refuses it with a result row that says why.
        uploads = st.file_uploader(
            "Add documents",
            accept_multiple_files=True,
            key=f"uploader-{st.session_state.get('uploader-round', 0)}",
            help=f"Supported: {UPLOAD_TYPES_LABEL}. Other files are refused with the reason.",
        )
    if uploads and (tags := new_tags()) is not None:
        track_jobs(service.uploads.submit_many([(upload.name, upload.getvalue(), tags) for upload in uploads],
                                               kb_id, person=person))
        # A fresh uploader key empties the drop zone so the same files are not queued twice.
        st.session_state["uploader-round"] = st.session_state.get("uploader-round", 0) + 1
        st.rerun()

    with st.form("add-url", border=False, clear_on_submit=True):
        url_col, fetch_col = st.columns([4, 1], vertical_alignment="bottom")
        address = url_col.text_input("Web page", placeholder="https://example.com/article",
                                     help="The page's main text is added (menus, footers and ads left out).")
        fetch = fetch_col.form_submit_button("Add the page", icon=":material/language:", width="stretch")
    if fetch and address.strip() and (tags := new_tags()) is not None:
        track_jobs([service.uploads.submit_url(address, tags, kb_id, person=person)])
        st.rerun()
else:
    st.info("You can search and ask questions; only editors (RAGKIT_EDITORS) can add, edit or delete documents.",
            icon=":material/visibility:")

render_indexing(service)  # progress while indexing; results stay until dismissed

if notice := st.session_state.pop("doc-notice", None):
    st.success(escape_markdown(notice), icon=":material/check_circle:")

if removals := kb.removals(10):
    with st.expander(f"Recently deleted ({len(removals)})", expanded=False):
        for removal in removals:
            by = f" by {escape_line(removal.removed_by)}" if removal.removed_by else ""
            when = datetime.fromtimestamp(removal.removed_at).strftime("%Y-%m-%d %H:%M")
            st.caption(f"{escape_line(removal.title or removal.doc_id)} — deleted{by}, {when}")

documents = kb.documents([kb_id])
if not documents:
    if not indexing_running(service):
        st.info(f"No documents in {escape_markdown(base.name)} yet. Drop files above, or load the bundled user "
                "guide to try ragkit out.", icon=":material/inbox:")
        if editor:
            st.button("Load the sample documents", icon=":material/auto_stories:", type="primary",
                      on_click=queue_samples, args=(service, kb_id))
    st.stop()


def shown_heading(name: str, frame, documents) -> str:
    """'Default · 8 documents · 40 passages', or what a search leaves of them:
    'Default · 1 of 8 documents · 5 passages' (Markdown: the knowledge base's name escaped)."""
    count = (plural(len(documents), "document") if len(frame) == len(documents)
             else f"{len(frame)} of {plural(len(documents), 'document')}")
    return f"{escape_markdown(name)} · {count} · {plural(int(frame['chunks'].sum()), 'passage')}"


def remember_selection() -> None:
    """Table callback: the rows the user picked, as the ids of the documents shown in them."""
    rows = st.session_state[TABLE]["selection"]["rows"]
    shown = st.session_state.get(TABLE_IDS, [])
    st.session_state[SELECTED] = [shown[row] for row in rows if row < len(shown)]


heading = st.empty()  # filled once the search below is applied: it counts what the table shows
query = st.text_input("Search documents", placeholder="title, file name or tag", label_visibility="collapsed")
frame = documents_frame(kb, [kb_id]).sort_values(["added", "id"], ascending=[False, True], ignore_index=True)
if query.strip():
    needle = query.strip().lower()
    searched = frame[["title", "file", "tags", "type", "added_by"]]
    mask = searched.apply(lambda col: col.str.lower().str.contains(needle, regex=False))
    frame = frame[mask.any(axis=1)].reset_index(drop=True)
heading.subheader(shown_heading(base.name, frame, documents))  # above the search box, counting what it leaves
shown_docs = [doc for doc in documents if doc.id in set(frame["id"])]

shown_ids = list(frame["id"])
selected = [doc_id for doc_id in st.session_state.get(SELECTED) or [] if doc_id in shown_ids]
wanted_rows = sorted(shown_ids.index(doc_id) for doc_id in selected)
table_state = st.session_state.get(TABLE)
if table_state is None or sorted(table_state["selection"]["rows"]) != wanted_rows:  # a dict when set below
    st.session_state[TABLE] = {"selection": {"rows": wanted_rows, "columns": [], "cells": []}}
st.session_state[TABLE_IDS] = shown_ids
st.dataframe(
    frame,
    hide_index=True,
    width="stretch",
    on_select=remember_selection,
    selection_mode="multi-row",
    # fits 1280 px; the rest is in the detail panel. "Added by" once anyone added a document with a login
    column_order=["title", "file", "chunks", "tags", *(["added_by"] if any(d.added_by for d in documents) else []),
                  "added"],
    column_config={
        "title": st.column_config.TextColumn("Title", width=240),
        "file": st.column_config.TextColumn("File", width=200),
        "chunks": st.column_config.NumberColumn("Passages", width=80),
        "tags": st.column_config.TextColumn("Tags", width=120),
        "added_by": st.column_config.TextColumn("Added by", width=160),
        "added": st.column_config.DatetimeColumn("Added", format="YYYY-MM-DD HH:mm", width=140),
    },
    key=TABLE,
)


def delete_chosen(doc_ids: list[str]) -> None:
    """Button callback: delete the chosen documents (one confirmation for all of them)."""
    deleted = kb.delete_many(doc_ids, person=person)
    st.session_state[SELECTED] = []
    names = ", ".join(doc.filename for doc in deleted[:3]) + (" …" if len(deleted) > 3 else "")
    st.session_state["doc-notice"] = (f"{deleted[0].filename}: deleted" if len(deleted) == 1
                                      else f"{plural(len(deleted), 'document')} deleted ({names})")


def tag_chosen(doc_ids: list[str]) -> None:
    """Form callback: add the typed tags to every chosen document."""
    try:
        changed = kb.add_tags(doc_ids, [st.session_state.get("bulk-tags", "")], person=person)
    except RagkitError as exc:
        st.session_state["bulk-error"] = str(exc)
        return
    st.session_state["doc-notice"] = f"tags added to {plural(len(changed), 'document')}"


if len(selected) > 1 and editor:
    chosen = [doc for doc in shown_docs if doc.id in selected]
    st.markdown(f"### {plural(len(chosen), 'document')} selected")
    st.caption(", ".join(escape_line(doc.filename) for doc in chosen[:8]) + (" …" if len(chosen) > 8 else ""))
    tag_col, delete_col = st.columns([3, 1])
    with tag_col.form("bulk-tag", border=False, clear_on_submit=True):
        st.text_input("Add tags to the selected documents", key="bulk-tags", placeholder="e.g. finance, 2026",
                      help="Comma-separated; each document keeps its own tags too.")
        st.form_submit_button("Add tags", on_click=tag_chosen, args=([doc.id for doc in chosen],))
    with delete_col.popover(f"Delete {len(chosen)} documents", icon=":material/delete:", width="stretch"):
        st.write(f"Delete these {len(chosen)} documents and their "
                 f"{plural(sum(doc.chunks for doc in chosen), 'passage')}? Answers already given keep their quotes.")
        st.button("Yes, delete them", type="primary", key="delete-chosen", on_click=delete_chosen,
                  args=([doc.id for doc in chosen],))
    if error := st.session_state.pop("bulk-error", None):
        st.error(escape_markdown(error), icon=":material/sell:")
    st.stop()

doc = kb.document(selected[0]) if selected else None
if doc is None:
    st.caption("Select a row to edit its title and tags, view it, preview its passages or delete it; "
               "select several to tag or delete them together.")
    st.stop()

where = {"xlsx": "sheet", "pptx": "slide"}.get(doc.doc_type, "page")
st.markdown(f"### {escape_line(doc.title)}")
st.caption(f"{escape_line(doc.filename)} · {escape_line(doc.doc_type)} · {plural(doc.pages, where)} · "
           f"{plural(doc.chunks, 'passage')} · {plural(doc.tokens, 'token')} · {doc.size_bytes / 1024:.1f} KB · "
           f"version {doc.version} · id {escape_line(doc.id)}")
if doc.added_by or doc.changed_by:
    added = datetime.fromtimestamp(doc.created_at).strftime("%Y-%m-%d %H:%M")
    changed = datetime.fromtimestamp(doc.updated_at).strftime("%Y-%m-%d %H:%M")
    st.caption(f"Added by {escape_line(doc.added_by or 'someone without a login')} on {added} · last changed by "
               f"{escape_line(doc.changed_by or doc.added_by or 'someone without a login')} on {changed}")
edit_col, delete_col = st.columns([3, 1])
with (edit_col.form(f"edit-{doc.id}") if editor else edit_col.container()):
    title = st.text_input("Title", value=doc.title, disabled=not editor)
    tags = st.text_input("Tags", value=", ".join(doc.tags), help="Comma-separated", disabled=not editor)
    if editor and st.form_submit_button("Save"):
        try:
            kb.update_metadata(doc.id, title=title, tags=[tags], person=person)
        except RagkitError as exc:
            st.error(escape_markdown(str(exc)), icon=":material/sell:")
        else:
            st.session_state["doc-notice"] = f"{doc.filename}: details saved"
            st.rerun()
with delete_col:
    if editor:
        with st.popover("Delete document", icon=":material/delete:", width="stretch"):
            st.write(f"Delete **{escape_line(doc.filename)}** and its {plural(doc.chunks, 'passage')}? "
                     "Answers already given keep their quotes.")
            st.button("Yes, delete", type="primary", key=f"delete-{doc.id}", on_click=delete_chosen,
                      args=([doc.id],))
    passages = kb.passages(doc.id)
    if passages and st.button("View", icon=":material/visibility:", width="stretch", key=f"view-{doc.id}",
                              help="The document where its text stands, page by page"):
        open_viewer(doc.id, passages[0].page, passages[0].id, "", passages[0].text)
    download_original(doc, kb.original(doc.id), key=f"download-{doc.id}")

with st.expander(f"Preview passages ({doc.chunks})", expanded=False):
    for passage in passages[:200]:
        section = f" · {escape_line(section_trail(passage.section))}" if passage.section else ""
        st.caption(f"Passage {passage.position + 1} · {where} {passage.page}{section} · "
                   f"{plural(passage.tokens, 'token')}")
        st.markdown(quote_markdown(passage.text))

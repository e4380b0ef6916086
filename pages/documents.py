"""Documents page: drag-and-drop upload with per-file progress, the document table, details.

The selected document is remembered by its id, never by its row: saving re-sorts
nothing (the table is ordered by when each document was added) and the table's
selection is set from the id on every run, so the detail panel and its Delete button
always belong to the document the user picked.
"""

import streamlit as st

from pages._access import require_access
from pages._widgets import (
    UPLOAD_TYPES,
    UPLOAD_TYPES_LABEL,
    get_service,
    indexing_running,
    queue_samples,
    quote_markdown,
    render_indexing,
    track_jobs,
)
from ragkit.errors import RagkitError
from ragkit.kb import plural
from ragkit.render import escape_line, escape_markdown
from ragkit.stats import documents_frame
from ragkit.tags import checked_tags

SELECTED, TABLE, TABLE_IDS = "selected-document", "documents-table", "documents-table-ids"

require_access()
st.title("Documents")
service = get_service()
kb = service.kb

st.markdown(f"Drop {UPLOAD_TYPES_LABEL} files. Each file is read, split into passages and indexed in the background.")
upload_col, tag_col = st.columns([3, 1])
with tag_col:
    upload_tags = st.text_input("Tags for new files", placeholder="e.g. finance, 2026",
                                help="Comma-separated. Tags can be changed later.")
with upload_col:
    uploads = st.file_uploader(
        "Add documents",
        type=UPLOAD_TYPES,
        accept_multiple_files=True,
        key=f"uploader-{st.session_state.get('uploader-round', 0)}",
    )

if uploads:
    try:
        new_tags = checked_tags([upload_tags])
    except RagkitError as exc:
        st.error(f"{escape_markdown(str(exc))}. The files wait in the drop zone.", icon=":material/sell:")
    else:
        track_jobs(service.uploads.submit_many([(upload.name, upload.getvalue(), new_tags) for upload in uploads]))
        # A fresh uploader key empties the drop zone so the same files are not queued twice.
        st.session_state["uploader-round"] = st.session_state.get("uploader-round", 0) + 1
        st.rerun()

render_indexing(service)  # progress while indexing; results stay until dismissed

if notice := st.session_state.pop("doc-notice", None):
    st.success(escape_markdown(notice), icon=":material/check_circle:")

documents = kb.documents()
if not documents:
    if not indexing_running(service):
        st.info("No documents yet. Drop files above, or load the bundled user guide to try ragkit out.",
                icon=":material/inbox:")
        st.button("Load the sample documents", icon=":material/auto_stories:", type="primary",
                  on_click=queue_samples, args=(service,))
    st.stop()


def remember_selection() -> None:
    """Table callback: the row the user picked, as the id of the document shown in that row."""
    rows = st.session_state[TABLE]["selection"]["rows"]
    shown = st.session_state.get(TABLE_IDS, [])
    st.session_state[SELECTED] = shown[rows[0]] if rows and rows[0] < len(shown) else None


st.subheader(f"Knowledge base · {plural(len(documents), 'document')} · "
             f"{plural(sum(d.chunks for d in documents), 'passage')}")
query = st.text_input("Search documents", placeholder="title, file name or tag", label_visibility="collapsed")
frame = documents_frame(kb).sort_values(["added", "id"], ascending=[False, True], ignore_index=True)
if query.strip():
    needle = query.strip().lower()
    mask = frame[["title", "file", "tags", "type"]].apply(lambda col: col.str.lower().str.contains(needle, regex=False))
    frame = frame[mask.any(axis=1)].reset_index(drop=True)

shown_ids = list(frame["id"])
selected = st.session_state.get(SELECTED)
wanted_rows = [shown_ids.index(selected)] if selected in shown_ids else []
table_state = st.session_state.get(TABLE)
if table_state is None or list(table_state["selection"]["rows"]) != wanted_rows:  # a dict when set below
    st.session_state[TABLE] = {"selection": {"rows": wanted_rows, "columns": [], "cells": []}}
st.session_state[TABLE_IDS] = shown_ids
st.dataframe(
    frame,
    hide_index=True,
    width="stretch",
    on_select=remember_selection,
    selection_mode="single-row",
    column_order=["title", "file", "chunks", "tags", "added"],  # fits 1280 px; the rest is in the detail panel
    column_config={
        "title": st.column_config.TextColumn("Title", width=240),
        "file": st.column_config.TextColumn("File", width=200),
        "chunks": st.column_config.NumberColumn("Passages", width=80),
        "tags": st.column_config.TextColumn("Tags", width=120),
        "added": st.column_config.DatetimeColumn("Added", format="YYYY-MM-DD HH:mm", width=140),
    },
    key=TABLE,
)

doc = kb.document(selected) if selected in shown_ids else None
if doc is None:
    st.caption("Select a row to edit its title and tags, preview its passages or delete it.")
    st.stop()

st.markdown(f"### {escape_line(doc.title)}")
st.caption(f"{escape_line(doc.filename)} · {escape_line(doc.doc_type)} · {plural(doc.pages, 'page')} · "
           f"{plural(doc.chunks, 'passage')} · {plural(doc.tokens, 'token')} · {doc.size_bytes / 1024:.1f} KB · "
           f"version {doc.version} · id {escape_line(doc.id)}")
edit_col, delete_col = st.columns([3, 1])
with edit_col.form(f"edit-{doc.id}"):
    title = st.text_input("Title", value=doc.title)
    tags = st.text_input("Tags", value=", ".join(doc.tags), help="Comma-separated")
    if st.form_submit_button("Save"):
        try:
            kb.update_metadata(doc.id, title=title, tags=[tags])
        except RagkitError as exc:
            st.error(escape_markdown(str(exc)), icon=":material/sell:")
        else:
            st.session_state["doc-notice"] = f"{doc.filename}: details saved"
            st.rerun()
with delete_col.popover("Delete document", icon=":material/delete:", width="stretch"):
    st.write(f"Delete **{escape_line(doc.filename)}** and its {plural(doc.chunks, 'passage')}? "
             "Answers already given keep their quotes.")
    if st.button("Yes, delete", type="primary", key=f"delete-{doc.id}"):
        try:
            kb.delete(doc.id)
        except KeyError:
            pass  # already deleted (from another tab or the command line)
        st.session_state[SELECTED] = None
        st.session_state["doc-notice"] = f"{doc.filename}: deleted"
        st.rerun()

with st.expander(f"Preview passages ({doc.chunks})", expanded=False):
    for passage in kb.passages(doc.id)[:200]:
        st.caption(f"Passage {passage.position + 1} · page {passage.page} · {plural(passage.tokens, 'token')}")
        st.markdown(quote_markdown(passage.text))

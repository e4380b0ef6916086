"""Documents page: drag-and-drop upload with per-file progress, the document table, details."""

import streamlit as st

from pages._access import require_access
from pages._widgets import STATUS_ICON, STATUS_TEXT, get_service
from ragkit.kb import normalize_tags, plural
from ragkit.loaders import SUPPORTED_TYPES
from ragkit.render import escape_line, escape_markdown
from ragkit.stats import documents_frame

require_access()
st.title("Documents")
service = get_service()
kb = service.kb

st.markdown("Drop PDF, Word, text, Markdown, HTML or CSV files. Each file is read, split into passages and indexed.")
upload_col, tag_col = st.columns([3, 1])
with tag_col:
    upload_tags = st.text_input("Tags for new files", placeholder="e.g. finance, 2026",
                                help="Comma-separated. Tags can be changed later.")
with upload_col:
    uploads = st.file_uploader(
        "Add documents",
        type=sorted(ext.lstrip(".") for ext in SUPPORTED_TYPES),
        accept_multiple_files=True,
        key=f"uploader-{st.session_state.get('uploader-round', 0)}",
    )

if uploads:
    jobs = [service.uploads.submit(upload.name, upload.getvalue(), normalize_tags([upload_tags])) for upload in uploads]
    st.session_state.setdefault("ingest-jobs", []).extend(job.id for job in jobs)
    st.session_state["indexing-results"] = []
    # A fresh uploader key empties the drop zone so the same files are not queued twice.
    st.session_state["uploader-round"] = st.session_state.get("uploader-round", 0) + 1
    st.rerun()


def show_indexing_progress(job_ids: list[str]) -> None:
    """Per-file progress of this session's uploads until all are done, then their results.

    Leaving the page stops this loop, not the indexing: coming back resumes it.
    """
    jobs = service.uploads.jobs(job_ids)
    bars = [st.progress(0.0, text=f"{escape_line(job.filename)}: waiting") for job in jobs]
    st.caption("Indexing continues if you leave this page; the results appear here when you come back.")
    while True:
        finished = service.uploads.wait(job_ids, timeout_s=0.3)
        for number, (bar, job) in enumerate(zip(bars, jobs), start=1):
            stage = "done" if job.done else escape_line(job.stage)
            bar.progress(job.fraction, text=f"{escape_line(job.filename)} ({number}/{len(jobs)}): {stage}")
        if finished:
            break
    st.session_state["indexing-results"] = [(job.result.status, job.result.message) for job in jobs]
    st.session_state["ingest-jobs"] = []
    service.uploads.forget(job_ids)
    st.rerun()


if job_ids := st.session_state.get("ingest-jobs"):
    show_indexing_progress(job_ids)

# Results stay until dismissed or the next upload: they may arrive while the user is elsewhere.
if upload_results := st.session_state.get("indexing-results"):
    for status, message in upload_results:
        box = {"added": st.success, "new_version": st.info, "unchanged": st.info, "refused": st.error}[status]
        box(f"{STATUS_ICON[status]} **{STATUS_TEXT[status]}** — {escape_markdown(message)}")
    if st.button("Dismiss", icon=":material/close:", type="tertiary", key="dismiss-upload-results"):
        st.session_state["indexing-results"] = []
        st.rerun()

if notice := st.session_state.pop("doc-notice", None):
    st.success(escape_markdown(notice), icon=":material/check_circle:")

documents = kb.documents()
if not documents:
    st.info("No documents yet. Drop files above, or load the bundled user guide to try ragkit out.", icon=":material/inbox:")
    if st.button("Load the sample documents", icon=":material/auto_stories:", type="primary"):
        bar = st.progress(0.0, text="Loading samples…")
        results = service.load_samples(lambda stage, fraction: bar.progress(min(fraction, 1.0), text=escape_line(stage)))
        st.session_state["indexing-results"] = [(r.status, r.message) for r in results]
        st.rerun()
    st.stop()

st.subheader(f"Knowledge base · {plural(len(documents), 'document')} · {plural(sum(d.chunks for d in documents), 'passage')}")
query = st.text_input("Search documents", placeholder="title, file name or tag", label_visibility="collapsed")
frame = documents_frame(kb)
if query.strip():
    needle = query.strip().lower()
    mask = frame[["title", "file", "tags", "type"]].apply(lambda col: col.str.lower().str.contains(needle, regex=False))
    frame = frame[mask.any(axis=1)]
selection = st.dataframe(
    frame.drop(columns=["id", "updated"]),
    hide_index=True,
    width="stretch",
    on_select="rerun",
    selection_mode="single-row",
    column_config={
        "title": st.column_config.TextColumn("Title", width="medium"),
        "file": "File", "type": "Type", "pages": "Pages", "chunks": "Passages", "tokens": "Tokens",
        "tags": "Tags", "version": "Version", "size_kb": st.column_config.NumberColumn("Size (KB)"),
        "added": st.column_config.DatetimeColumn("Added", format="YYYY-MM-DD HH:mm"),
    },
    key="documents-table",
)
rows = selection.selection.rows if selection else []
if not rows:
    st.caption("Select a row to edit its tags, preview its passages or delete it.")
    st.stop()

doc = kb.document(frame.iloc[rows[0]]["id"])
if doc is None:
    st.stop()
st.markdown(f"### {escape_line(doc.title)}")
st.caption(f"{escape_line(doc.filename)} · {escape_line(doc.doc_type)} · {plural(doc.pages, 'page')} · "
           f"{plural(doc.chunks, 'passage')} · version {doc.version} · id {escape_line(doc.id)}")
edit_col, delete_col = st.columns([3, 1])
with edit_col.form(f"edit-{doc.id}"):
    title = st.text_input("Title", value=doc.title)
    tags = st.text_input("Tags", value=", ".join(doc.tags), help="Comma-separated")
    if st.form_submit_button("Save"):
        kb.update_metadata(doc.id, title=title, tags=normalize_tags([tags]))
        st.session_state["doc-notice"] = f"{doc.filename}: details saved"
        st.rerun()
with delete_col.popover("Delete document", icon=":material/delete:", width="stretch"):
    st.write(f"Delete **{escape_line(doc.filename)}** and its {doc.chunks} passages? Answers already given keep their quotes.")
    if st.button("Yes, delete", type="primary", key=f"delete-{doc.id}"):
        kb.delete(doc.id)
        st.session_state["doc-notice"] = f"{doc.filename}: deleted"
        st.rerun()

with st.expander(f"Preview passages ({doc.chunks})", expanded=False):
    for passage in kb.passages(doc.id)[:200]:
        st.caption(f"Passage {passage.position + 1} · page {passage.page} · {passage.tokens} tokens")
        st.markdown("> " + escape_line(passage.text))

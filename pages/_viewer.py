"""The source viewer: a dialog that opens a citation where it stands.

A PDF opens at the cited page, drawn with the cited sentences highlighted (previous and
next page at hand, the whole PDF below); any other document shows the passage in its
surrounding text, scrolled to and highlighted. The original file can be downloaded when
it was kept. The work (finding the text, drawing the page) is ``ragkit.app.viewer``'s.
"""

from __future__ import annotations

import html
import uuid

import streamlit as st

from pages._service import service_future
from ragkit import DocumentRecord, Source
from ragkit.app import escape_line, quote_pieces, render_pdf_page, text_context

VIEWER = "source-viewer"  # what the dialog shows: doc_id, page, passage_id, quote, cited page
DOWNLOAD_TYPES = {"pdf": "application/pdf", "docx": "application/vnd.openxmlformats-officedocument."
                  "wordprocessingml.document", "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml."
                  "sheet", "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
                  "web": "text/html", "html": "text/html", "csv": "text/csv", "markdown": "text/markdown",
                  "txt": "text/plain"}
WEB_SUFFIX = ".html"


def source_button(source: Source, key: str, compact: bool = False) -> None:
    """A button that opens ``source`` in the viewer (at its page, the quote highlighted)."""
    label = f"Open page {source.page}" if not compact else f"open p. {source.page}"
    if st.button(label, key=key, icon=":material/open_in_new:" if not compact else None,
                 type="tertiary", help="See the passage where it stands in the document"):
        open_viewer(source.doc_id, source.page, source.chunk_id, source.quote, source.text)


def open_viewer(doc_id: str, page: int, passage_id: str = "", quote: str = "", passage_text: str = "") -> None:
    """Open the viewer dialog on ``doc_id`` at ``page`` (1-based), highlighting ``quote``."""
    st.session_state[VIEWER] = {"doc_id": doc_id, "page": page, "cited_page": page, "passage_id": passage_id,
                                "quote": quote, "passage_text": passage_text, "round": uuid.uuid4().hex[:6]}
    _viewer_dialog()


def _turn_page(step: int) -> None:
    st.session_state[VIEWER]["page"] += step


@st.dialog("Source", width="large")
def _viewer_dialog() -> None:
    target = st.session_state.get(VIEWER) or {}
    kb = service_future().result().kb
    doc = kb.document(target.get("doc_id", ""))
    if doc is None:
        st.warning("This document has been deleted since the answer was given; the quote is all that is left.",
                   icon=":material/delete:")
        st.markdown(escape_line(target.get("quote", "")))
        return
    st.markdown(f"**{escape_line(doc.title)}** · {escape_line(doc.filename)}")
    original = kb.original(doc.id)
    if doc.doc_type == "pdf" and original is not None:
        _pdf_view(doc, original, target)
    else:
        _text_view(kb, doc, target)
    download_original(doc, original, key=f"viewer-download-{target.get('round')}")


def _pdf_view(doc: DocumentRecord, original: bytes, target: dict) -> None:
    on_cited_page = target["page"] == target["cited_page"]
    pieces = quote_pieces(target.get("quote", "")) if on_cited_page else []
    rendered = render_pdf_page(original, target["page"], pieces, target.get("passage_text", "") if pieces else "")
    target["page"] = rendered.number
    with st.container(horizontal=True, vertical_alignment="center", key="viewer-pages"):
        st.button("Previous page", icon=":material/chevron_left:", disabled=rendered.number <= 1,
                  on_click=_turn_page, args=(-1,), key="viewer-previous")
        st.markdown(f"Page {rendered.number} of {rendered.page_count}", width="content")
        st.button("Next page", icon=":material/chevron_right:", icon_position="right",
                  disabled=rendered.number >= rendered.page_count, on_click=_turn_page, args=(1,),
                  key="viewer-next")
    if pieces and rendered.highlighted:
        st.caption(":material/ink_highlighter: The cited sentences are highlighted.")
    elif pieces:
        st.caption(":material/info: The cited text is not on this page's text layer (a scanned page read by "
                   "OCR, say); it reads:")
        st.markdown(escape_line(target.get("quote", "")))
    elif not on_cited_page:
        st.caption(f"The citation is on page {target['cited_page']}.")
    st.image(rendered.image, width="stretch", alt=f"Page {rendered.number} of {doc.filename}")
    if _pdf_viewer_available():
        with st.expander("The whole PDF", icon=":material/picture_as_pdf:"):
            st.pdf(original, height=600, alt=doc.title)


def _pdf_viewer_available() -> bool:
    """st.pdf needs the streamlit-pdf component (pdf.js, in the package: works offline)."""
    import importlib.util

    return importlib.util.find_spec("streamlit_pdf") is not None


def _text_view(kb, doc: DocumentRecord, target: dict) -> None:
    from ragkit.app import page_text

    passages = kb.passages(doc.id)
    passage = next((p for p in passages if p.id == target.get("passage_id")), None)
    if passage is None:  # a newer version of the document: find the quote in its text instead
        passage = next((p for p in passages if target.get("passage_text", "")[:60] in p.text), None)
    if passage is None:
        st.info("The document has changed since this answer; the quote was:", icon=":material/history:")
        st.markdown(escape_line(target.get("quote", "")))
        return
    where = {"xlsx": "sheet", "pptx": "slide"}.get(doc.doc_type, "page")
    if doc.pages > 1:
        st.caption(f"{where.capitalize()} {passage.page} of {doc.pages}")
    text = page_text(passages, passage.page)
    context = text_context(text, passage.start, passage.end, quote_pieces(target.get("quote", "")))
    st.html(_context_html(context), unsafe_allow_javascript=True)


def _context_html(context) -> str:
    """The passage in its text as escaped HTML in a scrolling box, scrolled to the passage:
    the passage on a light background, the cited sentences on the highlight colour."""
    marked, cursor = [], 0
    for start, end in context.cited:
        marked.append(html.escape(context.passage[cursor:start]))
        marked.append(f'<mark class="ragkit-cited">{html.escape(context.passage[start:end])}</mark>')
        cursor = end
    marked.append(html.escape(context.passage[cursor:]))
    box_id = f"ragkit-context-{uuid.uuid4().hex[:8]}"
    before = ("… " if context.cut_before else "") + html.escape(context.before)
    after = html.escape(context.after) + (" …" if context.cut_after else "")
    return (
        f'<div id="{box_id}" class="ragkit-context" style="max-height:420px;overflow-y:auto;white-space:pre-wrap;'
        'line-height:1.55;padding:0.75rem 1rem;border:1px solid rgba(128,128,128,0.35);border-radius:0.5rem">'
        f'{before}<span class="ragkit-passage" style="background:rgba(37,99,235,0.10);border-radius:3px">'
        f'{"".join(marked)}</span>{after}</div>'
        '<style>.ragkit-cited{background:rgb(255,214,0);color:#111;border-radius:2px;padding:0 1px}</style>'
        f'<script>(() => {{ const box = document.getElementById("{box_id}");'
        ' if (!box) return; const at = box.querySelector(".ragkit-cited") || box.querySelector(".ragkit-passage");'
        ' if (at) box.scrollTop = Math.max(0, at.offsetTop - box.offsetTop - 40); }})();</script>'
    )


def download_original(doc: DocumentRecord, original: bytes | None, key: str) -> None:
    """A download button for the file as it was added, or why there is none."""
    if original is None:
        st.caption(":material/info: The original file was not kept (added before ragkit kept originals, or "
                   "RAGKIT_KEEP_ORIGINALS=false): add it again to be able to download it.")
        return
    name = doc.filename if doc.doc_type != "web" else _web_file_name(doc)
    st.download_button("Download the original", data=original, file_name=name,
                       mime=DOWNLOAD_TYPES.get(doc.doc_type, "application/octet-stream"),
                       icon=":material/download:", key=key, on_click="ignore")


def _web_file_name(doc: DocumentRecord) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(doc.filename)
    stem = "-".join(part for part in ((parts.hostname or "page"), *parts.path.split("/")) if part)
    return "".join(char if char.isalnum() or char in "-_." else "-" for char in stem)[:100] + WEB_SUFFIX

"""Knowledge bases in the app: which one the Documents and Stats pages show, and creating,
renaming and deleting them (the library does the work and says what is wrong in words)."""

from __future__ import annotations

import streamlit as st

from pages._access import current_person
from ragkit import KnowledgeBase, KnowledgeBaseInfo, RagkitError
from ragkit.app import escape_markdown, plural

CURRENT_KB = "current-kb"  # the knowledge base the Documents and Stats pages show (its id)
ALL = "*"  # the Stats page's "every knowledge base"


def keep_session_in_url() -> None:
    """Keep the conversation id in this page's URL (``?session=``), so that a reload, and the
    Chat page after it, reopen the same conversation."""
    from_url = st.query_params.get("session")
    if from_url and not st.session_state.get("session_id"):
        st.session_state["session_id"] = from_url  # the Chat page validates it
    current = st.session_state.get("session_id")
    if current and st.query_params.get("session") != current:
        st.query_params["session"] = current


def current_knowledge_base(kb: KnowledgeBase, allow_all: bool = False) -> str:
    """The id of the knowledge base the page shows (``ALL`` for every one, where allowed):
    the one chosen last in this tab, else the one in the URL (``?kb=``), else the default."""
    bases = {base.id for base in kb.knowledge_bases()}
    chosen = st.session_state.get(CURRENT_KB) or st.query_params.get("kb")
    if chosen == ALL and allow_all:
        return ALL
    if chosen not in bases:
        chosen = kb.default_knowledge_base().id
    return chosen


def _choose(key: str) -> None:
    st.session_state[CURRENT_KB] = st.session_state[key]


def knowledge_base_picker(kb: KnowledgeBase, allow_all: bool = False, key: str = "kb-picker") -> str:
    """A select box of the knowledge bases (and "All", where allowed); returns the chosen id
    and keeps it in the URL, so a reload shows the same one."""
    bases = kb.knowledge_bases()
    options = ([ALL] if allow_all else []) + [base.id for base in bases]
    labels = {base.id: f"{base.name} ({plural(base.documents, 'document')})" for base in bases}
    labels[ALL] = "All knowledge bases"
    current = current_knowledge_base(kb, allow_all)
    st.session_state[key] = current  # the widget follows a choice made elsewhere (another page, a delete)
    st.selectbox("Knowledge base", options, format_func=labels.get, key=key, on_change=_choose, args=(key,),
                 help="Each document belongs to one knowledge base; each conversation searches the ones chosen "
                 "in its sidebar.")
    st.session_state[CURRENT_KB] = current
    if st.query_params.get("kb") != current:
        st.query_params["kb"] = current
    return current


def _create(kb: KnowledgeBase) -> None:
    name = st.session_state.get("kb-new-name", "")
    try:
        base = kb.create_knowledge_base(name, person=current_person())
    except RagkitError as exc:
        st.session_state["kb-error"] = str(exc)
        return
    st.session_state[CURRENT_KB] = base.id
    st.session_state["kb-new-name"] = ""
    st.session_state["doc-notice"] = f"Knowledge base {base.name} created: add documents to it below"
    _close_popovers()


def _rename(kb: KnowledgeBase, kb_id: str) -> None:
    try:
        base = kb.rename_knowledge_base(kb_id, st.session_state.get(f"kb-rename-{kb_id}", ""),
                                        person=current_person())
    except RagkitError as exc:
        st.session_state["kb-error"] = str(exc)
        return
    st.session_state["doc-notice"] = f"Knowledge base renamed to {base.name}"
    _close_popovers()


def _delete(kb: KnowledgeBase, kb_id: str) -> None:
    try:
        name = kb.knowledge_base(kb_id).name
        deleted = kb.delete_knowledge_base(kb_id, person=current_person())
    except RagkitError as exc:
        st.session_state["kb-error"] = str(exc)
        return
    st.session_state[CURRENT_KB] = kb.default_knowledge_base().id
    st.session_state["doc-notice"] = f"Knowledge base {name} deleted with its {plural(len(deleted), 'document')}"
    _close_popovers()


def _close_popovers() -> None:
    # A fresh key closes a popover even when the user acted before the run that opened it had finished.
    st.session_state["kb-popover-round"] = st.session_state.get("kb-popover-round", 0) + 1


def knowledge_base_actions(kb: KnowledgeBase, base: KnowledgeBaseInfo) -> None:
    """New, Rename and Delete for knowledge bases, as popovers in a row."""
    round_ = st.session_state.get("kb-popover-round", 0)
    with st.container(horizontal=True, gap="small", key="kb-actions"):
        with st.popover("New", icon=":material/add:", key=f"kb-new-{round_}"):
            with st.form("kb-create", border=False):
                st.text_input("Name of the new knowledge base", key="kb-new-name", max_chars=80)
                st.form_submit_button("Create", on_click=_create, args=(kb,))
        with st.popover("Rename", icon=":material/edit:", key=f"kb-rename-popover-{round_}"):
            with st.form(f"kb-rename-form-{base.id}", border=False):
                st.text_input("New name", value=base.name, key=f"kb-rename-{base.id}", max_chars=80)
                st.form_submit_button("Rename", on_click=_rename, args=(kb, base.id))
        with st.popover("Delete", icon=":material/delete:", key=f"kb-delete-popover-{round_}"):
            st.write(f"Delete the knowledge base **{escape_markdown(base.name)}** and its "
                     f"{plural(base.documents, 'document')}? Conversations keep their answers.")
            st.button("Yes, delete the knowledge base", type="primary", key=f"kb-delete-{base.id}",
                      on_click=_delete, args=(kb, base.id))
    if error := st.session_state.pop("kb-error", None):
        st.error(escape_markdown(error), icon=":material/error:")

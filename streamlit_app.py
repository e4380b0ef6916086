"""ragkit app entry: access control, then navigation over the pages, shared sidebar (model status);
and the HTTP API (``/v1``, ``/api``: ragkit.app.api) beside them, on the same port.

Run with ``streamlit run streamlit_app.py`` (listens on 127.0.0.1 only, see
.streamlit/config.toml; README "Security and access" for sharing it on a network).

``streamlit run`` finds the ``st.App`` below and imports this file as a module for it (then
``__name__`` is "streamlit_app"): that import only wires the API's routes. Each page run
executes the file as the script (``__name__`` "__main__"), which draws the app.
"""

import streamlit as st

PAGE_PATHS = ("documents", "stats")  # the pages besides Chat, by their address

if __name__ != "__main__":  # imported by `streamlit run` for its ASGI app: the UI runs per page run, below
    from pages._service import shared_service
    from ragkit.app import api_routes

    app = st.App(__file__, routes=api_routes(shared_service))


def main() -> None:
    """One run of the app's page script."""
    from pages import _upload_gate

    # First of all: from now on Streamlit's upload endpoint takes no file from a session that
    # has not logged in (a session id reaches its client only when a run like this starts).
    _upload_gate.try_install()

    from pages._access import access_gate, asked_page, remember_asked_page, render_logout
    from pages._service import start_loading
    from pages._widgets import conversation_in_view, render_model_status
    from ragkit import DatabaseUnreachable
    from ragkit.app import escape_markdown

    st.set_page_config(
        page_title="ragkit — chat with your documents", page_icon="📚", layout="wide",
        # An item of our own keeps Streamlit's menu (⋮, top right) in the minimal toolbar: it holds
        # the System / Light / Dark theme switch.
        menu_items={"About": "**ragkit**: chat with your documents, cited. Theme: System, Light or Dark, above."},
    )

    # Until the visitor is let in, the login page is the app's only page: no other page is
    # registered, so neither the sidebar nor a page URL can show any data. It answers at every
    # page's address, so a link to /documents opens the login (not "Page not found"); once
    # logged in, the page that was asked for opens.
    if (gate := access_gate()) is not None:
        login = [st.Page(gate, title="Log in", icon=":material/lock:", default=True)]
        login += [st.Page(gate, title="Log in", icon=":material/lock:", url_path=path) for path in PAGE_PATHS]
        asked_for = st.navigation(login, position="hidden")
        remember_asked_page(asked_for.url_path)
        asked_for.run()
        st.stop()

    start_loading()  # the embedding model loads in the background while the first page renders
    pages = [
        st.Page("pages/chat.py", title="Chat", icon=":material/forum:", default=True),
        st.Page("pages/documents.py", title="Documents", icon=":material/description:"),
        st.Page("pages/stats.py", title="Stats", icon=":material/bar_chart:"),
    ]
    # The page links are drawn here, not by Streamlit (client.showSidebarNavigation is off): its
    # own list would show every module in pages/, helpers included, for the first seconds after
    # a start, before this script has run (also in front of the login).
    current = st.navigation(pages, position="hidden")
    if (asked_for := asked_page()) in PAGE_PATHS:
        st.switch_page(pages[1 + PAGE_PATHS.index(asked_for)])  # raises: the asked-for page runs instead
    with st.sidebar:
        st.markdown("### :material/library_books: ragkit")
        conversation = conversation_in_view()
        with st.container(key="page-links"):
            for page in pages:
                st.page_link(page, query_params={"session": conversation} if conversation else None)
    render_model_status()
    render_logout()
    try:
        current.run()
    except DatabaseUnreachable as exc:  # the shared database went away mid-page: say which and where; a rerun retries
        st.error(escape_markdown(str(exc)), icon=":material/cloud_off:")
        st.button("Try again", icon=":material/refresh:")


if __name__ == "__main__":
    main()

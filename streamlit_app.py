"""ragkit app entry: access control, then navigation over the pages, shared sidebar (model status).

Run with ``streamlit run streamlit_app.py`` (listens on 127.0.0.1 only, see
.streamlit/config.toml; README "Security and access" for sharing it on a network).
"""

from pages import _upload_gate

# First of all: from now on Streamlit's upload endpoint takes no file from a session that
# has not logged in (a session id reaches its client only when a run like this starts).
_upload_gate.try_install()

import streamlit as st  # noqa: E402

from pages._access import access_gate, render_logout  # noqa: E402
from pages._widgets import render_model_status, start_loading  # noqa: E402

st.set_page_config(page_title="ragkit — chat with your documents", page_icon="📚", layout="wide")

# Until the visitor is let in, the login page is the app's only page: no other page is
# registered, so neither the sidebar nor a page URL can show any data.
if (gate := access_gate()) is not None:
    st.navigation([st.Page(gate, title="Log in", icon=":material/lock:", default=True)], position="hidden").run()
    st.stop()

start_loading()  # the embedding model loads in the background while the first page renders
pages = [
    st.Page("pages/chat.py", title="Chat", icon=":material/forum:", default=True),
    st.Page("pages/documents.py", title="Documents", icon=":material/description:"),
    st.Page("pages/stats.py", title="Stats", icon=":material/bar_chart:"),
]
current = st.navigation(pages)
st.sidebar.markdown("### :material/library_books: ragkit")
render_model_status()
render_logout()
current.run()

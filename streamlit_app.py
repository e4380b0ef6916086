"""ragkit app entry: navigation over the pages, shared sidebar (model status).

Run with ``streamlit run streamlit_app.py``.
"""

import streamlit as st

from ragkit.webapp import render_model_status, start_loading

st.set_page_config(page_title="ragkit — chat with your documents", page_icon="📚", layout="wide")
start_loading()  # the embedding model loads in the background while the first page renders

pages = [
    st.Page("pages/chat.py", title="Chat", icon=":material/forum:", default=True),
    st.Page("pages/documents.py", title="Documents", icon=":material/description:"),
    st.Page("pages/stats.py", title="Stats", icon=":material/bar_chart:"),
]
current = st.navigation(pages)
st.sidebar.markdown("### :material/library_books: ragkit")
render_model_status()
current.run()

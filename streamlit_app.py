"""ragkit app entry (placeholder until the app issue lands): shows the knowledge base status."""

import streamlit as st

st.set_page_config(page_title="ragkit", page_icon="📚")
st.title("ragkit")
st.write("The knowledge base library is ready: use `python -m ragkit ingest|docs|search`.")

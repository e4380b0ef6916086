"""Stats page: the knowledge base and its use, as charts."""

import altair as alt
import streamlit as st

from pages._access import require_access
from pages._widgets import get_service
from ragkit.stats import documents_by, documents_frame, overview, questions_over_time, token_usage, turns_frame

require_access()
st.title("Stats")
COUNT_AXIS = alt.Axis(tickMinStep=1, format="d")
service = get_service()
kb, history = service.kb, service.history

summary = overview(kb, history)
cols = st.columns(6)
cols[0].metric("Documents", summary.documents)
cols[1].metric("Passages", summary.chunks)
cols[2].metric("Tokens indexed", f"{summary.tokens:,}")
cols[3].metric("Conversations", summary.sessions)
cols[4].metric("Questions", summary.questions)
cols[5].metric("Median answer time", f"{summary.median_latency_ms / 1000:.2f} s")

if not summary.documents:
    st.info("No documents yet: add some on the Documents page and the charts will fill in.", icon=":material/inbox:")
    st.stop()

st.subheader("Knowledge base")
left, right = st.columns(2)
with left:
    st.markdown("**Documents by type**")
    st.altair_chart(alt.Chart(documents_by(kb, "type")).mark_bar().encode(
        x=alt.X("documents:Q", title="documents", axis=COUNT_AXIS), y=alt.Y("type:N", sort="-x", title=None)), width="stretch")
with right:
    st.markdown("**Documents by tag**")
    st.altair_chart(alt.Chart(documents_by(kb, "tag")).mark_bar(color="#16a34a").encode(
        x=alt.X("documents:Q", title="documents", axis=COUNT_AXIS), y=alt.Y("tag:N", sort="-x", title=None)), width="stretch")

docs = documents_frame(kb)
st.markdown("**Passages and tokens per document**")
long = docs.melt(id_vars=["title"], value_vars=["chunks", "tokens"], var_name="measure", value_name="count")
st.altair_chart(alt.Chart(long).mark_bar().encode(
    x=alt.X("count:Q", title=None), y=alt.Y("title:N", sort="-x", title=None), color="measure:N",
    column=alt.Column("measure:N", title=None)).resolve_scale(x="independent"), width="content")

st.subheader("Questions and answers")
turns = turns_frame(history)
if turns.empty:
    st.info("No questions asked yet: the usage charts appear after the first answers.", icon=":material/forum:")
    st.stop()

left, right = st.columns(2)
with left:
    st.markdown("**Questions over time**")
    freq = "h" if (turns["asked"].max() - turns["asked"].min()).days < 2 else "D"
    st.altair_chart(alt.Chart(questions_over_time(turns, freq)).mark_bar().encode(
        x=alt.X("period:T", title=None), y=alt.Y("questions:Q", axis=COUNT_AXIS)), width="stretch")
with right:
    st.markdown("**Answer latency (seconds)**")
    latency = turns.assign(seconds=turns["latency_ms"] / 1000)
    st.altair_chart(alt.Chart(latency).mark_bar().encode(
        x=alt.X("seconds:Q", bin=alt.Bin(maxbins=20), title="seconds"), y=alt.Y("count():Q", title="answers", axis=COUNT_AXIS),
        color=alt.Color("mode:N")), width="stretch")

left, right = st.columns(2)
with left:
    st.markdown("**Token usage per session and model**")
    usage = token_usage(turns).melt(id_vars=["session", "model"], var_name="direction", value_name="tokens")
    if usage["tokens"].sum() == 0:
        st.caption("Extractive answers use no model tokens.")
    st.altair_chart(alt.Chart(usage).mark_bar().encode(
        x=alt.X("tokens:Q"), y=alt.Y("session:N", title=None), color="direction:N",
        tooltip=["session", "model", "direction", "tokens"]), width="stretch")
with right:
    st.markdown("**Retrieval score of the best passage**")
    st.altair_chart(alt.Chart(turns).mark_bar(color="#9333ea").encode(
        x=alt.X("top_score:Q", bin=alt.Bin(maxbins=20), title="relevance"), y=alt.Y("count():Q", title="answers", axis=COUNT_AXIS)),
        width="stretch")

"""Stats page: the knowledge base and its use, as charts that fit their column."""

import altair as alt
import streamlit as st

from pages._access import current_person, require_access
from pages._kb import ALL, keep_session_in_url, knowledge_base_picker
from pages._widgets import get_service, render_feedback_summary
from ragkit.app import (
    conversation_labels,
    documents_by,
    documents_frame,
    overview,
    questions_per_day,
    token_usage,
    turns_frame,
)

require_access(__file__)
keep_session_in_url()
st.title("Stats")
COUNT_AXIS = alt.Axis(tickMinStep=1, format="d")
LABEL_AXIS = alt.Axis(labelLimit=180)  # long titles end in "…" instead of widening the chart
service = get_service()
kb, history = service.kb, service.history
person = current_person()  # with a login that knows people: counts of everyone's, words of their own only


def chart(spec: alt.Chart) -> None:
    """An Altair chart as wide as its column."""
    st.altair_chart(spec, width="stretch")


def bars(frame, x: str, y: str, title: str, color: str, count: bool = False) -> alt.Chart:
    """Horizontal bars, one per row of ``frame``, longest first."""
    return alt.Chart(frame).mark_bar(color=color).encode(
        x=alt.X(f"{x}:Q", title=title, axis=COUNT_AXIS if count else alt.Axis()),
        y=alt.Y(f"{y}:N", sort="-x", title=None, axis=LABEL_AXIS),
        tooltip=[y, x],
    )


picked = knowledge_base_picker(kb, allow_all=True, key="stats-kb-picker")
kb_id = None if picked == ALL else picked
scope = [kb_id] if kb_id else None
summary = overview(kb, history, kb_id)
with st.container(horizontal=True, gap="medium"):
    st.metric("Documents", summary.documents)
    st.metric("Passages", summary.chunks)
    st.metric("Tokens indexed", f"{summary.tokens:,}")
    st.metric("Conversations", summary.sessions)
    st.metric("Questions", summary.questions)
    st.metric("Median answer time", f"{summary.median_latency_ms / 1000:.2f} s")

advice = kb.reindex_advice()
if advice:
    st.info(advice, icon=":material/upgrade:")

if not summary.documents:
    st.info("No documents yet: add some on the Documents page and the charts will fill in.", icon=":material/inbox:")
    st.stop()

st.subheader("Knowledge base")
left, right = st.columns(2)
with left:
    st.markdown("**Documents by type**")
    chart(bars(documents_by(kb, "type", scope), "documents", "type", "documents", "#2563eb", count=True))
with right:
    st.markdown("**Documents by tag**")
    chart(bars(documents_by(kb, "tag", scope), "documents", "tag", "documents", "#16a34a", count=True))

docs = documents_frame(kb, scope)
left, right = st.columns(2)
with left:
    st.markdown("**Passages per document**")
    chart(bars(docs, "chunks", "title", "passages", "#0891b2", count=True))
with right:
    st.markdown("**Tokens per document**")
    chart(bars(docs, "tokens", "title", "tokens", "#ea580c"))

st.subheader("Questions and answers")
turns = turns_frame(history, kb_id)
if turns.empty:
    st.info("No questions asked yet: the usage charts appear after the first answers.", icon=":material/forum:")
    st.stop()

left, right = st.columns(2)
with left:
    st.markdown("**Questions per day**")
    per_day = questions_per_day(turns)  # the last two weeks at least, days without questions included
    chart(alt.Chart(per_day).mark_bar(color="#2563eb").encode(
        x=alt.X("day:T", title=None, timeUnit="yearmonthdate", axis=alt.Axis(format="%b %d", labelOverlap=True)),
        y=alt.Y("questions:Q", axis=COUNT_AXIS), tooltip=[alt.Tooltip("day:T", format="%a %b %d"), "questions"]))
with right:
    st.markdown("**Answer latency (seconds)**")
    latency = turns.assign(seconds=turns["latency_ms"] / 1000)
    chart(alt.Chart(latency).mark_bar().encode(
        x=alt.X("seconds:Q", bin=alt.Bin(maxbins=20), title="seconds"),
        y=alt.Y("count():Q", title="answers", axis=COUNT_AXIS),
        color=alt.Color("outcome:N", title="answer", legend=alt.Legend(orient="bottom", labelLimit=220))))

left, right = st.columns(2)
with left:
    st.markdown("**Model tokens per conversation**")
    own_sessions = history.list_sessions(owner=person)
    own_turns = turns if person is None else turns[turns["session"].isin({info.id for info in own_sessions})]
    usage = token_usage(own_turns, conversation_labels(own_sessions))
    if usage[["input_tokens", "output_tokens"]].to_numpy().sum() == 0:
        st.info("No model tokens used yet: every answer so far was extractive (offline), which costs none.",
                icon=":material/cloud_off:")
    else:
        usage = usage.rename(columns={"input_tokens": "prompt", "output_tokens": "answer"}).melt(
            id_vars=["conversation", "model"], value_vars=["prompt", "answer"], var_name="tokens for",
            value_name="tokens")
        chart(alt.Chart(usage).mark_bar().encode(
            x=alt.X("tokens:Q", title="tokens"), y=alt.Y("conversation:N", title=None, axis=LABEL_AXIS),
            color=alt.Color("tokens for:N", legend=alt.Legend(orient="bottom")),
            tooltip=["conversation", "model", "tokens for", "tokens"]))
with right:
    st.markdown("**How close the best passage came to the question**")
    scores = turns.dropna(subset=["best_similarity"])
    if scores.empty:
        st.info("No similarity recorded yet (keyword-only searches record none).", icon=":material/info:")
    else:
        scores = scores.assign(best_similarity=scores["best_similarity"].clip(0.0, 1.0))
        chart(alt.Chart(scores).mark_bar().encode(  # fixed 0-1 bins: equal scores still make a bar
            x=alt.X("best_similarity:Q", bin=alt.Bin(extent=[0, 1], step=0.05),
                    title="meaning similarity of the best passage (cosine)", scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("count():Q", title="questions", axis=COUNT_AXIS, stack=True),
            color=alt.Color("outcome:N", title="answer", legend=alt.Legend(orient="bottom", labelLimit=220)),
            tooltip=["outcome", "count()"]))
        st.caption("The embedding similarity of each question to its closest passage, before any normalising: "
                   "answered questions should sit to the right of the ones not found.")

render_feedback_summary(history, person)  # readers' thumbs up / down and comments (the chat page's feedback)

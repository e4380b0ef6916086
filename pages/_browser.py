"""What the chat page asks of the browser itself, where Streamlit has no widget: copying an
answer to the clipboard, bringing a finished answer into view, and source text in full
contrast.

Both are small scripts run by ``st.html(..., unsafe_allow_javascript=True)``; no data is
ever part of a script: the text to copy travels percent-encoded in an attribute (Streamlit's
HTML sanitizer drops an attribute whose value holds "</script", "-->" or "]>", as an answer
quoting technical notes may, so escaping alone left the Copy button copying "undefined").
"""

from __future__ import annotations

from urllib.parse import quote

import streamlit as st

_COPY_BUTTON = """<button class="ragkit-copy" type="button" data-copy="{text}"
  title="Copy the answer and its sources" style="all:unset;cursor:pointer;display:inline-flex;
  align-items:center;gap:0.5rem;padding:0.25rem 0;font-family:inherit;font-size:inherit;
  color:inherit;line-height:1.6">
<span aria-hidden="true"
  style="font-family:'Material Symbols Rounded';font-size:1.25rem;line-height:1">content_copy</span>
<span class="ragkit-copy-label">Copy</span></button>
<script>
if (!window.ragkitCopy) {{
  window.ragkitCopy = true;
  document.addEventListener("click", async (event) => {{
    const button = event.target.closest && event.target.closest(".ragkit-copy");
    if (!button) return;
    const text = decodeURIComponent(button.dataset.copy);
    let copied = false;
    try {{ await navigator.clipboard.writeText(text); copied = true; }} catch (error) {{}}
    if (!copied) {{  // plain http on another address has no Clipboard API: the old way still works
      const area = document.createElement("textarea");
      area.value = text;
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      try {{ copied = document.execCommand("copy"); }} catch (error) {{}}
      area.remove();
    }}
    const label = button.querySelector(".ragkit-copy-label");
    label.textContent = copied ? "Copied" : "Copy failed";
    setTimeout(() => {{ label.textContent = "Copy"; }}, 2000);
  }});
}}
</script>"""

# Waits until the last chat message stops changing height (the page is drawn progressively),
# then scrolls the least that shows its end above the chat box, never its start out of view.
_SCROLL_TO_LAST_ANSWER = """<script>
(() => {
  let lastHeight = -1, steady = 0, frames = 0;
  const step = () => {
    const messages = document.querySelectorAll("[data-testid=stChatMessage]");
    const answer = messages[messages.length - 1];
    const box = document.querySelector("[data-testid=stAppScrollToBottomContainer], [data-testid=stMain]");
    if (!answer || !box) { if (frames++ < 300) requestAnimationFrame(step); return; }
    const height = answer.getBoundingClientRect().height;
    steady = height === lastHeight ? steady + 1 : 0;
    lastHeight = height;
    if (steady < 10 && frames++ < 300) { requestAnimationFrame(step); return; }
    const bar = document.querySelector("[data-testid=stBottom]");
    const floor = bar ? bar.getBoundingClientRect().top : window.innerHeight;
    const ceiling = box.getBoundingClientRect().top;
    const place = answer.getBoundingClientRect();
    if (place.bottom > floor) {
      const down = Math.min(place.bottom + 16 - floor, place.top - ceiling - 16);
      if (down > 0) box.scrollBy({top: down});
    } else if (place.top < ceiling) {
      box.scrollBy({top: place.top - ceiling - 16});
    }
  };
  requestAnimationFrame(step);
})();
</script>"""


def copy_button(text: str) -> None:
    """A Copy button that puts ``text`` on the clipboard (says "Copied" for two seconds)."""
    st.html(_COPY_BUTTON.format(text=quote(text, safe="")), width="content", unsafe_allow_javascript=True)


def scroll_to_last_answer() -> None:
    """Bring the end of the page's last chat message into view above the chat box."""
    st.html(_SCROLL_TO_LAST_ANSWER, unsafe_allow_javascript=True)


# Streamlit draws a block quote at 60% opacity: a source's passage (a quote in the source panel
# or the closest matches, inside an expander) then reads grey on white, below WCAG AA.
_SOURCE_TEXT_STYLE = "<style>[data-testid=stExpanderDetails] blockquote { opacity: 1; }</style>"


def source_text_style() -> None:
    """Show the passages in the source panels in the text colour (the quote keeps its bar)."""
    st.html(_SOURCE_TEXT_STYLE)

"""The source viewer's library side: a PDF page drawn by PDFium with the cited sentences
painted where they stand (checked in the pixels), the text found whatever its line breaks
or ligatures, and a passage shown in its surrounding text."""

from __future__ import annotations

from conftest import FIXTURES
from ragkit.app.viewer import find_spans, highlight_on_white, page_text, quote_pieces, render_pdf_page, text_context
from ragkit.types import Passage


def highlighted_pixels(image) -> int:
    """Pixels of the highlight colour on white paper (within a small tolerance)."""
    target = highlight_on_white()
    pixels = image.convert("RGB").getdata()
    return sum(1 for pixel in pixels if all(abs(a - b) <= 6 for a, b in zip(pixel, target)))


def test_the_cited_sentence_is_painted_on_its_pdf_page(kb):
    pdf = (FIXTURES / "report_en.pdf").read_bytes()
    doc = kb.ingest(pdf, filename="report_en.pdf").document
    hit = kb.search("Who founded Aurora Analytics?", k=1)[0]
    sentence = next(s for s in hit.text.split(". ") if "founded" in s)
    page = render_pdf_page(kb.original(doc.id), hit.page, [sentence], hit.text)
    assert page.number == hit.page and page.page_count == doc.pages
    assert page.highlighted >= 1
    assert highlighted_pixels(page.image) > 2000
    plain = render_pdf_page(kb.original(doc.id), hit.page, [])
    assert plain.highlighted == 0 and highlighted_pixels(plain.image) == 0
    assert render_pdf_page(pdf, 99, []).number == doc.pages  # a page past the end shows the last one


def test_text_is_found_across_line_breaks_ligatures_and_case():
    page = "The ﬁrst keeper\nlogged   every storm.\nThe second keeper did not."
    [(start, end)] = find_spans(page, ["the first keeper logged every storm."])
    assert page[start:end] == "The ﬁrst keeper\nlogged   every storm."


def test_a_repeated_sentence_is_found_inside_the_passage_first():
    page = "Intro. The keeper logs storms. Middle part of the page. The keeper logs storms. End."
    passage_at = page.index("Middle")
    [(start, _)] = find_spans(page, ["The keeper logs storms."], within=(passage_at, len(page)))
    assert start > passage_at


def test_quote_pieces_split_a_focused_quote():
    assert quote_pieces("First sentence. … Third sentence.") == ["First sentence.", "Third sentence."]
    assert quote_pieces("") == []


def test_a_passage_in_its_surrounding_text():
    body = "\n\n".join(f"Paragraph {n} about the harbour." for n in range(200))
    start = body.index("Paragraph 120")
    end = body.index("Paragraph 121")
    passages = [Passage(body[:start], 1, 0, 0, start, 10), Passage(body[start:end], 1, 1, start, end, 10),
                Passage(body[end:], 1, 2, end, len(body), 10)]
    assert page_text(passages, 1) == body
    context = text_context(body, start, end, ["Paragraph 120 about the harbour."], before_chars=100, after_chars=100)
    assert context.passage.startswith("Paragraph 120") and context.cited == [(0, 32)]
    assert context.before.endswith("Paragraph 119 about the harbour.\n\n") and context.cut_before and context.cut_after

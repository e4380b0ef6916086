"""Files made by the tests themselves (XLSX, PPTX, a scanned PDF, a PNG of text) and a local
web server that serves pages from a folder, for the loader, library and browser tests."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from pathlib import Path

FONT = "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf"


def make_xlsx(path: Path) -> Path:
    """A workbook of two sheets: crane loads (with a header row) and harbour staff."""
    import datetime

    import openpyxl

    book = openpyxl.Workbook()
    cranes = book.active
    cranes.title = "Cranes"
    cranes.append(["crane", "tonnes", "inspected"])
    cranes.append(["Crane 7", 40.0, datetime.date(2026, 3, 4)])
    cranes.append(["Crane 9", 12.5, datetime.date(2026, 5, 1)])
    staff = book.create_sheet("Staff")
    staff.append(["name", "role"])
    staff.append(["Ines Okafor", "harbour master"])
    book.properties.title = "Harbour register"
    book.save(path)
    return path


def make_pptx(path: Path) -> Path:
    """A deck of two slides, the second with speaker notes."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Quarterly plan"
    first.placeholders[1].text = "Open the Osaka office in spring"
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Budget"
    box = second.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(1))
    box.text_frame.text = "Travel budget: 12,000 euros"
    second.notes_slide.notes_text_frame.text = "Mention that the lighthouse tour is paid by the client."
    deck.save(path)
    return path


def text_image(lines: list[str], size: tuple[int, int] = (1240, 1754), font_size: int = 34):
    """A white page (A4 at 150 dpi) with these lines of black text: a scan without a text layer."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(FONT, font_size)
    for number, line in enumerate(lines):
        draw.text((110, 140 + number * font_size * 2), line, fill="black", font=font)
    return image


def make_scanned_pdf(path: Path, lines: list[str]) -> Path:
    """A one-page PDF holding only an image of the text (what a scanner makes)."""
    text_image(lines).save(path, "PDF", resolution=150)
    return path


def make_png(path: Path, lines: list[str]) -> Path:
    """A PNG of the text (a screenshot or a photographed note)."""
    text_image(lines, size=(1200, 120 + 80 * len(lines))).save(path, "PNG")
    return path


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep test output clean
        pass


@contextlib.contextmanager
def serve_folder(folder: Path):
    """An HTTP server on 127.0.0.1 serving ``folder`` until the block ends; yields its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler,
                                                                                  directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


ARTICLE = """<!doctype html><html><head><title>Skerry Point Lighthouse</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About us</a> | <a href="/shop">Shop</a></nav>
<article><h1>Skerry Point Lighthouse</h1>
<p>The Skerry Point lighthouse was built in 1871 by the engineer Agnes Mowat. Its lamp can be seen
22 nautical miles away, and the keeper logs every storm in a leather-bound book.</p>
<p>Visitors may climb the 143 steps on summer weekends; the lamp room holds six people at a time.</p>
</article><footer>Copyright 2026 Coastal Trust. Cookie settings.</footer></body></html>"""

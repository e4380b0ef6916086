"""CSV: rows as paragraphs of "column: value" pairs, read one row at a time within a size limit."""

from __future__ import annotations

import csv
import io
import re

from ragkit.errors import LoaderError
from ragkit.ingest.converters.base import Converted, Converter, ReadOptions
from ragkit.ingest.decoding import decode_text_file
from ragkit.ingest.document import TextCollector
from ragkit.ingest.limits import DEFAULT_MAX_UNPACKED_BYTES, megabytes


class CsvConverter(Converter):
    """CSV tables (see :func:`load_csv`)."""

    suffixes = (".csv",)
    doc_type = "csv"
    label = "CSV"

    def convert(self, data: bytes, filename: str, options: ReadOptions, notes: list[str]) -> Converted:
        """The page :func:`load_csv` reads (a CSV names no title of its own)."""
        return load_csv(data, filename, options.max_unpacked_bytes, notes), None


MAX_CSV_COLUMNS = 10_000
"""Most commas on one line of a CSV (quoted ones count too): a row wider than this is not
a table to read row by row (the issue's million-column file took minutes and 1.5 GB)."""
_CSV_TOO_WIDE = re.compile(r"^(?:[^,\n]*+,){%d}" % MAX_CSV_COLUMNS, re.MULTILINE)  # each line scanned once


def load_csv(data: bytes, filename: str = "table.csv",
             max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES, notes: list[str] | None = None) -> list[str]:
    """CSV rows as 'header: value' lines, one row per paragraph.

    Rows are read one at a time. A line of more than MAX_CSV_COLUMNS columns is refused
    before parsing, and so is a table whose labelled text would pass ``max_unpacked_bytes``
    (every value is written with its column name: long names over short values multiply
    the size, like a decompression bomb)."""
    text = decode_text_file(data, filename, notes)
    if _CSV_TOO_WIDE.search(text):
        raise LoaderError(
            f"{filename}: a line of the CSV has more than {MAX_CSV_COLUMNS:,} columns; tables that wide are not "
            "read row by row: transpose it (one record per row) or save it as .txt to index it as plain text"
        )
    reader = csv.reader(io.StringIO(text))
    del text
    rows = LabelledRows(filename, max_unpacked_bytes)
    try:
        for row in reader:
            rows.add(row)
    except csv.Error as exc:
        raise LoaderError(
            f"{filename}: not a readable CSV (line {reader.line_num}: {exc}): check for an unclosed "
            "quote, or save the file as .txt to index it as plain text"
        ) from None
    return [rows.text()]


class LabelledRows:
    """Rows of a CSV as paragraphs of "name: value; ..." pairs, counting their size."""

    def __init__(self, filename: str, limit: int):
        self.filename, self.limit, self.size = filename, limit, 0
        self.header: list[str] | None = None
        self.paragraphs = TextCollector()
        self.empty = True

    def add(self, row: list[str]) -> None:
        """One row: the first is the header."""
        if self.header is None:
            self.header = row
            return
        self.empty = False
        line = "; ".join(f"{name}: {value}" for name, value in zip(self.header, row) if value.strip())
        self.size += len(line) + 2
        if self.size > self.limit:
            raise LoaderError(
                f"{self.filename}: written out as labelled rows (each value with its column name) the table "
                f"would pass {megabytes(self.limit)} (RAGKIT_MAX_UNPACKED_MB): shorten the column names, "
                "split the file, or save it as .txt to index it as plain text"
            )
        self.paragraphs.add(line + "\n")

    def text(self) -> str:
        """The header alone for a table without rows; else the rows, a blank line apart."""
        if self.header is None:
            return ""
        return " | ".join(self.header) if self.empty else self.paragraphs.text().rstrip("\n")

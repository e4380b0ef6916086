"""XLSX: each sheet of a workbook as one page of labelled rows, read with openpyxl row by row
from a copy of the archive unpacked within its declared sizes."""

from __future__ import annotations

from ragkit.errors import LoaderError
from ragkit.ingest.converters.base import Converted, Converter, ReadOptions
from ragkit.ingest.converters.csv import LabelledRows
from ragkit.ingest.document import clean_title
from ragkit.ingest.limits import DEFAULT_MAX_UNPACKED_BYTES, bounded_copy, check_zip_limits
from ragkit.ingest.ooxml import XLSX_FORMAT, office_unreadable


class XlsxConverter(Converter):
    """Excel workbooks (see :func:`load_xlsx`)."""

    suffixes = (".xlsx",)
    doc_type = "xlsx"
    label = "XLSX"

    def convert(self, data: bytes, filename: str, options: ReadOptions, notes: list[str]) -> Converted:
        """The pages and title :func:`load_xlsx` reads."""
        return load_xlsx(data, filename, options.max_unpacked_bytes, notes)


def load_xlsx(data: bytes, filename: str, max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
              notes: list[str] | None = None) -> tuple[list[str], str | None]:
    """Each sheet of a workbook as one page of labelled rows ("column: value; ..."), the first
    non-empty row of a sheet naming its columns, as for CSV; and the workbook's title.

    Cell values are read as last saved (formulas as their results); the archive is checked
    and copied part by part within its declared sizes first (see check_zip_limits)."""
    import openpyxl

    check_zip_limits(data, filename, max_unpacked_bytes, XLSX_FORMAT)
    try:
        workbook = openpyxl.load_workbook(bounded_copy(data), read_only=True, data_only=True)
    except Exception:
        raise office_unreadable(filename, data, XLSX_FORMAT) from None
    pages, budget = [], max_unpacked_bytes
    try:
        for sheet in workbook.worksheets:
            rows = LabelledRows(filename, budget)
            for values in sheet.iter_rows(values_only=True):
                cells = [_cell_text(value) for value in values]
                if any(cells):
                    rows.add(cells)
            body = rows.text()
            budget -= rows.size
            pages.append(f"## {sheet.title}\n\n{body}" if body else "")
        title = clean_title(workbook.properties.title) if workbook.properties else None
    except LoaderError:
        raise
    except Exception:
        raise office_unreadable(filename, data, XLSX_FORMAT) from None
    finally:
        workbook.close()
    if not pages:
        raise LoaderError(f"{filename}: the workbook has no sheets")
    return pages, title


def _cell_text(value) -> str:
    """A cell's value as text: whole numbers without ".0", dates as ISO dates."""
    import datetime

    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime.datetime):
        return value.date().isoformat() if value.time() == datetime.time() else value.isoformat(sep=" ")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return " ".join(str(value).split())

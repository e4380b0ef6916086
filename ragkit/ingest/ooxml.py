"""What DOCX, XLSX and PPTX (ZIP-based Office formats) share: how messages name each format
and its program, and the message for a file that is not a readable one."""

from __future__ import annotations

from dataclasses import dataclass

from ragkit.errors import LoaderError

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
"""How Word 97-2003 .doc files, and encrypted Office files, begin."""


@dataclass(frozen=True)
class OfficeFormat:
    """How messages name a ZIP-based Office format and the program that writes it."""

    kind: str  # "DOCX"
    program: str  # "Word"
    document: str  # "Word document"


DOCX_FORMAT = OfficeFormat("DOCX", "Word", "Word document")
XLSX_FORMAT = OfficeFormat("XLSX", "Excel", "Excel workbook")
PPTX_FORMAT = OfficeFormat("PPTX", "PowerPoint", "PowerPoint presentation")


def office_unreadable(filename: str, data: bytes, office: OfficeFormat) -> LoaderError:
    """The error for a file that is not a readable ``office`` file: old, encrypted or corrupt."""
    if office is DOCX_FORMAT:
        return _docx_unreadable(filename, data)
    suffix = office.kind.lower()
    if data.startswith(OLE_MAGIC):
        return LoaderError(
            f"{filename}: this is an old {office.program} 97-2003 file or a password-protected one: "
            f"open it in {office.program} and save it as .{suffix} without a password"
        )
    return LoaderError(
        f"{filename}: not a readable {office.kind} file (corrupt, or not {office.program} 2007+): "
        f"open it in {office.program} and save it again as .{suffix}"
    )


def _docx_unreadable(filename: str, data: bytes) -> LoaderError:
    if data.startswith(OLE_MAGIC):
        return LoaderError(
            f"{filename}: this is an old Word 97-2003 document or a password-protected one: "
            "open it in Word and save it as .docx (Word 2007+) without a password"
        )
    return LoaderError(
        f"{filename}: not a readable DOCX file (corrupt, or not Word 2007+): "
        "open it in Word and save it again as .docx"
    )

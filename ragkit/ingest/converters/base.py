"""What every converter is: one file format behind one interface (after haystack's converters)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

from ragkit.ingest.limits import DEFAULT_MAX_UNPACKED_BYTES
from ragkit.ingest.ocr import OcrOptions

Converted = tuple[list[str], str | None]
"""A file's pages of text as its converter read them, and the title the file gives itself (or None)."""


@dataclass(frozen=True)
class ReadOptions:
    """What every converter is given besides the bytes: the unpacked-size limit and the OCR options."""

    max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES
    ocr: OcrOptions = field(default_factory=OcrOptions)


class Converter(ABC):
    """One file format: the suffixes it reads, the doc_type it records, its label for users, and how to read it."""

    suffixes: ClassVar[tuple[str, ...]]
    """File name suffixes this converter reads, lower case with the dot (".pdf")."""
    doc_type: ClassVar[str]
    """What a LoadedDocument of this format records as its ``doc_type`` ("pdf")."""
    label: ClassVar[str]
    """How users are told of the format, in a list of the supported ones ("PDF")."""

    @abstractmethod
    def convert(self, data: bytes, filename: str, options: ReadOptions, notes: list[str]) -> Converted:
        """The file's pages and own title, or LoaderError saying why not; notes for the user go to ``notes``."""

    def fallback_title(self, first_page: str, stem: str) -> str:
        """The title of a file that gives itself none: its name without the suffix."""
        return stem

    def no_text_hint(self, options: ReadOptions) -> str:
        """What follows "no text could be extracted" in the refusal of a file of this format without text."""
        return ": the file holds no visible text"

"""Which converter reads which file: the supported file types, and every list of them shown
to users, come from the converters registered here (each declares its suffixes, doc_type
and label)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType

from ragkit.errors import LoaderError
from ragkit.ingest.converters.base import Converter
from ragkit.ingest.converters.csv import CsvConverter
from ragkit.ingest.converters.docx import DocxConverter
from ragkit.ingest.converters.html import HtmlConverter
from ragkit.ingest.converters.image import ImageConverter
from ragkit.ingest.converters.pdf import PdfConverter
from ragkit.ingest.converters.pptx import PptxConverter
from ragkit.ingest.converters.text import MarkdownConverter, TextConverter
from ragkit.ingest.converters.xlsx import XlsxConverter


class ConverterRegistry:
    """File suffixes mapped to the converters that declare them, in the order they were registered."""

    def __init__(self, converters: Iterable[Converter] = ()):
        self._converters: list[Converter] = []
        self._by_suffix: dict[str, Converter] = {}
        self._types: dict[str, str] = {}
        self.types: Mapping[str, str] = MappingProxyType(self._types)  # suffix -> doc_type, live and read-only
        for converter in converters:
            self.register(converter)

    def register(self, converter: Converter) -> None:
        """Route the converter's suffixes to it; ValueError for a suffix that is malformed or already taken."""
        for suffix in converter.suffixes:
            if not suffix.startswith(".") or suffix != suffix.lower():
                raise ValueError(f"{type(converter).__name__}: suffix {suffix!r} is not lower case with a dot")
            if suffix in self._by_suffix:
                raise ValueError(f"{suffix} is read by {type(self._by_suffix[suffix]).__name__} already")
        self._converters.append(converter)
        for suffix in converter.suffixes:
            self._by_suffix[suffix] = converter
            self._types[suffix] = converter.doc_type

    @property
    def converters(self) -> tuple[Converter, ...]:
        """The registered converters, in order."""
        return tuple(self._converters)

    def supports(self, name: str) -> bool:
        """True when a file of this name has a type a registered converter reads."""
        return Path(name).suffix.lower() in self._by_suffix

    def converter_for(self, filename: str) -> Converter:
        """The converter for a file name, or LoaderError naming the supported types."""
        suffix = Path(filename).suffix.lower()
        if suffix not in self._by_suffix:
            supported = ", ".join(sorted(self._by_suffix))
            shown = suffix or "(no extension)"
            raise LoaderError(
                f"{filename}: unsupported file type {shown}; supported: {supported}. "
                "Convert it to one of these (e.g. save as PDF) and add it again"
            )
        return self._by_suffix[suffix]

    def suffixes(self) -> list[str]:
        """Every supported suffix, converter by converter in registration order (".pdf", ...)."""
        return [suffix for converter in self._converters for suffix in converter.suffixes]

    def label(self) -> str:
        """The converters' labels as one phrase: "PDF, DOCX, ... or image (PNG, JPG…)"."""
        labels = [converter.label for converter in self._converters]
        return " or ".join([", ".join(labels[:-1]), labels[-1]]) if len(labels) > 1 else "".join(labels)


REGISTRY = ConverterRegistry([
    PdfConverter(),
    DocxConverter(),
    XlsxConverter(),
    PptxConverter(),
    TextConverter(),
    MarkdownConverter(),
    HtmlConverter(),
    CsvConverter(),
    ImageConverter(),
])
"""The converters ragkit reads files with; the order is the order users see them listed in."""

SUPPORTED_TYPES = REGISTRY.types
"""Suffix -> doc_type of every supported file type (".pdf" -> "pdf")."""


def converter_for(filename: str) -> Converter:
    """The registered converter for a file name, or LoaderError naming the supported types."""
    return REGISTRY.converter_for(filename)


def detect_type(filename: str) -> str:
    """Map a file name to a supported type or raise LoaderError naming the supported ones."""
    return converter_for(filename).doc_type


def is_supported(name: str) -> bool:
    """True when a file of this name has a type ragkit reads."""
    return REGISTRY.supports(name)


def supported_suffixes() -> list[str]:
    """Every suffix ragkit reads, lower case with the dot, as an upload widget takes them."""
    return REGISTRY.suffixes()


def upload_types_label() -> str:
    """The supported types for a sentence: "PDF, DOCX, XLSX, PPTX, TXT, MD, HTML, CSV or image (PNG, JPG…)"."""
    return REGISTRY.label()

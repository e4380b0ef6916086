"""The converter registry: every supported type is a converter's declared suffix, and every list
of supported types (folders, uploads, the label) is read from it."""

import pytest

from conftest import REPO
from ragkit.errors import LoaderError
from ragkit.ingest import (
    REGISTRY,
    SUPPORTED_TYPES,
    ConverterRegistry,
    detect_type,
    folders,
    is_supported,
    load_bytes,
    supported_suffixes,
    upload_types_label,
)
from ragkit.ingest.converters.base import Converter
from ragkit.ingest.converters.text import TextConverter


def test_each_suffix_routes_to_the_converter_that_declares_it():
    for converter in REGISTRY.converters:
        for suffix in converter.suffixes:
            assert REGISTRY.converter_for(f"file{suffix.upper()}") is converter
            assert SUPPORTED_TYPES[suffix] == detect_type(f"file{suffix}") == converter.doc_type
    assert sorted(supported_suffixes()) == sorted(SUPPORTED_TYPES)


def test_the_folder_walker_and_the_upload_label_come_from_the_registry():
    assert folders.is_supported is is_supported
    assert all(is_supported(f"a{suffix}") for suffix in supported_suffixes())
    assert not is_supported("a.doc") and not is_supported("README")
    assert upload_types_label() == "PDF, DOCX, XLSX, PPTX, TXT, MD, HTML, CSV or image (PNG, JPG…)"


def test_a_suffix_is_read_by_one_converter_only():
    registry = ConverterRegistry([TextConverter()])
    with pytest.raises(ValueError, match=r"\.txt is read by TextConverter already"):
        registry.register(TextConverter())


def test_a_new_converter_is_routed_to_once_registered():
    class LogConverter(Converter):
        suffixes = (".log",)
        doc_type = "log"
        label = "LOG"

        def convert(self, data, filename, options, notes):
            return [data.decode()], None

    registry = ConverterRegistry([TextConverter()])
    with pytest.raises(LoaderError, match=r"unsupported file type \.log; supported: \.text, \.txt\."):
        registry.converter_for("app.log")
    registry.register(LogConverter())
    assert registry.types == {".txt": "txt", ".text": "txt", ".log": "log"}
    assert registry.label() == "TXT or LOG"
    assert load_bytes(b"plain", "a.txt").doc_type == "txt"  # the default registry is unchanged


def test_the_pages_offer_the_registry_s_types():
    from pages._widgets import UPLOAD_TYPES, UPLOAD_TYPES_LABEL

    assert UPLOAD_TYPES == supported_suffixes() and UPLOAD_TYPES_LABEL == upload_types_label()


def test_the_manual_names_every_registered_format():
    manual = (REPO / "docs" / "app.md").read_text(encoding="utf-8")
    drag = manual[manual.index("   Drag "):manual.index("onto the drop zone")]
    for converter in REGISTRY.converters:
        assert converter.label.split(" (")[0] in drag, converter.label

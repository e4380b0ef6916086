"""Files in, text out: loading files through one converter per format (``registry``), chunking,
folders, OCR and web pages. The loading names are exported here; ``LoaderError`` is in
``ragkit.errors``."""

from ragkit.ingest.document import LoadedDocument, content_hash
from ragkit.ingest.loading import load_bytes, load_path
from ragkit.ingest.registry import (
    REGISTRY,
    SUPPORTED_TYPES,
    ConverterRegistry,
    detect_type,
    is_supported,
    supported_suffixes,
    upload_types_label,
)

__all__ = [
    "REGISTRY",
    "SUPPORTED_TYPES",
    "ConverterRegistry",
    "LoadedDocument",
    "content_hash",
    "detect_type",
    "is_supported",
    "load_bytes",
    "load_path",
    "supported_suffixes",
    "upload_types_label",
]

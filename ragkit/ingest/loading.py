"""File bytes or a path -> a :class:`LoadedDocument`, through the converter registered for the
file's type (``ragkit.ingest.registry``).

Anything that cannot be read raises :class:`LoaderError` with a message meant for the user:
it names the file, says what is wrong and what to do about it. Hostile files are refused in
bounded memory and time: sizes are checked before reading (``ragkit.ingest.limits``), and
every converter keeps within the unpacked-size limit it is given.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

from ragkit.errors import LoaderError
from ragkit.ingest.converters.base import ReadOptions
from ragkit.ingest.document import LoadedDocument, content_hash, normalize_text
from ragkit.ingest.limits import DEFAULT_MAX_UNPACKED_BYTES, check_size
from ragkit.ingest.ocr import OcrOptions
from ragkit.ingest.registry import converter_for


def load_bytes(
    data: bytes,
    filename: str,
    max_bytes: int | None = None,
    max_unpacked_bytes: int | None = None,
    ocr=None,
) -> LoadedDocument:
    """Turn one uploaded file into a LoadedDocument, or raise LoaderError saying why not.

    ``max_bytes`` limits the file (RAGKIT_MAX_UPLOAD_MB), ``max_unpacked_bytes`` what a
    DOCX or PDF may inflate to (RAGKIT_MAX_UNPACKED_MB, 100 MB when not given); ``ocr``
    (``ragkit.ingest.ocr.OcrOptions``, on by default) says whether images and scanned PDF pages
    are read by OCR."""
    converter = converter_for(filename)
    if not data:
        raise LoaderError(f"{filename}: the file is empty (0 bytes): check that it was saved completely")
    check_size(len(data), filename, max_bytes)
    options = ReadOptions(
        max_unpacked_bytes=DEFAULT_MAX_UNPACKED_BYTES if max_unpacked_bytes is None else max_unpacked_bytes,
        ocr=OcrOptions() if ocr is None else ocr,
    )
    notes: list[str] = []
    pages, own_title = converter.convert(data, filename, options, notes)
    pages = [normalize_text(page) for page in pages]
    if not any(page.strip() for page in pages):
        raise LoaderError(f"{filename}: no text could be extracted{converter.no_text_hint(options)}")
    return LoadedDocument(
        filename=Path(filename).name,
        doc_type=converter.doc_type,
        title=own_title or converter.fallback_title(pages[0], Path(filename).stem),
        pages=pages,
        size_bytes=len(data),
        content_hash=content_hash(data),
        notes=notes,
        raw=data,
    )


def load_path(
    path: str | Path,
    max_bytes: int | None = None,
    max_unpacked_bytes: int | None = None,
    ocr=None,
) -> LoadedDocument:
    """Read a file from disk and load it. Directories, FIFOs and devices are refused, and
    the type and size are checked before a byte is read."""
    path = Path(path)
    with _open_regular_file(path) as handle:
        converter_for(path.name)
        check_size(os.fstat(handle.fileno()).st_size, path.name, max_bytes)
        try:
            # one byte over the limit is enough to refuse a file that grew since fstat
            data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
        except OSError as exc:
            raise LoaderError(f"{path}: cannot read the file ({exc.strerror}): check that it is readable") from None
    return load_bytes(data, path.name, max_bytes=max_bytes, max_unpacked_bytes=max_unpacked_bytes, ocr=ocr)


def _open_regular_file(path: Path) -> io.BufferedReader:
    """Open ``path`` for reading if it is a regular file. The check is fstat on the opened
    file, so the checked file is the one read; O_NONBLOCK keeps a FIFO from blocking open."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise LoaderError(
            f"{path}: cannot read the file ({exc.strerror}): check that it exists and is readable"
        ) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise LoaderError(f"{path}: {_file_kind(mode)}, not a regular file: give the path of a document file")
    return open(fd, "rb")


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "this is a directory"
    if stat.S_ISFIFO(mode):
        return "this is a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "this is a device"
    if stat.S_ISSOCK(mode):
        return "this is a socket"
    return "this is a special file"

"""Limits that keep hostile files in bounded memory and time: the file's size, checked before
it is read; what a ZIP-based Office file (DOCX, XLSX, PPTX) declares it unpacks to, checked
from its directory before anything is unpacked, then enforced while copying its parts; and
the bytes a PDF's streams inflate to, counted over the whole document."""

from __future__ import annotations

import io
import shutil
import zipfile

from ragkit.errors import LoaderError
from ragkit.ingest.ooxml import DOCX_FORMAT, OfficeFormat, office_unreadable

MB = 1024 * 1024
DEFAULT_MAX_UNPACKED_BYTES = 100 * MB
"""Unpacked-size limit when the caller passes none (the default of RAGKIT_MAX_UNPACKED_MB)."""

MAX_ZIP_RATIO = 100
"""Largest believable compression ratio of one large DOCX part (Word's XML packs 3-30x)."""
_RATIO_CHECK_FROM = MB  # smaller parts cannot do harm whatever their ratio
MAX_ZIP_ENTRIES = 10_000
"""Most parts a DOCX may have (each costs memory as soon as the zip directory is read)."""
_ZIP_METHOD_NAMES = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "lzma"}


def megabytes(size: int) -> str:
    """A size in bytes as megabytes for a message: "1.5 MB", "100 MB"."""
    return f"{round(size / MB, 1):g} MB"


def check_size(size: int, filename: str, max_bytes: int | None) -> None:
    """Refuse a file of ``size`` bytes over ``max_bytes`` (RAGKIT_MAX_UPLOAD_MB; None: no limit)."""
    if max_bytes is not None and size > max_bytes:
        raise LoaderError(
            f"{filename}: the file is {size / MB:.1f} MB, over the {megabytes(max_bytes)} limit "
            "(RAGKIT_MAX_UPLOAD_MB): split it into smaller files or raise RAGKIT_MAX_UPLOAD_MB"
        )


def check_zip_limits(data: bytes, filename: str, max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
                     office: OfficeFormat = DOCX_FORMAT) -> None:
    """Refuse a ZIP-based file (DOCX) that would unpack too far, from its directory alone.

    Nothing is decompressed here; the declared sizes are checked, and :func:`bounded_copy`
    then makes sure no part unpacks beyond its declared size. bzip2 and lzma parts are
    refused: zipfile inflates a whole compressed chunk of them at once (Word never writes
    them)."""
    if data.count(b"PK\x01\x02") > MAX_ZIP_ENTRIES:  # directory records, before parsing them
        raise LoaderError(
            f"{filename}: the {office.kind} has more than {MAX_ZIP_ENTRIES} parts, which no {office.document} "
            f"needs: re-save it in {office.program}"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError):
        raise office_unreadable(filename, data, office) from None
    for entry in entries:
        if entry.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            method = _ZIP_METHOD_NAMES.get(entry.compress_type, f"method {entry.compress_type}")
            raise LoaderError(
                f"{filename}: part {entry.filename} is packed with {method}, which {office.program} never "
                f"uses: re-save the document in {office.program}"
            )
    total = sum(entry.file_size for entry in entries)
    if total > max_unpacked_bytes:
        raise LoaderError(
            f"{filename}: the {office.kind} would unpack to {total / MB:.1f} MB, over the "
            f"{megabytes(max_unpacked_bytes)} limit (RAGKIT_MAX_UNPACKED_MB); it may be a "
            "decompression bomb: if it is genuine, raise RAGKIT_MAX_UNPACKED_MB or split the document"
        )
    for entry in entries:
        if entry.file_size >= _RATIO_CHECK_FROM and entry.file_size > MAX_ZIP_RATIO * max(entry.compress_size, 1):
            ratio = entry.file_size / max(entry.compress_size, 1)
            raise LoaderError(
                f"{filename}: part {entry.filename} would unpack {ratio:.0f} times larger than it is "
                f"stored ({office.program} files stay under {MAX_ZIP_RATIO}); it looks like a decompression "
                f"bomb: re-save the document in {office.program} if it is genuine"
            )


def bounded_copy(data: bytes) -> io.BytesIO:
    """The zip's parts copied, uncompressed, into a new zip, each read in 64 KB chunks.

    ZipFile.read(), which python-docx uses, inflates a deflated part whole and only then
    cuts it to its declared size: a part declaring 4 KB may inflate to gigabytes first.
    A chunked read stops at the declared size (and the CRC check then fails), so the
    copy, and what python-docx parses, holds no more than the declared sizes."""
    packed = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(packed, "w", zipfile.ZIP_STORED) as target:
        latest = {entry.filename: entry for entry in source.infolist()}  # as zipfile resolves duplicates
        for entry in latest.values():
            if entry.is_dir():
                continue
            with source.open(entry) as part, target.open(entry.filename, "w", force_zip64=True) as copy:
                shutil.copyfileobj(part, copy, 64 * 1024)
    packed.seek(0)
    return packed


def pypdf_limits(max_unpacked_bytes: int):
    """A context lowering pypdf's per-stream output limits to ``max_unpacked_bytes``."""
    from pypdf import apply_configuration, get_configuration

    current = get_configuration()
    names = (
        "zlib_maximum_output_length",
        "lzw_maximum_output_length",
        "run_length_maximum_output_length",
        "brotli_maximum_output_length",
        "array_based_stream_maximum_output_length",
    )
    # 0 means "no limit" to pypdf
    lowered = {name: min(getattr(current, name) or max_unpacked_bytes, max_unpacked_bytes) for name in names}
    return apply_configuration(**lowered)


def _resolve(obj):
    return obj.get_object() if obj is not None else None


class PdfInflateBudget:
    """Counts the bytes pypdf inflates to extract text and refuses a PDF past a limit.

    A page's content streams count on every page that uses them (each use is parsed
    again); fonts, forms and maps reachable from its resources count once per document,
    as pypdf keeps them decoded. Images are skipped: text extraction never decodes them.
    The first charge of a stream decodes it, one stream at a time, within pypdf's
    per-stream limit, and pypdf keeps that result for the extraction."""

    def __init__(self, limit: int, filename: str):
        self.limit, self.filename, self.spent = limit, filename, 0
        self._visited: set[int] = set()

    def charge_page(self, page) -> None:
        """Charge what extracting ``page`` inflates; raise LoaderError past the limit."""
        from pypdf.generic import ArrayObject

        contents = _resolve(page.get("/Contents"))
        for stream in contents if isinstance(contents, ArrayObject) else [contents]:
            self._charge(_resolve(stream))
        self._charge_resources(page.get("/Resources"))

    def _charge_resources(self, root) -> None:
        from pypdf.generic import ArrayObject, DictionaryObject, StreamObject

        pending = [root]
        while pending:
            obj = _resolve(pending.pop())
            if not isinstance(obj, (DictionaryObject, ArrayObject)) or id(obj) in self._visited:
                continue
            self._visited.add(id(obj))
            if isinstance(obj, StreamObject):
                if _resolve(obj.get("/Subtype")) == "/Image":
                    continue
                self._charge(obj)
            pending.extend(obj.values() if isinstance(obj, DictionaryObject) else obj)

    def _charge(self, stream) -> None:
        from pypdf.errors import LimitReachedError
        from pypdf.generic import StreamObject

        if not isinstance(stream, StreamObject):
            return
        try:
            self.spent += len(stream.get_data())
        except LimitReachedError:
            raise
        except Exception:  # undecodable: extract_text reports or skips it
            return
        if self.spent > self.limit:
            raise LoaderError(
                f"{self.filename}: the PDF's pages inflate to more than {megabytes(self.limit)} "
                "(RAGKIT_MAX_UNPACKED_MB); it may be a decompression bomb: if it is genuine, "
                "raise RAGKIT_MAX_UNPACKED_MB or split the PDF"
            )


"""Text bytes -> str: byte-order marks, UTF-16 without one, UTF-8, mostly-UTF-8 text with some
lines in another encoding, then detection; binary data with a text extension is refused."""

from __future__ import annotations

import codecs
import threading
import unicodedata

import charset_normalizer

from ragkit.errors import LoaderError

BINARY_SHARE = 0.10
"""Share of unprintable characters above which decoded "text" is taken for binary data."""
_SAMPLE_WINDOWS, _SAMPLE_WINDOW = 16, 4096
TEXT_CONTROLS = frozenset("\t\n\r\f")
"""The control characters text files hold (tab, newline, carriage return, form feed)."""
_UNPRINTABLE_CATEGORIES = frozenset({"Cc", "Cs", "Co", "Cn"})  # controls, surrogates, private, unassigned
_GB_ENCODINGS = {"gb18030", "gbk", "gb2312", "hz"}


def decode_text(data: bytes) -> str:
    """Decode text bytes: BOMs first, then UTF-16 without BOM (NUL bytes), UTF-8, then
    mostly-UTF-8 text with some lines in another encoding (:func:`_decode_mostly_utf8`),
    then detection (GB18030/GBK preferred among equally good guesses, then the others)."""
    return _decode(data)[0]


def _decode(data: bytes) -> tuple[str, list[str]]:
    """The text, and notes for the user when part of it was decoded otherwise or lost."""
    for bom, encoding in (
        (b"\xff\xfe\x00\x00", "utf-32"),
        (b"\x00\x00\xfe\xff", "utf-32"),
        (b"\xef\xbb\xbf", "utf-8-sig"),
        (b"\xff\xfe", "utf-16"),
        (b"\xfe\xff", "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(encoding, errors="replace"), []
    # UTF-8 text never holds NUL bytes, but ASCII in UTF-16 is half NULs and valid UTF-8.
    if _looks_utf16_without_bom(data):
        return data.decode(_utf16_byte_order(data), errors="replace"), []
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError:
        pass
    mixed = _decode_mostly_utf8(data)
    if mixed is not None:
        return mixed
    encoding = _detect_encoding(data)
    if encoding:
        return data.decode(encoding, errors="replace"), []
    try:
        return data.decode("gb18030"), []
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), []


class _MixedDecoding(threading.local):
    """State of the decode error handler below, per thread."""

    legacy: str | None = None
    sample: bytearray | None = None
    legacy_lines = 0
    replaced = 0


_MIXED = _MixedDecoding()
_LEGACY_SAMPLE_BYTES = 64 * 1024
_ASCII = bytes(range(128))


def _line_end(data: bytes, start: int) -> int:
    end = data.find(b"\n", start)
    return len(data) if end < 0 else end


def _mixed_utf8_errors(error: UnicodeDecodeError) -> tuple[str, int]:
    """Codec error handler: a line UTF-8 cannot decode is sampled (first pass), then
    decoded in the legacy encoding if it can be, else its bad bytes become U+FFFD."""
    data, start = error.object, error.start
    end = _line_end(data, start)
    if _MIXED.sample is not None:
        if len(_MIXED.sample) < _LEGACY_SAMPLE_BYTES:  # whole lines: detection needs the words
            _MIXED.sample += data[data.rfind(b"\n", 0, start) + 1 : end] + b"\n"
        rest = bytes(data[start:end])
        _MIXED.replaced += len(rest.translate(None, _ASCII))  # its non-ASCII bytes
        return "", end
    if _MIXED.legacy is not None:
        try:
            decoded = bytes(data[start:end]).decode(_MIXED.legacy)
        except UnicodeDecodeError:
            pass
        else:
            _MIXED.legacy_lines += 1
            return decoded, end
    _MIXED.replaced += error.end - start
    return "\ufffd", error.end


codecs.register_error("ragkit-mixed-utf8", _mixed_utf8_errors)


def _decode_mostly_utf8(data: bytes) -> tuple[str, list[str]] | None:
    """Text that is UTF-8 except for some lines (a file pasted together from several
    sources): those lines are decoded in the encoding detected from them, and what no
    encoding reads is replaced by U+FFFD, with notes saying so. None when most non-ASCII
    bytes are not UTF-8 (a file in another encoding, or binary data)."""
    non_ascii = len(data.translate(None, _ASCII))
    _MIXED.sample, _MIXED.legacy, _MIXED.replaced, _MIXED.legacy_lines = bytearray(), None, 0, 0
    try:
        data.decode("utf-8", errors="ragkit-mixed-utf8")
        if _MIXED.replaced * 2 > non_ascii:  # most non-ASCII bytes are on lines UTF-8 cannot read
            return None
        _MIXED.legacy = _detect_encoding(bytes(_MIXED.sample))
        _MIXED.sample, _MIXED.replaced = None, 0
        text = data.decode("utf-8", errors="ragkit-mixed-utf8")
        legacy, legacy_lines, replaced = _MIXED.legacy, _MIXED.legacy_lines, _MIXED.replaced
    finally:
        _MIXED.sample, _MIXED.legacy = None, None
    notes = []
    if legacy_lines:
        notes.append(f"{plural_lines(legacy_lines)} not UTF-8, read as {_encoding_label(legacy)}")
    if replaced:
        notes.append(f"{replaced:,} undecodable byte{'s' if replaced != 1 else ''} replaced by \ufffd")
    return text, notes


def plural_lines(count: int) -> str:
    """'1 line was', '3 lines were'."""
    return f"{count:,} line was" if count == 1 else f"{count:,} lines were"


def _encoding_label(encoding: str) -> str:
    return {"gb18030": "GB18030", "cp1252": "Windows-1252", "latin_1": "Latin-1", "big5": "Big5",
            "shift_jis": "Shift JIS", "euc_kr": "EUC-KR", "cp1251": "Windows-1251"}.get(encoding, encoding)


def _looks_utf16_without_bom(data: bytes) -> bool:
    sample = data[:2000]
    if len(sample) < 4:
        return False
    zeros_even = sample[0::2].count(0)
    zeros_odd = sample[1::2].count(0)
    half = len(sample) / 2
    return max(zeros_even, zeros_odd) > 0.3 * half


def _utf16_byte_order(data: bytes) -> str:
    sample = data[:2000]
    return "utf-16-le" if sample[1::2].count(0) >= sample[0::2].count(0) else "utf-16-be"


def _detect_encoding(data: bytes) -> str | None:
    matches = charset_normalizer.from_bytes(data)
    best = matches.best()
    if best is None or not best.encoding:
        return None
    # Short CJK byte runs are valid in GBK, Big5, EUC-KR... alike; ties go to GB18030.
    # Accented Latin letters read alike in many one-byte code pages; ties go to Windows-1252.
    ties = {match.encoding.lower() for match in matches
            if match.chaos == best.chaos and match.coherence == best.coherence}
    if ties & _GB_ENCODINGS or best.encoding.lower() in _GB_ENCODINGS:
        return "gb18030"
    return "cp1252" if "cp1252" in ties else best.encoding


def text_sample(text: str) -> str:
    """The text itself, or 16 windows of 4 K characters spread over a longer one."""
    if len(text) <= _SAMPLE_WINDOWS * _SAMPLE_WINDOW:
        return text
    step = (len(text) - _SAMPLE_WINDOW) // (_SAMPLE_WINDOWS - 1)
    return "".join(text[i * step : i * step + _SAMPLE_WINDOW] for i in range(_SAMPLE_WINDOWS))


def _unprintable_share(text: str) -> float:
    """Share of characters no text file holds: controls other than tab/newline/CR/form
    feed, U+FFFD (bytes the decoder could not map), private-use, unassigned, surrogates.

    Judged on 16 windows spread over the text, so the cost is bounded on any input."""
    sample = text_sample(text)
    if not sample:
        return 0.0
    category = unicodedata.category
    bad = sum(
        1
        for char in sample
        if char == "\ufffd" or (category(char) in _UNPRINTABLE_CATEGORIES and char not in TEXT_CONTROLS)
    )
    return bad / len(sample)


def decode_text_file(data: bytes, filename: str, notes: list[str] | None = None) -> str:
    """Decode a text-type file, refusing binary data (an image renamed .txt, random bytes);
    notes about lossy or mixed decoding are appended to ``notes``."""
    text, decoded_notes = _decode(data)
    if _unprintable_share(text) > BINARY_SHARE:
        raise LoaderError(
            f"{filename}: looks like a binary file, not text (too many unprintable characters): "
            "add the original document instead, or save it as UTF-8 text"
        )
    if notes is not None:
        notes.extend(decoded_notes)
    return text
